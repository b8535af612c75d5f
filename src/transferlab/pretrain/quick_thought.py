"""Quick-thought's objective: pick a sentence's context sentences out of a set of candidates
(Logeswaran & Lee 2018, "An efficient framework for learning sentence representations",
section 3).

Two encoders ``f`` and ``g`` (a :class:`~transferlab.encoders.sentence_rnn.SentenceRNN` with
``towers=2``: two GRUs over the same text, each its last state) read a batch of ``B``
consecutive sentences of the corpus; every sentence of the batch is a candidate for every other:
the score of candidate ``s_j`` for sentence ``s_i`` is ``f(s_i) . g(s_j)`` (the ``B x B`` matrix
``S``, its diagonal left out: a sentence is not its own context). The true contexts of ``s_i``
are its neighbours ``s_{i-1}`` and ``s_{i+1}`` (context window 1, as in the paper) where they
are in the batch and in the same document. The loss of ``s_i`` is the paper's multi-label
form, the mean over its true contexts ``c`` of ``-log softmax_j(S_ij)[c]``; the batch's loss is
the mean over the sentences that have a context. The sentence vector is ``[f(s); g(s)]``.

- :func:`context_targets` (the ``B x B`` true-context matrix of a run), :class:`QuickThought`
  (``.encoder`` is the SentenceRNN; ``forward(ids, mask, doc)`` is the loss);
- :func:`quick_thought_loss` (``loss(model, batch)``) and :func:`quick_thought_scores`: held-out
  loss, how often the true next sentence scores highest among the batch's candidates other than
  the sentence itself and its previous one (``next_acc``; the two neighbours are trained alike,
  so the previous one is no rival), and how often the top candidate is a true context
  (``context_acc``).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
import torch.nn.functional as F
from torch import nn

from transferlab.encoders.sentence_rnn import SentenceRNN

__all__ = ["context_targets", "QuickThought", "quick_thought_loss", "quick_thought_scores"]


def context_targets(doc: torch.Tensor) -> torch.Tensor:
    """(B,) document numbers of a run of consecutive sentences -> (B, B) bool: ``[i, j]`` is True
    when ``s_j`` is ``s_{i-1}`` or ``s_{i+1}`` of the same document."""
    B = doc.size(0)
    i = torch.arange(B, device=doc.device)
    neighbours = (i[:, None] - i[None, :]).abs() == 1  # (B, B)
    return neighbours & (doc[:, None] == doc[None, :])


class QuickThought(nn.Module):
    """A two-tower SentenceRNN scored as quick-thought's classifier (see the module docstring)."""

    def __init__(self, encoder: SentenceRNN) -> None:
        super().__init__()
        if encoder.cfg.towers != 2:
            raise ValueError(f"quick-thought reads a sentence with two encoders f and g: sentence_rnn.towers must "
                             f"be 2, got {encoder.cfg.towers}")
        self.encoder = encoder

    def scores(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """(B, B) ``f(s_i) . g(s_j)``, the diagonal ``-inf``."""
        f, g = self.encoder.tower_sentences(ids, mask)  # (B, D/2) each
        S = f.float() @ g.float().t()  # (B, B)
        return S.masked_fill(torch.eye(S.size(0), dtype=torch.bool, device=S.device), float("-inf"))

    @staticmethod
    def context_nll(S: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, int]:
        """Summed multi-label loss of the rows of ``S`` (B, B) that have a true context in
        ``targets`` (B, B), and how many rows those are."""
        logp = F.log_softmax(S, dim=-1)  # (B, B); the diagonal is -inf and never a target
        n = targets.sum(-1)  # (B,) true contexts of each sentence: 0, 1 or 2
        has = n > 0
        per_row = -logp.masked_fill(~targets, 0.0).sum(-1)[has] / n[has]  # (B',) mean over its contexts
        return per_row.sum(), int(has.sum())

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, doc: torch.Tensor) -> torch.Tensor:
        total, n = self.context_nll(self.scores(ids, mask), context_targets(doc))
        return total / max(n, 1)


def quick_thought_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """``loss(model, batch)`` for :func:`transferlab.train.fit` (a batch of
    :class:`~transferlab.pretrain.sentences.RunBatches`)."""
    return model(batch["ids"], batch["mask"], batch["doc"])


@torch.no_grad()
def quick_thought_scores(model: QuickThought, batches: Iterable[dict[str, torch.Tensor]]) -> dict[str, float]:
    """In eval mode, over ``batches`` (runs of consecutive held-out sentences): the mean loss per
    sentence with a context, ``next_acc`` and ``context_acc`` (see the module docstring)."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    loss_sum, n_loss, next_hits, n_next, ctx_hits = 0.0, 0, 0, 0, 0
    try:
        for batch in batches:
            S = model.scores(batch["ids"].to(device), batch["mask"].to(device))  # (B, B)
            targets = context_targets(batch["doc"].to(device))  # (B, B)
            total, n = model.context_nll(S, targets)
            loss_sum, n_loss = loss_sum + float(total), n_loss + n
            has = targets.any(-1)
            ctx_hits += int(targets.gather(1, S.argmax(-1, keepdim=True))[has].sum())
            cols = torch.arange(S.size(0), device=device)
            nxt = cols[:-1][targets[cols[:-1], cols[:-1] + 1]]  # (K,) sentences whose next sentence is in the run
            other = targets[nxt] & (cols[None, :] != (nxt + 1)[:, None])  # (K, B): their previous one, no rival
            next_hits += int((S[nxt].masked_fill(other, float("-inf")).argmax(-1) == nxt + 1).sum())
            n_next += len(nxt)
    finally:
        model.train(was)
    if n_loss == 0:
        raise ValueError("quick_thought_scores: no sentence has a context in these batches")
    return {"loss": loss_sum / n_loss, "next_acc": next_hits / max(n_next, 1), "context_acc": ctx_hits / n_loss}
