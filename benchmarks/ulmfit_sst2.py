"""ULMFiT on SST-2 with 100, 1,000 and all labels, 3 seeds, against the same model from scratch,
and the paper's ablation at 1,000 labels: ULMFiT without discriminative learning rates,
without slanted triangular learning rates, without gradual unfreezing.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/ulmfit_sst2.py \
        --pretrained runs/bench/lm-1h/best [--sizes 100,1000,0] [--seeds 0,1,2] [--threads 1]

One JSON line per finished run in ``<out>/runs.jsonl``; a rerun skips the cells already there.
The target-task LM fine-tuning on SST-2's text (labels unused) is done once and shared.
Targets (issue 17, LM from `pretrain lm --budget 1h` on general-en): with 1,000 labels at least
75% and at least 5 points above scratch; with 100 labels at least 8 points above scratch; with all
labels at least scratch. Scratch is the same AWD-LSTM (the pretrained one's sizes) from random
weights, with the same classifier recipe.
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

ABLATIONS = {"no_discr": "ulmfit.discriminative=false", "no_stlr": "ulmfit.stlr=false",
             "no_unfreeze": "ulmfit.gradual_unfreeze=false"}


def cells(sizes: list[int], seeds: list[int], all_seeds: list[int],
          ablations: bool = True) -> list[tuple[str, int, int]]:
    """Small sizes first, then the ablations at 1,000 labels, then all labels (the long runs)."""
    grid = [(m, size, seed) for size in sizes if size for seed in seeds for m in ("ulmfit", "scratch")]
    grid += [(m, 1000, seed) for seed in seeds for m in ABLATIONS] if ablations else []
    if 0 in sizes:
        grid += [(m, 0, seed) for seed in all_seeds for m in ("ulmfit", "scratch")]
    return grid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pretrained", required=True, help="the pretrained language-model checkpoint folder "
                    "(`pretrain lm --budget 1h`); scratch cells build the same AWD-LSTM from random weights")
    ap.add_argument("--out", default="runs/bench/ulmfit-sst2")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--sizes", default="100,1000,0", help="label counts; 0 = all")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--all-seeds", default=None,
                    help="seeds for the all-labels cells (each run is long on a CPU); default --seeds")
    ap.add_argument("--no-ablations", action="store_true", help="skip the ablation cells at 1,000 labels")
    ap.add_argument("--record", default="ulmfit_sst2", help="the results/NAME.json to write")
    ap.add_argument("--threads", type=int, default=0, help="train.threads (0 = torch's default)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    sizes = [int(s) for s in args.sizes.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    all_seeds = [int(s) for s in (args.all_seeds or args.seeds).split(",")]
    finished = finished_rows(log, "method", "size", "seed")
    arch = json.loads((Path(args.pretrained) / "config.json").read_text())["awd_lstm"]
    for method, size, seed in cells(sizes, seeds, all_seeds, not args.no_ablations):
        if (method, size, seed) in finished:
            continue
        overrides = [f"data.train_size={size}", f"data.subset_seed={seed}", f"train.seed={seed}",
                     f'lm_finetune.out="{out / "lm-sst2"}"', f'out="{out / f"{method}-{size}-{seed}"}"',
                     f"train.threads={args.threads}"]
        if method != "scratch":
            overrides.append(f'pretrained="{args.pretrained}"')
        else:  # the same AWD-LSTM as the pretrained one, from random weights
            overrides += [f"awd_lstm.{k}={arch[k]}" for k in ("dim", "hidden_dim", "n_layers")]
        if method in ABLATIONS:
            overrides.append(ABLATIONS[method])
        cfg = finetune.load_finetune_config(args.preset, overrides)
        summary = finetune.run(cfg)
        row = {"method": method, "size": size, "seed": seed, "test_accuracy": summary["test_accuracy"],
               "wall_s": summary["wall_s"], "train_size": summary["train_size"]}
        append_row(log, row)
        finished[(method, size, seed)] = row
        print(json.dumps(row), flush=True)

    def accs(method: str, size: int) -> list[float]:
        return [r["test_accuracy"] for (m, s, _), r in finished.items() if m == method and s == size]

    figures, seeds_per_cell, std = {}, {}, {}
    cells_named = [(size, name, method) for size, name in ((100, "100"), (1000, "1000"), (0, "all"))
                   for method in ("ulmfit", "scratch")]
    cells_named += [(1000, "1000", method) for method in ABLATIONS]
    for size, name, method in cells_named:
        key, values = f"acc_{name}_{method}", accs(method, size)
        figures[key] = statistics.mean(values) if values else None
        seeds_per_cell[key] = len(values)
        std[key] = statistics.stdev(values) if len(values) > 1 else None
    print(f"{'figure':<24} {'mean':>7} {'std':>7} seeds")
    for key, value in figures.items():
        shown = "-" if value is None else f"{100 * value:.1f}%"
        spread = "-" if std[key] is None else f"{100 * std[key]:.1f}"
        print(f"{key:<24} {shown:>7} {spread:>7} {seeds_per_cell[key]}")
    for name in ("100", "1000", "all"):
        a, b = figures[f"acc_{name}_ulmfit"], figures[f"acc_{name}_scratch"]
        figures[f"gain_{name}_points"] = None if a is None or b is None else 100 * (a - b)
    write_result(args.record, figures, seeds=seeds_per_cell, std=std, pretrained=args.pretrained,
                 preset=args.preset,
                 runs=sorted(finished.values(), key=lambda r: (r["size"], r["method"], r["seed"])))


if __name__ == "__main__":
    main()
