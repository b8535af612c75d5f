"""TagLM: Peters, Ammar, Bhagavatula & Power 2017, "Semi-supervised sequence tagging with
bidirectional language models" (ACL).

A sequence tagger whose biRNN is given a pretrained, frozen bidirectional language model's
states half-way up. For each token:

1. its word embedding (``word_dim``; from static vectors with ``--vectors``, then trained) and
   a character CNN over its bytes (:class:`~transferlab.encoders.elmo.CharCNN`: one max-pooled
   convolution per width in ``char_filters``), concatenated: the token representation;
2. the first bidirectional RNN layer (``rnn``: GRU, as the paper, or LSTM; ``hidden_dim`` cells
   per direction) over the token representations;
3. the LM embedding: the top layer of a pretrained biLM (our ELMo from ``transferlab pretrain
   bilm``: forward and backward states concatenated), computed without gradients and with the
   biLM's dropout off. It reads characters, so any word has one, seen in pretraining or not;
4. the second bidirectional RNN layer over ``[layer 1 ; LM embedding]`` (the paper's best
   place to insert it, section 3.4), whose states the tagging head reads (softmax per token).

``lm="cove"`` puts CoVe's MT-LSTM (McCann et al. 2017; :class:`~transferlab.encoders.cove.CoVe`,
from ``transferlab pretrain mt``) where the biLM goes, frozen the same way: its layers are
``[GloVe; 0]``, ``[GloVe; biLSTM 1]``, ``[GloVe; biLSTM 2]`` (the top one, the paper's
``[GloVe(w); CoVe(w)]``, is the "LM embedding"). It reads word ids of its own GloVe table, so the
tagger keeps a map ``lm_ids`` from its words to that table's rows (saved with the weights; made by
:func:`~transferlab.encoders.backbone.taglm_backbone`), and a word added later gets its GloVe row
from :meth:`CoVe.add_words <transferlab.encoders.cove.CoVe.add_words>`.

``use_lm=false`` leaves step 3 out: the paper's baseline tagger (no LM embedding), the same
architecture otherwise, so the two differ only in what the biLM adds.

``lm_at="input"`` is ELMo's use of the same biLM in a task model instead (Peters et al. 2018,
section 3.3): every biLM layer, weighed by a learned :class:`~transferlab.encoders.elmo.ScalarMix`
(softmax weights and a scale), concatenated with the token representation of step 1 before the
first RNN layer; the second layer then reads layer 1 alone. The biLM stays frozen; the mix trains
with the token layer. ``lm_layers`` picks the layers mixed: ``[0]``, the LM's token layer alone
(ELMo's character CNN, CoVe's ``[GloVe; 0]``), is the static control that says what context adds.

``layers`` are the two RNN layers' outputs (``2 * hidden_dim`` each), ``hidden`` the second.
``layer_groups()`` holds only what trains (token layer, RNN 1, RNN 2): the biLM stays frozen.
Word ids index the task vocabulary given to the constructor; :meth:`add_words` appends words
unseen in training to the character tables (their word embedding is ``<unk>``'s).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import nn

from transferlab.encoders.base import EncoderOutput
from transferlab.encoders.cove import CoVe, CoVeConfig
from transferlab.encoders.elmo import CharCNN, ELMo, ELMoConfig, ScalarMix, char_table

__all__ = ["TagLMConfig", "TagLM"]


@dataclass(frozen=True)
class TagLMConfig:
    vocab_size: int = 0  # the task vocabulary's words with an embedding row
    pad_id: int = 0
    unk_id: int = 1
    word_dim: int = 50
    max_chars: int = 50  # characters per word, markers included
    char_dim: int = 16
    char_filters: tuple[tuple[int, int], ...] = ((3, 50),)
    rnn: Literal["gru", "lstm"] = "gru"
    hidden_dim: int = 200  # per direction, both RNN layers
    dropout: float = 0.5  # on the token representation and between the layers
    # the frozen contextual model: ELMo's biLM (`pretrain bilm`) or CoVe's MT-LSTM (`pretrain mt`),
    # set with its shape from the --pretrained checkpoint
    lm: Literal["elmo", "cove"] = "elmo"
    bilm: ELMoConfig = field(default_factory=ELMoConfig)  # lm="elmo": the pretrained biLM's shape
    cove: CoVeConfig = field(default_factory=CoVeConfig)  # lm="cove": the MT-LSTM's shape, task words' rows included
    use_lm: bool = True  # false: the baseline tagger without the biLM (Peters et al. 2017's "no LM" row)
    # where the biLM goes in: "layer1", TagLM's top layer after the first RNN; "input", ELMo's
    # scalar mix of all its layers beside the token representation (Peters et al. 2018)
    lm_at: Literal["layer1", "input"] = "layer1"
    # lm_at="input": the LM layers the scalar mix reads (0 = the token layer: ELMo's character CNN,
    # CoVe's [GloVe; 0]); empty = all of them. `[0]` is the static control of a contextual row.
    lm_layers: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("word_dim", "max_chars", "char_dim", "hidden_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"taglm.{name} must be >= 1, got {getattr(self, name)}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"taglm.dropout must be in [0, 1), got {self.dropout}")
        if not self.char_filters or any(w < 1 or n < 1 for w, n in self.char_filters):
            raise ValueError(f"taglm.char_filters must be (width, count) pairs >= 1, got {self.char_filters}")
        if self.lm_layers and self.lm_at != "input":
            raise ValueError("taglm.lm_layers chooses the layers mixed at the input: it needs taglm.lm_at='input'")
        if len(set(self.lm_layers)) != len(self.lm_layers) or any(i < 0 for i in self.lm_layers):
            raise ValueError(f"taglm.lm_layers must be distinct layer indices >= 0, got {self.lm_layers}")


class TagLM(nn.Module):
    """See the module docstring. ``forward(ids, mask)`` with ids of the word list given here."""

    def __init__(self, cfg: TagLMConfig, words: list[str], bilm: ELMo | CoVe | None = None) -> None:
        super().__init__()
        self.cfg = cfg
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.word_dim, padding_idx=cfg.pad_id)
        self.char_cnn = CharCNN(ELMoConfig(max_chars=cfg.max_chars, char_dim=cfg.char_dim,
                                           filters=cfg.char_filters))
        self.register_buffer("chars", torch.zeros(1, cfg.max_chars, dtype=torch.long), persistent=False)
        rnn = nn.GRU if cfg.rnn == "gru" else nn.LSTM
        self.bilm = None
        if cfg.use_lm:
            self.bilm = bilm if bilm is not None else CoVe(cfg.cove) if cfg.lm == "cove" else ELMo(cfg.bilm)
            self.bilm.requires_grad_(False)
        self.reads_cove = cfg.use_lm and cfg.lm == "cove"
        # lm="cove": each word's row of CoVe's GloVe table (the task's words saved, added ones rebuilt)
        self.register_buffer("lm_ids", torch.zeros(len(words), dtype=torch.long), persistent=self.reads_cove)
        self.register_buffer("lm_added", torch.zeros(0, dtype=torch.long), persistent=False)
        lm_dim = self.bilm.dim if self.bilm is not None else 0
        at_input = self.bilm is not None and cfg.lm_at == "input"
        n_layers = self.bilm.cfg.n_layers + 1 if self.bilm is not None else 0  # token layer + each biLSTM
        if any(i >= n_layers for i in cfg.lm_layers) and self.bilm is not None:
            raise ValueError(f"taglm.lm_layers {cfg.lm_layers}: the LM has layers 0-{n_layers - 1}")
        self.lm_layers = list(cfg.lm_layers or range(n_layers))
        self.mix = ScalarMix(len(self.lm_layers)) if at_input else None
        self.rnn1 = rnn(cfg.word_dim + self.char_cnn.dim + (lm_dim if at_input else 0), cfg.hidden_dim,
                        batch_first=True, bidirectional=True)
        self.rnn2 = rnn(2 * cfg.hidden_dim + (0 if at_input else lm_dim), cfg.hidden_dim, batch_first=True,
                        bidirectional=True)
        self.drop = nn.Dropout(cfg.dropout)
        self.dim = 2 * cfg.hidden_dim
        self.set_words(words)

    def set_words(self, words: list[str]) -> None:
        """The character tables (the tagger's and the biLM's) for a word list, index = word id."""
        table = char_table(words, self.cfg.max_chars)
        self.chars = table.to(self.chars.device)
        if self.bilm is not None and not self.reads_cove:  # CoVe's rows for the words: lm_ids, set by the builder
            self.bilm.set_words(words)

    def add_words(self, words: list[str]) -> list[int]:
        """Append words unseen in training (their characters; the word embedding is ``<unk>``'s)."""
        rows = char_table(words, self.cfg.max_chars)
        start = self.chars.size(0)
        if words:
            self.chars = torch.cat([self.chars, rows.to(self.chars.device)])
            if self.reads_cove:
                added = torch.tensor(self.bilm.add_words(words), dtype=torch.long, device=self.lm_added.device)
                self.lm_added = torch.cat([self.lm_added, added])
            elif self.bilm is not None:
                self.bilm.add_words(words)
        return list(range(start, start + len(words)))

    def train(self, mode: bool = True) -> TagLM:
        super().train(mode)
        if self.bilm is not None:
            self.bilm.eval()  # frozen: its dropout stays off
        return self

    def _packed(self, rnn: nn.RNNBase, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        # x (B, T, D) -> (B, T, 2 hidden); padding neither read nor written by the backward direction
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        out, _ = rnn(packed)
        return nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0]

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> EncoderOutput:
        if mask is None:
            mask = torch.ones_like(ids, dtype=torch.bool)
        B, T = ids.shape
        lengths = mask.sum(1).clamp(min=1)
        words = ids.masked_fill(ids >= self.cfg.vocab_size, self.cfg.unk_id)  # added words: <unk>'s row
        chars = self.char_cnn(self.chars[ids].reshape(B * T, -1)).reshape(B, T, -1)  # (B, T, F)
        x = [self.embedding(words), chars]  # the token representation: (B, T, word_dim + F)
        lm = None
        if self.bilm is not None:
            with torch.no_grad():  # layers: token (or [GloVe; 0]), then each biLSTM, (B, T, bilm.dim) each
                lm = self.bilm(torch.cat([self.lm_ids, self.lm_added])[ids] if self.reads_cove else ids, mask)
        if self.mix is not None:  # ELMo's use: the mixed LM layers beside the token representation
            x.append(self.mix([lm.layers[i].float() for i in self.lm_layers]).to(chars.dtype))
        h1 = self._packed(self.rnn1, self.drop(torch.cat(x, dim=-1)), lengths)  # (B, T, 2 hidden)
        x2 = h1
        if lm is not None and self.mix is None:  # TagLM: the top layer beside RNN 1's states
            x2 = torch.cat([h1, lm.hidden.to(h1.dtype)], dim=-1)  # (B, T, 2 hidden + bilm.dim)
        h2 = self._packed(self.rnn2, self.drop(x2), lengths)
        return EncoderOutput(hidden=h2, layers=[h1, h2])

    def layer_groups(self) -> list[nn.Module]:
        token = [self.embedding, self.char_cnn] + ([self.mix] if self.mix is not None else [])
        return [nn.ModuleList(token), self.rnn1, self.rnn2]
