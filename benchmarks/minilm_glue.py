"""minilm-l6 fine-tuned with `transferlab finetune` on the full training sets of SST-2, MRPC, RTE,
CoLA, STS-B and CoNLL-2003, with wall times.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/minilm_glue.py [--tasks sst2,mrpc,...]

Every task runs the same command line but for ``--task`` (the Hugging Face defaults of
``configs/defaults_hf.toml``: AdamW 5e-5, linear decay after 10% warm-up, batch 32), with the
epochs and max length below (one epoch of SST-2's 60,614 rows on 2 CPU cores; three elsewhere).
Scores are on the labeled test split where one ships (SST-2's is GLUE dev; MRPC, STS-B and
CoNLL-2003 have their own) and on dev for RTE and CoLA. A task whose results.json exists is
reused, so an interrupted run resumes.

Figures: ``sst2_acc`` (target >= 0.88), ``mrpc_f1``, ``rte_acc``, ``cola_mcc``, ``stsb_spearman``,
``conll2003_f1`` (entity F1, target >= 0.85), ``wall_s`` (all tasks, training and evaluation).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

from transferlab.recipes import finetune  # noqa: E402

# task -> (epochs, max_len, the figure's name, the summary key it reads)
TASKS = {
    "sst2": (1, 64, "sst2_acc", "test_accuracy"),
    "mrpc": (3, 128, "mrpc_f1", "test_f1"),
    "rte": (3, 128, "rte_acc", "test_accuracy"),
    "cola": (3, 64, "cola_mcc", "test_mcc"),
    "stsb": (3, 128, "stsb_spearman", "test_spearman"),
    "conll2003": (3, 128, "conll2003_f1", "test_entity_f1"),
}


def run_task(task: str, out: Path, precision: str) -> dict:
    done = out / task / "results.json"
    if done.exists():
        return json.loads(done.read_text())
    epochs, max_len, _, _ = TASKS[task]
    cfg = finetune.load_finetune_config(None, [
        'encoder="minilm-l6"', f'data.task="{task}"', f"data.max_len={max_len}", f"train.epochs={epochs}",
        "train.threads=2", f'train.precision="{precision}"', "train.log_every=100", f'out="{out / task}"'])
    return finetune.run(cfg)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", default=",".join(TASKS))
    ap.add_argument("--out", default="runs/bench/minilm-glue")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    args = ap.parse_args()
    out = Path(args.out)
    figures, rows = {}, {}
    for task in args.tasks.split(","):
        s = run_task(task, out, args.precision)
        _, _, name, key = TASKS[task]
        figures[name] = s[key]
        rows[task] = {"score": s[key], "metric": key, "wall_s": s["wall_s"], "train_size": s["train_size"],
                      "train_examples_per_s": s["train_examples_per_s"], "epochs": TASKS[task][0]}
        print(f"{task}: {key} {s[key]:.4f}  ({s['wall_s']:.0f} s)", flush=True)
    figures["wall_s"] = sum(r["wall_s"] for r in rows.values())
    write_result("minilm_glue", figures, tasks=rows, precision=args.precision)


if __name__ == "__main__":
    main()
