"""Helpers shared by test files in every folder: ``from helpers import overfit`` (pytest puts tests/ on
sys.path, as tests/conftest.py's folder and the first folder above each test package)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch


def overfit(params: torch.nn.Module | Iterable[torch.Tensor], loss_fn: Callable[[], torch.Tensor], steps: int,
            lr: float) -> tuple[float, float]:
    """Adam at ``lr`` on ``params`` (a module's parameters, or the tensors given) for ``steps`` steps of
    zero_grad, ``loss_fn().backward()``, step; return the first and the last step's loss (each taken before
    its own step; NaN for none)."""
    if isinstance(params, torch.nn.Module):
        params = params.parameters()
    opt = torch.optim.Adam(params, lr=lr)
    first = last = float("nan")
    for step in range(steps):
        opt.zero_grad()
        loss = loss_fn()
        loss.backward()
        opt.step()
        last = loss.item()
        if step == 0:
            first = last
    return first, last
