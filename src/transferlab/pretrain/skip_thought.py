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

- :class:`ConditionalDecoder`: one such decoder (its first-state map, its GRU, its vocabulary
  matrix, reading a given embedding table), reused by GenSen's decoders
  (:mod:`transferlab.pretrain.multitask`);
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

__all__ = ["SIDES", "ConditionalDecoder", "SkipThoughtConfig", "SkipThought", "skip_thought_loss",
           "skip_thought_perplexity"]

SIDES = ("prev", "next")


@dataclass(frozen=True)
class SkipThoughtConfig:
    decoder_dim: int = 0  # each decoder's GRU cells; 0 = the sentence vector's size (the paper's: equal)

    def __post_init__(self):
        if self.decoder_dim < 0:
            raise ConfigError(f"objective.decoder_dim must be >= 0 (0 = the sentence vector's size), "
                              f"got {self.decoder_dim}")


class ConditionalDecoder(nn.Module):
    """Skip-thought's conditional GRU decoder (see the module docstring): reads ``<bos> w1 ..``
    through ``embedding``, conditioned at every step on a vector of ``cond_dim``, first state
    ``tanh(W_0 h)``, scores ``vocab_size`` words. ``vocab`` shares one output layer between
    decoders (skip-thought's two); ``embedding`` may be the encoder's table (a checkpoint holds a
    shared tensor once)."""

    def __init__(self, embedding: nn.Embedding, cond_dim: int, hidden_dim: int, vocab_size: int,
                 vocab: nn.Linear | None = None) -> None:
        super().__init__()
        self.embedding = embedding
        self.init_state = nn.Linear(cond_dim, hidden_dim)
        self.gru = nn.GRU(embedding.embedding_dim + cond_dim, hidden_dim, batch_first=True)
        self.vocab = vocab if vocab is not None else nn.Linear(hidden_dim, vocab_size)

    def states(self, h: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """The states (B, T, H) reading ``inputs`` (B, T) (``<bos> w1 ..``), conditioned on ``h`` (B, D)."""
        B, T = inputs.shape
        x = self.embedding(inputs)  # (B, T, E)
        x = torch.cat([x, h[:, None, :].expand(B, T, h.size(-1))], -1)  # (B, T, E + D): h at every step
        h0 = torch.tanh(self.init_state(h))[None]  # (1, B, H)
        return self.gru(x, h0)[0]  # (B, T, H)

    def logits(self, h: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """(B, T, V) next-word scores at every position (padding too)."""
        return self.vocab(self.states(h, inputs))

    def nll(self, h: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Summed cross-entropy over the real targets of ``labels`` (B, T), and their number; the
        vocabulary matrix is applied only at those positions."""
        keep = labels.ne(IGNORE_INDEX)  # (B, T)
        y = self.states(h, inputs)[keep]  # (N, H)
        return F.cross_entropy(self.vocab(y).float(), labels[keep], reduction="sum"), int(keep.sum())


class SkipThought(nn.Module):
    """A SentenceRNN and the two conditional-GRU decoders of skip-thought (see the module docstring)."""

    def __init__(self, encoder: SentenceRNN, cfg: SkipThoughtConfig = SkipThoughtConfig()) -> None:
        super().__init__()
        V, D = encoder.cfg.vocab_size, encoder.sentence_dim
        H = cfg.decoder_dim or D
        self.encoder, self.cfg = encoder, cfg
        self.vocab = nn.Linear(H, V)  # the vocabulary matrix V, shared by both decoders
        # both read the encoder's word embeddings
        self.decoders = nn.ModuleDict({side: ConditionalDecoder(encoder.embedding[0], D, H, V, vocab=self.vocab)
                                       for side in SIDES})

    def states(self, side: str, h: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """Decoder ``side``'s states (B, T, H) reading ``inputs`` (B, T) (``<bos> w1 ..``), conditioned
        on the sentence vectors ``h`` (B, D)."""
        return self.decoders[side].states(h, inputs)

    def logits(self, side: str, h: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
        """(B, T, V) next-word scores of decoder ``side`` at every position (padding too)."""
        return self.decoders[side].logits(h, inputs)

    def nll(self, side: str, h: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Summed cross-entropy of decoder ``side`` over the real targets of ``labels`` (B, T), and their
        number."""
        return self.decoders[side].nll(h, inputs, labels)

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
