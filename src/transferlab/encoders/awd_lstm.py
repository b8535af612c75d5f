"""AWD-LSTM: the ASGD weight-dropped LSTM of Merity, Keskar and Socher (2018), "Regularizing and
Optimizing LSTM Language Models" (ICLR), the encoder of ULMFiT (Howard and Ruder 2018).

A stack of single-layer LSTMs (``dim -> hidden_dim -> ... -> dim``, so the last layer's output
can be tied to the embedding) with the paper's five dropouts:

- ``embed_p``: embedding dropout, drops whole words (rows of the embedding matrix) for the
  whole window, scaled by ``1 / (1 - embed_p)``;
- ``input_p``: locked (variational) dropout on the embedding output, one mask per sequence
  shared by every time step;
- ``hidden_p``: locked dropout between LSTM layers;
- ``weight_p``: DropConnect on each layer's hidden-to-hidden matrix, one mask per window;
- ``output_p``: locked dropout on the last layer's output, applied here to ``hidden`` so that
  every head (LM decoder or classifier) gets it.

The dropped hidden-to-hidden matrix is passed with the other weights to PyTorch's fused LSTM
op (``torch.lstm``, the kernel behind ``nn.LSTM``), so there is no Python loop over time
steps; the raw matrix ``weight_hh_l0_raw`` is the parameter the optimizer sees. With every
dropout off, the output equals a stack of ``nn.LSTM`` with the same weights (tested).
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from transferlab.encoders.base import EncoderOutput

__all__ = [
    "AWDLSTMConfig",
    "AWDLSTM",
    "WeightDropLSTM",
    "detach_state",
    "keep_mask",
    "locked_dropout",
]

LSTMState = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: h, c each (1, B, H_layer)


DROPOUTS = ("embed_p", "input_p", "hidden_p", "weight_p", "output_p")


@dataclass(frozen=True)
class AWDLSTMConfig:
    """AWD-LSTM sizes and dropouts (the paper's names; defaults of its PTB/ULMFiT models)."""

    vocab_size: int = 0  # 0 = unset: the recipe fills it in from the vocabulary
    dim: int = 400  # embedding size, also the last layer's size (for weight tying)
    hidden_dim: int = 1152
    n_layers: int = 3
    embed_p: float = 0.1
    input_p: float = 0.6
    hidden_p: float = 0.3
    weight_p: float = 0.5
    output_p: float = 0.4
    pad_id: int = 0

    def __post_init__(self) -> None:
        if self.vocab_size < 0:
            raise ValueError(f"AWDLSTMConfig.vocab_size must be >= 0, got {self.vocab_size}")
        for name in ("dim", "hidden_dim", "n_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"AWDLSTMConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in DROPOUTS:
            p = getattr(self, name)
            if not 0.0 <= p < 1.0:
                raise ValueError(f"AWDLSTMConfig.{name} is a dropout rate in [0, 1), got {p}")
        if self.pad_id < 0 or (self.vocab_size and self.pad_id >= self.vocab_size):
            raise ValueError(
                f"AWDLSTMConfig.pad_id must be in [0, vocab_size={self.vocab_size}), "
                f"got {self.pad_id}"
            )


def detach_state(state: Any) -> Any:
    """Cut the graph behind a recurrent state (truncated BPTT); nested lists/tuples are kept."""
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    return type(state)(detach_state(s) for s in state)


def keep_mask(like: torch.Tensor, shape: tuple[int, ...], p: float) -> torch.Tensor:
    """A scaled dropout mask: ``1 / (1 - p)`` with probability ``1 - p``, else 0.

    Drawn as ``rand >= p``, about 3x faster on CPU than ``bernoulli_`` (which ``F.dropout``
    uses); drawn in float32 and cast, so a bf16 mask under autocast is not coarser.
    """
    mask = torch.rand(shape, device=like.device).ge_(p).div_(1.0 - p)
    return mask if mask.dtype == like.dtype else mask.to(like.dtype)


def locked_dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Variational dropout on ``x (B, T, D)``: one mask per sequence, the same at every step."""
    if not training or p == 0.0:
        return x
    return x * keep_mask(x, (x.size(0), 1, x.size(2)), p)  # mask (B, 1, D)


class WeightDropLSTM(nn.Module):
    """One LSTM layer (batch first) with DropConnect on its hidden-to-hidden matrix.

    Parameter names follow ``nn.LSTM`` (``weight_ih_l0``, ``bias_ih_l0``, ``bias_hh_l0``) except
    the recurrent matrix, ``weight_hh_l0_raw`` (fastai's and the paper code's name).
    """

    def __init__(self, input_size: int, hidden_size: int, weight_p: float = 0.0) -> None:
        super().__init__()
        self.input_size, self.hidden_size, self.weight_p = input_size, hidden_size, weight_p
        gates = 4 * hidden_size  # i, f, g, o stacked as in nn.LSTM
        self.weight_ih_l0 = nn.Parameter(torch.empty(gates, input_size))
        self.weight_hh_l0_raw = nn.Parameter(torch.empty(gates, hidden_size))
        self.bias_ih_l0 = nn.Parameter(torch.empty(gates))
        self.bias_hh_l0 = nn.Parameter(torch.empty(gates))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1.0 / math.sqrt(self.hidden_size)  # nn.LSTM's initialization
        for w in self.parameters():
            nn.init.uniform_(w, -bound, bound)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, weight_p={self.weight_p}"

    def forward(
        self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor] | None = None
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        # x: (B, T, input_size) -> out (B, T, hidden_size), h and c (1, B, hidden_size)
        if state is None:
            zeros = x.new_zeros(1, x.size(0), self.hidden_size)
            state = (zeros, zeros)
        elif state[0].dtype != x.dtype:  # e.g. a bf16 state from an autocast window, used in fp32
            state = (state[0].to(x.dtype), state[1].to(x.dtype))
        w_hh = self.weight_hh_l0_raw
        if self.training and self.weight_p > 0.0:
            w_hh = w_hh * keep_mask(w_hh, w_hh.shape, self.weight_p)  # one mask for the window
        weights = (self.weight_ih_l0, w_hh, self.bias_ih_l0, self.bias_hh_l0)
        if x.is_cuda:
            # cuDNN warns that the weights are not one flat buffer; they cannot be, since
            # w_hh is a fresh tensor each window (fastai silences the same warning)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                out, h, c = torch.lstm(x, state, weights, True, 1, 0.0, self.training, False, True)
        else:
            out, h, c = torch.lstm(x, state, weights, True, 1, 0.0, self.training, False, True)
        return out, (h, c)


class AWDLSTM(nn.Module):
    """The AWD-LSTM encoder: ``forward(ids, mask, state) -> EncoderOutput`` (see module doc)."""

    def __init__(self, cfg: AWDLSTMConfig) -> None:
        super().__init__()
        if cfg.vocab_size < 1:
            raise ValueError("AWDLSTMConfig.vocab_size must be set (>= 1) to build an AWDLSTM")
        self.cfg = cfg
        self.dim = cfg.dim
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.dim, padding_idx=cfg.pad_id)
        sizes = [cfg.dim] + [cfg.hidden_dim] * (cfg.n_layers - 1) + [cfg.dim]
        self.rnns = nn.ModuleList(
            WeightDropLSTM(sizes[i], sizes[i + 1], cfg.weight_p) for i in range(cfg.n_layers)
        )
        with torch.no_grad():  # ULMFiT's initialization of the embedding
            self.embedding.weight.uniform_(-0.1, 0.1)
            self.embedding.weight[cfg.pad_id].zero_()

    def set_dropouts(self, **rates: float) -> None:
        """Change dropout rates in place (``embed_p``, ``input_p``, ``hidden_p``, ``weight_p``,
        ``output_p``), e.g. a classifier's rates on an encoder pretrained as a language model;
        ``self.cfg`` follows, so a checkpoint records the rates the weights were trained with."""
        unknown = set(rates) - set(DROPOUTS)
        if unknown:
            raise ValueError(f"AWDLSTM.set_dropouts: unknown rate(s) {sorted(unknown)}; known: {DROPOUTS}")
        self.cfg = dataclasses.replace(self.cfg, **rates)  # validates each rate
        for rnn in self.rnns:
            rnn.weight_p = self.cfg.weight_p

    def layer_groups(self) -> list[nn.Module]:
        """ULMFiT's groups, bottom to top: the embedding, then each LSTM layer."""
        return [self.embedding, *self.rnns]

    def init_state(self, batch_size: int) -> LSTMState:
        """A zero state for ``batch_size`` sequences (what ``state=None`` means)."""
        w = self.embedding.weight
        return [(w.new_zeros(1, batch_size, r.hidden_size),) * 2 for r in self.rnns]

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Embedding lookup with embedding dropout: ids (B, T) -> (B, T, dim)."""
        x = self.embedding(ids)
        p = self.cfg.embed_p
        if self.training and p > 0.0:
            # dropping row w of the matrix == zeroing every occurrence of word w: draw one keep
            # flag per vocabulary entry and gather it, instead of copying the whole matrix
            keep = keep_mask(x, (self.embedding.num_embeddings,), p)  # (V,)
            x = x * keep[ids].unsqueeze(-1)  # (B, T, 1) broadcast over D
        return x

    def forward(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor | None = None,
        state: LSTMState | None = None,
    ) -> EncoderOutput:
        # ids (B, T) long; mask (B, T) bool is accepted for the Encoder contract: batches are
        # right-padded, so real tokens never see padding and the head reads the last real one.
        if state is not None and len(state) != len(self.rnns):
            raise ValueError(f"AWDLSTM: state has {len(state)} layers, the model {len(self.rnns)}")
        emb = self.embed(ids)  # (B, T, dim)
        layers = [emb]
        new_state: LSTMState = []
        x = locked_dropout(emb, self.cfg.input_p, self.training)
        for i, rnn in enumerate(self.rnns):
            out, hc = rnn(x, None if state is None else state[i])  # (B, T, H_i)
            layers.append(out)
            new_state.append(hc)
            if i < len(self.rnns) - 1:
                x = locked_dropout(out, self.cfg.hidden_p, self.training)
        hidden = locked_dropout(layers[-1], self.cfg.output_p, self.training)  # (B, T, dim)
        return EncoderOutput(hidden=hidden, layers=layers, state=new_state)
