"""Multiple choice, as GPT does it (Radford et al. 2018, section 3.3 and figure 1): one sequence per
option, ``start context delim option extract`` (:meth:`~transferlab.text.framing.Framing.choices`),
each scored by a linear layer on its extract representation, the scores soft-maxed across the
options of a question.

A batch holds the options of ``B`` questions flattened, ``ids (B*K, T)``, ``mask (B*K, T)``, and
``labels (B,)`` the index of the right option; ``n_options`` is ``K``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from transferlab.tasks.classify import LinearHead, encode

__all__ = ["ChoiceModel", "choice_loss"]


class ChoiceModel(nn.Module):
    """``ChoiceModel(encoder, n_options)(batch) -> logits (B, K)``: one score per option."""

    def __init__(self, encoder: nn.Module, n_options: int, pooling: str = "last", dropout: float = 0.1):
        super().__init__()
        self.encoder, self.n_options = encoder, n_options
        self.head = LinearHead(encoder.dim, 1, pooling, dropout, pooler=False)

    def forward(self, batch: dict) -> torch.Tensor:
        mask = batch["mask"]
        out = encode(self.encoder, batch["ids"], mask, batch.get("type_ids"))
        scores = self.head.output(self.head.features(out, mask))  # (B*K, 1)
        return scores.view(-1, self.n_options)  # (B, K)


def choice_loss(model: nn.Module, batch: dict) -> torch.Tensor:
    """Cross-entropy of the soft-max over each question's options."""
    return F.cross_entropy(model(batch), batch["labels"])
