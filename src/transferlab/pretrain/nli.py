"""InferSent: a sentence encoder trained on natural language inference (Conneau et al. 2017,
"Supervised Learning of Universal Sentence Representations from Natural Language Inference
Data", EMNLP 2017, sections 3.1 and 3.2.3).

The premise and the hypothesis are encoded by the same encoder into ``u`` and ``v`` (the paper's
best: a biLSTM, the sentence vector the max over time of its states, a
:class:`~transferlab.encoders.sentence_rnn.SentenceRNN` with ``cell=lstm``, ``bidirectional``,
``pooling=max``); the pair is read as the features

    [u, v, |u - v|, u * v]     (B, 4 D)

by a classifier with one hidden layer of 512 units and a softmax over the 3 classes (entailment,
neutral, contradiction), trained with cross-entropy. The word embeddings are GloVe, kept fixed
(the recipe's ``objective.train_embeddings`` trains them). What transfers is the encoder: its
``sentence`` vector is what ``transferlab senteval`` reads.

- :func:`pair_features`: the classifier's input.
- :class:`InferSent`: the encoder and the classifier; ``forward(ids, mask, ids_b, mask_b)`` gives
  the (B, C) logits, both sides through the encoder in one call.
- :func:`nli_loss` (``loss(model, batch)`` for :func:`transferlab.train.fit`, on
  :class:`~transferlab.pretrain.paraphrase.PairBatches` with ``labels``) and :func:`nli_scores`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from transferlab.config import ConfigError
from transferlab.encoders.sentence_rnn import SentenceRNN
from transferlab.pretrain.paraphrase import join_sides

__all__ = ["NLIConfig", "pair_features", "InferSent", "nli_loss", "nli_scores"]


@dataclass(frozen=True)
class NLIConfig:
    hidden_dim: int = 512  # the classifier's hidden layer (the paper's 512)
    dropout: float = 0.0  # on the classifier's input and hidden layer
    train_embeddings: bool = False  # the paper keeps the GloVe embeddings fixed

    def __post_init__(self):
        if self.hidden_dim < 1:
            raise ConfigError(f"objective.hidden_dim must be >= 1, got {self.hidden_dim}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"objective.dropout must be in [0, 1), got {self.dropout}")


def pair_features(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """(B, D) premise and hypothesis vectors -> (B, 4 D) ``[u, v, |u - v|, u * v]``."""
    return torch.cat([u, v, (u - v).abs(), u * v], dim=-1)


def pair_classifier(dim: int, n_classes: int, hidden_dim: int = 512, dropout: float = 0.0) -> nn.Sequential:
    """InferSent's classifier: (B, 4 dim) pair features -> one tanh layer of ``hidden_dim`` -> (B, C) logits."""
    return nn.Sequential(nn.Dropout(dropout), nn.Linear(4 * dim, hidden_dim), nn.Tanh(), nn.Dropout(dropout),
                         nn.Linear(hidden_dim, n_classes))


class InferSent(nn.Module):
    """A sentence encoder and the NLI classifier over its pair features (module docstring)."""

    def __init__(self, encoder: SentenceRNN, n_classes: int, cfg: NLIConfig = NLIConfig()) -> None:
        super().__init__()
        if n_classes < 2:
            raise ValueError(f"InferSent: an NLI classifier needs 2 or more classes, got {n_classes}")
        self.encoder, self.cfg = encoder, cfg
        D = encoder.sentence_dim
        self.classifier = pair_classifier(D, n_classes, cfg.hidden_dim, cfg.dropout)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, ids_b: torch.Tensor, mask_b: torch.Tensor
                ) -> torch.Tensor:
        both, both_mask = join_sides(ids, mask, ids_b, mask_b, self.encoder.cfg.pad_id)  # (2B, T)
        u, v = self.encoder.sentence(both, both_mask).chunk(2)  # (B, D) each
        return self.classifier(pair_features(u, v))  # (B, C)


def nli_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """``loss(model, batch)`` for :func:`transferlab.train.fit`: cross-entropy of the labels."""
    return F.cross_entropy(model(batch["ids"], batch["mask"], batch["ids_b"], batch["mask_b"]), batch["labels"])


@torch.no_grad()
def nli_scores(model: InferSent, batches: Iterable[dict[str, torch.Tensor]]) -> dict[str, float]:
    """Mean cross-entropy and accuracy over ``batches`` (eval mode)."""
    was = model.training
    model.eval()
    device = next(model.classifier.parameters()).device
    loss_sum, correct, n = 0.0, 0, 0
    try:
        for batch in batches:
            batch = {k: v.to(device) for k, v in batch.items()}
            logits = model(batch["ids"], batch["mask"], batch["ids_b"], batch["mask_b"])  # (B, C)
            loss_sum += float(F.cross_entropy(logits.float(), batch["labels"], reduction="sum"))
            correct += int((logits.argmax(-1) == batch["labels"]).sum())
            n += len(batch["labels"])
    finally:
        model.train(was)
    return {"loss": loss_sum / max(n, 1), "accuracy": correct / max(n, 1)}
