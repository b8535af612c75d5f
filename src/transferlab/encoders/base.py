"""The Encoder contract shared by every architecture.

An encoder maps ``ids (B,T)`` and ``mask (B,T)`` to an :class:`EncoderOutput`; it has a ``dim``
attribute (the size of ``hidden``) and ``layer_groups()`` ordered bottom to top, which feed
discriminative learning rates and gradual unfreezing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from torch import nn


@dataclass
class EncoderOutput:
    hidden: torch.Tensor  # (B, T, D): the top layer, what a task head reads
    layers: list[torch.Tensor] = field(default_factory=list)  # embedding output, then each layer
    state: Any = None  # recurrent state to carry into the next BPTT window (None if stateless)


def reverse_padded(x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Each row of ``x (B, T, D)`` reversed within its first ``lengths[b]`` positions (padding
    stays put): how a backward LSTM reads a padded batch without reading the padding first."""
    t = torch.arange(x.size(1), device=x.device)[None, :]  # (1, T)
    idx = torch.where(t < lengths[:, None], lengths[:, None] - 1 - t, t)  # (B, T)
    return x.gather(1, idx[:, :, None].expand_as(x))


class Encoder(Protocol):
    dim: int

    def __call__(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> EncoderOutput: ...

    def layer_groups(self) -> list[nn.Module]: ...
