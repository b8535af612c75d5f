"""ELMo's encoder: Peters et al. 2018, "Deep contextualized word representations" (NAACL).

Top to bottom, for each token:

1. its characters: UTF-8 bytes between begin- and end-of-word markers, padded or cut to
   ``max_chars``, looked up in a per-vocabulary table (:meth:`ELMo.set_words`: any word list,
   so a word unseen in pretraining still has its characters) and embedded (``char_dim``);
2. a character CNN: one 1-D convolution per filter width (1-7 in the paper), max-pooled over
   the characters, ReLU;
3. ``n_highway`` highway layers (Srivastava et al. 2015), ``y = g * x + (1 - g) * relu(W x)``
   with the gate ``g = sigmoid(W_g x)``;
4. a linear projection to ``dim``: the context-independent token layer;
5. a forward and a backward LSTM language model of ``n_layers`` LSTMs with ``hidden_dim`` cells
   projected to ``dim`` (LSTMP, PyTorch's ``proj_size``), a residual connection between layers.

``layers`` are the token layer (repeated for both directions) and each biLSTM layer (forward
and backward states concatenated), all of size ``2 * dim``: what ELMo's task-specific scalar
mix (:class:`ScalarMix`, used by every family's features mode) weighs. ``hidden`` is the top layer.
Sequences are reversed for the backward LSTM within each row's real length, so padding never
leaks into a backward state. The paper's cell and projection clipping (3.0) is not applied.

The ``paper`` sizes (2,048 filters, 4,096 cells, 512 projections, 2 layers, 2 highways) give the
paper's 93.6M parameters without the softmax (tested).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transferlab.encoders.base import EncoderOutput, reverse_padded

__all__ = ["ELMoConfig", "ELMo", "CharCNN", "Highway", "ScalarMix", "char_ids", "char_table", "PAPER_FILTERS"]

# PyTorch says so once per process on a CPU; the fallback kernel is correct, and the speed is measured
warnings.filterwarnings("ignore", message="LSTM with projections is not supported with oneDNN")

PAD_CHAR, BOW, EOW = 0, 257, 258  # bytes are 1..256
N_CHARS = 259
PAPER_FILTERS = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))


@dataclass(frozen=True)
class ELMoConfig:
    vocab_size: int = 0  # rows of the character table; set_words() fills it
    max_chars: int = 50  # characters per word, markers included
    char_dim: int = 16
    filters: tuple[tuple[int, int], ...] = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 512))
    n_highway: int = 2
    dim: int = 512  # token projection and LSTM projection, per direction
    hidden_dim: int = 2048  # LSTM cells
    n_layers: int = 2
    dropout: float = 0.1  # on the token layer and between LSTM layers
    pad_id: int = 0

    def __post_init__(self) -> None:
        for name in ("max_chars", "char_dim", "dim", "hidden_dim", "n_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"elmo.{name} must be >= 1, got {getattr(self, name)}")
        if self.n_highway < 0 or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"elmo.n_highway must be >= 0 and elmo.dropout in [0, 1), got "
                             f"{self.n_highway}, {self.dropout}")
        if not self.filters or any(w < 1 or n < 1 for w, n in self.filters):
            raise ValueError(f"elmo.filters must be (width, count) pairs >= 1, got {self.filters}")
        if max(w for w, _ in self.filters) > self.max_chars:
            raise ValueError(f"elmo.max_chars={self.max_chars} is shorter than the widest filter")


class ScalarMix(nn.Module):
    """ELMo's learned layer combination: ``gamma * sum_j softmax(w)_j * layers[j]``."""

    def __init__(self, n_layers: int):
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(n_layers))  # equal weights at the start
        self.gamma = nn.Parameter(torch.ones(()))

    def forward(self, layers: Sequence[torch.Tensor] | torch.Tensor) -> torch.Tensor:
        """``layers``: a list of (..., D) tensors or one (L, ..., D) tensor -> (..., D)."""
        stacked = layers if isinstance(layers, torch.Tensor) else torch.stack(list(layers))  # (L,...,D)
        if stacked.size(0) != self.weights.numel():
            raise ValueError(f"ScalarMix of {self.weights.numel()} layers got {stacked.size(0)}")
        w = torch.softmax(self.weights, dim=0).to(stacked.dtype)
        return self.gamma * torch.tensordot(w, stacked, dims=1)


def char_ids(word: str, max_chars: int) -> list[int]:
    """``[BOW, bytes + 1 ..., EOW]`` padded with 0 to ``max_chars`` (a long word keeps its start)."""
    body = [b + 1 for b in word.encode("utf-8")][: max_chars - 2]
    return [BOW, *body, EOW] + [PAD_CHAR] * (max_chars - 2 - len(body))


def char_table(words: list[str], max_chars: int) -> torch.Tensor:
    """``(len(words), max_chars)`` rows of :func:`char_ids`, index = word id."""
    return torch.tensor([char_ids(w, max_chars) for w in words], dtype=torch.long).reshape(len(words), max_chars)


class CharCNN(nn.Module):
    """Character embeddings -> one max-pooled convolution per width -> ReLU, concatenated."""

    def __init__(self, cfg: ELMoConfig) -> None:
        super().__init__()
        self.embedding = nn.Embedding(N_CHARS, cfg.char_dim, padding_idx=PAD_CHAR)
        self.convs = nn.ModuleList(nn.Conv1d(cfg.char_dim, n, w) for w, n in cfg.filters)
        self.dim = sum(n for _, n in cfg.filters)

    def forward(self, chars: torch.Tensor) -> torch.Tensor:
        # chars (N, C) -> (N, F)
        x = self.embedding(chars).transpose(1, 2)  # (N, char_dim, C)
        return torch.cat([F.relu(conv(x).amax(dim=2)) for conv in self.convs], dim=1)


class Highway(nn.Module):
    """``y = g * x + (1 - g) * relu(W_h x)``, ``g = sigmoid(W_g x)``, per layer."""

    def __init__(self, dim: int, n_layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, 2 * dim) for _ in range(n_layers))
        for layer in self.layers:  # carry more than transform at first (as in AllenNLP's ELMo)
            nn.init.constant_(layer.bias[dim:], 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            h, g = layer(x).chunk(2, dim=-1)  # (N, D) each
            gate = torch.sigmoid(g)
            x = gate * x + (1 - gate) * F.relu(h)
        return x


class ELMo(nn.Module):
    """See the module docstring. ``forward(ids, mask)`` with word ids of :meth:`set_words`' list."""

    def __init__(self, cfg: ELMoConfig, words: list[str] | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        # not saved with the weights: it is a function of the word list, rebuilt from the vocabulary
        self.register_buffer("chars", torch.zeros(max(cfg.vocab_size, 1), cfg.max_chars, dtype=torch.long),
                             persistent=False)
        self.char_cnn = CharCNN(cfg)
        self.highway = Highway(self.char_cnn.dim, cfg.n_highway)
        self.proj = nn.Linear(self.char_cnn.dim, cfg.dim)
        self.forward_lstms = nn.ModuleList(self._lstm() for _ in range(cfg.n_layers))
        self.backward_lstms = nn.ModuleList(self._lstm() for _ in range(cfg.n_layers))
        self.drop = nn.Dropout(cfg.dropout)
        self.dim = 2 * cfg.dim
        if words is not None:
            self.set_words(words)

    def _lstm(self) -> nn.LSTM:
        return nn.LSTM(self.cfg.dim, self.cfg.hidden_dim, proj_size=self.cfg.dim, batch_first=True)

    def set_words(self, words: list[str]) -> None:
        """The character table for a word list (index = word id); the pad id's row stays empty."""
        table = char_table(words, self.cfg.max_chars)
        if self.cfg.pad_id < len(words):
            table[self.cfg.pad_id] = PAD_CHAR
        self.chars = table.to(self.chars.device)

    def add_words(self, words: list[str]) -> list[int]:
        """Append words to the character table (no parameter changes: a word is its characters);
        returns their ids. How a task's words unseen in pretraining get a representation."""
        start = self.chars.size(0)
        rows = char_table(words, self.cfg.max_chars)
        self.chars = torch.cat([self.chars, rows.to(self.chars.device)]) if words else self.chars
        return list(range(start, start + len(words)))

    def tokens(self, ids: torch.Tensor) -> torch.Tensor:
        """The context-independent token layer: ids (B, T) -> (B, T, dim)."""
        B, T = ids.shape
        x = self.char_cnn(self.chars[ids].reshape(B * T, -1))  # (B*T, F)
        return self.proj(self.highway(x)).reshape(B, T, -1)  # (B, T, dim)

    def directions(self, ids: torch.Tensor, mask: torch.Tensor | None = None):
        """(token layer, forward states per layer, backward states per layer), each (B, T, dim)."""
        if mask is None:
            mask = torch.ones_like(ids, dtype=torch.bool)
        lengths = mask.sum(1)
        tok = self.tokens(ids)
        x = self.drop(tok)
        fwd, bwd = [], []
        f_in, b_in = x, reverse_padded(x, lengths)
        for i, (lf, lb) in enumerate(zip(self.forward_lstms, self.backward_lstms)):
            f_out, _ = lf(f_in)
            b_out, _ = lb(b_in)
            if i > 0:  # residual connection between LSTM layers
                f_out, b_out = f_out + f_in, b_out + b_in
            fwd.append(f_out)
            bwd.append(reverse_padded(b_out, lengths))
            f_in, b_in = self.drop(f_out), self.drop(b_out)
        return tok, fwd, bwd

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> EncoderOutput:
        tok, fwd, bwd = self.directions(ids, mask)
        layers = [torch.cat([tok, tok], dim=-1)] + [torch.cat(fb, dim=-1) for fb in zip(fwd, bwd)]  # (B, T, 2 dim)
        return EncoderOutput(hidden=layers[-1], layers=layers)

    def layer_groups(self) -> list[nn.Module]:
        token = nn.ModuleList([self.char_cnn, self.highway, self.proj])
        return [token] + [nn.ModuleList([f, b]) for f, b in zip(self.forward_lstms, self.backward_lstms)]
