"""What CoVe adds to GloVe on SST-2 (McCann et al. 2017 report +0.5 to +3 points on classification).

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/cove_sst2.py \\
        [--mt runs/bench/mt-small/best] [--sizes 1000,0] [--seeds 0,1,2] [--threads 2]

One frozen encoder, two readings of it: the MT-LSTM of a ``transferlab pretrain mt`` checkpoint
(trained with ``--preset small`` when the folder holds none), whose layers are ``[GloVe; 0]``,
``[GloVe; biLSTM 1]`` and ``[GloVe; biLSTM 2]``:

- ``glove``: the scalar mix over layer 0 only (``--features_layers=[0]``): GloVe alone, same
  vocabulary, same width, same head;
- ``cove``: the mix over all three layers: ``[GloVe; CoVe]``.

Both train only the mix and ULMFiT's pooling head (concat of last, max and mean states; a
50-unit layer) with ``--adapt=features`` on the first N SST-2 training sentences (N = 1,000 and
all; a fixed random subset per seed), best epoch on valid, accuracy on the 872 test sentences.
The paper's classifier is a biattentive network over the features (BCN), stronger than a pooled
MLP: the comparison here is the features, not the head.

One JSON line per finished cell in ``<out>/runs.jsonl`` (a rerun skips what is there). Figures:
``glove_acc_N``, ``cove_acc_N`` (mean over seeds), their ``_sd``, and ``cove_gain_N``.
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
from transferlab.recipes import finetune, pretrain_mt  # noqa: E402

METHODS = {"glove": ["features_layers=[0]"], "cove": []}


def mt_model(checkpoint: Path, threads: int) -> dict:
    """The MT run's results.json, training it (``--preset small``) when missing."""
    run = checkpoint.parent
    if not (run / "results.json").exists():
        pretrain_mt.run(load_config(pretrain_mt.PretrainMTConfig, "small",
                                    [f'out="{run}"', "resume=true", f"train.threads={threads}"], kind="mt"))
    return json.loads((run / "results.json").read_text())


def cell(mt: str, method: str, size: int, seed: int, out: Path, threads: int) -> dict:
    cfg = finetune.load_finetune_config(None, [
        'encoder="cove"', f'pretrained="{mt}"', 'adapt="features"', 'data.task="sst2"', f"data.train_size={size}",
        f"data.subset_seed={seed}", "train.epochs=10", f"train.seed={seed}", f"train.threads={threads}",
        "train.log_every=0", "train.progress=false", f'out="{out}"', *METHODS[method]])
    return finetune.run(cfg)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mt", default="runs/bench/mt-small/best", help="a `pretrain mt` checkpoint")
    ap.add_argument("--sizes", default="1000,0", help="training labels; 0 = all")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="runs/bench/cove-sst2")
    args = ap.parse_args()
    out = Path(args.out)
    model = mt_model(Path(args.mt), args.threads)
    log = out / "runs.jsonl"
    rows = finished_rows(log, "method", "size", "seed")
    sizes = [int(s) for s in args.sizes.split(",")]
    for size in sizes:
        for seed in map(int, args.seeds.split(",")):
            for method in METHODS:
                if (method, size, seed) in rows:
                    continue
                s = cell(args.mt, method, size, seed, out / f"{method}-{size}-{seed}", args.threads)
                row = {"method": method, "size": size, "seed": seed, "acc": s["test_accuracy"],
                       "train_size": s["train_size"], "wall_s": s["wall_s"]}
                rows[(method, size, seed)] = row
                append_row(log, row)
                print(json.dumps(row), flush=True)
    figures = {}
    for size in sizes:
        name = "all" if size == 0 else str(size)
        for method in METHODS:
            acc = [r["acc"] for (m, n, _), r in sorted(rows.items()) if m == method and n == size]
            if acc:
                figures[f"{method}_acc_{name}"] = statistics.mean(acc)
                figures[f"{method}_acc_{name}_sd"] = statistics.stdev(acc) if len(acc) > 1 else 0.0
        if f"cove_acc_{name}" in figures and f"glove_acc_{name}" in figures:
            figures[f"cove_gain_{name}"] = figures[f"cove_acc_{name}"] - figures[f"glove_acc_{name}"]
            print(f"SST-2 @ {name}: GloVe {100 * figures[f'glove_acc_{name}']:.1f}, GloVe+CoVe "
                  f"{100 * figures[f'cove_acc_{name}']:.1f} ({100 * figures[f'cove_gain_{name}']:+.1f})")
    write_result("cove_sst2", figures, mt=model,
                 runs=sorted(rows.values(), key=lambda r: (r["size"], r["method"], r["seed"])))


if __name__ == "__main__":
    main()
