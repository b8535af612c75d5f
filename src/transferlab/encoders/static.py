"""Static word vectors as an encoder: a 0-layer encoder whose only layer is the embedding.

Word2vec, GloVe and fastText give each word type one vector, whatever its context (the
tutorial's first family of pretrained representations). Behind the Encoder contract (DESIGN.md
section 2) they probe, plot and adapt like any contextual encoder: ``layers`` holds the
embedding output alone, so a probe of "layer 0" of ``glove-6b-50d`` is the baseline every
contextual layer is compared with (Liu et al. 2019 report GloVe beside ELMo's and BERT's layers).

The vocabulary is the vectors' keys after the four specials (whose rows are zero); a word is
looked up as written, then lower-cased, then as ``<unk>`` (a zero vector).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from transferlab.encoders.base import EncoderOutput
from transferlab.text.vocab import SPECIALS, Vocab


def vectors_vocab(keys: Sequence[str]) -> tuple[Vocab, np.ndarray]:
    """A Vocab of the specials then the keys (a key equal to a special is dropped), and for each
    Vocab row the index of its key in ``keys`` (-1 for the specials)."""
    specials = set(SPECIALS)
    rows = [i for i, k in enumerate(keys) if k not in specials]
    vocab = Vocab(list(SPECIALS) + [keys[i] for i in rows])
    return vocab, np.array([-1] * len(SPECIALS) + rows, dtype=np.int64)


class StaticEncoder(nn.Module):
    """An embedding table of fixed vectors (trainable by flag) with the Encoder contract."""

    def __init__(self, weight: torch.Tensor, pad_id: int = 0, trainable: bool = False):
        super().__init__()
        self.dim = weight.size(1)
        self.embedding = nn.Embedding.from_pretrained(weight.float(), freeze=not trainable, padding_idx=pad_id)

    @classmethod
    def from_vectors(cls, wv, trainable: bool = False) -> tuple[StaticEncoder, Vocab]:
        """The encoder of a :class:`~transferlab.vectors.keyed.WordVectors` and its vocabulary."""
        vocab, rows = vectors_vocab(wv.keys)
        weight = torch.zeros(len(vocab), wv.dim)
        weight[len(SPECIALS):] = torch.from_numpy(np.asarray(wv.vectors[rows[len(SPECIALS):]], dtype=np.float32))
        return cls(weight, vocab.pad_id, trainable), vocab

    def layer_groups(self) -> list[nn.Module]:
        return [self.embedding]

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> EncoderOutput:
        hidden = self.embedding(ids)  # (B,T,D)
        if mask is not None:
            hidden = hidden * mask.unsqueeze(-1)
        return EncoderOutput(hidden, [hidden])


def lookup(vocab: Vocab, words: Sequence[str]) -> list[int]:
    """Ids of ``words``: as written, else lower-cased, else ``<unk>``."""
    stoi, unk = vocab.stoi, vocab.unk_id
    return [stoi.get(w, stoi.get(w.lower(), unk)) for w in words]
