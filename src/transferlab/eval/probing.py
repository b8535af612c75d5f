"""Probing: what each layer of an encoder represents, by how well a small classifier reads it out.

- Word-level tasks (Liu et al. 2019, "Linguistic Knowledge and Transferability of Contextual
  Representations"): a linear probe on each layer's word vectors predicts the word's UPOS tag or
  dependency relation (UD English-EWT) or its NER or chunk tag (CoNLL-2003).
- Sentence-level tasks in the style of Conneau et al. 2018 ("What you can cram into a single
  vector"), generated from any corpus so a user can probe on their own text: sentence length
  (6 bins), word content (which of K mid-frequency words the sentence contains) and bigram
  shift (were two adjacent words swapped), on the mean of a layer's word vectors.
- Control tasks (Hewitt & Liang 2019, "Designing and Interpreting Probes with Control Tasks"):
  each word type gets a fixed random label drawn from the task's label distribution; a probe
  that does well there memorizes word identities. Selectivity = task accuracy - control accuracy.

All probes of one feature set (every layer, every task on those sentences, and their controls)
train together in one batched pass: the layers' features are stacked into (L, N, D) (padded to
the widest layer), every batch is one ``bmm`` against (L, D, K*C) weights, and Adam, being
elementwise, keeps the L*K problems independent. Features are standardized per layer with the
training set's mean and deviation, as a scikit-learn pipeline would.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn

WORD_TASKS: dict[str, tuple[str, str]] = {  # task -> (catalog dataset, its tag column)
    "upos": ("ud-ewt", "upos"),
    "xpos": ("ud-ewt", "xpos"),
    "deprel": ("ud-ewt", "deprels"),
    "ner": ("conll2003", "ner"),
    "chunk": ("conll2003", "chunk"),
    "pos": ("conll2003", "pos"),
}
SENTENCE_TASKS = ("length", "word_content", "bigram_shift")
LENGTH_BINS = ((0, 8), (9, 12), (13, 16), (17, 20), (21, 25), (26, 10**9))  # Conneau et al.'s, ends open


@dataclass(frozen=True)
class ProbeConfig:
    probe: Literal["linear", "mlp"] = "linear"
    hidden_dim: int = 256  # the MLP probe's hidden layer
    dropout: float = 0.0  # the MLP probe's, on its hidden layer
    epochs: int = 6
    min_steps: int = 500  # more epochs when the data is small: a probe from zeros needs steps to converge
    batch_size: int = 512
    lr: float = 1e-2  # Adam, decayed linearly to 0
    weight_decay: float = 0.0
    control: bool = True  # train control-task probes beside word-level tasks
    seed: int = 0

    def __post_init__(self):
        for name in ("hidden_dim", "epochs", "min_steps", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"probe.{name} must be >= 1, got {getattr(self, name)}")
        if not self.lr > 0:
            raise ValueError(f"probe.lr must be > 0, got {self.lr}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"probe.dropout must be in [0, 1), got {self.dropout}")


@dataclass
class ProbeData:
    """One task's sentences and labels (per word for word-level tasks, per sentence otherwise)."""

    name: str
    level: Literal["word", "sentence"]
    features: str  # tasks with the same value read the same sentences (one feature set)
    sentences: dict[str, list[list[str]]]  # split -> sentences
    labels: dict[str, np.ndarray]  # split -> (N,) int64 class ids
    classes: list[str]


# --- tasks ---------------------------------------------------------------------------------------

def _cap(items: list, n: int, seed: int) -> list:
    """The first ``n`` of a fixed shuffle (all, in order, when n is 0 or large enough)."""
    if not n or n >= len(items):
        return items
    keep = sorted(random.Random(seed).sample(range(len(items)), n))
    return [items[i] for i in keep]


def word_tasks(names: Sequence[str], max_train: int = 0, max_test: int = 0, seed: int = 0) -> list[ProbeData]:
    """The word-level tasks ``names`` from the catalog (``WORD_TASKS``): train and test splits,
    capped at ``max_train``/``max_test`` sentences (0: all). UD relation subtypes (``nmod:poss``)
    are folded into the universal relation (``nmod``)."""
    from transferlab.data import catalog

    out = []
    for name in names:
        dataset, column = WORD_TASKS[name]
        sents, tags = {}, {}
        for split, cap in (("train", max_train), ("test", max_test)):
            examples = _cap([ex for ex in catalog.load_examples(dataset, split, tags=column) if ex.tokens], cap, seed)
            sents[split] = [list(ex.tokens) for ex in examples]
            tags[split] = [[t.split(":")[0] if name == "deprel" else t for t in ex.tags] for ex in examples]
        classes = sorted({t for row in tags["train"] for t in row})
        index = {t: i for i, t in enumerate(classes)}
        labels = {s: np.array([index.get(t, -1) for row in tags[s] for t in row], dtype=np.int64) for s in tags}
        out.append(ProbeData(name, "word", dataset, sents, labels, classes))
    return out


def is_file_task(name: str) -> bool:
    """A ``--tasks`` entry that names a file of your own rather than a packaged task."""
    return name not in WORD_TASKS and name not in SENTENCE_TASKS and (
        "/" in name or Path(name).suffix.lower() in (".conll", ".conllu", ".txt", ".tsv", ".csv", ".jsonl"))


@dataclass(frozen=True)
class FileColumns:
    """Where the labels of a probing file of your own are (``probe --tags/--columns/--text-col/--label-col``)."""

    text_col: str = "text"
    label_col: str = "label"
    tags: str = ""  # a CoNLL file's tag column: a name from ``columns``, or an index; "" = the last
    columns: str = ""  # a CoNLL file's column names, comma-separated


def file_task(path: str, cols: FileColumns = FileColumns(), max_train: int = 0, max_test: int = 0,
              seed: int = 0) -> ProbeData:
    """A probing task from your own labeled file, by what it holds: tagged words (CoNLL, CoNLL-U;
    ``data.tags``/``data.columns`` pick the column) give a word-level task, texts with labels
    (TSV, CSV, JSONL; ``data.text_col``/``data.label_col``) a sentence-level one. 80% of its
    sentences (a fixed shuffle) train the probe, 20% test it, then the caps apply."""
    from transferlab.data.examples import TaggedSentence, TextExample
    from transferlab.data.tasks import TaskDataConfig, read_examples
    from transferlab.text.tokenize import word_tokenize

    data = TaskDataConfig(task="", train=path, text_col=cols.text_col, label_col=cols.label_col,
                          tags=cols.tags,
                          columns=cols.columns)
    examples = [ex for ex in read_examples(data, "train", path) if not isinstance(ex, TaggedSentence) or ex.tokens]
    if len(examples) < 10:
        raise ValueError(f"{path}: {len(examples)} labeled sentences; a probing task needs 10 or more")
    order = list(range(len(examples)))
    random.Random(seed).shuffle(order)
    cut = int(0.8 * len(order))
    parts = {"train": _cap(sorted(order[:cut]), max_train, seed), "test": _cap(sorted(order[cut:]), max_test, seed)}
    name = Path(path).stem
    if isinstance(examples[0], TaggedSentence):
        sents = {s: [list(examples[i].tokens) for i in ix] for s, ix in parts.items()}
        tags = {s: [t for i in ix for t in examples[i].tags] for s, ix in parts.items()}
        level = "word"
    elif isinstance(examples[0], TextExample):
        sents = {s: [word_tokenize(examples[i].text, lower=False) for i in ix] for s, ix in parts.items()}
        tags = {s: [examples[i].label for i in ix] for s, ix in parts.items()}
        level = "sentence"
    else:
        raise ValueError(f"{path}: text pairs are not a probing task (a word-level file or a text-and-label file is)")
    classes = sorted(set(tags["train"]))
    index = {t: i for i, t in enumerate(classes)}
    labels = {s: np.array([index.get(t, -1) for t in row], dtype=np.int64) for s, row in tags.items()}
    return ProbeData(name, level, f"file:{Path(path).resolve()}", sents, labels, classes)


def sentence_tasks(lines: Sequence[str], names: Sequence[str], max_sentences: int = 10000, n_words: int = 100,
                   seed: int = 0, tokenize=None, max_train: int = 0, max_test: int = 0) -> list[ProbeData]:
    """Conneau et al.-style tasks made from raw ``lines`` (one sentence each): 80% train, 20% test,
    then at most ``max_train`` and ``max_test`` sentences of each split (0 = all)."""
    from transferlab.text.tokenize import word_tokenize

    tokenize = tokenize or (lambda text: word_tokenize(text, lower=False))
    sents = [s for s in (tokenize(line) for line in lines) if 3 <= len(s) <= 60]
    if len(sents) < 20:
        raise ValueError(f"the corpus has {len(sents)} sentences of 3-60 words; sentence probing tasks need 20 or more")
    rng = random.Random(seed)
    out = []
    for name in names:
        if name == "length":
            chosen = _cap(sents, max_sentences, seed)
            classes = [f"{lo}-{hi}" if hi < 10**9 else f"{lo}+" for lo, hi in LENGTH_BINS]
            labels = [next(i for i, (lo, hi) in enumerate(LENGTH_BINS) if lo <= len(s) <= hi) for s in chosen]
        elif name == "word_content":
            chosen, labels, classes = _word_content(sents, max_sentences, n_words, seed)
        elif name == "bigram_shift":
            chosen, labels = [], []
            for s in _cap(sents, max_sentences, seed):
                if rng.random() < 0.5:
                    i = rng.randrange(len(s) - 1)
                    s = s[:i] + [s[i + 1], s[i]] + s[i + 2:]
                    labels.append(1)
                else:
                    labels.append(0)
                chosen.append(s)
            classes = ["original", "inverted"]
        else:
            raise ValueError(f"unknown sentence probing task {name!r}; known: {', '.join(SENTENCE_TASKS)}")
        order = list(range(len(chosen)))
        random.Random(seed + 1).shuffle(order)
        cut = int(0.8 * len(order))
        parts = {"train": sorted(order[:cut][: max_train or None]), "test": sorted(order[cut:][: max_test or None])}
        sentences = {s: [chosen[i] for i in ix] for s, ix in parts.items()}
        ys = {s: np.array([labels[i] for i in ix], dtype=np.int64) for s, ix in parts.items()}
        out.append(ProbeData(name, "sentence", f"sentence:{name}", sentences, ys, classes))
    return out


def _word_content(sents: list[list[str]], max_sentences: int, n_words: int, seed: int):
    """Sentences containing exactly one of ``n_words`` mid-frequency words (ranks 100 on, as
    Conneau et al. skip the most frequent), at most ``max_sentences / n_words`` per word."""
    counts = Counter(w.lower() for s in sents for w in set(s))
    ranked = [w for w, _ in counts.most_common() if w.isalpha() and len(w) > 2]
    targets = ranked[100:100 + n_words] if len(ranked) >= 100 + n_words else ranked[len(ranked) // 2:][:n_words]
    index = {w: i for i, w in enumerate(targets)}
    per_word = max(1, (max_sentences or len(sents)) // max(len(targets), 1))
    taken: Counter = Counter()
    chosen, labels = [], []
    for s in _cap(sents, 0, seed):
        hits = {w.lower() for w in s if w.lower() in index}
        if len(hits) == 1:
            (w,) = hits
            if taken[w] < per_word:
                taken[w] += 1
                chosen.append(s)
                labels.append(index[w])
    return chosen, labels, targets


def control_labels(train_words: Sequence[str], test_words: Sequence[str], train_labels: np.ndarray,
                   n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Hewitt & Liang's control task: each word type's label is drawn once from the empirical
    label distribution of the training words, so the same type gets the same label everywhere.
    The draw depends only on the type and the seed (a hash), not on what else is in the data."""
    probs = np.bincount(train_labels[train_labels >= 0], minlength=n_classes).astype(np.float64)
    cdf = np.cumsum(probs / probs.sum())

    def label(word: str) -> int:
        u = int.from_bytes(hashlib.blake2b(f"{seed}\x00{word}".encode(), digest_size=8).digest(), "little") / 2**64
        return int(min(np.searchsorted(cdf, u, side="right"), n_classes - 1))

    table: dict[str, int] = {}
    for w in list(train_words) + list(test_words):
        if w not in table:
            table[w] = label(w)
    return (np.array([table[w] for w in train_words], dtype=np.int64),
            np.array([table[w] for w in test_words], dtype=np.int64))


# --- batched probes ------------------------------------------------------------------------------

def stack_layers(layers: Sequence[np.ndarray], mean: list | None = None, std: list | None = None,
                 rows: np.ndarray | None = None):
    """(L, N, Dmax) float16 tensor of standardized layers (zero-padded), and the statistics used."""
    rows = np.arange(len(layers[0])) if rows is None else rows
    dmax = max(layer.shape[1] for layer in layers)
    out = torch.zeros(len(layers), len(rows), dmax, dtype=torch.float16)
    stats_mean, stats_std = [], []
    for j, layer in enumerate(layers):
        x = torch.from_numpy(np.asarray(layer[rows], dtype=np.float32))  # (N, D_j)
        m = x.mean(0) if mean is None else mean[j]
        s = x.std(0).clamp_min(1e-6) if std is None else std[j]
        out[j, :, : x.size(1)] = ((x - m) / s).to(torch.float16)
        stats_mean.append(m)
        stats_std.append(s)
    return out, stats_mean, stats_std


class BatchedProbes(nn.Module):
    """L x K probes: one per layer and label set, with C classes each (padded to the largest)."""

    def __init__(self, n_layers: int, dim: int, n_classes: Sequence[int], cfg: ProbeConfig):
        super().__init__()
        self.L, self.K, self.C = n_layers, len(n_classes), max(n_classes)
        self.mlp = cfg.probe == "mlp"
        width = cfg.hidden_dim if self.mlp else self.C
        self.w1 = nn.Parameter(torch.empty(n_layers, dim, self.K * width))
        self.b1 = nn.Parameter(torch.zeros(n_layers, 1, self.K * width))
        nn.init.normal_(self.w1, std=dim**-0.5 if self.mlp else 0.0)
        if self.mlp:
            self.w2 = nn.Parameter(torch.zeros(n_layers, self.K, cfg.hidden_dim, self.C))
            self.b2 = nn.Parameter(torch.zeros(n_layers, self.K, 1, self.C))
            self.drop = nn.Dropout(cfg.dropout)
        pad = torch.zeros(self.K, self.C)
        for k, c in enumerate(n_classes):
            pad[k, c:] = -1e4  # classes a label set does not have are never predicted
        self.register_buffer("pad", pad)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(L, B, D) features -> (L, K, B, C) logits."""
        L, B, _ = x.shape
        h = torch.baddbmm(self.b1, x, self.w1)  # (L,B,K*W)
        if self.mlp:
            h = self.drop(torch.relu(h)).view(L, B, self.K, -1).transpose(1, 2)  # (L,K,B,H)
            logits = torch.matmul(h, self.w2) + self.b2  # (L,K,B,C)
        else:
            logits = h.view(L, B, self.K, self.C).transpose(1, 2)  # (L,K,B,C)
        return logits + self.pad[None, :, None, :]


def train_probes(train: torch.Tensor, train_labels: Sequence[np.ndarray], test: torch.Tensor,
                 test_labels: Sequence[np.ndarray], n_classes: Sequence[int], cfg: ProbeConfig,
                 device: str | torch.device = "cpu", progress: bool = False) -> np.ndarray:
    """Test accuracy (K, L) of every (label set, layer) probe, trained in one batched pass.

    ``train``/``test``: (L, N, D) stacked features (:func:`stack_layers`); labels: K arrays of
    (N,) class ids, -1 for words without a label (left out of training and scoring).
    """
    from tqdm import tqdm

    gen = torch.Generator().manual_seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    L, N, D = train.shape
    y = torch.from_numpy(np.stack(train_labels))  # (K,N)
    usable = torch.nonzero((y >= 0).any(0)).squeeze(1)
    model = BatchedProbes(L, D, n_classes, cfg).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    per_epoch = max(1, -(-len(usable) // cfg.batch_size))
    epochs = max(cfg.epochs, -(-cfg.min_steps // per_epoch))
    steps = epochs * per_epoch
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: max(0.0, 1 - s / steps))
    loss_fn = nn.CrossEntropyLoss(ignore_index=-1, reduction="sum")
    model.train()
    bar = tqdm(total=steps, desc=f"probing {L} layers x {len(n_classes)} tasks", unit=" steps",
               disable=None if progress else True, mininterval=1.0)
    for _ in range(epochs):
        order = usable[torch.randperm(len(usable), generator=gen)]
        for i in range(0, len(order), cfg.batch_size):
            idx = order[i:i + cfg.batch_size]
            xb = train[:, idx].to(device, torch.float32)  # (L,B,D)
            yb = y[:, idx].to(device)  # (K,B)
            logits = model(xb)  # (L,K,B,C)
            target = yb.unsqueeze(0).expand(L, -1, -1)  # (L,K,B)
            per_probe = ((yb >= 0).sum() / len(n_classes)).clamp_min(1)  # labeled words per probe
            loss = loss_fn(logits.reshape(-1, model.C), target.reshape(-1)) / per_probe  # sum of L*K mean losses
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            bar.update()
    bar.close()
    return probe_accuracy(model, test, test_labels, device)


@torch.no_grad()
def probe_accuracy(model: BatchedProbes, x: torch.Tensor, labels: Sequence[np.ndarray],
                   device: str | torch.device = "cpu", batch_size: int = 4096) -> np.ndarray:
    model.eval()
    y = torch.from_numpy(np.stack(labels))  # (K,N)
    correct = torch.zeros(model.K, model.L)
    for i in range(0, x.size(1), batch_size):
        pred = model(x[:, i:i + batch_size].to(device, torch.float32)).argmax(-1).cpu()  # (L,K,B)
        yb = y[:, i:i + batch_size]
        correct += ((pred == yb.unsqueeze(0)) & (yb >= 0).unsqueeze(0)).sum(-1).T.float()
    return (correct / (y >= 0).sum(1, keepdim=True).clamp_min(1)).numpy()
