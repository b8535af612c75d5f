"""Extractive QA's part of ``transferlab finetune``, ``evaluate`` and ``predict`` (SQuAD).

``transferlab finetune --task squad-v1.1 --encoder minilm-l6`` reaches :func:`train_qa` when the
task's examples are questions with contexts (:class:`~transferlab.data.examples.QAExample`): the
same encoders, flags (``--train.*``, ``--ulmfit.*``, ``--adapt``) and checkpoint as every task, a
span head (:mod:`transferlab.tasks.qa`), windows of ``--qa.max_len`` pieces with ``--qa.stride``
overlap (``data.max_len`` does not apply). For SQuAD v2.0 data the no-answer threshold is tuned
on the validation split at every evaluation and stored in the checkpoint's ``task.json``
(``null_threshold``), which ``evaluate`` and ``predict`` read back. :func:`predict_answers` is
``transferlab predict --question ... --context ...``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Sequence
from pathlib import Path

from transferlab.config import to_dict, write_json
from transferlab.data.examples import QAExample
from transferlab.encoders.backbone import Backbone, family
from transferlab.log import log
from transferlab.recipes.finetune import FinetuneConfig, gradual_unfreezing, optimizer_groups, report
from transferlab.recipes.ulmfit import schedule
from transferlab.tasks.loading import load_task_model
from transferlab.tasks.model import build_model
from transferlab.tasks.qa import (Windows, best_spans, encode_qa, is_version2, predictor_windows, qa_loss,
                                  qa_scores, qa_tokenizer, window_batches, window_len, window_logits)
from transferlab.train import fit


def encode_qa_splits(cfg: FinetuneConfig, data: dict, b: Backbone) -> dict[str, Windows]:
    """Every split as windows; how many questions took more than one window is logged."""
    tok, length = qa_tokenizer(b), window_len(b, cfg.qa)
    if length < cfg.qa.max_len:
        log(f"qa.max_len={cfg.qa.max_len} is past the encoder's limit: windows of {length} pieces")
    sets = {split: encode_qa(tok, b.framing, ex, cfg.qa, length) for split, ex in data.items()}
    for split, w in sets.items():
        split_up = len(w.seqs) - len(data[split])
        log(f"{split}: {len(data[split]):,} questions in {len(w.seqs):,} windows of up to {length} pieces"
            + (f" ({split_up:,} more windows than questions, stride {cfg.qa.stride})" if split_up else ""))
    if sets["train"].n_unaligned:
        log(f"train: {sets['train'].n_unaligned:,} answers fall outside the context's pieces; labeled as no answer")
    return sets


def train_qa(cfg: FinetuneConfig, data: dict, b: Backbone) -> dict:
    """Fine-tune a span head and its encoder on QA examples; the test split's EM and F1."""
    sets = encode_qa_splits(cfg, data, b)
    version2 = is_version2(data["train"])
    model = build_model(b, "qa", 2, cfg.task, cfg.head, cfg.adapt, cfg.features_cache_gb, cfg.features_layers)
    groups, pgroups, unfreeze = optimizer_groups(cfg, model, b)
    train, bs, segments = sets["train"], cfg.data.batch_size, b.framing.segments
    task = {"kind": "qa", "both_orders": False, "pairs": True, "version2": version2, "null_threshold": 0.0}

    def batches(epoch: int):
        return window_batches(train, bs, b.pad_id, segments, seed=cfg.train.seed, epoch=epoch,
                              drop_last=len(train.seqs) > bs)

    def score(m, split: str) -> dict:
        """EM and F1; on valid a v2.0 model's null threshold is tuned (and kept in ``task``)."""
        tune = version2 and split == "valid"
        result = qa_scores(m, data[split], sets[split], cfg.qa, b.pad_id, segments, version2,
                           None if tune else task["null_threshold"], cfg.data.eval_batch_size)
        if tune:
            task["null_threshold"] = result["null_threshold"]
        return result

    start = time.perf_counter()
    result = fit(model, qa_loss, batches, schedule(cfg.train, cfg.ulmfit) if b.pretrained else cfg.train,
                 groups=[pgroups[-1]] if unfreeze else pgroups,
                 on_epoch_start=gradual_unfreezing(groups, pgroups) if unfreeze else None,
                 evaluate=lambda m: {f"valid_{k}": v for k, v in score(m, "valid").items()},
                 out_dir=cfg.out, config=to_dict(cfg), files={**b.files, "labels": [], "task": task})
    valid = score(model, "valid")  # the last weights' threshold, whatever the last save saw
    write_json(task, Path(cfg.out) / "last" / "task.json")
    summary = {"kind": "qa", "valid": valid, "version2": version2, "train_size": len(data["train"]),
               "train_windows": len(train.seqs), "labels": [],
               "encoder": cfg.encoder if b.family == family(cfg.encoder) else b.family,
               "adapt": cfg.adapt, "pretrained": b.pretrained, "wall_s": time.perf_counter() - start,
               "steps": result.step, "wall_s_total": time.perf_counter() - start + result.earlier_wall_s,
               "train_examples_per_s": result.examples_per_s, "checkpoint": str(Path(cfg.out) / "last")}
    if version2:
        log(f"no-answer threshold {task['null_threshold']:.3f} (tuned on valid), stored in the checkpoint")
    return report(Path(cfg.out), score(model, "test"), summary, result)


# --- a trained model ---------------------------------------------------------------------------

def predict_answers(model_dir: str | Path, questions: Sequence[str], contexts: Sequence[str], out) -> int:
    """One JSON line per question: the answer text, its score (start + end logit) and its
    characters ``[start, end)`` in the context (null for a v2.0 model's no-answer)."""
    if len(contexts) not in (1, len(questions)):
        raise ValueError(f"give one --context for all questions or one per question; got {len(questions)} "
                         f"questions and {len(contexts)} contexts")
    for what, texts in (("question", questions), ("context", contexts)):
        for i, text in enumerate(texts):
            if not text.strip():
                raise ValueError(f"{what} {i + 1} of {len(texts)} is empty")
    p = load_task_model(model_dir)
    if p.kind != "qa":
        raise ValueError(f"{model_dir} is a {p.kind} model, not an extractive QA one: --question and --context "
                         f"apply to a model fine-tuned on a QA task (squad-v1.1, squad-v2.0)")
    contexts = list(contexts) * len(questions) if len(contexts) == 1 else list(contexts)
    examples = [QAExample(id=str(i), question=q, context=c) for i, (q, c) in enumerate(zip(questions, contexts))]
    cfg, w = predictor_windows(p, examples)
    logits = window_logits(p.model, w, p.batch_size, p.backbone.pad_id, p.backbone.framing.segments)
    threshold = float(p.task.get("null_threshold", 0.0)) if p.task.get("version2") else None
    for ex, pred in zip(examples, best_spans(examples, w, logits, cfg)):
        text = pred.answer(threshold)
        row = {"question": ex.question, "answer": text, "score": pred.score if math.isfinite(pred.score) else None,
               "start": pred.start if text else None, "end": pred.end if text else None}
        if threshold is not None:
            row |= {"null_score": pred.null_score, "null_threshold": threshold}
        out.write(json.dumps(row) + "\n")
    return len(examples)
