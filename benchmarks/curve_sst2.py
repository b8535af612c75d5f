"""Learning curves on SST-2: ULMFiT's figure 3 (Howard & Ruder 2018) measured on our data.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/curve_sst2.py [--lm runs/bench/ptb-small/best]

``transferlab curve`` on SST-2 (GLUE train phrases, tested on the 872 labeled dev sentences) with
50, 100, 200, 500, 1,000, 2,000 and all labels, 3 seeds of nested random subsets, and five
methods (``configs/curve_methods.toml``): the AWD-LSTM from scratch, the same with a GloVe
embedding, MiniLM-L6 frozen behind a scalar mix (features), ULMFiT from a PTB language model, and
MiniLM-L6 fine-tuned; the AWD-LSTM methods on the ``small`` finetune preset. Every cell trains at
least 200 optimizer steps (the curve's ``min_steps``: more epochs where the labels are few). Without ``--lm`` the
curve pretrains its PTB language model first (the demo's, ``OUT/lm-ptb``). Resumable: a rerun
skips the cells already recorded in ``benchmarks/results/curve_sst2.jsonl`` (committed, so the
curve resumes across sessions and fresh checkouts). Validation, which picks the best epoch, is
scored on a fixed 1,000 of SST-2's 6,735 validation phrases (``--valid-size``); test is whole. Hours on 2 CPU cores (see
``transferlab.recipes.curve``), most of it in the all-labels cells.

Figures (``benchmarks/results/curve_sst2.json``), per method: ``METHOD_label_savings`` (how many
times fewer labels than scratch with all labels the method needs to match it; 0 where it never
does) and ``METHOD_acc_100`` (mean test accuracy with 100 labels). The chart is copied to
``benchmarks/curve_sst2.png``. ``--report-only`` writes them from the cells recorded so far (the
JSON's ``notes`` name the cells not yet run).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

from transferlab.recipes import curve  # noqa: E402
from transferlab.data.tasks import TaskDataConfig  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lm", default="", help="a `pretrain lm` checkpoint for ulmfit; omit to pretrain one on PTB")
    ap.add_argument("--mlm", default="", help="a `pretrain mlm` checkpoint for the mlm method (add mlm to --methods)")
    ap.add_argument("--out", default="runs/bench/curve-sst2")
    ap.add_argument("--sizes", default="50,100,200,500,1000,2000,all")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--methods", default="scratch,glove,features,ulmfit,minilm")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--valid-size", type=int, default=1000,
                    help="validation sentences scored after each epoch (of 6,735; the test set is whole)")
    ap.add_argument("--record", default=str(Path(__file__).parent / "results" / "curve_sst2.jsonl"),
                    help="the finished cells, kept in the repository so the curve resumes in a fresh checkout")
    ap.add_argument("--threads", type=int, default=2, help="torch threads of each cell")
    ap.add_argument("--lm-stage", default="",
                    help="ulmfit's target-task LM stage folder to reuse (e.g. ulmfit_sst2.py's OUT/lm-sst2); the "
                         "stage refuses a folder trained from another LM or with other settings")
    ap.add_argument("--lm-id", default="",
                    help="with --report-only where the --lm checkpoint is not here and the record holds cells of "
                         "several LMs: the recorded lm_id of the one to report")
    ap.add_argument("--report-only", action="store_true",
                    help="train nothing: the figures, chart and JSON of the cells recorded so far")
    args = ap.parse_args()
    cfg = curve.CurveConfig(data=TaskDataConfig(task="sst2", valid_size=args.valid_size), sizes=args.sizes,
                            seeds=args.seeds, methods=args.methods, preset=args.preset, lm=args.lm, mlm=args.mlm,
                            out=args.out,
                            record=args.record, finetune=(f"train.threads={args.threads}", "train.log_every=0",
                                                          *([f"lm_finetune.out={json.dumps(args.lm_stage)}"]
                                                            if args.lm_stage else [])),
                            report_only=args.report_only, lm_id=args.lm_id)
    summary = curve.run(cfg)
    methods = summary["methods"]
    flat = summary["figures"]
    figures = {}
    for m in methods:
        figures[f"{m}_label_savings"] = flat.get(f"{m}_label_savings")
        figures[f"{m}_acc_100"] = flat.get(f"{m}_acc_100")
    shutil.copy(Path(args.out) / "curve.png", Path(__file__).parent / "curve_sst2.png")
    write_result("curve_sst2", figures, all_figures=flat, efficiency=summary["efficiency"], curve=summary["curve"],
                 sizes=summary["sizes"], seeds=args.seeds, n_train=summary["n_train"], preset=args.preset,
                 lm=args.lm or str(Path(args.out) / "lm-ptb" / "best"), wall_s=summary["wall_s"],
                 cells_train_s=summary["cells_train_s"], rows=summary["rows"], notes=summary["notes"])


if __name__ == "__main__":
    main()
