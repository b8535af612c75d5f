"""Extractive QA with minilm-l6 on SQuAD v1.1 and v2.0, and its fine-tuning speed against Hugging Face's Trainer.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/qa_squad.py [--train-size 0] [--epochs 2] \\
        [--no-hf] [--threads 2] [--precision auto] [--record qa_squad]

Only the SQuAD dev sets are offline, so the catalog splits each by article: ``squad-v1.1`` trains on
the first 80% of its articles (7,836 questions, less the 10% held out for validation) and is scored
on the rest (2,734); ``squad-v2.0`` likewise (8,425 less validation; 2,512 test questions, about half
unanswerable, its no-answer threshold tuned on the validation part). Windows of 384 pieces with a
stride of 128, batch 32, AdamW at 5e-5 with linear decay and no warm-up, no weight decay, gradient
clipping at 1.0, seed 0, 2 threads: the Trainer's defaults, which transferlab is set to match.

With the Trainer (the throughput comparison) each of our runs starts fresh, so that its speed is
one uninterrupted run's. With ``--no-hf`` (the QA table alone, an hour or more a version on one
core) a version's finished result is kept in ``<out>/runs.jsonl`` and skipped by a rerun, and an
interrupted version resumes from its last checkpoint; ``--precision bf16`` trains under bf16
autocast (on a CPU with native bf16; the Trainer comparison is fp32).

The Trainer fine-tunes ``AutoModelForQuestionAnswering`` (the same all-MiniLM-L6-v2 weights, a fresh
``qa_outputs`` layer) on the very same windows and labels (ours, :func:`transferlab.tasks.qa.encode_qa`,
padded per batch by ``DataCollatorWithPadding``), and its logits are decoded by the same n-best search,
so its EM/F1 sit beside ours. Throughput is training windows per second (the Trainer's
``train_samples_per_second``; ours from ``fit()``, training steps only).

Figures: ``v1_exact_match``, ``v1_f1``; ``v2_exact_match``, ``v2_f1``, ``v2_has_ans_f1``,
``v2_no_ans_f1``; with ``--v2-from-v1`` (and ``--no-hf``) the same four as ``v2_from_v1_*`` for v2.0
fine-tuned from the v1.1 model (``finetune --pretrained TASK_MODEL``, intermediate-task training);
``throughput_ratio`` (ours / Trainer on v1.1, target >= 1.3 on 2 CPU cores), ``hf_v1_f1`` (must
agree with ours within a point or two).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import append_row, finished_rows, write_result  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402

from transferlab.data import catalog  # noqa: E402
from transferlab.data.tasks import TaskDataConfig, load_task  # noqa: E402
from transferlab.encoders.backbone import hf_backbone  # noqa: E402
from transferlab.eval.squad import squad_metrics  # noqa: E402
from transferlab.recipes import finetune  # noqa: E402
from transferlab.tasks.qa import QAConfig, best_spans, encode_qa, qa_tokenizer, window_len, window_logits  # noqa: E402

BATCH, LR, SEED = 32, 5e-5, 0


def test_file(task: str, n: int, folder: Path) -> str:
    """The first ``n`` test questions as a SQuAD file (0: the catalog's test split itself)."""
    if not n:
        return ""
    examples = list(catalog.load_examples(task, "test"))[:n]
    paragraphs: dict[str, list] = {}
    for ex in examples:
        paragraphs.setdefault(ex.context, []).append(
            {"id": ex.id, "question": ex.question, "is_impossible": ex.is_impossible,
             "answers": [{"text": a.text, "answer_start": a.start} for a in ex.answers]})
    path = folder / f"{task}-test-{n}.json"
    path.write_text(json.dumps({"data": [{"title": "test", "paragraphs": [
        {"context": c, "qas": q} for c, q in paragraphs.items()]}]}), encoding="utf-8")
    return str(path)


def data_config(task: str, train_size: int, valid_size: int, test: str) -> TaskDataConfig:
    return TaskDataConfig(task=task, test=test, train_size=train_size, valid_size=valid_size, batch_size=BATCH)


def ours(task: str, args, test: str, out: Path, start: str = "") -> dict:
    """Our fine-tuning of minilm-l6 on ``task`` (from the task model ``start`` when given: STILTs)."""
    if not args.no_hf:
        shutil.rmtree(out, ignore_errors=True)  # a fresh run, never a resumed one: its speed is compared
    cfg = finetune.load_finetune_config(None, [
        'encoder="minilm-l6"', f'data.task="{task}"', f'data.test="{test}"', f"data.train_size={args.train_size}",
        f"data.valid_size={args.valid_size}", f"data.batch_size={BATCH}", f"train.lr={LR}",
        f"train.epochs={args.epochs}", 'train.schedule="linear"', "train.warmup=0", "train.weight_decay=0",
        "train.beta2=0.999", "train.clip=1.0", f"train.seed={SEED}", f"train.threads={args.threads}",
        f'train.precision="{args.precision}"', f"train.save_minutes={10 if args.no_hf else 0}", "train.log_every=0",
        f'out="{out}"', *([f'pretrained="{start}"'] if start else [])])
    s = finetune.run(cfg)
    return {k.removeprefix("test_"): v for k, v in s.items() if k.startswith("test_")} | {
        "examples_per_s": s["train_examples_per_s"], "wall_s": s["wall_s"], "train_windows": s["train_windows"],
        "train_size": s["train_size"]}


class HFSpans(nn.Module):
    """A Hugging Face QA model behind our batch contract: ``batch -> (B, T, 2)`` start and end logits."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, batch: dict) -> torch.Tensor:
        out = self.model(input_ids=batch["ids"], attention_mask=batch["mask"].long(),
                         token_type_ids=batch.get("type_ids"))
        return torch.stack([out.start_logits, out.end_logits], -1)


def hf_trainer(args, test: str, out: Path) -> dict:
    """The Trainer on our windows of squad-v1.1's training questions; EM/F1 through our decoding."""
    from transformers import (AutoModelForQuestionAnswering, AutoTokenizer, DataCollatorWithPadding, Trainer,
                              TrainingArguments)

    data = load_task(data_config("squad-v1.1", args.train_size, args.valid_size, test))
    b = hf_backbone("minilm-l6", None)
    cfg = QAConfig()
    tok, length = qa_tokenizer(b), window_len(b, cfg)
    w = encode_qa(tok, b.framing, data["train"], cfg, length)
    rows = [{"input_ids": ids, "token_type_ids": types, "attention_mask": [1] * len(ids), "start_positions": s,
             "end_positions": e} for ids, types, s, e in zip(w.seqs, w.type_ids, w.start, w.end)]
    folder = str(catalog.resolve("minilm-l6"))
    torch.manual_seed(SEED)
    model = AutoModelForQuestionAnswering.from_pretrained(folder)
    grouping = ({"train_sampling_strategy": "random"}
                if "train_sampling_strategy" in inspect.signature(TrainingArguments.__init__).parameters else {})
    targs = TrainingArguments(output_dir=str(out), per_device_train_batch_size=BATCH, learning_rate=LR,
                              num_train_epochs=args.epochs, seed=SEED, report_to=[], save_strategy="no",
                              logging_steps=50, use_cpu=True, dataloader_num_workers=0, disable_tqdm=True,
                              **grouping)
    trainer = Trainer(model=model, args=targs, train_dataset=rows,
                      data_collator=DataCollatorWithPadding(AutoTokenizer.from_pretrained(folder)))
    metrics = trainer.train().metrics
    test_w = encode_qa(tok, b.framing, data["test"], cfg, length)
    logits = window_logits(HFSpans(trainer.model), test_w, 64, b.pad_id, b.framing.segments)
    preds = best_spans(data["test"], test_w, logits, cfg)
    scores = squad_metrics(data["test"], {ex.id: p.text for ex, p in zip(data["test"], preds)})
    return scores | {"examples_per_s": metrics["train_samples_per_second"], "wall_s": metrics["train_runtime"],
                     "train_windows": len(rows)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train-size", type=int, default=0, help="training questions (0: all of the 80%% articles' "
                                                              "questions less validation)")
    ap.add_argument("--valid-size", type=int, default=0, help="validation questions scored (0: all held out)")
    ap.add_argument("--test-size", type=int, default=0, help="the first N test questions (0: all; for smoke runs)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--versions", default="v1.1,v2.0", help="which SQuAD versions to fine-tune ours on")
    ap.add_argument("--no-hf", action="store_true", help="skip the Trainer (no throughput ratio)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads of every run (2 for the comparison)")
    ap.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"],
                    help="our runs' train.precision (the Trainer runs fp32)")
    ap.add_argument("--v2-from-v1", action="store_true",
                    help="also fine-tune v2.0 starting from this run's v1.1 model (intermediate-task training, "
                         "Phang et al. 2018): does answering first teach the no-answer decision?")
    ap.add_argument("--out", default="runs/bench/qa-squad")
    ap.add_argument("--record", default="qa_squad", help="the results/NAME.json to write")
    args = ap.parse_args()
    if not args.no_hf and args.precision == "bf16":
        ap.error("--precision bf16 against the fp32 Trainer is not a like-for-like speed comparison: add --no-hf")
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    done = finished_rows(log, "setting") if args.no_hf else {}
    runs, start = {}, time.perf_counter()
    for version in args.versions.split(","):
        task = f"squad-{version.strip()}"
        setting = json.dumps({"task": task, "train_size": args.train_size, "valid_size": args.valid_size,
                              "test_size": args.test_size, "epochs": args.epochs, "precision": args.precision})
        row = done.get((setting,))
        if row is None:
            row = {"setting": setting} | ours(task, args, test_file(task, args.test_size, out), out / task)
            if args.no_hf:
                append_row(log, row)
        runs[task] = {k: v for k, v in row.items() if k != "setting"}
    if args.v2_from_v1:  # STILTs: squad-v2.0 from the v1.1 model this run fine-tuned
        if not args.no_hf:
            ap.error("--v2-from-v1 goes with --no-hf (its v1.1 model is kept there)")
        v1 = out / "squad-v1.1" / "last"
        if "squad-v1.1" not in runs or not v1.exists():
            ap.error(f"--v2-from-v1 starts from {v1}: include v1.1 in --versions (it is fine-tuned first)")
        setting = json.dumps({"task": "squad-v2.0", "from": "squad-v1.1", "train_size": args.train_size,
                              "valid_size": args.valid_size, "test_size": args.test_size, "epochs": args.epochs,
                              "precision": args.precision})
        row = done.get((setting,))
        if row is None:
            row = {"setting": setting} | ours("squad-v2.0", args, test_file("squad-v2.0", args.test_size, out),
                                             out / "squad-v2.0-from-v1.1", start=str(v1))
            append_row(log, row)
        runs["squad-v2.0-from-v1.1"] = {k: v for k, v in row.items() if k != "setting"}
    if not args.no_hf:
        runs["hf_squad-v1.1"] = hf_trainer(args, test_file("squad-v1.1", args.test_size, out), out / "hf")
    print(json.dumps(runs, indent=2))
    figures = {}
    if "squad-v1.1" in runs:
        r = runs["squad-v1.1"]
        figures |= {"v1_exact_match": r["exact_match"], "v1_f1": r["f1"], "ours_examples_per_s": r["examples_per_s"]}
    if "squad-v2.0" in runs:
        r = runs["squad-v2.0"]
        figures |= {"v2_exact_match": r["exact_match"], "v2_f1": r["f1"], "v2_has_ans_f1": r["has_ans_f1"],
                    "v2_no_ans_f1": r["no_ans_f1"], "v2_null_threshold": r["null_threshold"]}
    if "squad-v2.0-from-v1.1" in runs:
        r = runs["squad-v2.0-from-v1.1"]
        figures |= {"v2_from_v1_exact_match": r["exact_match"], "v2_from_v1_f1": r["f1"],
                    "v2_from_v1_has_ans_f1": r["has_ans_f1"], "v2_from_v1_no_ans_f1": r["no_ans_f1"]}
    if "hf_squad-v1.1" in runs and "squad-v1.1" in runs:
        h, o = runs["hf_squad-v1.1"], runs["squad-v1.1"]
        figures |= {"throughput_ratio": o["examples_per_s"] / h["examples_per_s"], "hf_v1_f1": h["f1"],
                    "hf_v1_exact_match": h["exact_match"], "hf_examples_per_s": h["examples_per_s"]}
        print(f"squad-v1.1: ours {o['examples_per_s']:.1f} windows/s, Trainer {h['examples_per_s']:.1f} (ratio "
              f"{figures['throughput_ratio']:.2f}); F1 ours {o['f1']:.4f}, Trainer {h['f1']:.4f}")
    write_result(args.record, figures, train_size=args.train_size, epochs=args.epochs, test_size=args.test_size,
                 batch_size=BATCH, lr=LR, threads=args.threads, precision=args.precision,
                 qa=dataclasses.asdict(QAConfig()), runs=runs,
                 wall_s=time.perf_counter() - start)


if __name__ == "__main__":
    main()
