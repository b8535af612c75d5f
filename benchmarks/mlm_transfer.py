"""What masked-LM pretraining buys our Transformer: SST-2 with 1,000 labels, MRPC and CoNLL-2003
NER, pretrained against the same model from random weights, 3 seeds.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/mlm_transfer.py \\
        [--pretrained runs/bench/mlm-1h/best] [--tasks sst2,mrpc,conll2003] [--seeds 0,1,2] \\
        [--set task.pooling=mean --set task.pooler=false --out DIR --record NAME]

1. The MLM: ``--pretrained DIR`` (default ``runs/bench/mlm-1h/best``); when that folder holds no
   checkpoint, ``transferlab pretrain mlm --budget 1h --out runs/bench/mlm-1h`` is run first (a
   BERT-small, 4 x 256, WordPiece 16k, on the general-en corpus: ``transferlab data build
   general-en``); an interrupted pretraining resumes from its last checkpoint.
2. For each task and seed, ``transferlab finetune --encoder transformer --pretrained DIR`` against
   the same command with ``--reinit=true``: the same tokenizer and shape, random weights, so the
   two differ only in the pretrained weights. Both at the Transformer defaults
   (``configs/defaults_transformer.toml``: AdamW 1e-4, linear decay after 10% warm-up) with the
   task's epochs below. ``--set KEY=VALUE`` (repeatable) adds a finetune override to every cell
   of both arms (an ablation of the fine-tuning recipe; give it its own ``--out`` and ``--record``),
   ``--pretrained-set KEY=VALUE`` one to the pretrained arm only: with
   ``lm_finetune.enabled=true`` the MLM first continues on the task's training text (ULMFiT's
   second stage; ``lm_finetune.out=DIR`` shares that stage between seeds), as ``ulmfit_sst2.py``
   compares ULMFiT's three stages against a classifier from scratch.

One JSON line per finished run in ``<out>/runs.jsonl``; a rerun skips the cells already there.
Figures (means over seeds): ``sst2_1000_acc_pretrained``/``_scratch`` and ``gain_points`` (SST-2
test = GLUE dev, 872 sentences; issue 17's target: gain >= +5 points), ``mrpc_f1_*`` and
``mrpc_gain_points`` (F1 of the paraphrase class, MRPC's 1,725-pair test set), ``conll2003_f1_*`` and
``conll2003_gain_points`` (entity F1 on the test set), the MLM's validation loss and wall time.
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
from transferlab.recipes import finetune, pretrain_transformer  # noqa: E402

# task -> (labels (0 = all), epochs, max_len, the figure's name, the summary key it reads)
TASKS = {
    "sst2": (1000, 10, 64, "sst2_1000_acc", "test_accuracy"),
    "mrpc": (0, 10, 128, "mrpc_f1", "test_f1"),
    "conll2003": (0, 5, 128, "conll2003_f1", "test_entity_f1"),
}
METHODS = ("pretrained", "scratch")


def pretrain(checkpoint: Path) -> dict:
    """The MLM's results.json, pretraining it (``--budget 1h``) when the folder holds none."""
    run = checkpoint.parent
    done = run / "results.json"
    if not done.exists():
        cfg = load_config(pretrain_transformer.PretrainTransformerConfig, "1h", [f'out="{run}"'], kind="mlm")
        pretrain_transformer.run(cfg)
    return json.loads(done.read_text())


def finetune_cell(checkpoint: str, task: str, method: str, seed: int, out: Path, threads: int = 2,
                  extra: tuple[str, ...] = ()) -> dict:
    labels, epochs, max_len, _, _ = TASKS[task]
    cfg = finetune.load_finetune_config(None, [
        'encoder="transformer"', f'pretrained="{checkpoint}"', f"reinit={str(method == 'scratch').lower()}",
        f'data.task="{task}"', f"data.train_size={labels}", f"data.subset_seed={seed}", f"data.max_len={max_len}",
        f"train.epochs={epochs}", f"train.seed={seed}", f"train.threads={threads}", "train.log_every=0",
        "train.progress=false", f'out="{out}"', *extra])
    return finetune.run(cfg)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pretrained", default="runs/bench/mlm-1h/best",
                    help="the MLM checkpoint folder; pretrained with --budget 1h when missing")
    ap.add_argument("--out", default="runs/bench/mlm-transfer")
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--record", default="mlm_transfer", help="the results/NAME.json to write")
    ap.add_argument("--threads", type=int, default=2, help="torch threads of each fine-tuning run")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a finetune override for every cell (e.g. task.pooling=mean); repeatable")
    ap.add_argument("--pretrained-set", action="append", default=[], metavar="KEY=VALUE",
                    help="a finetune override for the pretrained arm only (e.g. lm_finetune.enabled=true: "
                         "ULMFiT's target-task LM stage, which the scratch arm does not get); repeatable")
    args = ap.parse_args()
    out, tasks = Path(args.out), args.tasks.split(",")
    unknown = sorted(set(tasks) - set(TASKS))
    if unknown:
        ap.error(f"unknown task(s) {', '.join(unknown)}: choose from {', '.join(TASKS)}")
    mlm = pretrain(Path(args.pretrained))
    log = out / "runs.jsonl"
    rows = finished_rows(log, "task", "method", "seed")
    for task in tasks:
        for seed in map(int, args.seeds.split(",")):
            for method in METHODS:
                if (task, method, seed) in rows:
                    continue
                extra = (*args.set, *(args.pretrained_set if method == "pretrained" else ()))
                s = finetune_cell(args.pretrained, task, method, seed, out / f"{task}-{method}-{seed}", args.threads,
                                  extra)
                score = s[TASKS[task][4]]
                row = {"task": task, "method": method, "seed": seed, "score": score, "wall_s": s["wall_s"],
                       "train_size": s["train_size"]}
                rows[(task, method, seed)] = row
                append_row(log, row)
                print(f"{task} {method} seed {seed}: {score:.4f}", flush=True)
    figures: dict[str, float] = {}
    per_seed: dict[str, dict[str, list[float]]] = {}
    for task in tasks:
        name = TASKS[task][3]
        scores = {m: [r["score"] for (t, mm, _), r in sorted(rows.items()) if t == task and mm == m] for m in METHODS}
        per_seed[task] = scores
        for m in METHODS:
            figures[f"{name}_{m}"] = statistics.mean(scores[m])
            figures[f"{name}_{m}_sd"] = statistics.stdev(scores[m]) if len(scores[m]) > 1 else 0.0
        gain = "gain_points" if task == "sst2" else f"{task}_gain_points"
        figures[gain] = 100 * (figures[f"{name}_pretrained"] - figures[f"{name}_scratch"])
        print(f"{task}: pretrained {figures[f'{name}_pretrained']:.4f} vs scratch {figures[f'{name}_scratch']:.4f}"
              f" ({figures[gain]:+.1f} points)")
    figures |= {"mlm_valid_loss": mlm["valid_mlm_loss"], "mlm_wall_s": mlm["wall_s"]}
    write_result(args.record, figures, per_seed=per_seed, mlm=mlm, overrides=args.set,
                 pretrained_overrides=args.pretrained_set,
                 train_sizes={t: rows[(t, "pretrained", s)]["train_size"] for (t, m, s) in rows if m == "pretrained"})


if __name__ == "__main__":
    main()
