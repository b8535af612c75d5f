"""Dependency parsing: Dozat & Manning's (2017) deep biaffine attention parser, a head on any encoder.

Each word is read at its first subword (Devlin et al. 2019, section 5.3, as tagging does; a
word-level encoder such as the AWD-LSTM or ELMo has one position per word), and a learned ROOT
vector is put before the words, so position 0 is the root and position k is word k: CoNLL-U's
HEAD column indexes the positions directly. Four MLPs (a linear layer, leaky ReLU, dropout; the
paper's sizes 500 for arcs, 100 for relations) give each position its view as a dependent and as
a head, and

- arcs (section 2.2): ``S[b, i, j] = h_dep_i U h_head_j + h_head_j . u``, the score of head j for
  dependent i; the second term is the prior of j being a head at all;
- relations (section 2.3): a bilinear layer with biases over the dependent and its head,
  ``s[i, l] = [r_dep_i; 1]^T U_l [r_head_h(i); 1]``, scored at the gold head in training and at
  the predicted head at test time.

The loss is the cross-entropy of each word's gold head over the positions of its sentence plus
the cross-entropy of its gold relation given the gold head. Decoding takes the arcs'
log-probabilities to the best single-root tree (:func:`~transferlab.tasks.mst.mst_heads`,
Chu-Liu/Edmonds, non-projective), then the best relation of each arc.

Batches carry ``word_index (B, T)`` (each kept word's first position, -1 after), ``heads`` and
``rels`` (B, T) (the gold HEAD and relation id of each kept word, IGNORE_INDEX after, and for a
word whose head was cut by truncation). Words past the cut are attached to the word before them
(a chain, so the output is still a tree) with a fallback relation, and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transferlab import IGNORE_INDEX
from transferlab.config import check_at_least
from transferlab.data.errors import DataError
from transferlab.data.examples import ParsedSentence
from transferlab.devices import to_device
from transferlab.tasks.classify import encode
from transferlab.tasks.mst import mst_heads
from transferlab.train import evaluating

__all__ = ["ParserConfig", "BiaffineParser", "ParserModel", "ParseScores", "parse_loss", "encode_trees",
           "predict_trees", "complete_tree"]


@dataclass(frozen=True)
class ParserConfig:
    arc_dim: int = 500  # the arc MLPs' size (the paper's 500)
    rel_dim: int = 100  # the relation MLPs' size (the paper's 100)
    dropout: float = 0.33  # on the encoder's word vectors and in the MLPs (the paper's 33%)
    one_root: bool = True  # decode trees with exactly one word attached to the root (UD's rule)

    def __post_init__(self):
        check_at_least(self, "parser", 1, ("arc_dim", "rel_dim"))
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"parser.dropout must be in [0, 1), got {self.dropout}")


def _mlp(dim: int, out: int, dropout: float) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, out), nn.LeakyReLU(0.1), nn.Dropout(dropout))


@dataclass
class ParseScores:
    arcs: torch.Tensor  # (B, 1+W, 1+W): S[b, i, j], head j of dependent i; position 0 is ROOT
    rels: torch.Tensor | None  # (B, W, R): each word's relations at the batch's gold heads, if it has them
    rel_dep: torch.Tensor  # (B, 1+W, r)
    rel_head: torch.Tensor  # (B, 1+W, r)
    n_words: torch.Tensor  # (B,): words kept per sentence


class BiaffineParser(nn.Module):
    """Word vectors ``(B, W, D)`` -> arc scores and relation features (Dozat & Manning 2017)."""

    def __init__(self, dim: int, n_rels: int, cfg: ParserConfig = ParserConfig()):
        super().__init__()
        self.one_root = cfg.one_root  # how its trees are decoded
        self.root = nn.Parameter(torch.randn(dim) * 0.02)  # the ROOT position's vector
        self.drop = nn.Dropout(cfg.dropout)
        self.arc_dep, self.arc_head = _mlp(dim, cfg.arc_dim, cfg.dropout), _mlp(dim, cfg.arc_dim, cfg.dropout)
        self.rel_dep, self.rel_head = _mlp(dim, cfg.rel_dim, cfg.dropout), _mlp(dim, cfg.rel_dim, cfg.dropout)
        self.arc_U = nn.Parameter(torch.zeros(cfg.arc_dim, cfg.arc_dim))  # zeros, as the paper's biaffine layers
        self.arc_u = nn.Parameter(torch.zeros(cfg.arc_dim))
        self.rel_U = nn.Parameter(torch.zeros(n_rels, cfg.rel_dim + 1, cfg.rel_dim + 1))

    def forward(self, words: torch.Tensor, n_words: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """``words (B, W, D)`` (the first ``n_words[b]`` real) -> arcs (B, 1+W, 1+W) with padding
        and self-loops at the dtype's minimum, and the relation features (B, 1+W, r) twice."""
        B, W, _ = words.shape
        x = self.drop(torch.cat([self.root.to(words.dtype).expand(B, 1, -1), words], 1))  # (B, 1+W, D)
        dep, head = self.arc_dep(x), self.arc_head(x)  # (B, 1+W, A)
        arcs = torch.einsum("bia,ac,bjc->bij", dep, self.arc_U, head) + (head @ self.arc_u)[:, None, :]
        pos = torch.arange(W + 1, device=words.device)
        no_head = (pos[None, None, :] > n_words[:, None, None]) | (pos[:, None] == pos[None, :])  # (B, 1+W, 1+W)
        arcs = arcs.masked_fill(no_head, torch.finfo(arcs.dtype).min)
        return arcs, self.rel_dep(x), self.rel_head(x)

    def rel_scores(self, rel_dep: torch.Tensor, rel_head: torch.Tensor, heads: torch.Tensor) -> torch.Tensor:
        """Relation scores (B, W, R) of words ``rel_dep (B, W, r)`` attached to ``heads (B, W)``
        (positions of ``rel_head (B, 1+W, r)``; negative ones read the root and are ignored)."""
        at = heads.clamp(min=0).unsqueeze(-1).expand(-1, -1, rel_head.size(-1))  # (B, W, r)
        h = rel_head.gather(1, at)  # (B, W, r): each word's head's features
        ones = rel_dep.new_ones(*rel_dep.shape[:2], 1)
        return torch.einsum("bwp,lpq,bwq->bwl", torch.cat([rel_dep, ones], -1), self.rel_U,
                            torch.cat([h, ones], -1))  # (B, W, R)


def word_vectors(hidden: torch.Tensor, word_index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each word's vector at its first position: ``hidden (B, T, D)``, ``word_index (B, T)`` (-1
    past the words) -> ``(B, W, D)`` with W the batch's most words, and the words per row (B,)."""
    n_words = (word_index >= 0).sum(1)  # (B,)
    W = int(n_words.max()) if n_words.numel() else 0
    at = word_index[:, :W].clamp(min=0)  # (B, W)
    return hidden.gather(1, at.unsqueeze(-1).expand(-1, -1, hidden.size(-1))), n_words  # (B, W, D)


class ParserModel(nn.Module):
    """``ParserModel(encoder, head)(batch) -> ParseScores``: the encoder's words, parsed."""

    def __init__(self, encoder: nn.Module, head: BiaffineParser):
        super().__init__()
        self.encoder, self.head = encoder, head

    def forward(self, batch: dict) -> ParseScores:
        out = encode(self.encoder, batch["ids"], batch["mask"], batch.get("type_ids"))
        words, n_words = word_vectors(out.hidden.float(), batch["word_index"])  # (B, W, D)
        arcs, rel_dep, rel_head = self.head(words, n_words)
        rels = None
        if "heads" in batch:  # training: the relations at the gold heads
            rels = self.head.rel_scores(rel_dep[:, 1:], rel_head, batch["heads"][:, : words.size(1)])
        return ParseScores(arcs, rels, rel_dep, rel_head, n_words)


def parse_loss(model: nn.Module, batch: dict) -> torch.Tensor:
    """Cross-entropy of each word's gold head over its sentence's positions, plus that of its
    gold relation at the gold head; each a mean over the batch's words."""
    s = model(batch)
    W = s.arcs.size(1) - 1
    heads = batch["heads"][:, :W]  # (B, W)
    rels = batch["rels"][:, :W].masked_fill(heads == IGNORE_INDEX, IGNORE_INDEX)  # no gold head, no relation
    if not bool((heads != IGNORE_INDEX).any()):  # every word cut: nothing to learn from
        return s.arcs.sum() * 0.0
    arc = F.cross_entropy(s.arcs[:, 1:].flatten(0, 1).float(), heads.flatten(), ignore_index=IGNORE_INDEX)
    if not bool((rels != IGNORE_INDEX).any()):
        return arc
    return arc + F.cross_entropy(s.rels.flatten(0, 1).float(), rels.flatten(), ignore_index=IGNORE_INDEX)


# --- sentences -> sequences, and back --------------------------------------------------------------

def encode_trees(b, sentences: list, rels: list[str]) -> tuple[list[list[int]], dict, list[list[int]], int]:
    """Sentences framed for backbone ``b``: the token ids, the batch's per-sequence extras
    (``word_index``, ``heads``, ``rels``), each kept word's first position, and how many were cut."""
    if sentences and not isinstance(sentences[0], ParsedSentence):
        raise DataError(None, None, None, f"parsing needs dependency trees (CoNLL-U), got {type(sentences[0]).__name__}"
                        "s: read the data with task.kind=parse")
    index = {r: i for i, r in enumerate(rels)}
    framed = [b.framing.words(*b.words(s.tokens)) for s in sentences]
    heads, rel_ids = [], []
    for f, s in zip(framed, sentences):
        n = len(f.word_positions)  # a head past the kept words is unknown to the model
        heads.append([h if h <= n else IGNORE_INDEX for h in s.heads[:n]])
        rel_ids.append([index.get(r, IGNORE_INDEX) if h <= n else IGNORE_INDEX
                        for h, r in zip(s.heads[:n], s.deprels[:n])])
    positions = [f.word_positions for f in framed]
    extra = {"word_index": (positions, -1), "heads": (heads, IGNORE_INDEX), "rels": (rel_ids, IGNORE_INDEX)}
    return [f.ids for f in framed], extra, positions, sum(f.truncated for f in framed)


def complete_tree(heads: list[int], rels: list[int], n_words: int, fallback: int) -> tuple[list[int], list[int]]:
    """A tree over all ``n_words``: the words past the kept ones each attached to the word before
    (the first of all to the root when none was kept) with relation ``fallback``."""
    k = len(heads)
    return heads + list(range(k, n_words)), rels + [fallback] * (n_words - k)


@torch.no_grad()
def predict_trees(model: nn.Module, batches, n_words: Sequence[int], fallback: int,
                  device: torch.device | str = "cpu") -> list[tuple[list[int], list[int]]]:
    """(heads, relation ids) per sentence, in the examples' original order: the best tree of the
    arcs' log-probabilities (one root child if the head says so), then each word's best relation
    at its predicted head."""
    out: list = [None] * len(n_words)
    with evaluating(model):
        for batch in batches:
            batch = to_device({k: v for k, v in batch.items() if k not in ("heads", "rels")}, device)
            s = model(batch)
            logp = s.arcs.float().log_softmax(-1).cpu().numpy()  # (B, 1+W, 1+W)
            kept = s.n_words.tolist()
            heads = torch.zeros(len(kept), logp.shape[1] - 1, dtype=torch.long)  # (B, W)
            for row, n in enumerate(kept):
                if n:
                    heads[row, :n] = torch.from_numpy(mst_heads(logp[row, : n + 1, : n + 1], model.head.one_root))
            rels = model.head.rel_scores(s.rel_dep[:, 1:], s.rel_head, heads.to(s.rel_dep.device)).argmax(-1).cpu()
            for row, i in enumerate(batch["index"].tolist()):
                n = kept[row]
                out[i] = complete_tree(heads[row, :n].tolist(), rels[row, :n].tolist(), n_words[i], fallback)
    return out
