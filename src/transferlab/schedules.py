"""Learning-rate schedules: pure functions ``(step, total, max_lr, ...) -> lr``.

``step`` counts optimizer steps from 0; ``total`` is the number of steps in the run.

- ``slanted_triangular``: Howard & Ruder 2018, "Universal Language Model Fine-tuning for Text
  Classification", eq. (3): a short linear warm-up to ``max_lr`` over ``cut_frac`` of the run,
  then a long linear decay to ``max_lr / ratio``.
- ``linear_warmup_decay``: linear warm-up from 0, then linear decay to 0 (the shape of Hugging
  Face's ``get_linear_schedule_with_warmup``, as in BERT, Devlin et al. 2019).
- ``cosine``: linear warm-up, then half a cosine down to 0 (Loshchilov & Hutter 2017, without
  restarts; Hugging Face's ``get_cosine_schedule_with_warmup``).

``warmup`` is a fraction of ``total`` when below 1, else a number of steps.
"""

from __future__ import annotations

import math
from typing import Callable

Schedule = Callable[..., float]


def constant(step: int, total: int, max_lr: float) -> float:
    return max_lr


def slanted_triangular(step: int, total: int, max_lr: float, cut_frac: float = 0.1, ratio: float = 32) -> float:
    """ULMFiT eq. (3). ``step`` 0 gives ``max_lr / ratio``, step ``cut`` gives ``max_lr``."""
    cut = math.floor(total * cut_frac)
    if cut == 0:  # a run too short to warm up: decay from max_lr over the whole run
        p = 1 - step / max(total, 1)
    elif step < cut:
        p = step / cut
    else:
        p = 1 - (step - cut) / (cut * (1 / cut_frac - 1))
    return max_lr * (1 + max(p, 0.0) * (ratio - 1)) / ratio


def warmup_steps(warmup: float, total: int) -> int:
    """``warmup`` as a number of steps: a fraction of ``total`` below 1, else steps."""
    return int(warmup * total) if warmup < 1 else int(warmup)


def linear_warmup_decay(step: int, total: int, max_lr: float, warmup: float = 0.0) -> float:
    warm = warmup_steps(warmup, total)
    if step < warm:
        return max_lr * step / max(1, warm)
    return max_lr * max(0.0, (total - step) / max(1, total - warm))


def cosine(step: int, total: int, max_lr: float, warmup: float = 0.0) -> float:
    warm = warmup_steps(warmup, total)
    if step < warm:
        return max_lr * step / max(1, warm)
    progress = (step - warm) / max(1, total - warm)
    return max_lr * max(0.0, 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


SCHEDULES: dict[str, Schedule] = {
    "constant": constant,
    "slanted_triangular": slanted_triangular,
    "linear": linear_warmup_decay,
    "cosine": cosine,
}
