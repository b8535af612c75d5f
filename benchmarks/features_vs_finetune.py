"""To tune or not to tune (Peters, Ruder & Smith 2019) on our encoders: feature extraction vs fine-tuning.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/features_vs_finetune.py [--train-size 2000]

For ``minilm-l6`` and our AWD-LSTM (the PTB language model of ``benchmarks/probing.py``:
``pretrain lm --preset demo``, reused when present) on SST-2 (accuracy), STS-B (Spearman) and
CoNLL-2003 NER (entity F1), the same ``transferlab finetune`` command twice:

- ``--adapt features``: the encoder frozen, ELMo's scalar mix of its layers and the task head
  trained (``features_lr`` 1e-3, 10 epochs: after the first, each epoch costs only the head, the
  layers being cached);
- ``--adapt finetune``: the whole encoder trained, MiniLM with BERT's recipe
  (``defaults_hf.toml``: AdamW 5e-5, 3 epochs), the AWD-LSTM with ULMFiT's (``small`` preset:
  discriminative rates, slanted triangular schedule, gradual unfreezing).

Both AWD-LSTM runs of a task start from one LM fine-tuned on that task's text (``lm_finetune``,
run once per task, labels unused; its time is reported apart). Each run trains on the first
``--train-size`` examples of a fixed shuffle (subset seed 0) and is scored on the task's test
split; wall time is the whole ``finetune`` call. Figures (``features_vs_finetune.json``):
``sst2_features``, ``sst2_finetune``, ``stsb_*``, ``conll2003_*`` for minilm-l6, the same with an
``awd_lstm_`` prefix, and ``*_wall_s`` for each.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

from transferlab.config import load_config  # noqa: E402
from transferlab.recipes import finetune  # noqa: E402

TASKS = {"sst2": ("test_accuracy", 64), "stsb": ("test_spearman", 128), "conll2003": ("test_entity_f1", 128)}


def lm_checkpoint(out: Path) -> str:
    from transferlab.recipes import pretrain_lm

    for folder in (Path("runs/bench/probing/lm-ptb"), out / "lm-ptb"):
        if (folder / "results.json").exists():
            return str(folder / "best")
    pretrain_lm.run(load_config(pretrain_lm.PretrainLMConfig, "demo", [f'out="{out / "lm-ptb"}"'], kind="lm"))
    return str(out / "lm-ptb" / "best")


def run(encoder: str, task: str, adapt: str, size: int, out: Path, lm: str) -> dict:
    folder = out / f"{encoder}-{task}-{adapt}"
    if (folder / "results.json").exists():
        return json.loads((folder / "results.json").read_text())
    metric, max_len = TASKS[task]
    common = [f'data.task="{task}"', f"data.train_size={size}", "data.subset_seed=0", f"data.max_len={max_len}",
              "train.threads=2", "train.log_every=0", "train.progress=false", f'adapt="{adapt}"', f'out="{folder}"',
              "features_cache_gb=8"]
    if adapt == "features":
        common += ["train.epochs=10"]
    if encoder == "minilm-l6":
        cfg = finetune.load_finetune_config(None, ['encoder="minilm-l6"', *common])
    else:
        cfg = finetune.load_finetune_config("small", [
            'encoder="awd_lstm"', f'pretrained="{lm}"', f'lm_finetune.out="{out / f"lm-{task}"}"',
            "lm_finetune.train.progress=false", "lm_finetune.train.log_every=0", *common], kind="finetune")
    lm_done = (out / f"lm-{task}" / "results.json").exists()
    start = time.perf_counter()
    summary = finetune.run(cfg)
    summary["bench_wall_s"] = time.perf_counter() - start
    if encoder == "awd_lstm" and not lm_done and (out / f"lm-{task}" / "results.json").exists():
        summary["lm_finetune_s"] = json.loads((out / f"lm-{task}" / "results.json").read_text())["wall_s"]
    (folder / "bench.json").write_text(json.dumps({"bench_wall_s": summary["bench_wall_s"]}))
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench/features-vs-finetune")
    ap.add_argument("--train-size", type=int, default=2000)
    ap.add_argument("--encoders", default="minilm-l6,awd_lstm")
    ap.add_argument("--tasks", default=",".join(TASKS))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    encoders = args.encoders.split(",")
    lm = lm_checkpoint(out) if "awd_lstm" in encoders else ""
    figures, rows = {}, {}
    for encoder in encoders:
        prefix = "" if encoder == "minilm-l6" else "awd_lstm_"
        for task in args.tasks.split(","):
            for adapt in ("features", "finetune"):
                s = run(encoder, task, adapt, args.train_size, out, lm)
                key = f"{prefix}{task}_{adapt}"
                figures[key] = s[TASKS[task][0]]
                figures[f"{key}_wall_s"] = s["wall_s"]
                rows[key] = {k: s.get(k) for k in (TASKS[task][0], "wall_s", "train_size", "steps",
                                                   "train_examples_per_s", "lm_finetune_s")}
                print(f"{encoder:10} {task:10} {adapt:9} {TASKS[task][0]} {figures[key]:.4f}  "
                      f"{s['wall_s']:.0f} s", flush=True)
    write_result("features_vs_finetune", figures, rows=rows, settings={"train_size": args.train_size,
                                                                       "subset_seed": 0})


if __name__ == "__main__":
    main()
