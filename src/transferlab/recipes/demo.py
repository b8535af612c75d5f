"""``transferlab demo``: the main job, ULMFiT against from-scratch training on 1,000 SST-2 labels.

1. A small AWD-LSTM language model pretrained on PTB (reused when its checkpoint exists).
2. ULMFiT: that LM fine-tuned on SST-2's text (labels unused), then the classifier trained on
   1,000 labels with discriminative learning rates, slanted triangular learning rates and
   gradual unfreezing.
3. The same architecture trained from scratch on the same 1,000 labels.

It prints a table of test accuracies and writes a bar chart, ``<out>/accuracy.png``.
"""

from __future__ import annotations

import time
from pathlib import Path

from transferlab.config import load_config, write_json
from transferlab.log import log
from transferlab.recipes import finetune, pretrain_lm


def _bar_chart(rows: list[tuple[str, float]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2), dpi=120)
    names, values = zip(*rows)
    bars = ax.bar(names, [100 * v for v in values], color=["#4C72B0", "#C44E52"][: len(rows)])
    for bar, v in zip(bars, values):
        ax.text(bar.get_x() + bar.get_width() / 2, 100 * v + 1, f"{100 * v:.1f}%", ha="center")
    ax.set_ylim(0, 105)
    ax.set_ylabel("SST-2 test accuracy (%)")
    ax.set_title(title, fontsize=10)
    ax.axhline(50, color="grey", lw=0.8, ls="--")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(quick: bool = False, out: str | Path = "runs/demo", labels: int = 1000) -> dict:
    out = Path(out)
    preset = "tiny" if quick else "demo"
    clf_preset = "tiny" if quick else "small"  # one classifier preset for the demo and the benchmark
    start = time.perf_counter()

    lm_cfg = load_config(pretrain_lm.PretrainLMConfig, preset, [f'out="{out / "lm-ptb"}"'], kind="lm")
    if (out / "lm-ptb" / "results.json").exists():
        log(f"reusing the PTB language model in {out / 'lm-ptb'}")
    else:
        pretrain_lm.run(lm_cfg)

    common = [f"data.train_size={labels}", f'lm_finetune.out="{out / "lm-sst2"}"']
    ulm_cfg = load_config(finetune.FinetuneConfig, clf_preset, common + [
        f'pretrained="{out / "lm-ptb" / "best"}"', f'out="{out / "ulmfit"}"'], kind="finetune")
    scratch_cfg = load_config(finetune.FinetuneConfig, clf_preset, common + [f'out="{out / "scratch"}"'],
                              kind="finetune")
    results = {"ulmfit": finetune.run(ulm_cfg), "scratch": finetune.run(scratch_cfg)}

    rows = [("ULMFiT", results["ulmfit"]["test_accuracy"]), ("from scratch", results["scratch"]["test_accuracy"])]
    print(f"\nSST-2 test accuracy with {labels:,} labels (AWD-LSTM, {preset} preset)")
    print(f"{'method':<14} {'accuracy':>9}")
    for name, acc in rows:
        print(f"{name:<14} {100 * acc:>8.1f}%")
    gain = 100 * (rows[0][1] - rows[1][1])
    print(f"transfer gain: {gain:+.1f} points; wall time {time.perf_counter() - start:.0f} s")
    _bar_chart(rows, out / "accuracy.png", f"SST-2, {labels:,} labels: gain {gain:+.1f} points")
    print(f"chart: {out / 'accuracy.png'}")
    summary = {"labels": labels, "ulmfit_acc": rows[0][1], "scratch_acc": rows[1][1], "gain_points": gain,
               "wall_s": time.perf_counter() - start}
    write_json(summary, out / "summary.json")
    return summary
