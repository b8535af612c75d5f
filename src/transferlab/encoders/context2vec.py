"""context2vec: Melamud, Goldberger and Dagan 2016, "context2vec: Learning Generic Context Embedding
with Bidirectional LSTM" (CoNLL).

The context of one word of a sentence, as a vector in the space of the words that could fill it.
Top to bottom, for target ``w_i`` of ``w_0 ... w_{n-1}``:

1. the sentence is framed as ``<bos> w_0 ... w_{n-1} <eos>``;
2. a left-to-right LSTM reads it from ``<bos>``, a right-to-left LSTM from ``<eos>``, each over
   its own context-word embeddings (``word_dim``; separate tables, as in the authors' code);
3. the sentential context of ``w_i`` is the left LSTM's state after ``w_{i-1}`` and the right
   LSTM's state after ``w_{i+1}``, concatenated: the target itself is read by neither;
4. the paper's MLP, ``Linear(2 hidden_dim, mlp_dim) -> ReLU -> Linear(mlp_dim, dim)``, maps it to
   the context vector, of the size of the target-word embeddings (``target_embedding``) that
   negative sampling trains it against (:mod:`transferlab.pretrain.context2vec`).

Both LSTMs run once over a padded batch, and every position's context comes from shifted states
(left state ``t`` and right state ``t + 2`` of the framed sentence), not from one pass per
target. The right-to-left LSTM reads each row reversed within its own length, so padding never
reaches a real state.

As an encoder (``forward``), ``hidden`` is the context vectors (B, T, dim); ``layers`` are each
word's target embedding (what the word is) and its context vector (what its context expects
there), both of size ``dim``.

The defaults are the paper's sizes: 300-d context-word embeddings, 600 LSTM units per direction,
an MLP of 1,200 hidden units, 600-d context and target vectors.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transferlab.encoders.base import EncoderOutput, reverse_padded

__all__ = ["Context2VecConfig", "Context2Vec"]


@dataclass(frozen=True)
class Context2VecConfig:
    vocab_size: int = 0  # set from the corpus vocabulary
    word_dim: int = 300  # context-word embeddings, one table per direction
    hidden_dim: int = 600  # LSTM units per direction
    n_layers: int = 1  # LSTM layers per direction
    mlp_dim: int = 1200  # the MLP's hidden layer
    dim: int = 600  # context vectors and target-word embeddings
    dropout: float = 0.0  # on the context-word embeddings, between LSTM layers and into the MLP
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self) -> None:
        for name in ("word_dim", "hidden_dim", "n_layers", "mlp_dim", "dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"context2vec.{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"context2vec.dropout must be in [0, 1), got {self.dropout}")


class Context2Vec(nn.Module):
    """See the module docstring. ``forward(ids, mask)`` with ids of the unframed sentences."""

    def __init__(self, cfg: Context2VecConfig) -> None:
        super().__init__()
        if cfg.vocab_size < 1:
            raise ValueError("context2vec.vocab_size must be set (the corpus vocabulary's size)")
        self.cfg = cfg
        V = cfg.vocab_size
        self.left_embedding = nn.Embedding(V, cfg.word_dim, padding_idx=cfg.pad_id)
        self.right_embedding = nn.Embedding(V, cfg.word_dim, padding_idx=cfg.pad_id)
        between = cfg.dropout if cfg.n_layers > 1 else 0.0
        self.left_lstm = nn.LSTM(cfg.word_dim, cfg.hidden_dim, cfg.n_layers, batch_first=True, dropout=between)
        self.right_lstm = nn.LSTM(cfg.word_dim, cfg.hidden_dim, cfg.n_layers, batch_first=True, dropout=between)
        self.mlp_hidden = nn.Linear(2 * cfg.hidden_dim, cfg.mlp_dim)
        self.mlp_out = nn.Linear(cfg.mlp_dim, cfg.dim)
        self.target_embedding = nn.Embedding(V, cfg.dim, padding_idx=cfg.pad_id)
        nn.init.normal_(self.target_embedding.weight, std=cfg.dim ** -0.5)
        with torch.no_grad():
            self.target_embedding.weight[cfg.pad_id].zero_()
        self.drop = nn.Dropout(cfg.dropout)
        self.dim = cfg.dim

    def frame(self, ids: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``<bos> ids <eos>`` per row, padded: ``(B, T + 2)``, and each row's framed length ``(B,)``."""
        B, T = ids.shape
        lengths = mask.sum(1)  # (B,)
        seq = ids.new_full((B, T + 2), self.cfg.pad_id)
        seq[:, 0] = self.cfg.bos_id
        seq[:, 1 : T + 1] = ids.masked_fill(~mask, self.cfg.pad_id)
        seq.scatter_(1, (lengths + 1)[:, None], self.cfg.eos_id)
        return seq, lengths + 2

    def states(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The left and right context states of every position: ``(B, T, hidden_dim)`` each."""
        if mask is None:
            mask = torch.ones_like(ids, dtype=torch.bool)
        T = ids.size(1)
        seq, n = self.frame(ids, mask)  # (B, T + 2), (B,)
        # left state t has read seq[0..t]; right state t (after un-reversing) has read seq[t..n-1]
        left, _ = self.left_lstm(self.drop(self.left_embedding(seq)))  # (B, T + 2, H)
        right, _ = self.right_lstm(reverse_padded(self.drop(self.right_embedding(seq)), n))  # (B, T + 2, H), reversed
        right = reverse_padded(right, n)
        # target i sits at seq[i + 1]: its left context ends at seq[i], its right context starts at seq[i + 2]
        return left[:, :T], right[:, 2 : T + 2]

    def context(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Every position's context vector, the position's own word left out: ``(B, T, dim)``."""
        left, right = self.states(ids, mask)
        h = self.drop(torch.cat([left, right], dim=-1))  # (B, T, 2H)
        return self.mlp_out(F.relu(self.mlp_hidden(h)))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> EncoderOutput:
        ctx = self.context(ids, mask)  # (B, T, dim)
        return EncoderOutput(hidden=ctx, layers=[self.target_embedding(ids), ctx])

    def layer_groups(self) -> list[nn.Module]:
        words = nn.ModuleList([self.left_embedding, self.right_embedding, self.target_embedding])
        return [words, nn.ModuleList([self.left_lstm, self.right_lstm]), nn.ModuleList([self.mlp_hidden, self.mlp_out])]
