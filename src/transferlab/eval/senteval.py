"""The SentEval protocol: a frozen sentence encoder scored by a logistic regression over its vectors.

Conneau & Kiela 2018, "SentEval: An Evaluation Toolkit for Universal Sentence Representations".
The encoder never trains; each task trains only a linear classifier on the sentence vectors
(pairs as ``[u, v, |u - v|, u * v]``, InferSent's features), SentEval's ``PyTorchClassifier``
with ``nhid=0``:

- Adam (lr 1e-3), batches of 64, cross-entropy; L2 as Adam's weight decay, chosen from a grid
  (SentEval's ``10**t for t in range(-5, -1)``);
- "epochs" of ``epoch_size`` = 4 passes; after each, the held-out accuracy is checked, the best
  weights kept, and training stops once ``tenacity`` + 1 checks have not improved on the best
  (SentEval's counter is never reset), or after ``max_epochs`` passes;
- a task with a dev split (:func:`evaluate_split`, SentEval's ``SplitClassifier``): every L2 is
  fit on train, early-stopped and scored on dev; the best one's model scores test;
- a task without one (:func:`evaluate_kfold`, SentEval's ``KFoldClassifier``): every L2 is scored
  by k-fold cross-validation on train (each fold's model early-stopped on 5% of its own training
  part); the best L2 is refit on all of train (early-stopped on 5% of it) and scores test.

Relatedness (STS-B, SICK-R) is scored two ways: unsupervised, the cosine of ``u`` and ``v``
against the gold score (Pearson and Spearman, SentEval's STS tasks), and optionally supervised
(:func:`evaluate_relatedness`, SentEval's ``RelatednessPytorch`` after Tai et al. 2015): the gold
score becomes a distribution over the integer scores around it, a softmax regression over
``[u, v, |u - v|, u * v]`` fits it under squared error, early-stopped on dev Pearson, and predicts
the expected score.

All the L2 values of one fit train at once: G independent linear models in one batched matmul,
each with its own weight decay added to its gradient as torch's Adam adds it (Adam is
elementwise, so the models never interact), which costs little more than one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn

from transferlab.eval import metrics
from transferlab.vectors.features import pair_features

__all__ = ["ClassifierConfig", "LinearFit", "cosine", "evaluate_kfold", "evaluate_relatedness", "evaluate_split",
           "fit_linear", "holdout", "kfold", "pair_features", "relatedness_targets", "sts_scores"]

Objective = Literal["classify", "relatedness"]


@dataclass(frozen=True)
class ClassifierConfig:
    """SentEval's classifier settings (``params_senteval['classifier']`` of its paper runs)."""

    batch_size: int = 64
    lr: float = 1e-3  # Adam's default, which SentEval keeps
    epoch_size: int = 4  # passes over the training data between two held-out checks
    max_epochs: int = 200  # passes in all, at most
    tenacity: int = 5  # held-out checks without improvement before stopping, less one
    l2_grid: tuple[float, ...] = (1e-5, 1e-4, 1e-3, 1e-2)  # weight decays tried
    kfold: int = 10  # folds of the cross-validation of tasks without a dev split
    holdout: float = 0.05  # of a training part, for early stopping where no dev split serves
    seed: int = 1111

    def __post_init__(self):
        for name in ("batch_size", "epoch_size", "max_epochs", "tenacity"):
            if getattr(self, name) < 1:
                raise ValueError(f"classifier.{name} must be >= 1, got {getattr(self, name)}")
        if self.kfold < 2:
            raise ValueError(f"classifier.kfold must be >= 2, got {self.kfold}")
        if not self.lr > 0:
            raise ValueError(f"classifier.lr must be > 0, got {self.lr}")
        if not self.l2_grid or any(v < 0 for v in self.l2_grid):
            raise ValueError(f"classifier.l2_grid must hold one or more weight decays >= 0, got {self.l2_grid}")
        if not 0.0 < self.holdout < 1.0:
            raise ValueError(f"classifier.holdout must be in (0, 1), got {self.holdout}")


# --- features and unsupervised similarity -------------------------------------------------------

def cosine(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of (N, D) arrays: (N,); 0 where a vector is zero."""
    u, v = np.asarray(u, dtype=np.float64), np.asarray(v, dtype=np.float64)
    norms = np.linalg.norm(u, axis=1) * np.linalg.norm(v, axis=1)
    return np.divide((u * v).sum(1), norms, out=np.zeros(len(u)), where=norms > 0)


def sts_scores(u: np.ndarray, v: np.ndarray, gold: Sequence[float]) -> dict[str, float]:
    """SentEval's unsupervised STS: Pearson and Spearman of cos(u, v) with the gold scores."""
    sims = cosine(u, v)
    return {"pearson": metrics.pearson(sims, gold), "spearman": metrics.spearman(sims, gold)}


# --- splits ---------------------------------------------------------------------------------------

def kfold(n: int, k: int, seed: int = 1111) -> list[tuple[np.ndarray, np.ndarray]]:
    """scikit-learn's ``KFold(k, shuffle=True)`` rule: a random order cut into k contiguous
    folds, the first ``n % k`` one example larger; (train, test) indices, each sorted."""
    if not 2 <= k <= n:
        raise ValueError(f"{k}-fold cross-validation needs at least {k} examples, got {n}")
    order = np.random.default_rng(seed).permutation(n)
    sizes = np.full(k, n // k) + (np.arange(k) < n % k)
    ends = np.cumsum(sizes)
    folds = []
    for start, end in zip(ends - sizes, ends):
        test = np.sort(order[start:end])
        folds.append((np.sort(np.concatenate([order[:start], order[end:]])), test))
    return folds


def holdout(n: int, fraction: float, seed: int = 1111) -> tuple[np.ndarray, np.ndarray]:
    """A random ``fraction`` of ``range(n)`` (at least one, never all) held out: (kept, held)."""
    if n < 2:
        raise ValueError(f"holding out part of {n} example(s) leaves nothing to train on")
    order = np.random.default_rng(seed).permutation(n)
    cut = min(max(1, int(fraction * n)), n - 1)
    return np.sort(order[cut:]), np.sort(order[:cut])


# --- the batched linear models --------------------------------------------------------------------

@dataclass
class LinearFit:
    """G linear models (one per weight decay) and the best held-out score each reached."""

    weight: torch.Tensor  # (G, D, C)
    bias: torch.Tensor  # (G, C)
    l2: tuple[float, ...]
    held_out: np.ndarray  # (G,): best held-out accuracy, or Pearson for relatedness
    passes: np.ndarray  # (G,): passes over the data when the kept weights were taken

    @torch.no_grad()
    def logits(self, x: np.ndarray) -> torch.Tensor:
        """(N, D) features -> (G, N, C) logits."""
        xt = torch.as_tensor(np.asarray(x), dtype=torch.float32)
        return torch.einsum("nd,gdc->gnc", xt, self.weight) + self.bias[:, None, :]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """(G, N) class ids."""
        return self.logits(x).argmax(-1).numpy()

    def expected(self, x: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """(G, N) expected score under each model's softmax over the integer ``scores`` (C,)."""
        return (torch.softmax(self.logits(x), -1) @ torch.as_tensor(scores, dtype=torch.float32)).numpy()


def relatedness_targets(gold: Sequence[float], low: int, high: int) -> np.ndarray:
    """Tai et al. 2015's encoding of a score y in [low, high] as a distribution over the integer
    scores low..high: ``p[floor(y)] = floor(y) - y + 1``, ``p[floor(y) + 1] = y - floor(y)``; (N, C)."""
    y = np.clip(np.asarray(gold, dtype=np.float64), low, high)
    out = np.zeros((len(y), high - low + 1))
    f = np.minimum(np.floor(y).astype(int), high - 1)  # y == high: all mass on the top score
    rows = np.arange(len(y))
    out[rows, f - low] = f - y + 1
    out[rows, f - low + 1] = y - f
    return out


def _score(fit_logits: torch.Tensor, y: np.ndarray, objective: Objective, scores: np.ndarray | None) -> np.ndarray:
    """(G,) accuracy (classify) or Pearson of the expected score (relatedness) of (G, N, C) logits."""
    if objective == "classify":
        return (fit_logits.argmax(-1).numpy() == np.asarray(y)[None]).mean(1)
    pred = (torch.softmax(fit_logits, -1) @ torch.as_tensor(scores, dtype=torch.float32)).numpy()
    return np.array([metrics.pearson(p, y) for p in pred])


@contextmanager
def _threads_for(work: int) -> Iterator[None]:
    """One torch thread for small matrices, where more only add their start-up (and, on a busy
    machine, waits many times the work); the caller's setting is restored."""
    before = torch.get_num_threads()
    if work < 2**22 and before > 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def fit_linear(x: np.ndarray, y: np.ndarray, x_held: np.ndarray, y_held: np.ndarray, cfg: ClassifierConfig,
               l2: Sequence[float] | None = None, objective: Objective = "classify", n_classes: int = 0,
               bins: tuple[int, int] = (0, 5)) -> LinearFit:
    """One linear model per weight decay in ``l2`` (``cfg.l2_grid`` by default), trained together
    with Adam on (``x``, ``y``) and early-stopped on (``x_held``, ``y_held``) as SentEval does.

    ``classify``: ``y`` are class ids (``n_classes`` of them, else ``max(y) + 1``), cross-entropy.
    ``relatedness``: ``y`` are scores in ``bins``, fit as :func:`relatedness_targets` under
    squared error of the softmax, held-out score the Pearson of the expected score.
    """
    l2 = tuple(cfg.l2_grid if l2 is None else l2)
    classes = max(n_classes, 2) if objective == "classify" else bins[1] - bins[0] + 1
    with _threads_for(cfg.batch_size * np.shape(x)[1] * len(l2) * classes):
        return _fit_linear(x, y, x_held, y_held, cfg, l2, objective, n_classes, bins)


def _fit_linear(x: np.ndarray, y: np.ndarray, x_held: np.ndarray, y_held: np.ndarray, cfg: ClassifierConfig,
                l2: tuple[float, ...], objective: Objective, n_classes: int, bins: tuple[int, int]) -> LinearFit:
    gen = torch.Generator().manual_seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    xt = torch.as_tensor(np.asarray(x), dtype=torch.float32)  # (N, D)
    if objective == "classify":
        n_classes = max(n_classes, int(np.max(y)) + 1, int(np.max(y_held)) + 1)
        target = torch.as_tensor(np.asarray(y), dtype=torch.long)
        scores = None
    else:
        target = torch.as_tensor(relatedness_targets(y, *bins), dtype=torch.float32)  # (N, C)
        n_classes = target.size(1)
        scores = np.arange(bins[0], bins[1] + 1, dtype=np.float64)
    G, (N, D) = len(l2), xt.shape
    inits = [nn.Linear(D, n_classes) for _ in range(G)]  # nn.Linear's init, as SentEval's
    w = nn.Parameter(torch.stack([m.weight.detach().T for m in inits]))  # (G, D, C)
    b = nn.Parameter(torch.stack([m.bias.detach() for m in inits]))  # (G, C)
    decay = torch.tensor(l2, dtype=torch.float32)  # (G,)
    opt = torch.optim.Adam([w, b], lr=cfg.lr)
    x_held_t = torch.as_tensor(np.asarray(x_held), dtype=torch.float32)
    best = np.full(G, -np.inf)
    kept_w, kept_b = w.detach().clone(), b.detach().clone()
    passes_at = np.zeros(G, dtype=np.int64)
    misses, stopped, passes = np.zeros(G, dtype=np.int64), np.zeros(G, dtype=bool), 0
    while not stopped.all() and passes <= cfg.max_epochs:
        for _ in range(cfg.epoch_size):
            for idx in torch.randperm(N, generator=gen).split(cfg.batch_size):
                logits = torch.einsum("nd,gdc->gnc", xt[idx], w) + b[:, None, :]  # (G, B, C)
                if objective == "classify":
                    loss = nn.functional.cross_entropy(logits.reshape(-1, n_classes), target[idx].repeat(G),
                                                       reduction="sum") / len(idx)
                else:
                    loss = ((torch.softmax(logits, -1) - target[idx]) ** 2).sum() / len(idx)
                # torch Adam's weight_decay (coupled L2: grad += decay * param), one decay per model
                loss = loss + 0.5 * ((decay[:, None, None] * w**2).sum() + (decay[:, None] * b**2).sum())
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
        passes += cfg.epoch_size
        with torch.no_grad():
            now = _score(torch.einsum("nd,gdc->gnc", x_held_t, w) + b[:, None, :], y_held, objective, scores)
        for g in np.flatnonzero(~stopped):
            if now[g] > best[g]:
                best[g], passes_at[g] = now[g], passes
                kept_w[g], kept_b[g] = w.detach()[g], b.detach()[g]
            else:  # SentEval: stop when tenacity misses came before this one
                stopped[g] = misses[g] >= cfg.tenacity
                misses[g] += 1
    return LinearFit(kept_w, kept_b, l2, best, passes_at)


# --- the protocol ---------------------------------------------------------------------------------

def _best(scores: dict[float, float]) -> float:
    """The weight decay of the best held-out score (the smaller decay on a tie, as SentEval's argmax)."""
    return max(scores, key=lambda k: (scores[k], -k))


def evaluate_split(train: tuple[np.ndarray, np.ndarray], dev: tuple[np.ndarray, np.ndarray],
                   test: tuple[np.ndarray, np.ndarray], cfg: ClassifierConfig) -> dict:
    """SentEval's ``SplitClassifier``: the weight decay with the best dev accuracy (each model
    early-stopped on dev) scores test. Returns dev and test accuracy, the chosen L2, the grid's
    dev accuracies and the test predictions."""
    n_classes = int(max(np.max(train[1]), np.max(dev[1]), np.max(test[1]))) + 1
    fit = fit_linear(*train, *dev, cfg, n_classes=n_classes)
    grid = dict(zip(fit.l2, fit.held_out.tolist()))
    g = fit.l2.index(_best(grid))
    pred = fit.predict(test[0])[g]
    return {"dev": grid[fit.l2[g]], "test": float(np.mean(pred == test[1])), "l2": fit.l2[g], "grid": grid,
            "selection": "dev", "pred": pred}


def evaluate_kfold(train: tuple[np.ndarray, np.ndarray], test: tuple[np.ndarray, np.ndarray],
                   cfg: ClassifierConfig) -> dict:
    """SentEval's ``KFoldClassifier``: each weight decay scored by ``cfg.kfold``-fold
    cross-validation on train; the best refit on all of train scores test. ``dev`` is the best
    mean cross-validation accuracy."""
    x, y = np.asarray(train[0]), np.asarray(train[1])
    n_classes = int(max(np.max(y), np.max(test[1]))) + 1
    correct = np.zeros(len(cfg.l2_grid))
    for k, (fit_rows, fold_rows) in enumerate(kfold(len(y), cfg.kfold, cfg.seed)):
        kept, held = holdout(len(fit_rows), cfg.holdout, cfg.seed + k)
        rows, stop_rows = fit_rows[kept], fit_rows[held]
        fit = fit_linear(x[rows], y[rows], x[stop_rows], y[stop_rows], cfg, n_classes=n_classes)
        correct += (fit.predict(x[fold_rows]) == y[fold_rows][None]).sum(1)
    grid = dict(zip(cfg.l2_grid, (correct / len(y)).tolist()))
    best = _best(grid)
    kept, held = holdout(len(y), cfg.holdout, cfg.seed)
    fit = fit_linear(x[kept], y[kept], x[held], y[held], cfg, l2=[best], n_classes=n_classes)
    pred = fit.predict(test[0])[0]
    return {"dev": grid[best], "test": float(np.mean(pred == test[1])), "l2": best, "grid": grid,
            "selection": f"{cfg.kfold}-fold", "pred": pred}


def evaluate_relatedness(train: tuple[np.ndarray, np.ndarray], dev: tuple[np.ndarray, np.ndarray],
                         test: tuple[np.ndarray, np.ndarray], cfg: ClassifierConfig,
                         bins: tuple[int, int]) -> dict:
    """SentEval's supervised relatedness (``RelatednessPytorch``, no weight decay): early-stopped
    on dev Pearson; the expected score on test, with its Pearson, Spearman and squared error."""
    fit = fit_linear(*train, *dev, cfg, l2=[0.0], objective="relatedness", bins=bins)
    pred = fit.expected(test[0], np.arange(bins[0], bins[1] + 1))[0]
    return {"dev_pearson": float(fit.held_out[0]), **metrics.regression_metrics(list(test[1]), list(pred)),
            "pred": pred}
