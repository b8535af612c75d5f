"""Text classification: a pooling head on any encoder, its loss, and prediction.

The head is ULMFiT's (Howard & Ruder 2018, section 3.3): concat pooling of the last hidden
state with the max- and mean-pool over time, ``h_c = [h_T, maxpool(H), meanpool(H)]``, then
two blocks of batch norm, dropout and a linear layer (ReLU between them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from transferlab.encoders.base import EncoderOutput


@dataclass(frozen=True)
class ClassifierHeadConfig:
    pooling: Literal["concat", "last", "mean", "first"] = "concat"
    hidden_dim: int = 50
    input_p: float = 0.4  # dropout before the first linear layer (fastai's output_p for classifiers)
    hidden_p: float = 0.1  # dropout before the output layer

    def __post_init__(self):
        if self.hidden_dim < 1:
            raise ValueError(f"head.hidden_dim must be >= 1, got {self.hidden_dim}")
        for name in ("input_p", "hidden_p"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"head.{name} must be in [0, 1), got {getattr(self, name)}")


def pool(hidden: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """(B,T,D) hidden states and (B,T) mask -> (B,D') sentence vectors."""
    mask_f = mask.unsqueeze(-1).to(hidden.dtype)  # (B,T,1)
    last_idx = (mask.long().sum(1) - 1).clamp(min=0)  # (B,)
    last = hidden[torch.arange(hidden.size(0), device=hidden.device), last_idx]  # (B,D)
    mean = (hidden * mask_f).sum(1) / mask_f.sum(1).clamp(min=1.0)  # (B,D)
    if how == "last":
        return last
    if how == "mean":
        return mean
    if how == "first":
        return hidden[:, 0]
    neg = torch.finfo(hidden.dtype).min
    maxp = hidden.masked_fill(~mask.unsqueeze(-1), neg).max(1).values  # (B,D)
    return torch.cat([last, maxp, mean], dim=-1)  # (B,3D)


class PoolingClassifier(nn.Module):
    def __init__(self, dim: int, n_labels: int, cfg: ClassifierHeadConfig = ClassifierHeadConfig()):
        super().__init__()
        self.cfg = cfg
        in_dim = dim * 3 if cfg.pooling == "concat" else dim
        self.layers = nn.Sequential(
            nn.BatchNorm1d(in_dim), nn.Dropout(cfg.input_p), nn.Linear(in_dim, cfg.hidden_dim), nn.ReLU(),
            nn.BatchNorm1d(cfg.hidden_dim), nn.Dropout(cfg.hidden_p), nn.Linear(cfg.hidden_dim, n_labels),
        )

    def forward(self, out: EncoderOutput, mask: torch.Tensor) -> torch.Tensor:
        return self.layers(pool(out.hidden, mask, self.cfg.pooling).float())


class TaskModel(nn.Module):
    """An encoder and a head, composed: ``TaskModel(encoder, head)(ids, mask) -> logits``."""

    def __init__(self, encoder: nn.Module, head: nn.Module):
        super().__init__()
        self.encoder, self.head = encoder, head

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(ids, mask), mask)


def classify_loss(model: nn.Module, batch: dict) -> torch.Tensor:
    """Mean cross-entropy of the labels; the objective ``fit()`` receives."""
    return F.cross_entropy(model(batch["ids"], batch["mask"]), batch["labels"])


@torch.no_grad()
def predict_proba(model: nn.Module, batches, device: torch.device | str = "cpu") -> torch.Tensor:
    """Class probabilities (N, C) in the examples' original order (batches carry ``index``)."""
    was_training = model.training
    model.eval()
    rows, order = [], []
    for batch in batches:
        logits = model(batch["ids"].to(device), batch["mask"].to(device))
        rows.append(logits.float().softmax(-1).cpu())
        order.append(batch["index"])
    model.train(was_training)
    probs = torch.cat(rows)
    out = torch.empty_like(probs)
    out[torch.cat(order)] = probs
    return out
