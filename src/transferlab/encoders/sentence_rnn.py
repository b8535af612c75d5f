"""A recurrent sentence encoder: word embeddings, a (bi)GRU or (bi)LSTM, a pooled sentence vector.

The encoder of the sentence-level transfer methods of the tutorial's taxonomy, which differ in
their objective (``pretrain/``), not in this architecture:

- skip-thought (Kiros et al. 2015): a GRU, the sentence vector its last state (``pooling=last``);
- quick-thought (Logeswaran & Lee 2018): two GRUs ``f`` and ``g`` over the same text
  (``towers=2``), the sentence vector ``[f(s); g(s)]``;
- InferSent (Conneau et al. 2017): a biLSTM, the sentence vector the max over time of its states
  (``pooling=max``);
- GenSen (Subramanian et al. 2018): a biGRU shared by several objectives.

As an encoder (DESIGN.md contract) ``hidden (B, T, D)`` is each word's top-layer state, every
tower's directions concatenated (``D = towers * directions * hidden_dim``), and ``layers`` are the
word embeddings then each RNN layer. :meth:`SentenceRNN.sentence` is the method's own sentence
vector (B, D). Padded batches are packed, so the backward direction starts at each text's last
real word and the last state is the state after the last real word, whatever the padding.

Vocabulary expansion (Kiros et al. 2015, section 3): :meth:`SentenceRNN.expand` fits a linear map
from static word vectors (word2vec, GloVe) to this encoder's embeddings on the words both know
(least squares) and records the vectors' name in the config (``expand``, ``expand_dim``), so the
map is a weight of the right shape in any rebuilt encoder; :meth:`SentenceRNN.add_words` then gives
a word outside the vocabulary the mapped static vector instead of ``<unk>``, so the encoder reads
any word the static vectors know. Those rows are not parameters and are not saved (as CoVe's added
GloVe rows): a reloaded encoder maps the same word to the same vector again.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from transferlab.config import ConfigError
from transferlab.encoders.base import EncoderOutput


@dataclass(frozen=True)
class SentenceRNNConfig:
    vocab_size: int = 0  # 0 = unset: the recipe fills it in from the vocabulary
    dim: int = 300  # word embedding size
    hidden_dim: int = 1024  # cells per direction
    n_layers: int = 1
    cell: Literal["gru", "lstm"] = "gru"
    bidirectional: bool = False
    towers: int = 1  # independent RNNs over the same text, concatenated (quick-thought's f and g: 2)
    pooling: Literal["last", "max", "mean"] = "last"  # the sentence vector from the top states
    dropout: float = 0.0  # on the embeddings and between layers
    pad_id: int = 0
    # vocabulary expansion, set by SentenceRNN.expand: the static vectors (catalog name or path) and their size
    expand: str = ""
    expand_dim: int = 0

    def __post_init__(self):
        for name in ("dim", "hidden_dim", "n_layers", "towers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"sentence_rnn.{name} must be >= 1, got {getattr(self, name)}")
        if self.cell not in ("gru", "lstm"):
            raise ConfigError(f"sentence_rnn.cell must be gru or lstm, got {self.cell!r}")
        if self.pooling not in ("last", "max", "mean"):
            raise ConfigError(f"sentence_rnn.pooling must be last, max or mean, got {self.pooling!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"sentence_rnn.dropout must be in [0, 1), got {self.dropout}")
        if bool(self.expand) != (self.expand_dim > 0):
            raise ConfigError("sentence_rnn.expand and sentence_rnn.expand_dim go together (the static vectors "
                              "and their size)")

    @property
    def directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def tower_dim(self) -> int:
        return self.directions * self.hidden_dim


class SentenceRNN(nn.Module):
    def __init__(self, cfg: SentenceRNNConfig) -> None:
        super().__init__()
        if cfg.vocab_size < 1:
            raise ConfigError("sentence_rnn.vocab_size is unset: build the encoder from a vocabulary")
        self.cfg = cfg
        self.dim = cfg.towers * cfg.tower_dim
        self.sentence_dim = self.dim
        rnn = nn.GRU if cfg.cell == "gru" else nn.LSTM
        self.embedding = nn.ModuleList(nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=cfg.pad_id)
                                       for _ in range(cfg.towers))
        self.rnns = nn.ModuleList(
            nn.ModuleList(rnn(cfg.dim if i == 0 else cfg.tower_dim, cfg.hidden_dim, batch_first=True,
                              bidirectional=cfg.bidirectional) for i in range(cfg.n_layers))
            for _ in range(cfg.towers))
        self.drop = nn.Dropout(cfg.dropout)
        # vocabulary expansion: the map static dim -> dim (fitted by `expand`), and the mapped rows of
        # the words add_words was given (ids vocab_size, vocab_size + 1, ...; not saved)
        self.register_buffer("expansion", torch.zeros(cfg.expand_dim, cfg.dim))
        self.register_buffer("extra", torch.zeros(0, cfg.dim), persistent=False)
        self._static = None
        self._extra_ids: dict[str, int] = {}
        for emb in self.embedding:
            nn.init.uniform_(emb.weight, -0.1, 0.1)
            with torch.no_grad():
                emb.weight[cfg.pad_id].zero_()

    def embed(self, k: int, ids: torch.Tensor) -> torch.Tensor:
        """Tower ``k``'s word vectors (B, T, dim); ids past the vocabulary read the expansion's rows."""
        V = self.cfg.vocab_size
        if self.extra.size(0) == 0:
            return self.embedding[k](ids)
        known = ids < V  # (B, T)
        x = self.embedding[k](ids.masked_fill(~known, self.cfg.pad_id))  # (B, T, dim)
        return torch.where(known[..., None], x, self.extra[(ids - V).clamp(min=0)].to(x.dtype))

    def tower(self, k: int, ids: torch.Tensor, lengths: torch.Tensor) -> list[torch.Tensor]:
        """Tower ``k``'s word embeddings then each layer's states, each (B, T, *)."""
        x = self.drop(self.embed(k, ids))  # (B, T, dim)
        states = [x]
        for i, rnn in enumerate(self.rnns[k]):
            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            y, _ = rnn(packed)
            y, _ = pad_packed_sequence(y, batch_first=True, total_length=ids.size(1))  # (B, T, tower_dim)
            states.append(y)
            x = self.drop(y) if i < len(self.rnns[k]) - 1 else y
        return states

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> EncoderOutput:
        # ids: (B, T); mask: (B, T) bool, True = real token
        mask = ids.ne(self.cfg.pad_id) if mask is None else mask
        lengths = mask.long().sum(1).clamp(min=1)  # (B,)
        towers = [self.tower(k, ids, lengths) for k in range(self.cfg.towers)]
        layers = [torch.cat([t[i] for t in towers], -1) for i in range(self.cfg.n_layers + 1)]
        hidden = layers[-1].masked_fill(~mask[..., None], 0.0)  # (B, T, D)
        return EncoderOutput(hidden=hidden, layers=layers)

    def pool(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, T, D) top states, (B, T) mask -> (B, D) sentence vectors under ``cfg.pooling``."""
        if self.cfg.pooling == "max":
            return hidden.masked_fill(~mask[..., None], torch.finfo(hidden.dtype).min).max(1).values
        if self.cfg.pooling == "mean":
            m = mask[..., None].to(hidden.dtype)  # (B, T, 1)
            return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)
        # last: the forward direction's state after the last real word; the backward direction's
        # after reading back to the first word (its state at position 0)
        B, T, D = hidden.shape
        last = mask.long().sum(1).clamp(min=1) - 1  # (B,)
        fwd = hidden[torch.arange(B, device=hidden.device), last]  # (B, D)
        if not self.cfg.bidirectional:
            return fwd
        h = self.cfg.hidden_dim
        parts = []
        for k in range(self.cfg.towers):  # each tower's block is [forward h; backward h]
            base = k * 2 * h
            parts += [fwd[:, base:base + h], hidden[:, 0, base + h:base + 2 * h]]
        return torch.cat(parts, -1)  # (B, D)

    def sentence(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The method's sentence vector of each text: (B, T) ids -> (B, D)."""
        mask = ids.ne(self.cfg.pad_id) if mask is None else mask
        return self.pool(self.forward(ids, mask).hidden, mask)

    def tower_sentences(self, ids: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
        """Each tower's sentence vector (quick-thought scores f(s) against g(candidates)): towers x (B, D/towers)."""
        z = self.sentence(ids, mask)  # (B, D)
        return list(z.split(self.cfg.tower_dim, dim=-1))

    def layer_groups(self) -> list[nn.Module]:
        groups: list[nn.Module] = [self.embedding]
        for i in range(self.cfg.n_layers):
            groups.append(nn.ModuleList(tower[i] for tower in self.rnns))
        return groups

    # --- vocabulary expansion (skip-thought's linear map from static vectors) ----------------

    def expand(self, itos: list[str], static, name: str) -> float:
        """Fit the map from ``static`` (a WordVectors, loaded from ``name``) to tower 0's embeddings
        by least squares on the words of ``itos`` both know; returns the fit's R^2. The config then
        names the vectors, so save it with the weights (a rebuilt encoder has the map's shape)."""
        known = [(i, j) for i, w in enumerate(itos) if (j := static.get_index(w)) is not None]
        if len(known) < static.dim:
            raise ValueError(f"vocabulary expansion needs at least {static.dim} words known to both the encoder "
                             f"and {name}; {len(known)} are")
        rows, srcs = zip(*known)
        weight = self.embedding[0].weight
        X = torch.as_tensor(static.vectors[list(srcs)], dtype=torch.float32)  # (N, S)
        Y = weight.detach()[list(rows)].float().cpu()  # (N, dim): fitted on the CPU wherever the encoder is
        W = torch.linalg.lstsq(X, Y).solution  # (S, dim)
        r2 = 1.0 - ((X @ W - Y) ** 2).sum() / ((Y - Y.mean(0)) ** 2).sum()
        self.cfg = dataclasses.replace(self.cfg, expand=name, expand_dim=static.dim)
        self.expansion = W.to(weight.device, weight.dtype)
        self._static = static
        return float(r2)

    def add_words(self, words: list[str]) -> list[int]:
        """Ids for words outside the vocabulary: a row of their static vector mapped by the
        expansion (loaded from ``cfg.expand`` on first use); ``<unk>``'s id, 1, without a map or
        where the static vectors lack the word. The same word keeps its id."""
        if not self.cfg.expand:
            return [1] * len(words)
        if self._static is None:
            from transferlab.vectors.keyed import load_vectors  # the static vectors' stage, only when expanding

            self._static = load_vectors(self.cfg.expand)
        new = [w for w in dict.fromkeys(words) if w not in self._extra_ids and self._static.get_index(w) is not None]
        if new:
            vecs = np.stack([self._static[w] for w in new])  # (n, S)
            rows = torch.as_tensor(vecs, dtype=torch.float32, device=self.expansion.device) @ self.expansion.float()
            start = self.cfg.vocab_size + self.extra.size(0)
            self.extra = torch.cat([self.extra, rows.to(self.extra.dtype)])  # (n_extra, dim)
            self._extra_ids.update((w, start + i) for i, w in enumerate(new))
        return [self._extra_ids.get(w, 1) for w in words]
