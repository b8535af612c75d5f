"""Ramachandran et al. (2017), "Unsupervised Pretraining for Sequence to Sequence Learning", on
SQuAD question generation: a seq2seq AWD-LSTM (sentence and answer -> question) whose encoder and
decoder start from a pretrained language model, against the same model from random weights.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/question_gen.py \\
        [--lm runs/bench/lm-1h/best] [--seeds 0] [--train-size 0] [--threads 2]

- The LM: ``--lm DIR`` (default ``runs/bench/lm-1h/best``), a ``transferlab pretrain lm --budget
  1h`` checkpoint (general-en). Both arms use its vocabulary, tokenizer and AWD-LSTM shape; ``lm``
  starts encoder and decoder from its weights, ``random`` from random ones.
- Each cell is ``transferlab qg --pretrained LM --init lm|random`` (:mod:`transferlab.recipes.question_gen`,
  its default settings or ``--preset``) on squad-v1.1: the catalog's train articles (a tenth held
  out for validation, the best epoch by validation perplexity) and its test articles, with test
  BLEU (sacreBLEU on the LM's words, beam search) beside the BLEU of copying the input sentence.

One JSON line per finished cell in ``<out>/runs.jsonl``; a rerun skips the cells already there,
and an interrupted cell resumes from its last checkpoint. Figures (means over seeds; ``_sd`` their
standard deviations): ``random_bleu``, ``lm_bleu``, ``copy_bleu``, ``lm_gain`` (BLEU points of LM
init over random), ``random_test_ppl``, ``lm_test_ppl``.

A smoke run in a minute: ``transferlab pretrain lm --corpus ptb --preset tiny --out /tmp/lm-tiny``,
then ``--lm /tmp/lm-tiny/best --preset tiny --train-size 64 --out /tmp/qg-bench --record qg_smoke``
(delete ``benchmarks/results/qg_smoke.json`` after).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import append_row, finished_rows, write_result  # noqa: E402

from transferlab.config import load_config  # noqa: E402
from transferlab.recipes import question_gen  # noqa: E402

METHODS = ("random", "lm")


def cell(args, init: str, seed: int, out: Path) -> dict:
    overrides = [f'pretrained="{args.lm}"', f'init="{init}"', f"data.train_size={args.train_size}",
                 f"train.seed={seed}", f"train.threads={args.threads}", "train.progress=false", "resume=true",
                 f'out="{out}"']
    return question_gen.run(load_config(question_gen.QuestionGenConfig, args.preset, overrides, kind="qg"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lm", default="runs/bench/lm-1h/best", help="a `transferlab pretrain lm` checkpoint folder")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--train-size", type=int, default=0, help="the first N training questions; 0 = all")
    ap.add_argument("--preset", help="a `qg` preset (tiny for a smoke run); default: the recipe's settings")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="runs/bench/question-gen")
    ap.add_argument("--record", default="question_gen", help="the results/NAME.json to write")
    args = ap.parse_args()
    if not (Path(args.lm) / "model.safetensors").exists():
        ap.error(f"--lm {args.lm}: no checkpoint there; make one with `transferlab pretrain lm --budget 1h "
                 f"--out {Path(args.lm).parent}` (about an hour on 2 cores; general-en: `transferlab data build "
                 f"general-en`), or name another `pretrain lm` checkpoint")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    rows = finished_rows(log, "init", "train_size", "seed")
    seeds = [int(s) for s in args.seeds.split(",")]
    for seed in seeds:
        for init in METHODS:
            if (init, args.train_size, seed) in rows:
                continue
            s = cell(args, init, seed, out / f"{init}-{args.train_size or 'all'}-{seed}")
            row = {"init": init, "train_size": args.train_size, "seed": seed, "bleu": s["bleu"],
                   "copy_bleu": s["copy_bleu"], "valid_ppl": s["valid_ppl"], "test_ppl": s["test_ppl"],
                   "steps": s["steps"], "train_questions": s["train_size"], "wall_s": s["wall_s_total"]}
            rows[(init, args.train_size, seed)] = row
            append_row(log, row)
            print(json.dumps(row), flush=True)

    mine = [r for (_, n, _), r in sorted(rows.items()) if n == args.train_size]
    figures: dict[str, float | None] = {}
    for init in METHODS:
        for key in ("bleu", "test_ppl"):
            values = [r[key] for r in mine if r["init"] == init]
            figures[f"{init}_{key}"] = statistics.mean(values) if values else None
            figures[f"{init}_{key}_sd"] = statistics.stdev(values) if len(values) > 1 else None
    copies = [r["copy_bleu"] for r in mine]
    figures["copy_bleu"] = statistics.mean(copies) if copies else None
    if figures["lm_bleu"] is not None and figures["random_bleu"] is not None:
        figures["lm_gain"] = figures["lm_bleu"] - figures["random_bleu"]
        print(f"SQuAD question generation: BLEU random init {figures['random_bleu']:.2f}, LM init "
              f"{figures['lm_bleu']:.2f} ({figures['lm_gain']:+.2f}), copying the sentence {figures['copy_bleu']:.2f}")
    write_result(args.record, figures, lm=args.lm, train_size=args.train_size, runs=mine)


if __name__ == "__main__":
    main()
