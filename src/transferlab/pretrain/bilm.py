"""ELMo's pretraining objective: a bidirectional language model (Peters et al. 2018, section 3.1).

The forward LM predicts each token from the states before it, the backward LM from the states
after it, and the objective is the sum of both directions' log-likelihoods with the token
representation and the softmax shared between them (the LSTMs are not). :class:`BiLM` is the
encoder plus that one softmax; :class:`BiLMLoss` is ``loss(model, batch)`` for :func:`fit`, the
mean of the two directions' cross-entropies (half their sum), with the sampled softmax of
:func:`transferlab.pretrain.lm.sampled_cross_entropy` in training when ``samples`` > 0.

Batches are :class:`transferlab.pretrain.lm.LMStream`'s ``{"ids", "labels"}`` windows (labels
are the ids shifted by one): the window plus its last label is the sequence both directions
read, so every token of the stream is predicted once in each direction.
"""

from __future__ import annotations

import torch
from torch import nn

from transferlab import IGNORE_INDEX
from transferlab.encoders.elmo import ELMo
from transferlab.pretrain.lm import linear_cross_entropy, sampled_cross_entropy

__all__ = ["BiLM", "BiLMLoss", "bilm_perplexity"]


class BiLM(nn.Module):
    """An :class:`ELMo` encoder and the softmax both directions share."""

    def __init__(self, encoder: ELMo, vocab_size: int) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = nn.Linear(encoder.cfg.dim, vocab_size)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, seq: torch.Tensor, mask: torch.Tensor | None = None):
        """States that predict: forward (B, T-1, dim) for seq[:, 1:], backward (B, T-1, dim) for seq[:, :-1]."""
        _, fwd, bwd = self.encoder.directions(seq, mask)
        drop = self.encoder.drop
        return drop(fwd[-1][:, :-1]), drop(bwd[-1][:, 1:])

    def direction_losses(self, seq: torch.Tensor, mask: torch.Tensor | None = None, samples: int = 0):
        """Mean cross-entropy of the forward and of the backward LM over ``seq (B, T)``."""
        f, b = self(seq, mask)
        labels = seq if mask is None else seq.masked_fill(~mask, IGNORE_INDEX)
        losses = []
        for states, target in ((f, labels[:, 1:]), (b, labels[:, :-1])):
            x, y = states.reshape(-1, states.size(-1)), target.reshape(-1)  # (N, dim), (N,)
            if samples and self.training:
                losses.append(sampled_cross_entropy(x, self.decoder.weight, self.decoder.bias, y, samples))
            else:
                losses.append(linear_cross_entropy(x, self.decoder.weight, self.decoder.bias, y))
        return losses[0], losses[1]


def _sequence(batch: dict[str, torch.Tensor]) -> torch.Tensor:
    ids = batch["ids"]
    return torch.cat([ids, batch["labels"][:, -1:]], dim=1) if "labels" in batch else ids  # (B, T+1)


class BiLMLoss:
    """``loss(model, batch)``: half the sum of the two directions' mean cross-entropies."""

    def __init__(self, samples: int = 0) -> None:
        if samples < 0:
            raise ValueError(f"BiLMLoss: samples must be >= 0, got {samples}")
        self.samples = samples

    def __call__(self, model: BiLM, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        fwd, bwd = model.direction_losses(_sequence(batch), batch.get("mask"), self.samples)
        return 0.5 * (fwd + bwd)


@torch.no_grad()
def bilm_perplexity(model: BiLM, batches) -> tuple[float, float]:
    """(forward, backward) perplexity over the batches, with the full softmax, in eval mode."""
    was = model.training
    model.eval()
    totals, count = torch.zeros(2, dtype=torch.float64), 0
    try:
        for batch in batches:
            seq = _sequence(batch)
            n = seq[:, 1:].numel()
            fwd, bwd = model.direction_losses(seq, batch.get("mask"))
            totals += torch.tensor([float(fwd), float(bwd)], dtype=torch.float64) * n
            count += n
    finally:
        model.train(was)
    if count == 0:
        raise ValueError("bilm_perplexity: no batches")
    return tuple(float(v) for v in torch.exp(totals / count))
