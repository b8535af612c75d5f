"""Classification metrics on label-id sequences: accuracy and macro-F1."""

from __future__ import annotations

from collections.abc import Sequence


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
