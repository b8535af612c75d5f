"""The budgeted AWD-LSTM language model on general-en: `transferlab pretrain lm --budget 1h`.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/lm_budget.py [--budget 1h] [--threads 2]

Builds the corpus if it is missing (`transferlab data build general-en`), pretrains (resuming an
interrupted run in the same --out), and records ``lm_budget_<budget>.json``: valid and test
perplexity (full softmax), wall time, tokens/s, model FLOPs per token and the utilisation of the
795 GFLOP/s bf16 matmul peak measured on the 2-core machine. The checkpoint is what
`benchmarks/ulmfit_sst2.py --pretrained <out>/best` fine-tunes.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

from transferlab import cli  # noqa: E402
from transferlab.data.build import build_corpus  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budget", default="1h", choices=["1h", "3h"])
    ap.add_argument("--out", default=None, help="default runs/bench/lm-<budget>")
    ap.add_argument("--threads", type=int, default=0, help="train.threads (0 = torch's default)")
    args = ap.parse_args()
    out = Path(args.out or f"runs/bench/lm-{args.budget}")
    corpus = build_corpus("general-en")
    if not (out / "results.json").exists():
        argv = ["pretrain", "lm", "--budget", args.budget, "--out", str(out), f"--train.threads={args.threads}"]
        if (out / "last").exists():
            argv.append("--resume")
        cli.main(argv)
    result = json.loads((out / "results.json").read_text())
    manifest = json.loads((corpus / "manifest.json").read_text())
    figures = {k: result[k] for k in ("valid_ppl", "test_ppl", "wall_s", "steps", "tokens_per_s",
                                      "train_flops_per_token", "mfu_vs_795_gflops", "vocab_size", "n_params")}
    figures["corpus_train_words"] = manifest["splits"]["train"]["words"]
    figures["wall_s_total"] = result.get("wall_s_total", result["wall_s"])  # every piece of a resumed run
    write_result(f"lm_budget_{args.budget}", figures, budget=args.budget, threads=args.threads,
                 checkpoint=result["checkpoint"])


if __name__ == "__main__":
    main()
