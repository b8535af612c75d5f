"""Extractive QA's part of ``transferlab finetune``, ``evaluate`` and ``predict`` (SQuAD).

``transferlab finetune --task squad-v1.1 --encoder minilm-l6`` reaches
:func:`transferlab.recipes.finetune.train_qa` when the task's examples are questions with
contexts (:class:`~transferlab.data.examples.QAExample`): the same encoders, flags (``--train.*``,
``--ulmfit.*``, ``--adapt``) and checkpoint as every task, a span head
(:mod:`transferlab.tasks.qa`), the splits read as windows of ``--qa.max_len`` pieces with
``--qa.stride`` overlap by :func:`encode_qa_splits` (``data.max_len`` does not apply). For SQuAD
v2.0 data the no-answer threshold is tuned on the validation split at every evaluation and stored
in the checkpoint's ``task.json`` (``null_threshold``), which ``evaluate`` and ``predict`` read
back. :func:`predict_answers` is ``transferlab predict --question ... --context ...``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

from transferlab.data.examples import QAExample
from transferlab.encoders.backbone import Backbone
from transferlab.log import log
from transferlab.tasks.loading import load_task_model
from transferlab.tasks.qa import (QAConfig, Windows, encode_qa, predictor_spans, predictor_threshold, qa_tokenizer,
                                  window_len)


def encode_qa_splits(qa: QAConfig, data: dict, b: Backbone) -> dict[str, Windows]:
    """Every split as windows; how many questions took more than one window is logged."""
    tok, length = qa_tokenizer(b), window_len(b, qa)
    if length < qa.max_len:
        log(f"qa.max_len={qa.max_len} is past the encoder's limit: windows of {length} pieces")
    sets = {split: encode_qa(tok, b.framing, ex, qa, length) for split, ex in data.items()}
    for split, w in sets.items():
        split_up = len(w.seqs) - len(data[split])
        log(f"{split}: {len(data[split]):,} questions in {len(w.seqs):,} windows of up to {length} pieces"
            + (f" ({split_up:,} more windows than questions, stride {qa.stride})" if split_up else ""))
    if sets["train"].n_unaligned:
        log(f"train: {sets['train'].n_unaligned:,} answers fall outside the context's pieces; labeled as no answer")
    return sets


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
    threshold = predictor_threshold(p)
    for ex, pred in zip(examples, predictor_spans(p, examples)):
        text = pred.answer(threshold)
        row = {"question": ex.question, "answer": text, "score": pred.score if math.isfinite(pred.score) else None,
               "start": pred.start if text else None, "end": pred.end if text else None}
        if threshold is not None:
            row |= {"null_score": pred.null_score, "null_threshold": threshold}
        out.write(json.dumps(row) + "\n")
    return len(examples)
