"""Sentence features from static vectors: bags of word vectors and paragraph vectors.

The pre-contextual way to use pretrained representations downstream (the tutorial's "feature
extraction" with static vectors): a sentence is the mean and/or the element-wise max of its
words' vectors (mean pooling is the strong baseline of Arora et al. 2017 and Wieting et al.
2016; max pooling as in Shen et al. 2018, "Baseline Needs More Love"), or its inferred paragraph
vector (Le & Mikolov 2014). A sentence pair is ``[u, v, |u - v|, u * v]`` (InferSent, Conneau
et al. 2017). A linear model on top (:mod:`transferlab.recipes.vector_features`) is the baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from transferlab.vectors.keyed import WordVectors

Pooling = Literal["mean", "max", "meanmax"]


def bag_of_vectors(wv: WordVectors, docs: Sequence[Sequence[str]], pooling: Pooling = "mean") -> np.ndarray:
    """(N, D) or, for ``meanmax``, (N, 2D) features; words without a vector are left out
    (fastText vectors give unseen words one from their n-grams); a text with none is zeros."""
    if pooling not in ("mean", "max", "meanmax"):
        raise ValueError(f"pooling must be mean, max or meanmax, not {pooling!r}")
    width = 2 * wv.dim if pooling == "meanmax" else wv.dim
    out = np.zeros((len(docs), width), dtype=np.float32)
    subwords = wv.subwords is not None
    for i, words in enumerate(docs):
        rows = [wv.key_to_index[w] for w in words if w in wv.key_to_index]
        vecs = wv.vectors[rows] if rows else np.zeros((0, wv.dim), np.float32)
        if subwords:
            unseen = [wv[w] for w in words if w not in wv.key_to_index]
            if unseen:
                vecs = np.concatenate([vecs, np.stack(unseen)])
        if not len(vecs):
            continue
        if pooling in ("mean", "meanmax"):
            out[i, : wv.dim] = vecs.mean(0)
        if pooling == "max":
            out[i] = vecs.max(0)
        elif pooling == "meanmax":
            out[i, wv.dim:] = vecs.max(0)
    return out


def pair_features(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """InferSent's pair representation ``[u, v, |u - v|, u * v]``: (N, 4F)."""
    return np.concatenate([u, v, np.abs(u - v), u * v], axis=1)
