"""What masked-LM pretraining buys our Transformer: SST-2 with 1,000 labels, pretrained vs scratch.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/mlm_transfer.py [--seeds 0,1,2]

1. ``transferlab pretrain mlm --corpus sotu,shakespeare --preset small`` (reused when done);
2. ``transferlab finetune --encoder transformer --pretrained <it> --task sst2 --labels 1000`` for
   each seed, against the same command with ``--reinit=true``: the same tokenizer and shape, random
   weights, so the two differ only in the pretrained weights. Both at the Transformer defaults
   (``configs/defaults_transformer.toml``) with 10 epochs over the 1,000 labels.

Figures: ``acc_1000_pretrained`` and ``acc_1000_scratch`` (means over seeds, SST-2 test = GLUE
dev, 872 sentences), ``gain_points``, and the MLM's validation loss and wall time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

from transferlab.config import load_config  # noqa: E402
from transferlab.recipes import finetune, pretrain_transformer  # noqa: E402


def pretrain(out: Path, corpus: str) -> dict:
    done = out / "results.json"
    if done.exists():
        return json.loads(done.read_text())
    cfg = load_config(pretrain_transformer.PretrainTransformerConfig, "small",
                      [f'data.corpus="{corpus}"', f'out="{out}"'], kind="mlm")
    return pretrain_transformer.run(cfg)


def classify(checkpoint: str, seed: int, reinit: bool, out: Path, labels: int) -> dict:
    done = out / "results.json"
    if done.exists():
        return json.loads(done.read_text())
    cfg = finetune.load_finetune_config(None, [
        'encoder="transformer"', f'pretrained="{checkpoint}"', f"reinit={str(reinit).lower()}",
        'data.task="sst2"', f"data.train_size={labels}", f"data.subset_seed={seed}", "data.max_len=64",
        "train.epochs=10", f"train.seed={seed}", "train.threads=2", "train.log_every=0", f'out="{out}"'])
    return finetune.run(cfg)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench/mlm-transfer")
    ap.add_argument("--corpus", default="sotu,shakespeare")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--labels", type=int, default=1000)
    args = ap.parse_args()
    out = Path(args.out)
    mlm = pretrain(out / "mlm", args.corpus)
    acc: dict[str, list[float]] = {"pretrained": [], "scratch": []}
    for seed in map(int, args.seeds.split(",")):
        for method in acc:
            s = classify(mlm["checkpoint"], seed, method == "scratch", out / f"{method}-{seed}", args.labels)
            acc[method].append(s["test_accuracy"])
            print(f"{method} seed {seed}: {s['test_accuracy']:.4f}", flush=True)
    mean = {m: statistics.mean(v) for m, v in acc.items()}
    figures = {f"acc_{args.labels}_pretrained": mean["pretrained"], f"acc_{args.labels}_scratch": mean["scratch"],
               "gain_points": 100 * (mean["pretrained"] - mean["scratch"]),
               "mlm_valid_loss": mlm["valid_mlm_loss"], "mlm_wall_s": mlm["wall_s"]}
    write_result("mlm_transfer", figures, per_seed=acc, corpus=args.corpus, mlm=mlm)


if __name__ == "__main__":
    main()
