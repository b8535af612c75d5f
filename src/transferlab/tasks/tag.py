"""Sequence labeling (NER, POS): a per-position linear head on any encoder.

Words are labeled on their first subword (Devlin et al. 2019, section 5.3): the other positions
and the specials carry ``IGNORE_INDEX`` and add nothing to the loss; a word-level encoder (an
AWD-LSTM) has one position per word, so nothing is ignored but padding. Predictions are read back
at each word's first position (``word_positions``) and mapped to the words; a word lost to
truncation gets the fallback tag the caller chooses (and counts).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from transferlab import IGNORE_INDEX
from transferlab.devices import to_device
from transferlab.encoders.base import EncoderOutput
from transferlab.train import evaluating

__all__ = ["IGNORE_INDEX", "TokenTagger", "tag_loss", "position_labels", "predict_tags"]


class TokenTagger(nn.Module):
    """(B, T, D) hidden states -> dropout -> linear -> (B, T, n_tags) logits: a per-position head
    for :class:`~transferlab.tasks.classify.TaskModel` (``features``, then ``output``)."""

    def __init__(self, dim: int, n_tags: int, dropout: float = 0.1):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(dim, n_tags)

    def features(self, out: EncoderOutput, mask: torch.Tensor) -> torch.Tensor:
        return self.drop(out.hidden.float())  # (B, T, D): every position keeps its own vector

    def output(self, features: torch.Tensor) -> torch.Tensor:
        return self.out(features)  # (B, T, n_tags)

    def forward(self, out: EncoderOutput, mask: torch.Tensor) -> torch.Tensor:
        return self.output(self.features(out, mask))


def tag_loss(model: nn.Module, batch: dict) -> torch.Tensor:
    """Mean cross-entropy over the labeled positions (``labels (B, T)``, IGNORE_INDEX elsewhere)."""
    logits = model(batch)  # (B, T, C)
    return F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=IGNORE_INDEX)


def position_labels(length: int, positions: Sequence[int], tags: Sequence[int]) -> list[int]:
    """A sequence of ``length`` labels: ``tags[i]`` at ``positions[i]``, IGNORE_INDEX elsewhere."""
    out = [IGNORE_INDEX] * length
    for p, t in zip(positions, tags):
        out[p] = t
    return out


@torch.no_grad()
def predict_tags(model: nn.Module, batches, positions: Sequence[Sequence[int]], n_words: Sequence[int],
                 fallback: int, device: torch.device | str = "cpu") -> list[list[int]]:
    """Tag ids per word, in the examples' original order; words past ``positions`` (cut by
    truncation) get ``fallback``."""
    out: list[list[int]] = [[] for _ in positions]
    with evaluating(model):
        for batch in batches:
            best = model(to_device(batch, device)).argmax(-1).cpu()  # (B, T)
            for row, i in enumerate(batch["index"].tolist()):
                tags = best[row, list(positions[i])].tolist() if positions[i] else []
                out[i] = tags + [fallback] * (n_words[i] - len(tags))
    return out
