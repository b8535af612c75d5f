"""``transferlab demo``: the main job, ULMFiT against from-scratch training on 1,000 SST-2 labels.

1. An AWD-LSTM language model. By default (``--lm auto``) the ``--budget 1h`` LM on the 21.6M-word
   general-en corpus, kept in the download cache (``$TRANSFERLAB_CACHE/models/lm-1h-general-en``)
   and reused; the first demo on a machine builds the corpus (about a minute) and pretrains it
   (about an hour on 2 CPU cores; a stopped run resumes on the next ``demo``). ``--lm ptb``: the
   small PTB LM of the earlier demo (minutes, but PTB's 0.9M words do not transfer at 1,000
   labels); ``--lm PATH``: any ``pretrain lm`` checkpoint.
2. ULMFiT: that LM fine-tuned on SST-2's text (labels unused), then the classifier trained on
   1,000 labels with discriminative learning rates, slanted triangular learning rates and
   gradual unfreezing.
3. The same AWD-LSTM (the LM's sizes) trained from scratch on the same 1,000 labels.

It prints a table of test accuracies and writes a bar chart, ``<out>/accuracy.png``.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from transferlab.checkpoint import checkpoint_folder, has_checkpoint
from transferlab.config import load_config, write_json
from transferlab.data.build import build_corpus
from transferlab.data.catalog import cache_dir
from transferlab.encoders.backbone import checkpoint_family
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


LM_1H = "lm-1h-general-en"  # the folder under $TRANSFERLAB_CACHE/models


def language_model(lm: str, quick: bool, out: Path) -> Path:
    """The pretrained LM's checkpoint folder (built when missing): see the module docstring."""
    if quick or lm == "ptb":
        return pretrain_lm.reuse_or_run(load_config(pretrain_lm.PretrainLMConfig, "tiny" if quick else "demo",
                                                    [f'out="{out / "lm-ptb"}"'], kind="lm"), "PTB language model")
    if lm != "auto":
        folder = checkpoint_folder(Path(lm).expanduser())  # a run folder: its best
        if not has_checkpoint(folder) or checkpoint_family(folder) != "awd_lstm":
            raise ValueError(f"--lm {lm}: not a `transferlab pretrain lm` checkpoint or run folder (auto, ptb, or "
                             f"the folder `pretrain lm --out` wrote)")
        return folder
    folder = cache_dir() / "models" / LM_1H
    if (folder / "results.json").exists():
        log(f"reusing the general-en language model in {folder}")
        return folder / "best"
    log(f"no general-en language model in {folder} yet: building the corpus and pretraining one "
        f"(`pretrain lm --budget 1h`, about an hour on 2 CPU cores, once; after a stop, run the demo again "
        f"to resume it; `transferlab demo --lm ptb` is the minutes-long PTB demo)")
    build_corpus("general-en", log=log)
    pretrain_lm.run(load_config(pretrain_lm.PretrainLMConfig, "1h", [f'out="{folder}"', "resume=true"], kind="lm"))
    return folder / "best"


def run(quick: bool = False, out: str | Path = "runs/demo", labels: int = 1000, lm: str = "auto") -> dict:
    out = Path(out)
    clf_preset = "tiny" if quick else "small"  # one classifier preset for the demo and the benchmark
    start = time.perf_counter()
    checkpoint = language_model(lm, quick, out)
    arch = json.loads((checkpoint / "config.json").read_text())["awd_lstm"]

    # one LM fine-tuning folder per pretrained LM (a folder holding another LM's stage is refused)
    stage = out / f"lm-sst2-{hashlib.sha1(str(checkpoint.resolve()).encode()).hexdigest()[:8]}"
    common = [f"data.train_size={labels}", f'lm_finetune.out="{stage}"']
    ulm_cfg = finetune.load_finetune_config(clf_preset, common + [f'pretrained="{checkpoint}"',
                                                                  f'out="{out / "ulmfit"}"'])
    scratch_cfg = finetune.load_finetune_config(clf_preset, common + [  # the same AWD-LSTM, random weights
        *(f"awd_lstm.{k}={arch[k]}" for k in ("dim", "hidden_dim", "n_layers")), f'out="{out / "scratch"}"'])
    results = {"ulmfit": finetune.run(ulm_cfg), "scratch": finetune.run(scratch_cfg)}

    rows = [("ULMFiT", results["ulmfit"]["test_accuracy"]), ("from scratch", results["scratch"]["test_accuracy"])]
    print(f"\nSST-2 test accuracy with {labels:,} labels (AWD-LSTM {arch['dim']}/{arch['hidden_dim']}, "
          f"LM {checkpoint})")
    print(f"{'method':<14} {'accuracy':>9}")
    for name, acc in rows:
        print(f"{name:<14} {100 * acc:>8.1f}%")
    gain = 100 * (rows[0][1] - rows[1][1])
    print(f"transfer gain: {gain:+.1f} points; wall time {time.perf_counter() - start:.0f} s")
    _bar_chart(rows, out / "accuracy.png", f"SST-2, {labels:,} labels: gain {gain:+.1f} points")
    print(f"chart: {out / 'accuracy.png'}")
    summary = {"labels": labels, "ulmfit_acc": rows[0][1], "scratch_acc": rows[1][1], "gain_points": gain,
               "lm": str(checkpoint), "wall_s": time.perf_counter() - start}
    write_json(summary, out / "summary.json")
    return summary
