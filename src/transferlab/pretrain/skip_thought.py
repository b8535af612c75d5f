"""Skip-thought's objective: a sentence's vector must let two decoders generate the sentences
before and after it (Kiros et al. 2015, "Skip-Thought Vectors", section 2).

The encoder is a :class:`~transferlab.encoders.sentence_rnn.SentenceRNN` (the paper's uni-skip:
one GRU, the sentence vector ``h_i`` its last state). Each of the two decoders (previous and
next sentence) is the paper's conditional GRU: ``h_i`` enters every step's reset gate, update
gate and candidate (its ``C_r h_i``, ``C_z h_i``, ``C h_i`` terms). A GRU whose input at each
step is ``[x_{t-1}; h_i]`` computes exactly those terms (its input matrix is ``[W; C]``), so each
decoder is an ``nn.GRU`` over the concatenation; PyTorch's GRU applies the reset gate after the
recurrent matrix (``r * (U h + b)``, cuDNN's form) rather than before it (the paper's
``U (r * h)``). The decoder's first state is ``tanh(W_0 h_i)``, as in the authors' code.

Separate parameters are used for each decoder except the vocabulary matrix ``V`` (the output
layer, shared by both, as in the paper); the word embeddings are the encoder's, read by both
decoders (the authors' code shares one embedding table). The loss of a batch is the sum over the
two decoders of their teacher-forced cross-entropy, each averaged over its real target words
(``w1 .. wn <eos>``; padding is ``IGNORE_INDEX`` and never scored).

- :class:`SkipThoughtConfig`, :class:`SkipThought` (``.encoder`` is the SentenceRNN, so a
  checkpoint holds its ``encoder.*`` weights); ``forward(...)`` is the loss, so the training
  loop only calls the model;
- :func:`skip_thought_loss` (``loss(model, batch)``) and :func:`skip_thought_perplexity`
  (held-out per-word perplexity of each decoder and of both).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transferlab import IGNORE_INDEX
from transferlab.config import ConfigError
from transferlab.encoders.sentence_rnn import SentenceRNN

__all__ = ["SIDES", "SkipThoughtConfig", "SkipThought", "skip_thought_loss", "skip_thought_perplexity"]

SIDES = ("prev", "next")


@dataclass(frozen=True)
class SkipThoughtConfig:
    decoder_dim: int = 0  # each decoder's GRU cells; 0 = the sentence vector's size (the paper's: equal)

    def __post_init__(self):
        if self.decoder_dim < 0:
            raise ConfigError(f"objective.decoder_dim must be >= 0 (0 = the sentence vector's size), "
                              f"got {self.decoder_dim}")


class SkipThought(nn.Module):
    """A SentenceRNN and the two conditional-GRU decoders of skip-thought (see the module docstring)."""

    def __init__(self, encoder: SentenceRNN, cfg: SkipThoughtConfig = SkipThoughtConfig()) -> None:
        super().__init__()
        V, E, D = encoder.cfg.vocab_size, encoder.cfg.dim, encoder.sentence_dim
        H = cfg.decoder_dim or D
        self.encoder, self.cfg = encoder, cfg
        self.init_state = nn.ModuleDict({side: nn.Linear(D, H) for side in SIDES})
        self.decoders = nn.ModuleDict({side: nn.GRU(E + D, H, batch_first=True) for side in SIDES})
        self.vocab = nn.Linear(H, V)  # the vocabulary matrix V, shared by both decoders

    def states(self, side: str, h: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Decoder ``side``'s states (B, T, H) reading ``inputs`` (B, T) (``<bos> w1 ..``), conditioned
        on the sentence vectors ``h`` (B, D)."""
        B, T = inputs.shape
        x = self.encoder.embedding[0](inputs)  # (B, T, E): the encoder's word embeddings
        x = torch.cat([x, h[:, None, :].expand(B, T, h.size(-1))], -1)  # (B, T, E + D): h_i at every step
        h0 = torch.tanh(self.init_state[side](h))[None]  # (1, B, H)
        return self.decoders[side](x, h0)[0]  # (B, T, H)

    def logits(self, side: str, h: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """(B, T, V) next-word scores of decoder ``side`` at every position (padding too)."""
        return self.vocab(self.states(side, h, inputs))

    def nll(self, side: str, h: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Summed cross-entropy of decoder ``side`` over the real targets of ``labels`` (B, T), and their
        number; the vocabulary matrix is applied only at those positions."""
        keep = labels.ne(IGNORE_INDEX)  # (B, T)
        y = self.states(side, h, inputs)[keep]  # (N, H)
        return F.cross_entropy(self.vocab(y).float(), labels[keep], reduction="sum"), int(keep.sum())

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, prev_ids: torch.Tensor, prev_labels: torch.Tensor,
                next_ids: torch.Tensor, next_labels: torch.Tensor) -> torch.Tensor:
        h = self.encoder.sentence(ids, mask)  # (B, D)
        loss = h.new_zeros((), dtype=torch.float32)
        for side, inputs, labels in (("prev", prev_ids, prev_labels), ("next", next_ids, next_labels)):
            total, n = self.nll(side, h, inputs, labels)
            loss = loss + total / max(n, 1)
        return loss


def skip_thought_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """``loss(model, batch)`` for :func:`transferlab.train.fit` (a batch of
    :class:`~transferlab.pretrain.sentences.TripleBatches`)."""
    return model(batch["ids"], batch["mask"], batch["prev_ids"], batch["prev_labels"], batch["next_ids"],
                 batch["next_labels"])


@torch.no_grad()
def skip_thought_perplexity(model: SkipThought, batches: Iterable[dict[str, torch.Tensor]]) -> dict[str, float]:
    """In eval mode: the per-word cross-entropy of both decoders together (``loss``) and its
    perplexity (``ppl``), and each decoder's perplexity (``prev_ppl``, ``next_ppl``), over every
    target word of ``batches`` (``<eos>`` included)."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    sums, counts = dict.fromkeys(SIDES, 0.0), dict.fromkeys(SIDES, 0)
    try:
        for batch in batches:
            h = model.encoder.sentence(batch["ids"].to(device), batch["mask"].to(device))
            for side in SIDES:
                total, n = model.nll(side, h, batch[f"{side}_ids"].to(device), batch[f"{side}_labels"].to(device))
                sums[side] += float(total)
                counts[side] += n
    finally:
        model.train(was)
    n = sum(counts.values())
    if n == 0:
        raise ValueError("skip_thought_perplexity: no target words")
    loss = sum(sums.values()) / n
    return {"loss": loss, "ppl": math.exp(loss),
            **{f"{side}_ppl": math.exp(sums[side] / counts[side]) for side in SIDES}}
