"""Where ``fit()`` runs: the device, the torchrun process group, mixed precision, and each
rank's slice of a global batch. ``cfg`` is a :class:`transferlab.train.TrainConfig` (its
``device`` and ``precision``)."""

from __future__ import annotations

import functools
import os
import warnings
from contextlib import nullcontext
from functools import partial
from typing import Any, Callable

import torch
import torch.distributed as dist
from torch import Tensor

from transferlab.config import ConfigError

__all__ = ["setup", "precision", "autocast", "grad_scaler", "shard", "cpu_has_bf16"]


def shard(batch: dict, rank: int, world: int) -> dict:
    """This rank's contiguous slice, along dim 0, of every tensor in a global batch."""
    if world <= 1:
        return batch
    out = {}
    for key, v in batch.items():
        if isinstance(v, Tensor) and v.dim():
            if v.shape[0] % world:
                raise ValueError(f"batch[{key!r}] has {v.shape[0]} rows, which do not divide among {world} "
                                 f"processes; use a global batch size that is a multiple of {world}")
            n = v.shape[0] // world
            v = v[rank * n:(rank + 1) * n]
        out[key] = v
    return out


def setup(cfg) -> tuple[int, int, torch.device]:
    """(rank, world size, device); joins the torchrun process group when WORLD_SIZE > 1."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    name = cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        device = torch.device("cuda", device.index if device.index is not None else (local if world > 1 else 0))
        torch.cuda.set_device(device)
    if world <= 1 or not dist.is_available():
        return 0, 1, device
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return dist.get_rank(), dist.get_world_size(), device


def precision(cfg, device: torch.device) -> str:
    """"fp32", "bf16" or "fp16": ``auto`` is bf16 on a CUDA device that has it, else fp32; ``bf16``
    on a CPU without native bf16 falls back to fp32, with a warning."""
    if cfg.precision == "auto":
        return "bf16" if device.type == "cuda" and torch.cuda.is_bf16_supported() else "fp32"
    if cfg.precision == "fp16" and device.type != "cuda":
        raise ConfigError("train.precision='fp16' needs a CUDA device; use 'bf16' or 'fp32' on the CPU")
    if cfg.precision == "bf16" and device.type == "cpu" and not cpu_has_bf16():
        _warn_no_bf16()
        return "fp32"
    return cfg.precision


@functools.cache
def _warn_no_bf16() -> None:
    # Emulated bf16 is slower than fp32, and oneDNN's LSTM has no emulated bf16 kernel at all
    # (it fails to build its primitive): the presets that ask for bf16 would crash or crawl.
    warnings.warn("train.precision='bf16': this CPU has no native bf16 (AVX512-BF16 or AMX), so training "
                  "runs in fp32 (about half the speed of the bf16 figures in benchmarks/RESULTS.md)",
                  stacklevel=3)


@functools.cache
def cpu_has_bf16() -> bool:
    """Whether this CPU runs bf16 matrix products natively (oneDNN's own check)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # a torch build without oneDNN
        return False


def autocast(cfg, device: torch.device) -> Callable[[], Any]:
    """A factory of autocast contexts for the chosen precision (a no-op one for fp32)."""
    chosen = precision(cfg, device)
    if chosen == "fp32":
        return nullcontext
    dtype = torch.bfloat16 if chosen == "bf16" else torch.float16
    return partial(torch.autocast, device_type=device.type, dtype=dtype)


def grad_scaler(cfg, device: torch.device):
    """The loss scaler fp16 needs; None for the other precisions."""
    return torch.amp.GradScaler("cuda") if precision(cfg, device) == "fp16" else None


def to_device(batch: dict, device: torch.device | str, non_blocking: bool = False) -> dict:
    """The batch's tensors on ``device``; other values (lists, strings) as they are."""
    return {k: v.to(device, non_blocking=non_blocking) if isinstance(v, torch.Tensor) else v
            for k, v in batch.items()}
