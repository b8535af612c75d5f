"""The SentEval table: every sentence encoder of the library under one protocol (Conneau & Kiela 2018).

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/senteval_table.py \\
        [--encoders glove,minilm,sa,skipthought,quickthought,paragram,infersent,gensen,elmo,mlm] \\
        [--train] [--max-examples 10000] [--threads 2]

For each encoder, ``transferlab senteval`` (frozen encoder, its own sentence vector under
``--pooling auto``, logistic regression with L2 chosen on dev or by 10-fold CV; STS-B and SICK-R
as the Pearson correlation of cosines) over SST-2, MRPC, CoLA, AG News, SICK-E, SICK-R and STS-B,
each split capped at ``--max-examples`` (a fixed random subset; 0 = all). The encoders:

- ``glove``: the mean of glove-6b-50d vectors (the bag-of-words baseline);
- ``minilm``: all-MiniLM-L6-v2, mean pooling (trained on a billion pairs that include NLI:
  an optimistic reference, not a peer of the rest);
- trained here with their ``small`` preset (``--train`` trains a missing one; each resumes):
  ``sa`` (Dai & Le's SA-LSTM, ``pretrain sa``; its mean-pooled states), ``skipthought``,
  ``quickthought``, ``paragram`` (``pretrain paraphrase``), ``infersent`` (``pretrain nli``),
  ``gensen``;
- ``elmo`` (``pretrain bilm --preset small``) and ``mlm`` (``pretrain mlm --budget 1h``): our
  contextual encoders, where their checkpoints exist: ELMo's layers averaged (``--pooling
  layers``, its paper's mix without task weights) and mean-pooled, the MLM's top layer mean-pooled.

An encoder without a finished run (and not trained) is listed as skipped. Figures:
``ENCODER_TASK`` (accuracy or Pearson, 0-1), and ``published_infersent`` (Conneau et al. 2017's
SentEval figures, for the corpus-size comparison: their encoder read 570k SNLI pairs with 300-d
GloVe 840B, ours 4.5k SICK pairs with 50-d GloVe 6B). ``senteval_table.png``: a grouped bar chart.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import grouped_bars, write_result  # noqa: E402

from transferlab.config import load_config  # noqa: E402

TASKS = "sst2,mrpc,cola,agnews,sick-e,sick-r,stsb"
PUBLISHED_INFERSENT = {"MR": 81.1, "SST": 84.6, "TREC": 88.2, "SICK-E": 86.1}
# name -> (checkpoint, the pretrain objective and preset that makes it)
TRAINED = {
    "sa": ("runs/bench/sa-small/best", "sa", "small"),
    "skipthought": ("runs/bench/skipthought-small/best", "skipthought", "small"),
    "quickthought": ("runs/bench/quickthought-small/best", "quickthought", "small"),
    "paragram": ("runs/bench/paraphrase-small/best", "paraphrase", "small"),
    "infersent": ("runs/bench/nli-small/best", "nli", "small"),
    "gensen": ("runs/bench/gensen-small/best", "gensen", "small"),
    "elmo": ("runs/bench/bilm-small/best", "bilm", "small"),
    "mlm": ("runs/bench/mlm-1h/best", "mlm", "1h"),
}
LOADED = {"glove": "glove-6b-50d", "minilm": "minilm-l6"}
POOLING = {"sa": "mean", "elmo": "layers", "mlm": "mean", "minilm": "mean", "glove": "mean"}


def train(objective: str, preset: str, checkpoint: Path, threads: int) -> None:
    """``transferlab pretrain OBJECTIVE --preset PRESET --out RUN`` (resumed if begun)."""
    import importlib

    from transferlab.cli import PRETRAIN_OBJECTIVES

    module, name = PRETRAIN_OBJECTIVES[objective][1]
    recipe = importlib.import_module(module)
    run = checkpoint.parent
    overrides = [f'out="{run}"', f"resume={str((run / 'last').exists()).lower()}", f"train.threads={threads}"]
    recipe.run(load_config(getattr(recipe, name), preset, overrides, kind=objective))


def chart(rows: dict[str, dict[str, float]], tasks: list[str], path: Path) -> None:
    grouped_bars(tasks, {name: [(100 * r.get(t, 0.0), 0.0) for t in tasks] for name, r in rows.items()}, path,
                 ylabel="accuracy / Pearson x 100", title="SentEval protocol: frozen sentence encoders", ylim=(0, 100))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoders", default=",".join([*LOADED, *TRAINED]))
    ap.add_argument("--tasks", default=TASKS)
    ap.add_argument("--train", action="store_true", help="pretrain a missing encoder with its preset first")
    ap.add_argument("--max-examples", type=int, default=10000, help="cap on each split (0 = all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="runs/bench/senteval")
    args = ap.parse_args()
    from transferlab.recipes import senteval

    out, tasks = Path(args.out), args.tasks.split(",")
    rows, skipped, details = {}, {}, {}
    for name in args.encoders.split(","):
        if name in LOADED:
            spec = LOADED[name]
        elif name in TRAINED:
            path, objective, preset = TRAINED[name]
            spec = path
            # a finished run has results.json; `best` exists from the first evaluation on, and an
            # interrupted run's is a half-trained encoder: it is resumed (--train) or skipped, never scored
            finished = (Path(path).parent / "results.json").exists()
            if not finished and args.train:
                train(objective, preset, Path(path), args.threads)
                finished = True
            if not finished:
                skipped[name] = (f"no finished run at {Path(path).parent} (transferlab pretrain {objective} "
                                 f"--preset {preset}; --train runs or resumes it)")
                print(f"{name}: skipped, {skipped[name]}", flush=True)
                continue
        else:
            ap.error(f"unknown encoder {name!r}: choose from {', '.join([*LOADED, *TRAINED])}")
        cfg = load_config(senteval.SentEvalConfig, None, [
            f'encoder="{spec}"', f'tasks="{args.tasks}"', f"max_examples={args.max_examples}",
            f'pooling="{POOLING.get(name, "auto")}"', f"threads={args.threads}", "progress=false",
            f'out="{out / name}"'])
        result = senteval.run(cfg)
        rows[name] = {t: r["score"] for t, r in result["tasks"].items()}
        details[name] = {"spec": spec, "dim": result["dim"], "pooling": result["pooling"],
                         "wall_s": result["wall_s"]}
    figures = {f"{name}_{t}": v for name, r in rows.items() for t, v in r.items()}
    header = "| encoder | dim | " + " | ".join(tasks) + " |"
    lines = [header, "|---" * (len(tasks) + 2) + "|"]
    for name, r in rows.items():
        cells = " | ".join(f"{100 * r[t]:.1f}" if t in r else "-" for t in tasks)
        lines.append(f"| {name} | {details[name]['dim']} | {cells} |")
    print("\n".join(lines))
    if rows:
        chart(rows, tasks, Path(__file__).parent / "senteval_table.png")
    write_result("senteval_table", figures, encoders=details, skipped=skipped, max_examples=args.max_examples,
                 published_infersent=PUBLISHED_INFERSENT, table=lines)
    print(json.dumps(skipped, indent=1) if skipped else "all encoders scored")


if __name__ == "__main__":
    main()
