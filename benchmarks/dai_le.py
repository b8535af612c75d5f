"""Dai & Le (2015), "Semi-supervised Sequence Learning", on SST-2: a classifier AWD-LSTM fine-tuned
from random weights, from a sequence autoencoder (SA-LSTM) and from a language model (LM-LSTM),
with 1,000 labels and all labels, 3 seeds. The paper's claim: SA-LSTM init beats random init, and
LM-LSTM init.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/dai_le.py \\
        [--sa runs/bench/sa-small/best] [--lm runs/bench/lm-1h/best] [--sizes 1000,0] [--seeds 0,1,2]

1. The SA-LSTM: ``--sa DIR`` (default ``runs/bench/sa-small/best``); when its run folder holds no
   finished run, ``transferlab pretrain sa --preset small --out runs/bench/sa-small`` is run first
   (about an hour on one core, general-en: ``transferlab data build general-en``); an interrupted
   pretraining resumes from its last checkpoint.
2. The LM-LSTM: ``--lm DIR`` (default ``runs/bench/lm-1h/best``), a ``transferlab pretrain lm
   --budget 1h`` checkpoint: the same corpus, vocabulary and AWD-LSTM shape as the SA preset.
3. For each size and seed, ``transferlab finetune --encoder awd_lstm`` on SST-2 (``--preset``, the
   ULMFiT classifier recipe: discriminative rates, slanted triangular, gradual unfreezing) with
   ``--pretrained`` the SA-LSTM, the LM-LSTM, or none (scratch: the same AWD-LSTM shape, random
   weights, the task's vocabulary). As in the paper, the classifier starts straight from the
   pretrained weights: ULMFiT's target-task LM stage is off for both pretrained arms (``--lm-finetune``
   turns it on for both).

One JSON line per finished run in ``<out>/runs.jsonl``; a rerun skips the cells already there.
Figures (test accuracy = GLUE dev, 872 sentences; means over seeds, ``_sd`` their standard
deviations): ``scratch_acc_1000``, ``sa_acc_1000``, ``lm_acc_1000``, ``*_all``, and the gains in
points: ``sa_gain_1000`` (SA over scratch), ``lm_gain_1000`` (LM over scratch), ``sa_vs_lm_1000``
(SA over LM), and the same for ``_all``; plus the SA-LSTM's held-out reconstruction figures.

A smoke test in minutes: ``--sizes 50 --seeds 0 --preset tiny --sa-preset tiny --sa /tmp/sa/best
--lm A_TINY_LM/best``.
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
from transferlab.recipes import finetune, pretrain_sa  # noqa: E402

METHODS = ("scratch", "sa", "lm")
SHAPE = ("dim", "hidden_dim", "n_layers")


def size_name(size: int) -> str:
    return "all" if size == 0 else str(size)


def pretrain_sa_lstm(checkpoint: Path, preset: str, threads: int) -> dict:
    """The SA-LSTM's results.json, pretraining it (``pretrain sa --preset PRESET``, resuming an
    interrupted run) when its run folder holds no finished run."""
    run = checkpoint.parent
    done = run / "results.json"
    if not done.exists():
        print(f"pretraining the sequence autoencoder in {run} (--preset {preset})", flush=True)
        cfg = load_config(pretrain_sa.PretrainSAConfig, preset,
                          [f'out="{run}"', "resume=true", f"train.threads={threads}", "train.progress=false"],
                          kind="sa")
        pretrain_sa.run(cfg)
    return json.loads(done.read_text())


def shape(checkpoint: str | Path) -> dict:
    return {k: json.loads((Path(checkpoint) / "config.json").read_text())["awd_lstm"][k] for k in SHAPE}


def finetune_cell(args, method: str, size: int, seed: int, out: Path) -> dict:
    overrides = ['data.task="sst2"', f"data.train_size={size}", f"data.subset_seed={seed}", f"train.seed={seed}",
                 f"train.threads={args.threads}", "train.progress=false", "lm_finetune.train.progress=false",
                 f"lm_finetune.enabled={str(args.lm_finetune).lower()}", f'out="{out}"']
    if method == "scratch":  # the pretrained models' AWD-LSTM, from random weights
        overrides += [f"awd_lstm.{k}={v}" for k, v in shape(args.sa).items()]
    else:
        overrides.append(f'pretrained="{args.sa if method == "sa" else args.lm}"')
    return finetune.run(finetune.load_finetune_config(args.preset, overrides))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sa", default="runs/bench/sa-small/best",
                    help="the SA-LSTM checkpoint folder; pretrained with --sa-preset when its run is missing")
    ap.add_argument("--sa-preset", default="small", help="the `pretrain sa` preset of a missing SA-LSTM")
    ap.add_argument("--lm", default="runs/bench/lm-1h/best",
                    help="the LM-LSTM checkpoint folder (`transferlab pretrain lm --budget 1h`)")
    ap.add_argument("--out", default="runs/bench/dai-le")
    ap.add_argument("--preset", default="small", help="the finetune preset of every cell")
    ap.add_argument("--sizes", default="1000,0", help="label counts; 0 = all")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the pretraining and of each cell")
    ap.add_argument("--lm-finetune", action="store_true",
                    help="target-task LM fine-tuning (ULMFiT's stage 2) before both pretrained arms")
    ap.add_argument("--record", default="dai_le", help="the results/NAME.json to write")
    args = ap.parse_args()
    if not (Path(args.lm) / "model.safetensors").exists():
        ap.error(f"--lm {args.lm}: no checkpoint there; make one with `transferlab pretrain lm --budget 1h "
                 f"--out {Path(args.lm).parent}` (or name another `pretrain lm` checkpoint)")
    sizes, seeds = [int(s) for s in args.sizes.split(",")], [int(s) for s in args.seeds.split(",")]
    sa = pretrain_sa_lstm(Path(args.sa), args.sa_preset, args.threads)
    if shape(args.sa) != shape(args.lm):
        print(f"warning: the SA-LSTM {shape(args.sa)} and the LM-LSTM {shape(args.lm)} differ in shape", flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    finished = finished_rows(log, "method", "size", "seed")
    # small sizes first, the long all-labels runs last
    for size in sorted(sizes, key=lambda s: (s == 0, s)):
        for seed in seeds:
            for method in METHODS:
                if (method, size, seed) in finished:
                    continue
                s = finetune_cell(args, method, size, seed, out / f"{method}-{size_name(size)}-{seed}")
                row = {"method": method, "size": size, "seed": seed, "test_accuracy": s["test_accuracy"],
                       "wall_s": s["wall_s"], "train_size": s["train_size"]}
                append_row(log, row)
                finished[(method, size, seed)] = row
                print(json.dumps(row), flush=True)

    figures: dict[str, float | None] = {}
    seeds_per_cell: dict[str, int] = {}
    for size in sizes:
        name = size_name(size)
        for method in METHODS:
            accs = [r["test_accuracy"] for (m, s, _), r in finished.items() if m == method and s == size]
            key = f"{method}_acc_{name}"
            figures[key] = statistics.mean(accs) if accs else None
            figures[f"{key}_sd"] = statistics.stdev(accs) if len(accs) > 1 else None
            seeds_per_cell[key] = len(accs)
        acc = {m: figures[f"{m}_acc_{name}"] for m in METHODS}
        for key, a, b in ((f"sa_gain_{name}", "sa", "scratch"), (f"lm_gain_{name}", "lm", "scratch"),
                          (f"sa_vs_lm_{name}", "sa", "lm")):
            figures[key] = None if acc[a] is None or acc[b] is None else 100 * (acc[a] - acc[b])
    figures |= {"sa_valid_ppl": sa["valid_ppl"], "sa_valid_accuracy": sa["valid_accuracy"],
                "sa_test_ppl": sa["test_ppl"], "sa_wall_s": sa.get("wall_s_total", sa["wall_s"])}
    print(f"{'figure':<22} {'value':>8}")
    for key, value in figures.items():
        print(f"{key:<22} {'-' if value is None else f'{value:.4f}':>8}")
    lm_results = Path(args.lm).parent / "results.json"
    write_result(args.record, figures, seeds=seeds_per_cell, sa=sa, sa_checkpoint=args.sa, lm_checkpoint=args.lm,
                 lm=json.loads(lm_results.read_text()) if lm_results.exists() else None, preset=args.preset,
                 lm_finetune=args.lm_finetune,
                 runs=sorted(finished.values(), key=lambda r: (r["size"] == 0, r["size"], r["method"], r["seed"])))


if __name__ == "__main__":
    main()
