"""``transferlab senteval ENCODER``: a frozen encoder's sentence vectors scored by the SentEval protocol.

    transferlab senteval glove-6b-50d
    transferlab senteval minilm-l6 --pooling cls --tasks sst2,stsb,sick-r
    transferlab senteval runs/mlm/best --max-examples 2000

Conneau & Kiela 2018 (SentEval): the encoder (anything
:func:`~transferlab.tasks.loading.load_backbone` takes: static vectors, a Hugging Face model, a
``pretrain`` or ``finetune`` checkpoint) turns each text into one vector
(:mod:`transferlab.adapt.sentence_features`, cached on disk so a second run skips the encoder);
then each task trains only a logistic regression on those vectors
(:mod:`transferlab.eval.senteval`): L2 chosen on the dev split, or by 10-fold cross-validation
on train where the task has none. Relatedness tasks (STS-B, SICK-R) report the Pearson and
Spearman correlation of cos(u, v) with the gold scores, and with ``--supervised-sts`` also
SentEval's supervised regression. ``--max-examples N`` caps every split (a fixed random subset)
for a quick run.

The offline catalog has SST-2, MRPC, CoLA, AG News, STS-B and SICK (entailment and relatedness);
SentEval's MR, CR, SUBJ, MPQA, TREC, SST-5, SNLI and STS12-16 are not in it. SICK here is the
three official parts combined and re-split by pair id, and CoLA's test labels are not public, so
its dev split is the test and its L2 is chosen by cross-validation. Where this differs from
SentEval's own task files: every pair task reads ``[u, v, |u - v|, u * v]`` (SentEval's MRPC,
SICK-E and relatedness read ``[|u - v|, u * v]``, its SNLI all four), and STS-B's headline figure
is the unsupervised cosine (SentEval's STS12-16 protocol; its STS-B is the supervised one,
``--supervised-sts`` here).

Writes ``OUT/senteval.json`` (every figure, and the config) and ``OUT/senteval.png`` (a bar chart),
and prints a table.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from transferlab.adapt.features import encoder_identity
from transferlab.adapt.sentence_features import Pooling, cached_sentence_features
from transferlab.config import to_dict, write_json
from transferlab.data import catalog
from transferlab.data.examples import PairExample
from transferlab.data.tasks import nested_subset
from transferlab.encoders.backbone import input_text
from transferlab.eval import metrics, senteval
from transferlab.log import log
from transferlab.tasks.loading import load_backbone
from transferlab.text.tokenize import TextConfig


@dataclass(frozen=True)
class SentTask:
    dataset: str  # catalog name
    kind: Literal["classify", "relatedness"]
    splits: tuple[str, str, str]  # train, dev ("": none, cross-validation on train), test
    label_col: str = ""  # a column other than the entry's label
    bins: tuple[int, int] = (0, 5)  # the relatedness scale


TASKS: dict[str, SentTask] = {
    "sst2": SentTask("sst2", "classify", ("train", "valid", "test")),
    "mrpc": SentTask("mrpc", "classify", ("train", "", "test")),
    "cola": SentTask("cola", "classify", ("train", "", "dev")),  # GLUE's test labels are hidden
    "agnews": SentTask("agnews", "classify", ("train", "", "test")),
    "sick-e": SentTask("sick", "classify", ("train", "valid", "test")),
    "sick-r": SentTask("sick", "relatedness", ("train", "valid", "test"), "relatedness_score", (1, 5)),
    "stsb": SentTask("stsb", "relatedness", ("train", "dev", "test"), bins=(0, 5)),
}
NOT_OFFLINE = ("MR", "CR", "SUBJ", "MPQA", "TREC", "SST-5", "SNLI", "STS12-16")


@dataclass(frozen=True)
class SentEvalConfig:
    encoder: str = "glove-6b-50d"
    tasks: str = "sst2,mrpc,cola,agnews,sick-e,sick-r,stsb"
    # auto: the encoder's own sentence vector (skip-thought, InferSent ...), else the mean of the top
    # layer over the tokens; mean; cls: the first ([CLS]) position; layers: the mean of every layer's average
    pooling: Pooling = "auto"
    max_examples: int = 0  # per split, a fixed random subset; 0 = all
    supervised_sts: bool = False  # also SentEval's supervised regression on STS-B and SICK-R
    classifier: senteval.ClassifierConfig = field(default_factory=senteval.ClassifierConfig)
    text: TextConfig = field(default_factory=TextConfig)
    cache: str = ""  # feature cache folder; "" = $TRANSFERLAB_CACHE/senteval (~/.cache/transferlab)
    device: str = "auto"
    threads: int = 0  # torch CPU threads; 0 = torch's default
    progress: bool = True
    out: str = "runs/senteval"

    def __post_init__(self):
        names = self.task_names()
        unknown = [t for t in names if t not in TASKS]
        if not names or unknown:
            raise ValueError(f"tasks: unknown SentEval task(s) {', '.join(unknown) or '(none given)'}; known: "
                             f"{', '.join(TASKS)} (not offline: {', '.join(NOT_OFFLINE)})")
        if self.max_examples < 0:
            raise ValueError(f"max_examples must be >= 0 (0 = all), got {self.max_examples}")

    def task_names(self) -> list[str]:
        return [t.strip().lower() for t in self.tasks.split(",") if t.strip()]


def read_split(task: SentTask, split: str, cap: int) -> list:
    cols = {"label_col": task.label_col} if task.label_col else {}
    examples = list(catalog.load_examples(task.dataset, split, **cols))
    return [examples[i] for i in nested_subset(len(examples), cap, seed=0)] if cap else examples


def run(cfg: SentEvalConfig) -> dict:
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if cfg.device == "auto" else cfg.device
    started = time.perf_counter()
    loaded = []

    def backbone():  # loaded on the first feature the cache lacks: a run served from it never loads it
        if not loaded:
            loaded.append(load_backbone(cfg.encoder, cfg.text))
        return loaded[0]

    identity = f"{encoder_identity(cfg.encoder)}|{to_dict(input_text(cfg.encoder, cfg.text))}"
    cache = Path(cfg.cache) if cfg.cache else catalog.cache_dir() / "senteval"
    results: dict = {"encoder": cfg.encoder, "pooling": cfg.pooling, "tasks": {}, "not_offline": list(NOT_OFFLINE)}
    for name in cfg.task_names():
        task, t0 = TASKS[name], time.perf_counter()
        data = {role: read_split(task, split, cfg.max_examples) for role, split in zip(("train", "dev", "test"),
                                                                                       task.splits) if split}
        hits = []

        def embed(role: str, side: str, texts: list[str]) -> np.ndarray:
            x, hit = cached_sentence_features(backbone, identity, texts, cache, f"{name}-{role}-{side}", cfg.pooling,
                                              device, cfg.progress)
            hits.append(hit)
            return x

        x, pairs = {}, isinstance(data["train"][0], PairExample)
        for role, examples in data.items():
            if pairs:
                x[role] = (embed(role, "a", [ex.text_a for ex in examples]),
                           embed(role, "b", [ex.text_b for ex in examples]))
            else:
                x[role] = embed(role, "text", [ex.text for ex in examples])
        feature_s = time.perf_counter() - t0
        results["dim"] = int((x["train"][0] if pairs else x["train"]).shape[1])
        row = score_task(task, data, x, cfg)
        row |= {"n": {role: len(ex) for role, ex in data.items()}, "features_from_cache": all(hits),
                "feature_s": round(feature_s, 3), "wall_s": round(time.perf_counter() - t0, 3)}
        results["tasks"][name] = row
        log(f"{name}: {row['metric']} {100 * row['score']:.1f} ({'features from the cache' if all(hits) else 'encoded'}"
            f" in {feature_s:.1f}s)")
    results["wall_s"] = time.perf_counter() - started
    out = Path(cfg.out)
    write_json(results | {"config": to_dict(cfg)}, out / "senteval.json")
    chart(results, out / "senteval.png")
    print(table(results))
    log(f"senteval.json, senteval.png -> {out}")
    return results


def score_task(task: SentTask, data: dict, x: dict, cfg: SentEvalConfig) -> dict:
    """One task's figures: classification accuracy (dev and test) with the chosen L2, or the
    cosine's correlations (and the supervised regression's) for relatedness."""
    feats = {role: senteval.pair_features(*v) if isinstance(v, tuple) else v for role, v in x.items()}
    if task.kind == "relatedness":
        gold = {role: np.array([float(ex.label) for ex in examples]) for role, examples in data.items()}
        row = {"metric": "pearson", "kind": "relatedness", "cosine": senteval.sts_scores(*x["test"], gold["test"]),
               "cosine_dev": senteval.sts_scores(*x["dev"], gold["dev"])}
        row["score"] = row["cosine"]["pearson"]
        if cfg.supervised_sts:
            fit = senteval.evaluate_relatedness(*((feats[r], gold[r]) for r in ("train", "dev", "test")),
                                                cfg.classifier, task.bins)
            row["supervised"] = {k: v for k, v in fit.items() if k != "pred"}
        return row
    labels = sorted({ex.label for examples in data.values() for ex in examples})
    index = {label: i for i, label in enumerate(labels)}
    y = {role: np.array([index[ex.label] for ex in examples]) for role, examples in data.items()}
    sets = {role: (feats[role], y[role]) for role in data}
    if "dev" in sets:
        fit = senteval.evaluate_split(sets["train"], sets["dev"], sets["test"], cfg.classifier)
    else:
        fit = senteval.evaluate_kfold(sets["train"], sets["test"], cfg.classifier)
    row = {"metric": "accuracy", "kind": "classify", "score": fit["test"], "dev": fit["dev"], "l2": fit["l2"],
           "selection": fit["selection"], "grid": {str(k): v for k, v in fit["grid"].items()}, "labels": labels,
           "majority": float(np.mean(y["test"] == np.bincount(y["train"]).argmax()))}
    if len(labels) == 2:
        gold, pred = y["test"].tolist(), fit["pred"].tolist()
        row |= {"f1": metrics.binary_f1(gold, pred, positive=1), "mcc": metrics.matthews_corrcoef(gold, pred)}
    return row


def table(results: dict) -> str:
    lines = ["| task | metric | dev | test | notes |", "|---|---|---|---|---|"]
    for name, r in results["tasks"].items():
        if r["kind"] == "relatedness":
            notes = f"cos(u, v); Spearman {100 * r['cosine']['spearman']:.1f}"
            if "supervised" in r:
                notes += f"; supervised Pearson {100 * r['supervised']['pearson']:.1f}"
            dev = 100 * r["cosine_dev"]["pearson"]
        else:
            notes = f"L2 {r['l2']:g} by {r['selection']}; majority {100 * r['majority']:.1f}"
            if "f1" in r:
                notes += f"; F1 {100 * r['f1']:.1f}; MCC {100 * r['mcc']:.1f}"
            dev = 100 * r["dev"]
        lines.append(f"| {name} | {r['metric']} | {dev:.1f} | {100 * r['score']:.1f} | {notes} |")
    return "\n".join(lines) + (f"\n\n{results['encoder']} ({results['pooling']} pooling, {results['dim']} dims), "
                               f"frozen, with SentEval's logistic regression (x100)\n")


def chart(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["tasks"])
    scores = [100 * results["tasks"][n]["score"] for n in names]
    fig, ax = plt.subplots(figsize=(1.6 + 0.9 * len(names), 3.6))
    bars = ax.bar(names, scores, color=["#4c72b0" if results["tasks"][n]["kind"] == "classify" else "#dd8452"
                                        for n in names])
    for bar, v in zip(bars, scores):
        ax.text(bar.get_x() + bar.get_width() / 2, max(v, 0) + 1, f"{v:.1f}", ha="center", fontsize=8)
    ax.set_ylim(min(0, min(scores) - 5), 105)
    ax.set_ylabel("test accuracy / Pearson x100")
    ax.set_title(f"SentEval: {results['encoder']} ({results['pooling']} pooling)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
