"""Initializing an encoder's embedding layer from a :class:`~transferlab.vectors.keyed.WordVectors`.

Every encoder with a word (or subword) embedding names it ``embedding`` (``nn.Embedding``, row i
= token i); :func:`init_embedding` copies each token's vector into its row, found as is or
lower-cased. Tokens the vectors lack (and the specials) are initialized randomly, from a normal
distribution with the standard deviation of the copied rows, so that the two kinds of row start
on one scale; the report says how many and which.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from transferlab.vectors.keyed import WordVectors


@dataclass
class InitReport:
    found: int
    missing: int
    examples: list[str] = field(default_factory=list)  # some missing tokens, most frequent first

    def __str__(self) -> str:
        total = self.found + self.missing
        shown = ", ".join(self.examples)
        return (f"{self.found:,} of {total:,} tokens initialized from the vectors; {self.missing:,} missing, "
                f"initialized randomly" + (f" (e.g. {shown})" if shown else ""))


def init_embedding(embedding: nn.Embedding, tokens: Sequence[str], wv: WordVectors,
                   skip: Sequence[int] = (), seed: int = 0) -> InitReport:
    """Copy ``wv``'s vector of ``tokens[i]`` into row i; ``skip`` rows (specials) stay as they are."""
    if embedding.embedding_dim != wv.dim:
        raise ValueError(f"the embedding has {embedding.embedding_dim} dimensions, the vectors {wv.dim}: "
                         f"set the encoder's dim to {wv.dim}")
    if len(tokens) != embedding.num_embeddings:
        raise ValueError(f"{len(tokens)} tokens for an embedding of {embedding.num_embeddings} rows")
    skipped = set(skip)
    rows, found, missing = [], [], []
    for i, token in enumerate(tokens):
        if i in skipped:
            continue
        j = wv.get_index(token)
        if j is None and token.lower() != token:
            j = wv.get_index(token.lower())
        if j is None:
            missing.append(i)
        else:
            rows.append(i)
            found.append(j)
    weight = embedding.weight
    with torch.no_grad():
        if found:
            values = torch.from_numpy(np.asarray(wv.vectors[np.asarray(found)], dtype=np.float32))
            weight[torch.tensor(rows)] = values.to(weight.dtype)
            std = float(values.std()) or 0.1
        else:
            std = float(weight.std())
        if missing:
            g = torch.Generator().manual_seed(seed)
            fresh = torch.randn(len(missing), weight.size(1), generator=g) * std
            weight[torch.tensor(missing)] = fresh.to(weight.dtype)
        if embedding.padding_idx is not None:
            weight[embedding.padding_idx].zero_()
    return InitReport(len(found), len(missing), [tokens[i] for i in missing[:8]])
