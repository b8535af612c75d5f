"""Generation from a sequence-to-sequence model: greedy decoding and beam search, batched.

Any model with the :class:`Seq2Seq` methods decodes here (:class:`transferlab.encoders.cove.CoVeMT`
is the first): ``start(src, mask)`` encodes a batch once, ``step(prev, state)`` gives the
log-probabilities of the next token after ``prev`` and the state after it, ``reorder(state,
index)`` keeps the rows ``index`` of a state.

- Greedy: the most probable token at each step, every sentence of the batch at once, until each
  has produced end-of-sequence or ``max_len`` tokens.
- Beam search (as fairseq's ``SequenceGenerator``): ``beam`` live hypotheses per sentence, one
  row each; at each step the ``2 * beam`` best extensions are ranked; one that ends the sequence
  among the top ``beam`` is finished, and the best ``beam`` that do not end it stay live. A
  sentence is done when it has ``beam`` finished hypotheses (or at ``max_len``, when its live
  ones are finished as they are). The answer is the finished hypothesis of highest length-
  normalized score ``log p(y | x) / |y|^alpha`` (``alpha`` = 0: the raw sum, which favours short
  outputs; 1: the mean per token), ``|y|`` counting the end token. With ``beam = 1`` this is
  exactly greedy decoding (tested).

:func:`generate` decodes a list of sequences in length-sorted batches and returns the outputs in
the input order, without the start and end tokens.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from transferlab.data.batching import pad_batch

__all__ = ["GenerateConfig", "Seq2Seq", "greedy_decode", "beam_search", "generate"]


@dataclass(frozen=True)
class GenerateConfig:
    beam: int = 4  # 1 = greedy decoding
    alpha: float = 1.0  # length normalization: score / length**alpha
    max_len_a: float = 3.0  # at most a * (longest source in the batch) + b tokens
    max_len_b: int = 10
    batch_size: int = 64  # sentences decoded at once (each takes `beam` rows)

    def __post_init__(self) -> None:
        if self.beam < 1 or self.batch_size < 1:
            raise ValueError(f"generate.beam and generate.batch_size must be >= 1, got {self.beam}, "
                             f"{self.batch_size}")
        if self.alpha < 0 or self.max_len_a < 0 or self.max_len_b < 1:
            raise ValueError("generate.alpha and generate.max_len_a must be >= 0, generate.max_len_b >= 1")


class Seq2Seq(Protocol):
    def start(self, src: torch.Tensor, mask: torch.Tensor) -> Any: ...

    def step(self, prev: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]: ...

    def reorder(self, state: Any, index: torch.Tensor) -> Any: ...


def _cut(tokens: list[int], eos: int) -> list[int]:
    return tokens[: tokens.index(eos)] if eos in tokens else tokens


@torch.no_grad()
def greedy_decode(model: Seq2Seq, src: torch.Tensor, mask: torch.Tensor, bos: int, eos: int,
                  max_len: int) -> list[list[int]]:
    """The argmax token at each step for every row of src (B, S); outputs without bos and eos."""
    state = model.start(src, mask)
    prev = torch.full((src.size(0),), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    out = []
    for _ in range(max_len):
        logp, state = model.step(prev, state)
        prev = logp.argmax(-1)  # (B,)
        out.append(prev)
        done |= prev == eos
        if bool(done.all()):
            break
    return [_cut(row, eos) for row in torch.stack(out, dim=1).tolist()]


@torch.no_grad()
def beam_search(model: Seq2Seq, src: torch.Tensor, mask: torch.Tensor, bos: int, eos: int, beam: int,
                max_len: int, alpha: float = 1.0) -> list[list[int]]:
    """The best hypothesis per row of src (B, S) by length-normalized score (module docstring)."""
    B, K, dev = src.size(0), beam, src.device
    state = model.reorder(model.start(src, mask), torch.arange(B, device=dev).repeat_interleave(K))
    scores = torch.full((B, K), float("-inf"), device=dev)
    scores[:, 0] = 0.0  # the K copies of a sentence are one hypothesis until the first step
    tokens = torch.full((B * K, 1), bos, dtype=torch.long, device=dev)  # (B*K, t + 1)
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    rank = torch.arange(2 * K, device=dev)
    for t in range(max_len):
        logp, state = model.step(tokens[:, -1], state)  # (B*K, V)
        V = logp.size(1)
        cand = (scores[:, :, None] + logp.view(B, K, V)).view(B, K * V)  # (B, K*V)
        n = min(2 * K, K * V)
        top, idx = cand.topk(n, dim=1)  # (B, n), best first
        origin, token = idx // V, idx % V  # the hypothesis each extends, and the token
        is_eos = token == eos
        _finish(finished, top, origin, is_eos, tokens, K, t + 1, alpha)
        # the best K extensions that do not end the sequence stay live
        keep = (is_eos.long() * n + rank[:n]).argsort(dim=1)[:, :K]  # (B, K)
        scores = top.gather(1, keep).masked_fill(is_eos.gather(1, keep), float("-inf"))
        rows = (torch.arange(B, device=dev)[:, None] * K + origin.gather(1, keep)).view(-1)  # (B*K,)
        tokens = torch.cat([tokens[rows], token.gather(1, keep).view(-1, 1)], dim=1)
        state = model.reorder(state, rows)
        if all(len(f) >= K for f in finished):
            break
    else:  # max_len reached: the live hypotheses of unfinished sentences are finished as they are
        for b in range(B):
            if len(finished[b]) < K:
                for k, s in enumerate(scores[b].tolist()):
                    if math.isfinite(s):
                        finished[b].append((s / max_len ** alpha, tokens[b * K + k, 1:].tolist()))
    return [_cut(max(f, key=lambda h: h[0])[1], eos) if f else [] for f in finished]


def _finish(finished: list, top: torch.Tensor, origin: torch.Tensor, is_eos: torch.Tensor, tokens: torch.Tensor,
            K: int, length: int, alpha: float) -> None:
    """Record the extensions among each sentence's top K that end the sequence (not for done sentences)."""
    hits = is_eos[:, :K] & torch.isfinite(top[:, :K])
    for b, r in hits.nonzero().tolist():
        if len(finished[b]) < K:
            seq = tokens[b * K + int(origin[b, r]), 1:].tolist()
            finished[b].append((float(top[b, r]) / length ** alpha, seq))


@torch.no_grad()
def generate(model: Seq2Seq, seqs: Sequence[Sequence[int]], pad_id: int, bos: int, eos: int,
             cfg: GenerateConfig = GenerateConfig(), device: str | torch.device = "cpu") -> list[list[int]]:
    """Outputs for every source sequence (in the input order), decoded in length-sorted batches;
    greedy when ``cfg.beam`` is 1."""
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    out: list[list[int]] = [[] for _ in seqs]
    for start in range(0, len(order), cfg.batch_size):
        index = [i for i in order[start: start + cfg.batch_size] if len(seqs[i])]  # an empty source: empty output
        if not index:
            continue
        batch = pad_batch([seqs[i] for i in index], pad_id)
        src, mask = batch["ids"].to(device), batch["mask"].to(device)
        max_len = int(cfg.max_len_a * src.size(1) + cfg.max_len_b)
        if cfg.beam == 1:
            hyps = greedy_decode(model, src, mask, bos, eos, max_len)
        else:
            hyps = beam_search(model, src, mask, bos, eos, cfg.beam, max_len, cfg.alpha)
        for i, h in zip(index, hyps):
            out[i] = h
    return out
