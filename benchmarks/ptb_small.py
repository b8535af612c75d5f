"""PTB validation and test perplexity of the `small` AWD-LSTM preset, with its wall time.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/ptb_small.py [--out runs/bench/ptb-small]

Target (issue 3): test perplexity at most 115 (Zaremba et al. 2014's small LSTM: 114.5) within
30 minutes on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

from transferlab.config import load_config  # noqa: E402
from transferlab.recipes import pretrain_lm  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench/ptb-small")
    ap.add_argument("overrides", nargs="*", help="dotted config overrides, e.g. train.epochs=8")
    args = ap.parse_args()
    cfg = load_config(pretrain_lm.PretrainLMConfig, "small", [f'out="{args.out}"', *args.overrides], kind="lm")
    start = time.perf_counter()
    summary = pretrain_lm.run(cfg)
    total = time.perf_counter() - start  # vocabulary, training, evaluations and the test pass
    write_result("ptb_small", {"valid_ppl": summary["valid_ppl"], "test_ppl": summary["test_ppl"],
                               "wall_s": total},
                 details={"train_wall_s": summary["wall_s"], "preset": "small",
                          **{k: summary[k] for k in ("steps", "tokens_per_s", "vocab_size", "n_params")}})


if __name__ == "__main__":
    main()
