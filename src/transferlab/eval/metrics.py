"""Evaluation metrics on label ids, scores and tag sequences, pure Python and numpy.

Classification: accuracy, macro-F1, binary F1 (MRPC, QQP) and the Matthews correlation
(Matthews 1975; CoLA), each equal to scikit-learn's. Regression: Pearson and Spearman
correlation (STS-B; Spearman ranks ties by their average like ``scipy.stats.rankdata``) and
the mean squared error. Tagging: token accuracy and entity-level precision/recall/F1 with the
chunk rules of CoNLL's ``conlleval`` script (Tjong Kim Sang & De Meulder 2003) as ``seqeval``
applies them by default (its non-strict mode). ``glue_metrics`` picks the metrics the GLUE
benchmark (Wang et al. 2018) reports for a task.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Hashable, Sequence

import numpy as np


def accuracy(gold: Sequence[int], pred: Sequence[int]) -> float:
    if len(gold) != len(pred):
        raise ValueError(f"accuracy: {len(gold)} gold labels but {len(pred)} predictions")
    return sum(g == p for g, p in zip(gold, pred)) / max(len(gold), 1)


def macro_f1(gold: Sequence[int], pred: Sequence[int], n_labels: int | None = None) -> float:
    """Unweighted mean of per-class F1 over the classes present in gold or predictions
    (scikit-learn's ``f1_score(average="macro")``; a class with no support and no
    predictions is left out, one with either counts as F1 0 when nothing matched)."""
    labels = sorted(set(gold) | set(pred)) if n_labels is None else range(n_labels)
    scores = []
    for c in labels:
        tp = sum(g == c and p == c for g, p in zip(gold, pred))
        fp = sum(g != c and p == c for g, p in zip(gold, pred))
        fn = sum(g == c and p != c for g, p in zip(gold, pred))
        if tp + fp + fn == 0:
            continue
        scores.append(2 * tp / (2 * tp + fp + fn))
    return sum(scores) / max(len(scores), 1)


def classification_metrics(gold: Sequence[int], pred: Sequence[int]) -> dict[str, float]:
    return {"accuracy": accuracy(gold, pred), "macro_f1": macro_f1(gold, pred)}


def _check_lengths(name: str, gold: Sequence, pred: Sequence) -> None:
    if len(gold) != len(pred):
        raise ValueError(f"{name}: {len(gold)} gold values but {len(pred)} predictions")


def binary_f1(gold: Sequence[Hashable], pred: Sequence[Hashable], positive: Hashable = 1) -> float:
    """F1 of the ``positive`` class (``f1_score(average="binary", pos_label=positive)``);
    0.0 when it is neither gold nor predicted anywhere."""
    _check_lengths("binary_f1", gold, pred)
    tp = sum(g == positive and p == positive for g, p in zip(gold, pred))
    n_gold, n_pred = sum(g == positive for g in gold), sum(p == positive for p in pred)
    return 2 * tp / (n_gold + n_pred) if n_gold + n_pred else 0.0


def matthews_corrcoef(gold: Sequence[Hashable], pred: Sequence[Hashable]) -> float:
    """Matthews correlation, in the multiclass form of Gorodkin (2004) that scikit-learn
    uses: ``(c*s - t.p) / sqrt((s^2 - p.p) (s^2 - t.t))`` with ``t``/``p`` the gold/predicted
    counts per class, ``c`` the correct and ``s`` all samples; 0.0 when either side holds a
    single class (the denominator is 0)."""
    _check_lengths("matthews_corrcoef", gold, pred)
    t, p = Counter(gold), Counter(pred)
    s, c = len(gold), sum(g == q for g, q in zip(gold, pred))
    cov_tp = c * s - sum(n * p[k] for k, n in t.items())  # exact integers: no overflow, no rounding
    cov_pp = s * s - sum(n * n for n in p.values())
    cov_tt = s * s - sum(n * n for n in t.values())
    if cov_pp == 0 or cov_tt == 0:
        return 0.0
    return cov_tp / math.sqrt(cov_tt * cov_pp)


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r (``scipy.stats.pearsonr``), clipped to [-1, 1]. Where r is undefined
    (either input constant or fewer than two values), 0.0 rather than scipy's nan, so a model
    that predicts one value scores as uncorrelated and the result can be averaged and logged."""
    _check_lengths("pearson", x, y)
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        return 0.0
    a, b = a - a.mean(), b - b.mean()
    r = float(np.dot(a, b) / math.sqrt(float(np.dot(a, a)) * float(np.dot(b, b))))
    return max(-1.0, min(1.0, r))


def average_ranks(x: Sequence[float]) -> np.ndarray:
    """1-based ranks of ``x`` where tied values share the mean of their ranks
    (``scipy.stats.rankdata(method="average")``)."""
    a = np.asarray(x, dtype=np.float64)
    order = np.argsort(a, kind="stable")
    sorted_a = a[order]
    first = np.flatnonzero(np.r_[True, sorted_a[1:] != sorted_a[:-1]])  # start of each tie run
    ends = np.r_[first[1:], a.size]  # one past each run's end
    mean_rank = (first + 1 + ends) / 2  # mean of the 1-based ranks first+1 .. ends
    ranks = np.empty(a.size, dtype=np.float64)
    ranks[order] = np.repeat(mean_rank, ends - first)
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's rho (``scipy.stats.spearmanr``): Pearson's r of the average ranks; 0.0 for
    constant input, as ``pearson``."""
    _check_lengths("spearman", x, y)
    return pearson(average_ranks(x), average_ranks(y))


def regression_metrics(gold: Sequence[float], pred: Sequence[float]) -> dict[str, float]:
    _check_lengths("regression_metrics", gold, pred)
    diff = np.asarray(gold, dtype=np.float64) - np.asarray(pred, dtype=np.float64)
    mse = float(np.mean(diff * diff)) if diff.size else 0.0
    return {"pearson": pearson(gold, pred), "spearman": spearman(gold, pred), "mse": mse}


def _split_tag(tag: str) -> tuple[str, str]:
    """(prefix letter, type) as seqeval reads a tag: "B-PER" -> ("B", "PER"); an untyped tag
    ("B", "O") gets the type "_"."""
    return tag[:1], tag[1:].split("-", maxsplit=1)[-1] or "_"


def _chunk_ends(prev: str, tag: str, prev_type: str, type_: str) -> bool:
    """Whether an entity ended before this token (conlleval's endOfChunk)."""
    if prev in ("E", "S") or (prev in ("B", "I") and tag in ("B", "S", "O")):
        return True
    return prev not in ("O", ".") and prev_type != type_


def _chunk_starts(prev: str, tag: str, prev_type: str, type_: str) -> bool:
    """Whether an entity starts at this token (conlleval's startOfChunk): an I- or E- after O
    or after a finished entity starts one, as does any type change."""
    if tag in ("B", "S") or (prev in ("E", "S", "O") and tag in ("E", "I")):
        return True
    return tag not in ("O", ".") and prev_type != type_


def entity_spans(tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Entities of one sentence's IOB1/IOB2/IOBES tags as (type, start, end) with ``end``
    exclusive, by seqeval's default rules: "I-X" after "O" or after another type starts an
    entity; "B"/"I" without a type give entities of type "_"."""
    spans = []
    prev, prev_type, begin = "O", "_", 0
    for i, tag in enumerate([*tags, "O"]):  # the closing "O" ends an entity at the last token
        letter, type_ = _split_tag(tag)
        if _chunk_ends(prev, letter, prev_type, type_):
            spans.append((prev_type, begin, i))
        if _chunk_starts(prev, letter, prev_type, type_):
            begin = i
        prev, prev_type = letter, type_
    return spans


def _prf(n_correct: int, n_pred: int, n_gold: int) -> dict[str, float]:
    """Precision, recall and F1, each 0.0 where its denominator is 0 (seqeval's default)."""
    p = n_correct / n_pred if n_pred else 0.0
    r = n_correct / n_gold if n_gold else 0.0
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def entity_prf(gold_seqs: Sequence[Sequence[str]], pred_seqs: Sequence[Sequence[str]]) -> dict:
    """Micro precision/recall/F1 over exact entity matches (same type, start and end in the
    same sentence), plus ``per_type`` {type: {precision, recall, f1, support}} with support
    the gold count, as ``seqeval.metrics.classification_report`` gives them."""
    _check_lengths("entity_prf", gold_seqs, pred_seqs)
    gold, pred = set(), set()
    for k, (g, p) in enumerate(zip(gold_seqs, pred_seqs)):
        _check_lengths(f"entity_prf sentence {k}", g, p)
        gold.update((k, *span) for span in entity_spans(g))  # sentence index: never across two
        pred.update((k, *span) for span in entity_spans(p))
    correct = gold & pred
    n_gold, n_pred, n_correct = (Counter(e[1] for e in s) for s in (gold, pred, correct))
    per_type = {t: {**_prf(n_correct[t], n_pred[t], n_gold[t]), "support": n_gold[t]}
                for t in sorted(n_gold.keys() | n_pred.keys())}
    return {**_prf(len(correct), len(pred), len(gold)), "per_type": per_type}


def _looks_iob(tags: set[str]) -> bool:
    return all(t == "O" or t[:2] in ("B-", "I-", "E-", "S-") for t in tags)


def tagging_metrics(gold_seqs: Sequence[Sequence[str]], pred_seqs: Sequence[Sequence[str]]) -> dict[str, float]:
    """Token accuracy; when the gold tags look like IOB ("O", "B-X", "I-X", or IOBES's "E-X",
    "S-X") also ``entity_precision``, ``entity_recall`` and ``entity_f1`` from ``entity_prf``."""
    _check_lengths("tagging_metrics", gold_seqs, pred_seqs)
    for k, (g, p) in enumerate(zip(gold_seqs, pred_seqs)):
        _check_lengths(f"tagging_metrics sentence {k}", g, p)
    gold_tags = [t for seq in gold_seqs for t in seq]
    result = {"accuracy": accuracy(gold_tags, [t for seq in pred_seqs for t in seq])}
    if gold_tags and _looks_iob(set(gold_tags)):
        ents = entity_prf(gold_seqs, pred_seqs)
        result |= {f"entity_{k}": ents[k] for k in ("precision", "recall", "f1")}
    return result


def glue_metrics(task: str, gold: Sequence, pred: Sequence, positive: Hashable = 1) -> dict[str, float]:
    """The metrics GLUE reports for ``task`` (a catalog name; case, "-" and "_" ignored):
    MRPC and QQP accuracy and F1 of ``positive``, CoLA accuracy and Matthews correlation,
    STS-B Pearson and Spearman; any other task accuracy and macro-F1."""
    key = re.sub(r"[-_\s]", "", task.lower())
    if key in ("mrpc", "qqp"):
        return {"accuracy": accuracy(gold, pred), "f1": binary_f1(gold, pred, positive)}
    if key == "cola":
        return {"accuracy": accuracy(gold, pred), "mcc": matthews_corrcoef(gold, pred)}
    if key == "stsb":
        return {"pearson": pearson(gold, pred), "spearman": spearman(gold, pred)}
    return classification_metrics(gold, pred)
