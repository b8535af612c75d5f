"""A sequence-to-sequence model whose encoder and decoder start as a pretrained language model:
Ramachandran, Liu and Le (2017), "Unsupervised Pretraining for Sequence to Sequence Learning"
(EMNLP).

Both sides are AWD-LSTMs (:mod:`transferlab.encoders.awd_lstm`) of one shape over one word
vocabulary, a ``pretrain lm`` checkpoint's. Top to bottom:

1. The encoder reads the source ``x_1 .. x_S`` (right-padded): its top layer's states are the
   memory ``M (B, S, D)`` attention reads.
2. The decoder is a language model over the target: the same AWD-LSTM reads ``<eos> y_1 .. y_T``
   (``<eos>`` starts a target because it is what a ``pretrain lm`` model reads before every line;
   its ``<bos>`` row was never trained), in one fused call per batch: no input feeding, so the
   decoder's LSTM stays exactly the LM's computation. Its first state is zero, as an LM's at the
   start of a stream, plus a "bridge" (``seq2seq.bridge``): per layer, ``(tanh(W_h m_l), W_c m_l)``
   of the encoder layer's state ``m_l`` at each row's last source word (Luong et al. start the
   decoder from the encoder's last state; through a linear map, as OpenNMT-py's bridge, because a
   padded batch has no exact final cell state). The bridge starts at zero, so at the start the
   decoder is the LM unchanged.
3. Luong, Pham and Manning's (2015) global attention at the top, for every target position at
   once: ``score(h_t, m_s) = h_t . m_s`` (``dot``) or ``h_t^T W_a m_s`` (``general``), padding at
   -inf so it gets exactly zero weight; ``c_t = sum_s alpha_ts m_s``;
   ``h~_t = tanh(W_c [c_t; h_t])``.
4. The softmax reads ``h_t + h~_t`` (``seq2seq.residual``, the default) or ``h~_t``, through the
   decoder's output layer tied to its embedding as in the LM (Press and Wolf 2017). The residual
   is the paper's section 2.2 remedy: the pretrained softmax should not read only a random new
   layer, whose random gradients would wreck the pretrained weights; with it the LM's own path
   ``h_t -> softmax`` is there from the first step.

``seq2seq.share_embeddings`` (default) gives the encoder the decoder's embedding: one matrix for
the source words, the target words and the softmax (one language, one vocabulary).

:func:`init_from_lm` is the paper's initialization: the encoder's AWD-LSTM (embedding and LSTMs)
and the decoder's AWD-LSTM are the LM's encoder, the output layer's bias the LM's decoder bias
(its weight is the tied embedding); attention, combination and bridge stay random (the bridge at
zero). :class:`Seq2SeqLoss` is teacher-forced cross-entropy, plus, with ``aux_lm`` > 0, the
paper's language-modelling loss against forgetting, kept simple: ``aux_lm`` times the next-word
cross-entropy of the decoder's LSTM output ``h_t`` alone (no attention; the LM's path through the
same tied softmax) on the same targets, where the paper trains it on monolingual text.

The model decodes through :mod:`transferlab.tasks.generate` (greedy and beam search) with the
``start``/``step``/``reorder`` methods CoVe's translation model exposes; ``forward`` gives the
logits of every target position (what :func:`transferlab.pretrain.mt.mt_perplexity` reads) and
batches are :class:`transferlab.pretrain.mt.ParallelBatches` with ``bos`` = ``eos`` = ``<eos>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from transferlab import IGNORE_INDEX
from transferlab.config import ConfigError
from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig
from transferlab.pretrain.lm import LanguageModel, linear_cross_entropy

__all__ = ["Seq2SeqConfig", "LMSeq2Seq", "Seq2SeqState", "init_from_lm", "Seq2SeqLoss"]


@dataclass(frozen=True)
class Seq2SeqConfig:
    """What the seq2seq model adds to its two AWD-LSTMs (their sizes and dropouts: ``awd_lstm``)."""

    attention: Literal["dot", "general"] = "general"  # Luong's score: h.m or h^T W_a m
    residual: bool = True  # the softmax reads h + h~ (Ramachandran et al. 2.2), else h~ alone
    bridge: bool = True  # the decoder's first state from the encoder's last (zero at the start), else zero
    share_embeddings: bool = True  # the encoder reads with the decoder's (tied) embedding

    def __post_init__(self) -> None:
        if self.attention not in ("dot", "general"):
            raise ConfigError(f"seq2seq.attention must be 'dot' or 'general', got {self.attention!r}")


@dataclass
class Seq2SeqState:
    """What one decoding step needs, for N rows (sentences, or sentences x beams)."""

    memory: torch.Tensor  # (N, S, D) the encoder's top states
    keys: torch.Tensor  # (N, S, D) what h_t is scored against: memory (dot) or W_a memory (general)
    mask: torch.Tensor  # (N, S) True = a real source word
    hidden: list[tuple[torch.Tensor, torch.Tensor]]  # the decoder's (h, c) per layer, (1, N, H_l) each

    def select(self, index: torch.Tensor) -> Seq2SeqState:
        """The rows ``index`` (N',): a beam's surviving hypotheses, or each sentence K times."""
        return Seq2SeqState(self.memory[index], self.keys[index], self.mask[index],
                            [(h[:, index], c[:, index]) for h, c in self.hidden])


class LMSeq2Seq(nn.Module):
    """An AWD-LSTM encoder, an AWD-LSTM language-model decoder and Luong attention (module docstring)."""

    def __init__(self, awd: AWDLSTMConfig, cfg: Seq2SeqConfig = Seq2SeqConfig()) -> None:
        super().__init__()
        self.cfg = cfg
        D, V = awd.dim, awd.vocab_size
        self.encoder = AWDLSTM(awd)
        self.decoder = AWDLSTM(awd)
        if cfg.share_embeddings:
            self.encoder.embedding = self.decoder.embedding  # one module: one Parameter
        self.attn = nn.Linear(D, D, bias=False) if cfg.attention == "general" else None  # W_a
        self.combine = nn.Linear(2 * D, D)  # W_c
        self.bridges = nn.ModuleList(nn.Linear(r.hidden_size, 2 * r.hidden_size) for r in self.decoder.rnns) \
            if cfg.bridge else None
        for bridge in self.bridges or ():
            nn.init.zeros_(bridge.weight)
            nn.init.zeros_(bridge.bias)
        self.out = nn.Linear(D, V)
        self.out.weight = self.decoder.embedding.weight  # tied, as in the LM
        nn.init.zeros_(self.out.bias)

    # --- encoding -----------------------------------------------------------------------------
    def start(self, src: torch.Tensor, src_mask: torch.Tensor) -> Seq2SeqState:
        """Encode src (B, S) once: the state the first decoding step starts from."""
        enc = self.encoder(src, src_mask)
        memory = enc.hidden  # (B, S, D), the output dropout applied in training
        keys = self.attn(memory) if self.attn is not None else memory
        B = src.size(0)
        if self.bridges is None:
            return Seq2SeqState(memory, keys, src_mask, self.decoder.init_state(B))
        last = (src_mask.sum(1) - 1).clamp(min=0)  # (B,) each row's last real position
        rows = torch.arange(B, device=src.device)
        hidden = []
        for layer, bridge in zip(enc.layers[1:], self.bridges):  # each layer's raw states (B, S, H_l)
            h, c = bridge(layer[rows, last]).chunk(2, dim=-1)  # (B, H_l) each
            hidden.append((torch.tanh(h).unsqueeze(0).contiguous(), c.unsqueeze(0).contiguous()))  # (1, B, H_l)
        return Seq2SeqState(memory, keys, src_mask, hidden)

    # --- attention and output -----------------------------------------------------------------
    def attend(self, h: torch.Tensor, state: Seq2SeqState) -> torch.Tensor:
        """Decoder states h (B, T, D) -> what the softmax reads (B, T, D): h + h~ or h~."""
        scores = torch.bmm(h, state.keys.transpose(1, 2))  # (B, T, S)
        alpha = scores.float().masked_fill(~state.mask[:, None, :], float("-inf")).softmax(-1).to(h.dtype)
        context = torch.bmm(alpha, state.memory)  # (B, T, D)
        h_tilde = torch.tanh(self.combine(torch.cat([context, h], dim=-1)))  # (B, T, D)
        return h + h_tilde if self.cfg.residual else h_tilde

    def features(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor]:
        """Teacher forcing over tgt_in (B, T) (``<eos>`` first): what the softmax reads at each position
        (B, T, D), and the decoder's own LSTM output h (B, T, D) (the auxiliary LM loss's input)."""
        state = self.start(src, src_mask)
        h = self.decoder(tgt_in, None, state=state.hidden).hidden  # (B, T, D), all positions in one call
        return self.attend(h, state), h

    def forward(self, src: torch.Tensor, src_mask: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, V) of the word after each of tgt_in (B, T)."""
        return self.out(self.features(src, src_mask, tgt_in)[0])

    # --- decoding (transferlab.tasks.generate) ------------------------------------------------
    def step(self, prev: torch.Tensor, state: Seq2SeqState) -> tuple[torch.Tensor, Seq2SeqState]:
        """Log-probabilities (N, V) of the word after prev (N,), and the state after it."""
        dec = self.decoder(prev[:, None], None, state=state.hidden)  # hidden (N, 1, D)
        logits = self.out(self.attend(dec.hidden, state)[:, 0])  # (N, V)
        return logits.float().log_softmax(-1), Seq2SeqState(state.memory, state.keys, state.mask, dec.state)

    def reorder(self, state: Seq2SeqState, index: torch.Tensor) -> Seq2SeqState:
        return state.select(index)


@torch.no_grad()
def init_from_lm(model: LMSeq2Seq, lm: LanguageModel) -> LMSeq2Seq:
    """The paper's initialization (module docstring): encoder and decoder AWD-LSTMs <- the LM's
    encoder, the output bias <- the LM's decoder bias; everything else as it was built."""
    if lm.decoder.weight is not lm.encoder.embedding.weight:
        raise ValueError("init_from_lm: the LM's decoder is not tied to its embedding (a `pretrain lm` model is)")
    lm_cfg, cfg = lm.encoder.cfg, model.decoder.cfg
    for key in ("vocab_size", "dim", "hidden_dim", "n_layers"):
        if getattr(lm_cfg, key) != getattr(cfg, key):
            raise ValueError(f"init_from_lm: the LM has awd_lstm.{key}={getattr(lm_cfg, key)}, the seq2seq model "
                             f"{getattr(cfg, key)}: build the model with the LM's shape")
    weights = lm.encoder.state_dict()
    model.encoder.load_state_dict(weights)
    model.decoder.load_state_dict(weights)
    model.out.bias.copy_(lm.decoder.bias)
    return model


class Seq2SeqLoss:
    """``loss(model, batch)``: the mean cross-entropy of every target word and the final ``<eos>``
    (batches of :class:`~transferlab.pretrain.mt.ParallelBatches`); with ``aux_lm`` > 0 plus
    ``aux_lm`` times the decoder's own next-word loss without attention (module docstring). The
    softmax is fused with the loss (:func:`~transferlab.pretrain.lm.linear_cross_entropy`): the
    (B, T, V) logits are never kept."""

    def __init__(self, aux_lm: float = 0.0) -> None:
        if aux_lm < 0:
            raise ValueError(f"Seq2SeqLoss: aux_lm must be >= 0, got {aux_lm}")
        self.aux_lm = aux_lm

    def __call__(self, model: LMSeq2Seq, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        feats, h = model.features(batch["ids"], batch["mask"], batch["tgt_in"])  # (B, T, D) each
        labels = batch["labels"].reshape(-1)  # (B*T,)
        weight, bias = model.out.weight, model.out.bias
        loss = linear_cross_entropy(feats.reshape(-1, feats.size(-1)), weight, bias, labels)  # (B*T, D) in
        if self.aux_lm > 0 and bool((labels != IGNORE_INDEX).any()):
            loss = loss + self.aux_lm * linear_cross_entropy(h.reshape(-1, h.size(-1)), weight, bias, labels)
        return loss
