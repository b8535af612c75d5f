"""The ways to adapt a pretrained Transformer, side by side: minilm-l6 on SST-2 (1,000 labels and all
of them), CoLA and MRPC, 3 seeds each, mean and standard deviation.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/adaptation_table.py \\
        [--tasks sst2,cola,mrpc] [--sizes 1000,0] [--methods full,...] [--seeds 0,1,2] [--epochs N] \\
        [--precision auto] [--threads 2] [--report-only]

Every cell is one ``transferlab finetune --encoder minilm-l6`` command line (the Hugging Face
defaults of ``configs/defaults_hf.toml``: AdamW at 5e-5, batch 32) that differs from the others
only as its row says:

- ``full``: full fine-tuning at a constant learning rate, none of the ULMFiT techniques;
- ``discriminative``: + discriminative learning rates (Howard & Ruder 2018: lr / 2.6 per layer
  group going down, the embeddings and six blocks below the head);
- ``stlr``: + slanted triangular learning rates (cut_frac 0.1, ratio 32) instead of the constant rate;
- ``gradual_unfreeze``: + gradual unfreezing (the head first, one more group from the top each
  epoch: with E epochs the top E of the 8 groups train, so a 1- or 3-epoch task leaves the lower
  blocks where pretraining left them: the schedule as ULMFiT defines it);
- ``ulmfit``: all three;
- ``adapters``: Houlsby et al. 2019's bottleneck adapters of size 64 in every block, the rest frozen
  (``--adapt=adapters``, at that mode's default rate);
- ``features``: the encoder frozen, ELMo's scalar mix of its layers, mean pooling over the pieces,
  one linear layer (``--adapt=features``, 1e-3, 10 epochs: after the first, an epoch costs only the
  head, the layers being cached);
- ``aux_lm``: ``full`` plus GPT's auxiliary LM loss (Radford et al. 2018), lambda 0.5: a masked-LM
  loss on each batch's own text, minilm-l6 having no MLM head of its own (a new one, tied).

``--methods discriminative_095`` adds a row the default table leaves out: discriminative rates at
Sun et al. 2019's factor for BERT (0.95 per layer) instead of ULMFiT's 1/2.6.

Tasks and epochs (those of ``mlm_transfer.py`` and ``minilm_glue.py``): SST-2 with 1,000 labels
(a fixed subset per seed, 10 epochs) and all 67k (1 epoch), accuracy on the GLUE dev set (the
catalog's test split); CoLA (3 epochs), Matthews correlation on the GLUE dev set; MRPC (3
epochs), F1 of the paraphrase class on its test set. ``--sizes`` gives every chosen task those
label counts instead (0 = all), ``--epochs`` every cell that many epochs.

``--precision bf16`` runs every cell under bf16 autocast (1.6x on a CPU with native bf16; the
default, ``auto``, is fp32 on a CPU); the precision is part of each cell's key, so a table never
mixes the two. One JSON line per finished cell in ``benchmarks/results/adaptation_table.jsonl``
(``--log``; committed, so the table's 8-10 hours can be run in pieces across sessions and fresh
checkouts); a rerun skips the cells already there, and an interrupted cell resumes from its last
checkpoint under ``--out`` (saved every 10 minutes) while that folder survives; ``--report-only``
runs no cell and reports the log's (a table in progress shows ``-`` where a cell is missing). A
cell that fails (a method this checkout lacks) is named with its error and the others go on; the
script then exits with status 1. Figures (``results/adaptation_table.json``): ``<task>_<method>``
and ``<task>_<method>_sd`` for task ``sst2_1000``, ``sst2``, ``cola``, ``mrpc``, and
``trainable_share_<method>`` (the share of the model's parameters the method trains, head
included, the mean over its cells: Houlsby et al. report 3.6% for their adapters; the table gives
the range where it differs by task, gradual unfreezing reaching the top E of the 8 groups in E
epochs); the table; the chart ``adaptation_table.png`` (methods x tasks).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from common import append_row, finished_rows, grouped_bars, write_result  # noqa: E402

from transferlab.recipes import finetune  # noqa: E402

# task -> (the summary key it reads, the metric's name, label counts (0 = all), epochs per count, max_len)
TASKS = {
    "sst2": ("test_accuracy", "accuracy", (1000, 0), {1000: 10, 0: 1}, 64),
    "cola": ("test_mcc", "MCC", (0,), {0: 3}, 64),
    "mrpc": ("test_f1", "F1", (0,), {0: 3}, 128),
}
CONSTANT = ["ulmfit.discriminative=false", "ulmfit.stlr=false", "ulmfit.gradual_unfreeze=false"]
STLR = ["ulmfit.stlr=true", 'train.schedule="slanted_triangular"']
METHODS = {
    "full": CONSTANT,
    "discriminative": [*CONSTANT, "ulmfit.discriminative=true"],
    "stlr": [*CONSTANT, *STLR],
    "gradual_unfreeze": [*CONSTANT, "ulmfit.gradual_unfreeze=true"],
    "ulmfit": ["ulmfit.discriminative=true", "ulmfit.gradual_unfreeze=true", *STLR],
    "adapters": ['adapt="adapters"', "adapters.size=64"],
    "features": ['adapt="features"', "features_cache_gb=8"],
    "aux_lm": [*CONSTANT, "aux_lm=0.5"],
}
# Rows run only when --methods names them: the context a row of the table above needs.
# ``discriminative_095``: Sun et al. 2019's factor for BERT (each layer 0.95 times the rate of the one
# above) instead of ULMFiT's 1/2.6, which over 8 groups leaves the embeddings at 1/800 of the top rate.
EXTRA_METHODS = {
    "discriminative_095": [*CONSTANT, "ulmfit.discriminative=true", f"ulmfit.decay={1 / 0.95}"],
}
ALL_METHODS = {**METHODS, **EXTRA_METHODS}
FEATURES_EPOCHS = 10


def label(task: str, size: int) -> str:
    return f"{task}_{size}" if size else task


def cell(task: str, size: int, method: str, seed: int, out: Path, epochs: int | None, threads: int,
         precision: str) -> dict:
    _, _, _, task_epochs, max_len = TASKS[task]
    n = epochs or (FEATURES_EPOCHS if method == "features" else task_epochs.get(size, task_epochs[0]))
    cfg = finetune.load_finetune_config(None, [
        'encoder="minilm-l6"', f'data.task="{task}"', f"data.train_size={size}", f"data.subset_seed={seed}",
        f"data.max_len={max_len}", f"train.epochs={n}", f"train.seed={seed}", f"train.threads={threads}",
        f'train.precision="{precision}"', "train.save_minutes=10", "train.log_every=0", "train.progress=false",
        *ALL_METHODS[method], f'out="{out}"'])
    return finetune.run(cfg)


def chart(figures: dict, tasks: list[str], methods: list[str], metrics: dict[str, str], path: Path) -> None:
    series = {m: [(100 * figures.get(f"{t}_{m}", float("nan")), 100 * figures.get(f"{t}_{m}_sd", 0.0)) for t in tasks]
              for m in methods}
    grouped_bars([f"{t}\n({metrics[t]})" for t in tasks], series, path,
                 ylabel="score x 100 (mean of seeds, sd bars)", title="minilm-l6: ways to adapt a pretrained encoder")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--sizes", default="", help="label counts for every chosen task (0 = all); default: each "
                                                "task's own (SST-2: 1000 and all; CoLA, MRPC: all)")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--epochs", type=int, default=0, help="every cell's epochs (0 = each task's and method's own)")
    ap.add_argument("--out", default="runs/bench/adaptation-table")
    ap.add_argument("--record", default="adaptation_table", help="the results/NAME.json to write")
    ap.add_argument("--log", default=str(Path(__file__).parent / "results" / "adaptation_table.jsonl"),
                    help="the finished cells, kept in the repository so the table resumes in a fresh checkout")
    ap.add_argument("--chart", default=str(Path(__file__).parent / "adaptation_table.png"))
    ap.add_argument("--threads", type=int, default=2, help="torch threads of each fine-tuning run")
    ap.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16"],
                    help="every cell's train.precision")
    ap.add_argument("--report-only", action="store_true",
                    help="run no cell: the table, figures and chart from the cells already in --log")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)  # the record's machine line names the cells' threads, report-only too
    tasks, methods = args.tasks.split(","), args.methods.split(",")
    for kind, chosen, known in (("task", tasks, TASKS), ("method", methods, ALL_METHODS)):
        unknown = sorted(set(chosen) - set(known))
        if unknown:
            ap.error(f"unknown {kind}(s) {', '.join(unknown)}: choose from {', '.join(known)}")
    seeds = [int(s) for s in args.seeds.split(",")]
    sizes = {t: [int(s) for s in args.sizes.split(",")] if args.sizes else list(TASKS[t][2]) for t in tasks}
    out = Path(args.out)
    log = Path(args.log)
    rows = finished_rows(log, "task", "size", "method", "seed", precision=args.precision)
    failed: dict[str, str] = {}
    suffix = "" if args.precision == "auto" else f"-{args.precision}"
    for task in tasks:
        for size in sizes[task]:
            for method in methods:
                for seed in seeds:
                    key = (task, size, method, seed)
                    if key in rows or f"{label(task, size)} {method}" in failed or args.report_only:
                        continue
                    folder = out / f"{label(task, size)}-{method}-{seed}{suffix}"
                    try:
                        s = cell(task, size, method, seed, folder, args.epochs or None, args.threads, args.precision)
                    except Exception as e:  # noqa: BLE001  named below; the other cells go on
                        failed[f"{label(task, size)} {method}"] = f"{type(e).__name__}: {e}"
                        traceback.print_exc()
                        print(f"{label(task, size)} {method}: FAILED ({type(e).__name__}: {e}); the other cells "
                              f"go on", flush=True)
                        continue
                    row = {"task": task, "size": size, "method": method, "seed": seed, "precision": args.precision,
                           "score": s[TASKS[task][0]],
                           "wall_s": s["wall_s"], "steps": s["steps"], "train_size": s["train_size"],
                           "trainable_share": s["trainable_share"]}
                    rows[key] = row
                    append_row(log, row)
                    print(f"{label(task, size)} {method} seed {seed}: {row['score']:.4f} ({row['wall_s']:.0f} s)",
                          flush=True)
    figures: dict[str, float] = {}
    counts: dict[str, int] = {}  # seeds behind each mean
    columns = [(t, s) for t in tasks for s in sizes[t]]
    metrics = {label(t, s): TASKS[t][1] for t, s in columns}
    for t, s in columns:
        for m in methods:
            scores = [r["score"] for (tt, ss, mm, seed), r in rows.items()
                      if (tt, ss, mm) == (t, s, m) and seed in seeds]
            if scores:
                counts[f"{label(t, s)}_{m}"] = len(scores)
                figures[f"{label(t, s)}_{m}"] = statistics.mean(scores)
                figures[f"{label(t, s)}_{m}_sd"] = statistics.stdev(scores) if len(scores) > 1 else 0.0
    shares: dict[str, list[float]] = {}  # the share of parameters each method trains (the adapters paper: 3.6%)
    for (t, s, m, seed), r in rows.items():
        if (t, s) in columns and m in methods and seed in seeds and "trainable_share" in r:
            shares.setdefault(m, []).append(r["trainable_share"])
    for m, values in shares.items():
        figures[f"trainable_share_{m}"] = statistics.mean(values)
    names = [label(t, s) for t, s in columns]
    table = ["| method | " + " | ".join(f"{n} ({metrics[n]})" for n in names) + " | parameters trained |",
             "|---" * (len(names) + 2) + "|"]

    def mean_sd(key: str) -> str:  # a mean over fewer seeds than asked (a table in progress) says so
        text = f"{100 * figures[key]:.1f} ± {100 * figures[key + '_sd']:.1f}"
        return text if counts[key] == len(seeds) else f"{text} ({counts[key]} of {len(seeds)} seeds)"

    def share_range(values: list[float]) -> str:  # gradual unfreezing: E epochs train the top E groups
        low, high = min(values), max(values)
        return f"{100 * low:.3g}%" if high - low < 1e-4 else f"{100 * low:.3g}-{100 * high:.3g}%"

    for m in methods:
        cells = [mean_sd(f"{n}_{m}") if f"{n}_{m}" in figures else "failed" if f"{n} {m}" in failed else "-"
                 for n in names]
        trained = share_range(shares[m]) if m in shares else "-"
        table.append(f"| {m} | " + " | ".join(cells) + f" | {trained} |")
    print("\n".join(table))
    if figures:
        chart(figures, names, methods, metrics, Path(args.chart))
    write_result(args.record, figures, table=table, failed=failed, seeds=seeds, sizes=sizes, precision=args.precision,
                 epochs=args.epochs or {t: TASKS[t][3] for t in tasks}, features_epochs=args.epochs or FEATURES_EPOCHS,
                 cells=[rows[k] for k in sorted(rows) if k[0] in tasks and k[2] in methods])
    if failed:
        print("failed: " + "; ".join(f"{k}: {v}" for k, v in failed.items()), flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
