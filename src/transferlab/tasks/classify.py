"""Text and text-pair classification and regression: a head on any encoder, losses, prediction.

Two heads, each ``features(out, mask) -> (B, F)`` then ``output(features) -> (B, C)``:

- :class:`PoolingClassifier`, ULMFiT's (Howard & Ruder 2018, section 3.3): concat pooling of the
  last hidden state with the max- and mean-pool over time, ``h_c = [h_T, maxpool(H), meanpool(H)]``,
  then two blocks of batch norm, dropout and a linear layer (ReLU between them).
- :class:`LinearHead`, BERT's and GPT's (Devlin et al. 2019; Radford et al. 2018): the vector at
  one position (``[CLS]`` first, GPT's extract token last), BERT's pooler (dense + tanh) when
  asked, dropout, one linear layer.

:class:`TaskModel` reads a batch: ``ids``, ``mask``, optional ``type_ids``; when the batch also
holds ``ids_swapped`` (a pair in the other order, GPT's similarity input) the two orders' features
are summed before the output layer, as in Radford et al. 2018, section 3.3. ``n_labels = 1`` is
regression (STS-B): :func:`regression_loss`, mean squared error on float ``labels``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from transferlab.devices import to_device
from transferlab.encoders.base import EncoderOutput
from transferlab.train import evaluating


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

    def features(self, out: EncoderOutput, mask: torch.Tensor) -> torch.Tensor:
        return pool(out.hidden, mask, self.cfg.pooling).float()

    def output(self, features: torch.Tensor) -> torch.Tensor:
        return self.layers(features)


class LinearHead(nn.Module):
    """One position's vector -> [dense + tanh] -> dropout -> linear (BERT's / GPT's head)."""

    def __init__(self, dim: int, n_labels: int, pooling: str = "first", dropout: float = 0.1,
                 pooler: bool = True):
        super().__init__()
        self.pooling = pooling
        self.pooler = nn.Sequential(nn.Linear(dim, dim), nn.Tanh()) if pooler else nn.Identity()
        self.drop = nn.Dropout(dropout)
        self.out = nn.Linear(dim, n_labels)
        for layer in (self.out, *(m for m in self.pooler.modules() if isinstance(m, nn.Linear))):
            nn.init.normal_(layer.weight, std=0.02)
            nn.init.zeros_(layer.bias)

    def features(self, out: EncoderOutput, mask: torch.Tensor) -> torch.Tensor:
        return pool(out.hidden, mask, self.pooling).float()

    def output(self, features: torch.Tensor) -> torch.Tensor:
        return self.out(self.drop(self.pooler(features)))


def encode(encoder: nn.Module, ids: torch.Tensor, mask: torch.Tensor, type_ids: torch.Tensor | None = None
           ) -> EncoderOutput:
    """Run any encoder; ``type_ids`` only go to one that has segment embeddings."""
    if type_ids is not None and getattr(encoder, "takes_type_ids", False):
        return encoder(ids, mask, type_ids)
    return encoder(ids, mask)


class TaskModel(nn.Module):
    """An encoder and a head, composed: ``TaskModel(encoder, head)(batch) -> logits (B, C)``, or
    ``(B, T, C)`` with a per-position head (:class:`~transferlab.tasks.tag.TokenTagger`)."""

    def __init__(self, encoder: nn.Module, head: nn.Module):
        super().__init__()
        self.encoder, self.head = encoder, head

    def forward(self, batch: dict) -> torch.Tensor:
        mask = batch["mask"]
        feats = self.head.features(encode(self.encoder, batch["ids"], mask, batch.get("type_ids")), mask)
        if "ids_swapped" in batch:  # the pair in the other order (same length, same mask)
            out = encode(self.encoder, batch["ids_swapped"], mask, batch.get("type_ids_swapped"))
            feats = feats + self.head.features(out, mask)
        return self.head.output(feats)


def classify_loss(model: nn.Module, batch: dict) -> torch.Tensor:
    """Mean cross-entropy of the labels; the objective ``fit()`` receives."""
    return F.cross_entropy(model(batch), batch["labels"])


def regression_loss(model: nn.Module, batch: dict) -> torch.Tensor:
    """Mean squared error of one output against float ``labels`` (STS-B's 0-5 score)."""
    return F.mse_loss(model(batch)[:, 0], batch["labels"].float())


@torch.no_grad()
def predict_outputs(model: nn.Module, batches, device: torch.device | str = "cpu") -> torch.Tensor:
    """Raw outputs (N, C) in the examples' original order (batches carry ``index``)."""
    rows, order = [], []
    with evaluating(model):
        for batch in batches:
            rows.append(model(to_device(batch, device)).float().cpu())
            order.append(batch["index"])
    outputs = torch.cat(rows)
    out = torch.empty_like(outputs)
    out[torch.cat(order)] = outputs
    return out
