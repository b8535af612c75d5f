"""Dependency parsing of Universal Dependencies English-EWT: Dozat & Manning's biaffine parser on
minilm-l6 (and, optionally, our AWD-LSTM), fine-tuned on EWT train, scored on EWT test.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/ud_parsing.py [--methods minilm,awd_lstm]
        [--lm runs/lm/best] [--seeds 0] [--precision bf16]

Each method is one ``transferlab finetune --task ud-ewt --task-kind parse`` command line
(:mod:`transferlab.tasks.parse`: first piece of each word, a learned ROOT, arc MLPs of 500 and
relation MLPs of 100, Chu-Liu/Edmonds decoding with one root child):

- ``minilm``: ``--encoder minilm-l6`` with the Hugging Face defaults of ``configs/defaults_hf.toml``
  (AdamW 5e-5 for encoder and head alike, linear decay after 10% warm-up, batch 32), 5 epochs,
  ``max_len`` 256 pieces so that no EWT sentence (159 words at most) is cut;
- ``awd_lstm``: our AWD-LSTM, from a ``pretrain lm`` checkpoint (``--lm``, through ULMFiT's
  target-task LM stage on EWT's text) or from scratch (the ``small`` preset's sizes) without one.
  Left to right only: a word's vector knows nothing of the words after it, so expect it well
  below a bidirectional encoder.

The model kept is the last epoch's. Figures per method (means over seeds): ``METHOD_uas``,
``METHOD_las`` over all words with relations compared by their universal part, as the CoNLL 2018
shared task's conll18_ud_eval.py scores gold-tokenized input, and ``METHOD_uas_nopunct``,
``METHOD_las_nopunct`` without the words whose gold UPOS is PUNCT (the classic PTB convention),
with wall times. One JSON line per finished run in ``<out>/runs.jsonl``, keyed by method, seed and
``--precision`` (``bf16``: bf16 autocast on a CPU with native bf16); a rerun skips what is there,
and an interrupted run resumes from its last checkpoint (saved every 10 minutes). ``--labels N``
trains on N sentences (a smoke run; its results are not a benchmark).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import append_row, finished_rows, write_result  # noqa: E402

from transferlab.recipes import finetune  # noqa: E402

FIGURES = ("uas", "las", "uas_nopunct", "las_nopunct")
COMMON = ['data.task="ud-ewt"', 'task.kind="parse"', "train.log_every=100", "train.progress=false",
          "train.save_minutes=10"]
METHODS = {
    "minilm": ['encoder="minilm-l6"', "data.max_len=256", "train.epochs=5"],
    "awd_lstm": ['encoder="awd_lstm"', "data.max_len=0", "train.epochs=10"],
}


def overrides(method: str, lm: str, labels: int, epochs: int) -> tuple[str | None, list[str]]:
    """The preset and overrides of one method's finetune run."""
    extra = [f"data.train_size={labels}"] if labels else []
    extra += [f"train.epochs={epochs}"] if epochs else []
    if method == "awd_lstm":
        return ("small", [*METHODS[method], f'pretrained="{lm}"', *extra]) if lm else ("small",
                                                                                       [*METHODS[method], *extra])
    return None, [*METHODS[method], *extra]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", default="minilm", help=f"comma-separated: {', '.join(METHODS)}")
    ap.add_argument("--lm", default="", help="awd_lstm: a `pretrain lm` checkpoint (else from scratch)")
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--labels", type=int, default=0, help="train on this many sentences (0 = all 12,544)")
    ap.add_argument("--epochs", type=int, default=0, help="override every method's epochs (0 = theirs)")
    ap.add_argument("--valid-size", type=int, default=0, help="score at most this many dev sentences per epoch")
    ap.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="runs/bench/ud-parsing")
    args = ap.parse_args()
    out, methods = Path(args.out), args.methods.split(",")
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        ap.error(f"unknown method(s) {', '.join(unknown)}: choose from {', '.join(METHODS)}")
    log = out / "runs.jsonl"
    rows = finished_rows(log, "method", "seed", precision=args.precision)
    suffix = "" if args.precision == "auto" else f"-{args.precision}"
    for seed in map(int, args.seeds.split(",")):
        for method in methods:
            if (method, seed) in rows:
                continue
            preset, own = overrides(method, args.lm, args.labels, args.epochs)
            cfg = finetune.load_finetune_config(preset, [
                *COMMON, *own, f"train.seed={seed}", f"train.threads={args.threads}",
                f'train.precision="{args.precision}"', f"data.valid_size={args.valid_size}",
                f'out="{out / f"{method}-{seed}{suffix}"}"'])
            s = finetune.run(cfg)
            row = {"method": method, "seed": seed, "precision": args.precision, **{k: s[f"test_{k}"] for k in FIGURES},
                   "valid_las": s["valid"]["las"], "wall_s": s["wall_s"], "train_size": s["train_size"],
                   "steps": s["steps"], "encoder": s["encoder"], "pretrained": s["pretrained"]}
            rows[(method, seed)] = row
            append_row(log, row)
            print(json.dumps(row), flush=True)
    figures = {}
    for method in methods:
        runs = [r for (m, _), r in sorted(rows.items()) if m == method]
        for k in FIGURES:
            figures[f"{method}_{k}"] = statistics.mean(r[k] for r in runs)
        figures[f"{method}_wall_s"] = statistics.mean(r["wall_s"] for r in runs)
        print(f"{method:<9} UAS {100 * figures[f'{method}_uas']:.2f}  LAS {100 * figures[f'{method}_las']:.2f}  "
              f"(no punct.: UAS {100 * figures[f'{method}_uas_nopunct']:.2f}  LAS "
              f"{100 * figures[f'{method}_las_nopunct']:.2f}; {len(runs)} seed(s))")
    write_result("ud_parsing", figures, runs=sorted(rows.values(), key=lambda r: (r["method"], r["seed"])),
                 labels=args.labels or "all", lm=args.lm or None, precision=args.precision)


if __name__ == "__main__":
    main()
