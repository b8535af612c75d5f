"""Probing four encoders layer by layer, and our batched probes against a scikit-learn loop.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/probing.py [--encoders minilm,glove,awd_lstm,transformer]
    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/probing.py --encoders elmo --record probing_elmo

1. ``transferlab probe`` (linear probes, first subword, control tasks) on UD-EWT UPOS and
   dependency relations, CoNLL-2003 NER and chunks (full train and test splits) and the three
   sentence-level tasks made from PTB, for ``minilm-l6``, ``glove-6b-50d`` (a 0-layer encoder),
   our AWD-LSTM pretrained on PTB (the demo's LM: ``pretrain lm --preset demo``, reused when
   present) and our Transformer pretrained as a masked LM on SOTU + Shakespeare
   (``pretrain mlm --preset small`` cut to ``--mlm-steps`` steps, reused when present); and on
   request (``--encoders elmo``) our ELMo, a ``pretrain bilm`` checkpoint (``--elmo``), whose
   layers are the character token layer and the two biLSTM layers (Peters et al. 2018 find the
   first biLSTM layer best for POS).
2. Speed (when minilm is probed): on MiniLM's cached UPOS features (7 layers), the probes of all layers in one batched
   pass against a loop of scikit-learn ``LogisticRegression`` fits (lbfgs, C=1, one per layer)
   on the same standardized features. ``speed_ratio_vs_sklearn`` = sklearn seconds / ours, with
   the largest per-layer accuracy difference.

Figures (``probing.json``): ``speed_ratio_vs_sklearn``, ``max_acc_diff_vs_sklearn_points``,
``minilm_best_upos``, ``minilm_best_upos_layer``, ``minilm_best_upos_selectivity``, ``glove_upos``,
and the best UPOS layer of every encoder.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from transferlab.config import load_config  # noqa: E402

TASKS = "upos,deprel,ner,chunk,length,word_content,bigram_shift"


def pretrained(out: Path, mlm_steps: int, needed: set[str]) -> dict[str, str]:
    """The encoders' names -> specs, pretraining those of ``needed`` that are ours and missing."""
    from transferlab.recipes import pretrain_lm, pretrain_transformer

    lm = out / "lm-ptb"
    if "awd_lstm" in needed and not (lm / "results.json").exists():
        pretrain_lm.run(load_config(pretrain_lm.PretrainLMConfig, "demo", [f'out="{lm}"'], kind="lm"))
    mlm = out / "mlm"
    if "transformer" in needed and not (mlm / "results.json").exists():
        pretrain_transformer.run(load_config(pretrain_transformer.PretrainTransformerConfig, "small", [
            'objective="mlm"', 'data.corpus="sotu,shakespeare"', f"train.steps={mlm_steps}", f'out="{mlm}"'],
            kind="mlm"))
    return {"minilm": "minilm-l6", "glove": "glove-6b-50d", "awd_lstm": str(lm / "best"),
            "transformer": str(mlm / "best")}


def probe(name: str, spec: str, out: Path) -> dict:
    from transferlab.recipes import probe as recipe

    cfg = load_config(recipe.ProbeRunConfig, None, [f'encoder="{spec}"', f'tasks="{TASKS}"',
                                                    f'cache="{out / "cache"}"', f'out="{out / name}"'])
    start = time.perf_counter()
    results = recipe.run(cfg)
    results["bench_wall_s"] = time.perf_counter() - start
    return results


def speed(out: Path, max_words: int) -> dict:
    """Ours (one batched pass over 7 layers) vs a loop of sklearn fits on MiniLM's UPOS features."""
    from sklearn.linear_model import LogisticRegression

    from transferlab.adapt.features import cached_word_features, encoder_identity
    from transferlab.eval import probing
    from transferlab.tasks.loading import load_backbone
    from transferlab.text.tokenize import TextConfig

    task = probing.word_tasks(["upos"])[0]
    b = load_backbone("minilm-l6", TextConfig(lower=False))
    feats = {s: cached_word_features(b, encoder_identity("minilm-l6"), task.sentences[s], out / "cache",
                                     progress=False)[0] for s in ("train", "test")}
    rows = {s: np.nonzero(feats[s].kept)[0] for s in feats}
    rows["train"] = rows["train"][:max_words] if max_words else rows["train"]
    train, mean, std = probing.stack_layers(feats["train"].layers, rows=rows["train"])
    test, _, _ = probing.stack_layers(feats["test"].layers, mean, std, rows=rows["test"])
    y = {s: task.labels[s][rows[s]] for s in feats}
    cfg = probing.ProbeConfig()
    start = time.perf_counter()
    ours = probing.train_probes(train, [y["train"]], test, [y["test"]], [len(task.classes)], cfg)[0]
    ours_s = time.perf_counter() - start
    theirs, sk_s = [], 0.0
    for j in range(train.size(0)):
        xtr, xte = train[j].float().numpy(), test[j].float().numpy()
        start = time.perf_counter()
        clf = LogisticRegression(max_iter=1000).fit(xtr, y["train"])
        sk_s += time.perf_counter() - start
        theirs.append(float(clf.score(xte, y["test"])))
        print(f"layer {j}: ours {100 * ours[j]:.2f}  sklearn {100 * theirs[-1]:.2f}  ({sk_s:.0f} s so far)", flush=True)
    diff = float(np.max(np.abs(np.array(theirs) - ours))) * 100
    return {"ours_s": ours_s, "sklearn_s": sk_s, "speed_ratio_vs_sklearn": sk_s / ours_s,
            "max_acc_diff_vs_sklearn_points": diff, "ours_acc": ours.tolist(), "sklearn_acc": theirs,
            "train_words": int(len(rows["train"])), "test_words": int(len(rows["test"])), "layers": int(train.size(0)),
            "probe": {"epochs": cfg.epochs, "batch_size": cfg.batch_size, "lr": cfg.lr}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="runs/bench/probing")
    ap.add_argument("--encoders", default="minilm,glove,awd_lstm,transformer")
    ap.add_argument("--mlm-steps", type=int, default=1500)
    ap.add_argument("--speed-words", type=int, default=0, help="cap the speed comparison's training words (0: all)")
    ap.add_argument("--elmo", default="runs/bench/bilm-small/best", help="a `pretrain bilm` checkpoint")
    ap.add_argument("--record", default="probing", help="the results/NAME.json to write")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    parts = out / "sections.json"
    done = json.loads(parts.read_text()) if parts.exists() else {}
    names = args.encoders.split(",")
    specs = pretrained(out, args.mlm_steps, set(names) - set(done)) | {"elmo": args.elmo}
    for name in names:
        if name not in done:
            done[name] = probe(name, specs[name], out)
            parts.write_text(json.dumps(done, indent=1))
    if "speed" not in done and "minilm" in names:
        done["speed"] = speed(out, args.speed_words)
        parts.write_text(json.dumps(done, indent=1))
    figures = {k: done["speed"][k] for k in ("speed_ratio_vs_sklearn", "max_acc_diff_vs_sklearn_points")
               if "minilm" in names}
    for name in names:
        if (out / name / "probe.png").exists():  # the heatmap beside RESULTS.md
            shutil.copy(out / name / "probe.png", Path(__file__).parent / f"probing_{name}.png")
        upos = done[name]["tasks"]["upos"]
        best = upos["best_layer"]
        figures[f"{name}_best_upos"] = upos["accuracy"][best]
        figures[f"{name}_best_upos_layer"] = best
        figures[f"{name}_best_upos_selectivity"] = upos["selectivity"][best]
    if "glove" in done:
        figures["glove_upos"] = done["glove"]["tasks"]["upos"]["accuracy"][0]
    write_result(args.record, figures, sections={k: v for k, v in done.items() if k in names or k == "speed"})


if __name__ == "__main__":
    main()
