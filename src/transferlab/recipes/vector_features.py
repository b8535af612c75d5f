"""``transferlab vectors classify``: a linear model on static-vector features of a labeled task.

The features are a bag of word vectors (:func:`transferlab.vectors.features.bag_of_vectors`,
mean/max pooling) for ``WordVectors``, or inferred paragraph vectors for a ``pretrain doc2vec``
output; pairs are ``[u, v, |u - v|, u * v]``. Classification fits scikit-learn's logistic
regression, regression (STS-B) ridge regression; the inverse regularization strength is chosen on
the validation split from a small grid, then the test split is scored with the task's metrics.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from transferlab.data.examples import PairExample, TaggedSentence
from transferlab.data.tasks import TaskDataConfig, load_task
from transferlab.eval import metrics
from transferlab.log import log
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.vectors.features import Pooling, bag_of_vectors, pair_features

GRID = (0.01, 0.1, 1.0, 10.0, 100.0)


def featurizer(vectors: str, pooling: Pooling, text: TextConfig):
    """texts -> (N, F) features, from a WordVectors source or a doc2vec folder."""
    tok = tokenizer(text)
    if (Path(vectors) / "doc2vec.json").is_file():
        from transferlab.vectors.doc2vec import ParagraphVectors

        pv = ParagraphVectors.load(vectors)
        return lambda texts: pv.infer_many([tok(t) for t in texts])
    from transferlab.vectors.keyed import load_vectors

    wv = load_vectors(vectors)
    return lambda texts: bag_of_vectors(wv, [tok(t) for t in texts], pooling)


def features(examples: list, embed) -> np.ndarray:
    if isinstance(examples[0], PairExample):
        return pair_features(embed([ex.text_a for ex in examples]), embed([ex.text_b for ex in examples]))
    return embed([ex.text for ex in examples])


def _fit(kind: str, x: np.ndarray, y: np.ndarray, c: float, seed: int):
    from sklearn.linear_model import LogisticRegression, Ridge

    if kind == "regress":
        return Ridge(alpha=1.0 / c).fit(x, y)
    return LogisticRegression(C=c, max_iter=2000, random_state=seed).fit(x, y)


def _score(kind: str, gold, pred) -> dict:
    if kind == "regress":
        return metrics.regression_metrics(list(gold), list(pred))
    result = metrics.classification_metrics(list(gold), list(pred))
    if len(set(gold) | set(pred)) <= 2:
        result |= {"f1": metrics.binary_f1(list(gold), list(pred), positive=1),
                   "mcc": metrics.matthews_corrcoef(list(gold), list(pred))}
    return result


def run(vectors: str, data: TaskDataConfig, pooling: Pooling = "mean", text: TextConfig = TextConfig(),
        seed: int = 0) -> dict:
    from sklearn.preprocessing import StandardScaler

    sets = load_task(data)
    if isinstance(sets["train"][0], TaggedSentence):
        raise ValueError("vectors classify takes texts or text pairs; for tagged words use `finetune --vectors`")
    labels = [ex.label for ex in sets["train"]]
    try:
        targets = {s: np.array([float(ex.label) for ex in sets[s]]) for s in sets}
        kind = "regress" if len(set(labels)) > 10 else "classify"
    except ValueError:
        kind = "classify"
    if kind == "classify":
        names = sorted(set(labels))
        index = {name: i for i, name in enumerate(names)}
        targets = {s: np.array([index.get(ex.label, -1) for ex in sets[s]]) for s in sets}
    start = time.perf_counter()
    embed = featurizer(vectors, pooling, text)
    x = {s: features(sets[s], embed) for s in sets}
    scaler = StandardScaler().fit(x["train"])
    x = {s: scaler.transform(v) for s, v in x.items()}
    feature_s = time.perf_counter() - start
    key = "spearman" if kind == "regress" else "accuracy"
    tried = {}
    for c in GRID:
        model = _fit(kind, x["train"], targets["train"], c, seed)
        tried[c] = _score(kind, targets["valid"], model.predict(x["valid"]))[key]
    best = max(tried, key=tried.get)
    model = _fit(kind, x["train"], targets["train"], best, seed)
    test = _score(kind, targets["test"], model.predict(x["test"]))
    log(f"{vectors} ({pooling}) -> {kind}: C={best} (valid {key} {tried[best]:.4f}), test {key} {test[key]:.4f}")
    return {f"test_{k}": v for k, v in test.items()} | {
        "kind": kind, "vectors": vectors, "pooling": pooling, "C": best, "valid": tried,
        "train_size": len(sets["train"]), "features": int(x["train"].shape[1]), "feature_s": feature_s,
        "wall_s": time.perf_counter() - start}
