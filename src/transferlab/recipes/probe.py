"""``transferlab probe``: a linear (or MLP) probe per layer and task of any encoder.

    transferlab probe --encoder minilm-l6 --tasks upos,deprel,ner,chunk
    transferlab probe --encoder glove-6b-50d --tasks upos,ner
    transferlab probe --encoder runs/lm/best --tasks upos,length,bigram_shift --corpus my_text.txt

The encoder is anything :func:`~transferlab.tasks.loading.load_backbone` takes (static
vectors are a 0-layer encoder: their one layer is the embedding). It runs once over each task's
sentences; every layer's word vectors go to a memory-mapped cache that later runs on the same
encoder and sentences reuse (:mod:`transferlab.adapt.features`). Then the probes of all layers
and tasks that share sentences train in one batched pass (:mod:`transferlab.eval.probing`).
Word-level tasks get a control task beside them and report selectivity.

Writes ``OUT/probe.json`` (every figure), ``OUT/probe.md`` (a layer x task table) and
``OUT/probe.png`` (a heatmap of the same).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from transferlab.adapt.features import cached_word_features, encoder_identity
from transferlab.config import to_dict, write_json
from transferlab.data import catalog
from transferlab.encoders import backbone as bb
from transferlab.encoders.registry import buildable
from transferlab.eval import probing
from transferlab.log import log
from transferlab.tasks.loading import load_backbone
from transferlab.text.tokenize import TextConfig


@dataclass(frozen=True)
class ProbeRunConfig:
    encoder: str = "minilm-l6"
    tasks: str = "upos,deprel,ner,chunk"  # word-level: upos xpos deprel ner chunk pos; sentence: length ...
    subword: Literal["first", "mean"] = "first"  # a word's vector: its first subword, or their mean
    corpus: str = "ptb"  # the text sentence-level tasks are made from (catalog names or files)
    data: probing.FileColumns = field(default_factory=probing.FileColumns)  # columns of a file in tasks
    max_train_sentences: int = 0  # per task; 0 = all
    max_test_sentences: int = 0
    sentence_task_size: int = 10000  # sentences generated per sentence-level task
    word_content_words: int = 100  # classes of the word-content task
    probe: probing.ProbeConfig = field(default_factory=probing.ProbeConfig)
    scratch: bb.ScratchConfig = field(default_factory=bb.ScratchConfig)  # --encoder awd_lstm|transformer
    text: TextConfig = field(default_factory=lambda: TextConfig(lower=False))
    cache: str = ""  # feature cache folder; "" = $TRANSFERLAB_CACHE/features (~/.cache/transferlab)
    device: str = "auto"
    threads: int = 0  # torch CPU threads; 0 = torch's default
    progress: bool = True
    out: str = "runs/probe"

    def __post_init__(self):
        names = [t for t in self.tasks.split(",") if t]
        unknown = [t for t in names if t not in probing.WORD_TASKS and t not in probing.SENTENCE_TASKS
                   and not probing.is_file_task(t)]
        if not names or unknown:
            raise ValueError(f"tasks: unknown probing task(s) {', '.join(unknown) or '(none given)'}; known: "
                             f"{', '.join([*probing.WORD_TASKS, *probing.SENTENCE_TASKS])}, or a file of your own "
                             f"(.conll/.conllu tagged words; .tsv/.csv/.jsonl texts with labels)")
        if self.corpus != "ptb" and not any(t in probing.SENTENCE_TASKS for t in names):
            raise ValueError(f"corpus={self.corpus!r} is read only by the sentence-level tasks (length, word_content, "
                             f"bigram_shift), and none is asked for; to probe a tagged file of your own, put it in "
                             f"--tasks: --tasks {self.corpus}")


def load_tasks(cfg: ProbeRunConfig) -> list[probing.ProbeData]:
    names = [t for t in cfg.tasks.split(",") if t]
    word = [t for t in names if t in probing.WORD_TASKS]
    sentence = [t for t in names if t in probing.SENTENCE_TASKS]
    tasks = probing.word_tasks(word, cfg.max_train_sentences, cfg.max_test_sentences, cfg.probe.seed)
    tasks += [probing.file_task(t, cfg.data, cfg.max_train_sentences, cfg.max_test_sentences, cfg.probe.seed)
              for t in names if probing.is_file_task(t)]
    if sentence:
        lines = list(catalog.corpus(cfg.corpus))
        tasks += probing.sentence_tasks(lines, sentence, cfg.sentence_task_size, cfg.word_content_words,
                                        cfg.probe.seed, max_train=cfg.max_train_sentences,
                                        max_test=cfg.max_test_sentences)
    by_name = {t.name: t for t in tasks}
    return [by_name[Path(name).stem if probing.is_file_task(name) else name] for name in names]


def check_alignment(b: bb.Backbone, name: str, sentence: list[str]) -> None:
    """A word-level task needs one position per word; say so by name when the encoder has none."""
    try:
        pieces, first = b.words(sentence)
    except Exception as e:
        raise ValueError(f"--encoder {name} cannot align its tokens to words ({e}); word-level probing "
                         f"tasks need an encoder whose tokenizer maps words to pieces") from None
    if len(first) != len(sentence) or any(not 0 <= p < max(len(pieces), 1) for p in first):
        raise ValueError(f"--encoder {name} cannot align its tokens to words: {len(first)} positions for "
                         f"{len(sentence)} words; word-level probing tasks need one per word")


def run(cfg: ProbeRunConfig) -> dict:
    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if cfg.device == "auto" else cfg.device
    started = time.perf_counter()
    tasks = load_tasks(cfg)
    scratch_text = lambda: (" ".join(s) for t in tasks for s in t.sentences["train"])  # noqa: E731
    b = load_backbone(cfg.encoder, cfg.text, scratch_text, cfg.scratch, seed=cfg.probe.seed)
    identity = encoder_identity(cfg.encoder)
    if "text" in b.files:  # a word-level encoder: the tokenization its input got
        identity += f"|{b.files['text']}"
    if b.family in buildable() and not b.pretrained:
        identity += f"|random:{cfg.probe.seed}|{to_dict(cfg.scratch)}"
    cache = Path(cfg.cache) if cfg.cache else catalog.cache_dir() / "features"
    results: dict = {"encoder": cfg.encoder, "subword": cfg.subword, "probe": cfg.probe.probe, "tasks": {}}
    groups: dict[str, list[probing.ProbeData]] = {}
    for t in tasks:
        groups.setdefault(t.features, []).append(t)
    for key, group in groups.items():
        if group[0].level == "word":
            check_alignment(b, cfg.encoder, group[0].sentences["train"][0])
        feats, n_layers = {}, 0
        for split in ("train", "test"):
            f, hit = cached_word_features(b, identity, group[0].sentences[split], cache, cfg.subword, device,
                                          cfg.progress)
            log(f"{key} {split}: {len(group[0].sentences[split]):,} sentences, {f.n_layers} layers "
                f"({'from the cache' if hit else 'encoded'})")
            feats[split], n_layers = f, f.n_layers
        results["n_layers"] = n_layers
        results["tasks"] |= probe_group(group, feats, cfg, device)
    results["wall_s"] = time.perf_counter() - started
    out = Path(cfg.out)
    write_json(results | {"config": to_dict(cfg)}, out / "probe.json")
    (out / "probe.md").write_text(markdown(results), encoding="utf-8")
    heatmap(results, out / "probe.png")
    log(f"probe.json, probe.md, probe.png -> {out}")
    print(markdown(results))
    return results


def probe_group(group: list[probing.ProbeData], feats: dict, cfg: ProbeRunConfig, device: str) -> dict:
    """Train every layer's probes for the tasks of one feature set (and their controls) at once."""
    word = group[0].level == "word"
    if word:
        layers = {s: feats[s].layers for s in feats}
        rows = {s: np.nonzero(feats[s].kept)[0] for s in feats}
    else:
        layers = {s: feats[s].sentence_means() for s in feats}
        rows = {s: np.arange(len(layers[s][0])) for s in feats}
    train, mean, std = probing.stack_layers(layers["train"], rows=rows["train"])
    test, _, _ = probing.stack_layers(layers["test"], mean, std, rows=rows["test"])
    labels = {s: [t.labels[s][rows[s]] for t in group] for s in feats}
    n_classes = [len(t.classes) for t in group]
    control = word and cfg.probe.control
    if control:
        words = {s: [w for sent in group[0].sentences[s] for w in sent] for s in feats}
        words = {s: [words[s][i] for i in rows[s]] for s in feats}
        for t, y, c in zip(group, list(labels["train"]), n_classes):
            ctrl_train, ctrl_test = probing.control_labels(words["train"], words["test"], y, c, cfg.probe.seed)
            labels["train"].append(ctrl_train)
            labels["test"].append(ctrl_test)
        n_classes = n_classes * 2
    acc = probing.train_probes(train, labels["train"], test, labels["test"], n_classes, cfg.probe, device,
                               cfg.progress)
    out = {}
    for k, t in enumerate(group):
        y = labels["train"][k]
        majority = float(np.mean(labels["test"][k] == np.bincount(y[y >= 0]).argmax()))
        row = {"level": t.level, "accuracy": acc[k].tolist(), "majority": majority, "classes": len(t.classes),
               "n_train": int((y >= 0).sum()), "n_test": int((labels["test"][k] >= 0).sum()),
               "best_layer": int(acc[k].argmax())}
        if control:
            ctrl = acc[len(group) + k]
            row |= {"control": ctrl.tolist(), "selectivity": (acc[k] - ctrl).tolist()}
        out[t.name] = row
    return out


def markdown(results: dict) -> str:
    tasks = results["tasks"]
    head = "| layer | " + " | ".join(tasks) + " |\n|---|" + "---|" * len(tasks) + "\n"
    rows = []
    for layer in range(results.get("n_layers", 0)):
        cells = []
        for r in tasks.values():
            cell = f"{100 * r['accuracy'][layer]:.1f}"
            if "selectivity" in r:
                cell += f" ({100 * r['selectivity'][layer]:+.1f})"
            if layer == r["best_layer"]:
                cell = f"**{cell}**"
            cells.append(cell)
        rows.append(f"| {layer} | " + " | ".join(cells) + " |")
    base = "| majority | " + " | ".join(f"{100 * r['majority']:.1f}" for r in tasks.values()) + " |"
    note = (f"\n\n{results['encoder']}: test accuracy (%) of a {results['probe']} probe per layer (0 = embeddings)"
            f"; in parentheses the selectivity (accuracy minus control-task accuracy, Hewitt & Liang 2019); "
            f"bold: the best layer.\n")
    return head + "\n".join(rows) + "\n" + base + note


def heatmap(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results["tasks"])
    grid = np.array([results["tasks"][n]["accuracy"] for n in names]).T * 100  # (layers, tasks)
    fig, ax = plt.subplots(figsize=(1.4 + 1.1 * len(names), 1.2 + 0.45 * len(grid)))
    im = ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower")
    for (i, j), v in np.ndenumerate(grid):
        ax.text(j, i, f"{v:.1f}", ha="center", va="center", color="white" if v < grid.max() - 15 else "black",
                fontsize=8)
    ax.set_xticks(range(len(names)), names)
    ax.set_yticks(range(len(grid)), [str(i) for i in range(len(grid))])
    ax.set_xlabel("task")
    ax.set_ylabel("layer (0 = embeddings)")
    ax.set_title(f"{results['encoder']}: {results['probe']} probe accuracy (%)", fontsize=9)
    fig.colorbar(im, ax=ax, fraction=0.05)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)

