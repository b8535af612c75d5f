"""CoVe: McCann, Bradbury, Xiong & Socher 2017, "Learned in Translation: Contextualized Word
Vectors" (NeurIPS).

An attentional sequence-to-sequence translation model whose encoder, the MT-LSTM, is then reused
as a feature extractor for other tasks. Top to bottom:

1. English words -> their GloVe vectors (Pennington et al. 2014), frozen: a buffer, not a
   parameter. The rows of the MT vocabulary (:func:`glove_rows`) are saved with the weights, so
   a checkpoint translates on its own; a word outside it (a task's word) is added by
   :meth:`CoVe.add_words` from the vectors ``cove.vectors`` names. A word without a GloVe vector
   is ``<unk>``, whose row is zero (as are ``<pad>``'s and the other specials').
2. The MT-LSTM (:class:`CoVe`): ``n_layers`` bidirectional LSTMs (2 in the paper) of
   ``hidden_dim`` cells per direction over the GloVe vectors, each row packed to its length so
   padding never reaches a backward state.
3. The attentional decoder (:class:`AttentionDecoder`), section 3 of the paper: an
   ``n_layers`` unidirectional LSTM reads the previous target embedding and the previous
   context-adjusted state, ``h_t = LSTM([z_{t-1}; h~_{t-1}], h_{t-1})`` (input feeding); attention
   ``alpha_t = softmax(H (W1 h_t + b1))`` over the encoder states ``H`` (padding masked out, so it
   gets exactly zero weight); ``h~_t = tanh(W2 [H^T alpha_t; h_t] + b2)``; the next-piece
   distribution ``softmax(W_out h~_t + b_out)``. Its first state comes from the encoder's final
   states through a linear "bridge" (the paper does not say; OpenNMT-py, whose code CoVe used, has one).
4. German is a byte-level BPE vocabulary (Sennrich et al. 2016; the ``tokenizers`` library,
   trained on the corpus's German side by ``transferlab pretrain mt``): no target word is ever
   unknown and decoded pieces detokenize exactly, which is what sacreBLEU scores.

:class:`CoVeMT` trains with teacher forcing (``forward`` returns the logits of every target
position; the cross-entropy is :class:`transferlab.pretrain.mt.MTLoss`) and decodes one step at
a time (``start``/``step``/``reorder``, what :mod:`transferlab.tasks.generate`'s greedy and beam
search call).

As an encoder for task models (registry name ``cove``), ``layers`` are ``[GloVe; 0]``,
``[GloVe; CoVe layer 1]``, ``[GloVe; CoVe layer 2]``, all ``embed_dim + 2 * hidden_dim`` wide, and
``hidden`` is the last: the paper's ``[GloVe(w); CoVe(w)]`` (eq. 6). GloVe is in every layer so a
scalar mix of them (``--adapt=features``) weighs the CoVe layers against each other and against
GloVe alone, whose weight stays whole. :meth:`CoVe.freeze` makes the MT-LSTM a frozen feature
extractor, as in the paper: no gradients, dropout off, and no layer groups to train.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from transferlab.encoders.base import EncoderOutput

__all__ = ["CoVeConfig", "MTDecoderConfig", "CoVe", "AttentionDecoder", "CoVeMT", "DecoderState", "glove_rows"]


@dataclass(frozen=True)
class CoVeConfig:
    """The MT-LSTM: GloVe in, ``n_layers`` biLSTMs of ``hidden_dim`` cells per direction."""

    vectors: str = "glove-6b-50d"  # the frozen GloVe vectors: a catalog name or a vectors file/folder
    vocab_size: int = 0  # English words with a saved GloVe row, specials included (from the vocabulary)
    embed_dim: int = 300  # the vectors' dim (set from them)
    hidden_dim: int = 300  # per direction (the paper's 300)
    n_layers: int = 2
    dropout: float = 0.2  # on each LSTM layer's input, in training
    pad_id: int = 0
    unk_id: int = 1

    def __post_init__(self) -> None:
        for name in ("embed_dim", "hidden_dim", "n_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"cove.{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"cove.dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class MTDecoderConfig:
    """The attentional LSTM decoder over German BPE pieces."""

    vocab_size: int = 0  # target pieces (from the tokenizer)
    embed_dim: int = 300
    hidden_dim: int = 600
    n_layers: int = 2
    dropout: float = 0.2  # on the LSTM input and on h~ before the output layer
    pad_id: int = 0

    def __post_init__(self) -> None:
        for name in ("embed_dim", "hidden_dim", "n_layers"):
            if getattr(self, name) < 1:
                raise ValueError(f"decoder.{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"decoder.dropout must be in [0, 1), got {self.dropout}")


def glove_rows(words: Sequence[str], wv) -> torch.Tensor:
    """(len(words), dim) rows of a :class:`~transferlab.vectors.keyed.WordVectors` for ``words``:
    each word as written, else lower-cased, else a zero row."""
    found = [(i, j) for i, w in enumerate(words) if (j := wv.get_index(w, wv.get_index(w.lower()))) is not None]
    rows = torch.zeros(len(words), wv.dim)
    if found:
        at, index = zip(*found)
        rows[list(at)] = torch.from_numpy(np.array(wv.vectors[list(index)], dtype=np.float32))  # a copy
    return rows


class CoVe(nn.Module):
    """The MT-LSTM over frozen GloVe vectors; an Encoder (see the module docstring)."""

    def __init__(self, cfg: CoVeConfig, vectors: torch.Tensor | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        V, E, H = max(cfg.vocab_size, 1), cfg.embed_dim, cfg.hidden_dim
        if vectors is not None and tuple(vectors.shape) != (V, E):
            raise ValueError(f"CoVe: vectors of shape {tuple(vectors.shape)}, expected ({V}, {E})")
        self.register_buffer("vectors", vectors.float().clone() if vectors is not None else torch.zeros(V, E))
        # a task's words beyond the MT vocabulary: rebuilt from the words by add_words, never saved
        self.register_buffer("extra", torch.zeros(0, E), persistent=False)
        self.added: dict[str, int] = {}
        self.wv = None  # the WordVectors add_words reads, loaded from cfg.vectors when first needed
        self.lstms = nn.ModuleList(nn.LSTM(E if i == 0 else 2 * H, H, batch_first=True, bidirectional=True)
                                   for i in range(cfg.n_layers))
        self.drop = nn.Dropout(cfg.dropout)
        self.frozen = False
        self.out_dim = 2 * H  # the MT-LSTM's states, what the decoder attends over
        self.dim = E + 2 * H  # [GloVe; CoVe]

    # --- the frozen GloVe table ---------------------------------------------------------------
    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """GloVe rows of ids (B, S) -> (B, S, E); ids past the saved rows are added words."""
        V = self.vectors.size(0)
        x = F.embedding(ids.clamp(max=V - 1), self.vectors)  # (B, S, E)
        if self.extra.size(0) == 0:
            return x
        added = F.embedding((ids - V).clamp(min=0, max=self.extra.size(0) - 1), self.extra)  # (B, S, E)
        return torch.where((ids >= V)[..., None], added, x)

    def add_words(self, words: Sequence[str]) -> list[int]:
        """Ids for words outside the vocabulary: a new row holding the word's GloVe vector, or
        ``<unk>`` for a word GloVe lacks. The same word always gets the same id."""
        new = [w for w in dict.fromkeys(words) if w not in self.added]
        if new:
            if self.wv is None:
                from transferlab.vectors.keyed import load_vectors

                self.wv = load_vectors(self.cfg.vectors)
            known = [w for w in new if self.wv.get_index(w, self.wv.get_index(w.lower())) is not None]
            start = self.vectors.size(0) + self.extra.size(0)
            self.added.update({w: self.cfg.unk_id for w in new})
            self.added.update({w: start + i for i, w in enumerate(known)})
            if known:
                rows = glove_rows(known, self.wv).to(self.extra.device)
                self.extra = torch.cat([self.extra, rows])
        return [self.added[w] for w in words]

    def keep_added(self) -> None:
        """Make the rows :meth:`add_words` added part of the saved table (``cfg.vocab_size`` grows;
        every id stays what it was), so a task model that saved ids of added words rebuilds them."""
        if self.extra.size(0):
            self.vectors = torch.cat([self.vectors, self.extra])
            self.extra = self.extra[:0]
            self.cfg = dataclasses.replace(self.cfg, vocab_size=self.vectors.size(0))

    # --- the MT-LSTM --------------------------------------------------------------------------
    def states(self, ids: torch.Tensor, mask: torch.Tensor | None = None):
        """GloVe (B, S, E), each biLSTM layer's states (B, S, 2H) (zero at padding), and the top
        layer's final states (B, 2H): the forward LSTM's at each row's last word, the backward's
        at its first."""
        if mask is None:
            mask = torch.ones_like(ids, dtype=torch.bool)
        S = ids.size(1)
        lengths = mask.sum(1).clamp(min=1).cpu()
        glove = self.embed(ids)
        x, layers = glove, []
        for lstm in self.lstms:
            packed = pack_padded_sequence(self.drop(x), lengths, batch_first=True, enforce_sorted=False)
            out, (h, _) = lstm(packed)  # h (2, B, H): the two directions' final states
            x, _ = pad_packed_sequence(out, batch_first=True, total_length=S)  # (B, S, 2H)
            layers.append(x)
        return glove, layers, torch.cat([h[0], h[1]], dim=-1)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> EncoderOutput:
        glove, cove, _ = self.states(ids, mask)
        layers = [torch.cat([glove, torch.zeros_like(cove[0])], -1)] + [torch.cat([glove, h], -1) for h in cove]
        return EncoderOutput(hidden=layers[-1], layers=layers)  # each (B, S, E + 2H)

    def freeze(self) -> CoVe:
        """A frozen feature extractor (the paper's use): no gradients, dropout off, no layer groups."""
        self.frozen = True
        for p in self.parameters():
            p.requires_grad_(False)
        return self.train(self.training)

    def train(self, mode: bool = True) -> CoVe:
        return super().train(mode and not self.frozen)

    def layer_groups(self) -> list[nn.Module]:
        return [] if self.frozen else list(self.lstms)


@dataclass
class DecoderState:
    """What one decoding step needs, for N rows (sentences, or sentences x beams)."""

    memory: torch.Tensor  # (N, S, 2H) the encoder states
    mask: torch.Tensor  # (N, S) True = a real source word
    hidden: tuple[torch.Tensor, torch.Tensor]  # the decoder LSTM's (h, c), (L, N, D) each
    h_tilde: torch.Tensor  # (N, D) the last context-adjusted state (input feeding)
    alpha: torch.Tensor | None = None  # (N, S) the last step's attention weights

    def select(self, index: torch.Tensor) -> DecoderState:
        """The rows ``index`` (N',): a beam's surviving hypotheses, or each sentence K times."""
        h, c = self.hidden
        return DecoderState(self.memory[index], self.mask[index], (h[:, index], c[:, index]), self.h_tilde[index],
                            None if self.alpha is None else self.alpha[index])


class AttentionDecoder(nn.Module):
    """The paper's attentional decoder with input feeding (see the module docstring)."""

    def __init__(self, cfg: MTDecoderConfig, memory_dim: int) -> None:
        super().__init__()
        self.cfg = cfg
        V, E, D, L = max(cfg.vocab_size, 1), cfg.embed_dim, cfg.hidden_dim, cfg.n_layers
        self.embedding = nn.Embedding(V, E, padding_idx=cfg.pad_id)
        self.lstm = nn.LSTM(E + D, D, num_layers=L, dropout=cfg.dropout if L > 1 else 0.0, batch_first=True)
        self.bridge = nn.Linear(memory_dim, 2 * L * D)  # encoder's final states -> each layer's first (h, c)
        self.attn_in = nn.Linear(D, memory_dim)  # W1, b1
        self.attn_out = nn.Linear(memory_dim + D, D)  # W2, b2
        self.out = nn.Linear(D, V)  # W_out, b_out
        self.drop = nn.Dropout(cfg.dropout)

    def start(self, memory: torch.Tensor, mask: torch.Tensor, final: torch.Tensor) -> DecoderState:
        B, L, D = memory.size(0), self.cfg.n_layers, self.cfg.hidden_dim
        h, c = self.bridge(final).view(B, 2, L, D).permute(1, 2, 0, 3)  # (L, B, D) each
        return DecoderState(memory, mask, (torch.tanh(h).contiguous(), c.contiguous()), memory.new_zeros(B, D))

    def attend(self, h: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor):
        """alpha = softmax(H (W1 h + b1)) with padding at -inf; returns (H^T alpha (B, 2H), alpha (B, S))."""
        scores = torch.bmm(memory, self.attn_in(h).unsqueeze(2)).squeeze(2)  # (B, S)
        alpha = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        return torch.bmm(alpha.unsqueeze(1), memory).squeeze(1), alpha  # (B, 2H), (B, S)

    def step(self, z: torch.Tensor, state: DecoderState) -> DecoderState:
        """One step from the previous piece's embedding z (N, E): the next state, h~ (N, D) in it."""
        x = self.drop(torch.cat([z, state.h_tilde], dim=-1)).unsqueeze(1)  # (N, 1, E + D)
        out, hidden = self.lstm(x, state.hidden)
        h = out[:, 0]  # (N, D)
        context, alpha = self.attend(h, state.memory, state.mask)
        h_tilde = torch.tanh(self.attn_out(torch.cat([context, h], dim=-1)))  # (N, D)
        return DecoderState(state.memory, state.mask, hidden, h_tilde, alpha)

    def logits(self, h_tilde: torch.Tensor) -> torch.Tensor:
        return self.out(self.drop(h_tilde))  # (..., V)


class CoVeMT(nn.Module):
    """English -> German: the MT-LSTM (``encoder``, what CoVe keeps) and the attentional decoder."""

    def __init__(self, encoder: CoVe, decoder_cfg: MTDecoderConfig) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = AttentionDecoder(decoder_cfg, encoder.out_dim)

    def start(self, src: torch.Tensor, src_mask: torch.Tensor) -> DecoderState:
        """Encode src (B, S) once: the state the first decoding step starts from."""
        _, layers, final = self.encoder.states(src, src_mask)
        return self.decoder.start(layers[-1], src_mask, final)

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: logits (B, T, V) of the piece after each of tgt_in (B, T) (BOS first)."""
        state = self.start(src, src_mask)
        z = self.decoder.embedding(tgt_in)  # (B, T, E)
        states = []
        for t in range(tgt_in.size(1)):
            state = self.decoder.step(z[:, t], state)
            states.append(state.h_tilde)
        return self.decoder.logits(torch.stack(states, dim=1))  # (B, T, D) -> (B, T, V)

    def step(self, prev: torch.Tensor, state: DecoderState) -> tuple[torch.Tensor, DecoderState]:
        """Log-probabilities (N, V) of the piece after prev (N,), and the state after it."""
        state = self.decoder.step(self.decoder.embedding(prev), state)
        return self.decoder.logits(state.h_tilde).log_softmax(-1), state

    def reorder(self, state: DecoderState, index: torch.Tensor) -> DecoderState:
        return state.select(index)
