"""Fine-tuning minilm-l6 on SST-2: transferlab against Hugging Face's Trainer, in one script.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/minilm_vs_hf_trainer.py [--rows 4000]

Same examples (the first ``--rows`` SST-2 training rows), max length 64, batch 32, AdamW at 5e-5
with linear decay and no warm-up, no weight decay, gradient clipping at 1.0, one epoch, seed 0,
2 threads: the Trainer's defaults, which transferlab is set to match. Both models are the same
BERT (all-MiniLM-L6-v2 with a fresh 2-way head on the pooler). The Trainer runs twice: with its
defaults (random batches, padded per batch) and with its own ``group_by_length=True``
(``train_sampling_strategy="group_by_length"`` in transformers 5).
Throughput is training examples per second (the Trainer's ``train_samples_per_second``; ours
from ``fit()``, training steps only, like the Trainer's ``train_runtime``), accuracy on SST-2's
872 test sentences (GLUE dev).

Figures: ``throughput_ratio`` (ours / default Trainer, target >= 1.3 on 2 CPU cores),
``throughput_ratio_grouped`` (ours / grouped Trainer, target >= 1.0), ``acc_ours``, ``acc_hf``
(must agree within 1 point). ``--precision bf16`` runs ours under bf16 autocast as well (the
Trainer stays at its fp32 default) and is reported separately, never as the headline ratio.
"""

from __future__ import annotations

import argparse
import inspect
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

import torch  # noqa: E402

from transferlab.data import catalog  # noqa: E402
from transferlab.recipes import finetune  # noqa: E402

MAX_LEN, BATCH, LR, SEED = 64, 32, 5e-5, 0


def sst2_rows(split: str, n: int | None = None) -> list[tuple[str, str]]:
    rows = [(ex.text, ex.label) for ex in catalog.load_examples("sst2", split)]
    return rows[:n] if n else rows


def write_tsv(path: Path, rows) -> str:
    path.write_text("sentence\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows), encoding="utf-8")
    return str(path)


def ours(train: str, valid: str, test: str, out: Path, precision: str) -> dict:
    shutil.rmtree(out, ignore_errors=True)  # a fresh run, never a resumed one
    cfg = finetune.load_finetune_config(None, [
        'encoder="minilm-l6"', f'data.train="{train}"', f'data.valid="{valid}"', f'data.test="{test}"',
        'data.task=""', 'data.text_col="sentence"', f"data.max_len={MAX_LEN}", f"data.batch_size={BATCH}",
        f"train.lr={LR}", "train.epochs=1", 'train.schedule="linear"', "train.warmup=0",
        "train.weight_decay=0", "train.beta2=0.999", "train.clip=1.0", f"train.seed={SEED}", "train.threads=2",
        f'train.precision="{precision}"', "train.log_every=0", f'out="{out}"'])
    s = finetune.run(cfg)
    return {"examples_per_s": s["train_examples_per_s"], "acc": s["test_accuracy"], "wall_s": s["wall_s"]}


def hf_trainer(rows, test_rows, out: Path, group_by_length: bool) -> dict:
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding,
                              Trainer, TrainingArguments)

    folder = str(catalog.resolve("minilm-l6"))
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=2)

    def encode(pairs):
        enc = tok([t for t, _ in pairs], truncation=True, max_length=MAX_LEN)
        return [{"input_ids": i, "attention_mask": m, "token_type_ids": ty, "labels": int(y)}
                for i, m, ty, (_, y) in zip(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"], pairs)]

    # transformers 5 spells group_by_length=True as train_sampling_strategy="group_by_length"
    if "train_sampling_strategy" in inspect.signature(TrainingArguments.__init__).parameters:
        grouping = {"train_sampling_strategy": "group_by_length" if group_by_length else "random"}
    else:
        grouping = {"group_by_length": group_by_length}
    args = TrainingArguments(output_dir=str(out), per_device_train_batch_size=BATCH, per_device_eval_batch_size=64,
                             learning_rate=LR, num_train_epochs=1, seed=SEED, report_to=[], save_strategy="no",
                             logging_steps=50, use_cpu=True, dataloader_num_workers=0, disable_tqdm=True,
                             **grouping)
    trainer = Trainer(model=model, args=args, train_dataset=encode(rows),
                      data_collator=DataCollatorWithPadding(tok))
    metrics = trainer.train().metrics
    pred = trainer.predict(encode(test_rows))
    acc = float((pred.predictions.argmax(-1) == pred.label_ids).mean())
    return {"examples_per_s": metrics["train_samples_per_second"], "acc": acc, "wall_s": metrics["train_runtime"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=4000, help="the first N SST-2 training rows")
    ap.add_argument("--out", default="runs/bench/minilm-vs-trainer")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "both"])
    args = ap.parse_args()
    torch.set_num_threads(2)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, test_rows = sst2_rows("train", args.rows), sst2_rows("test")
    with tempfile.TemporaryDirectory() as tmp:
        files = [write_tsv(Path(tmp) / f"{n}.tsv", r) for n, r in
                 (("train", rows), ("valid", sst2_rows("valid", 200)), ("test", test_rows))]
        runs = {}
        start = time.perf_counter()
        runs["ours"] = ours(*files, out / "ours", "fp32")
        if args.precision in ("bf16", "both"):
            runs["ours_bf16"] = ours(*files, out / "ours-bf16", "bf16")
        runs["hf"] = hf_trainer(rows, test_rows, out / "hf", group_by_length=False)
        runs["hf_grouped"] = hf_trainer(rows, test_rows, out / "hf-grouped", group_by_length=True)
    print(json.dumps(runs, indent=2))
    o, h, g = runs["ours"], runs["hf"], runs["hf_grouped"]
    figures = {"throughput_ratio": o["examples_per_s"] / h["examples_per_s"],
               "throughput_ratio_grouped": o["examples_per_s"] / g["examples_per_s"],
               "acc_ours": o["acc"], "acc_hf": h["acc"], "acc_hf_grouped": g["acc"],
               "ours_examples_per_s": o["examples_per_s"], "hf_examples_per_s": h["examples_per_s"],
               "hf_grouped_examples_per_s": g["examples_per_s"]}
    if "ours_bf16" in runs:
        b = runs["ours_bf16"]
        figures |= {"bf16_throughput_ratio": b["examples_per_s"] / h["examples_per_s"], "acc_ours_bf16": b["acc"]}
    print(f"ours {o['examples_per_s']:.1f} ex/s, Trainer {h['examples_per_s']:.1f} (ratio "
          f"{figures['throughput_ratio']:.2f}), grouped Trainer {g['examples_per_s']:.1f} (ratio "
          f"{figures['throughput_ratio_grouped']:.2f}); accuracy ours {o['acc']:.4f}, Trainer {h['acc']:.4f}")
    write_result("minilm_vs_hf_trainer", figures, rows=args.rows, max_len=MAX_LEN, batch_size=BATCH, lr=LR,
                 runs=runs, wall_s=time.perf_counter() - start)


if __name__ == "__main__":
    main()
