"""The one training loop: ``fit(model, loss_fn, data, cfg)`` for every objective and task.

It knows nothing of NLP. ``loss_fn(model, batch)`` returns the mean loss of a batch (a dict of
tensors); ``data(epoch)`` returns that epoch's batches, the same ones each time it is asked for
the same epoch (shuffle with a generator seeded by the epoch, not the global RNG), which is
what makes an interrupted run resume exactly.

- Parameter groups each keep their own ``max_lr``; before every step each group's ``lr`` is
  ``schedule(step, total, max_lr)``, so discriminative learning rates and the slanted triangular
  schedule compose (Howard & Ruder 2018), and groups added mid-run (gradual unfreezing, from
  ``on_epoch_start(epoch, trainer)`` via ``trainer.add_group``) follow the schedule too.
- ``out_dir/last`` is the latest complete checkpoint (weights, optimizer, RNG states, data
  position, the loss function's state); ``out_dir/best`` the best by ``metric``;
  ``out_dir/metrics.jsonl`` the log, appended to on resume (the rows an interrupted call wrote
  after its checkpoint are dropped first, and its loss window restored: each step logged once).
- Under ``torchrun`` each rank trains on its contiguous slice of every global batch inside
  ``DistributedDataParallel``. The loss function then receives the DDP wrapper, so it must only
  *call* the model (``model(ids, mask)``), never reach into its submodules (``model.encoder``).
  A model whose steps leave some trainable parameters unused (a multi-task model that samples one
  task's head per step: GenSen) passes ``fit(..., find_unused_parameters=True)``, DDP's own
  switch for it; without it DDP stops at the second step waiting for those gradients.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import random
import sys
import time
import typing
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Callable, Iterable, Literal

import numpy as np
import torch
import torch.distributed as dist
from torch import Tensor, nn
from tqdm import tqdm

from transferlab.checkpoint import (MODEL, check_shapes, has_checkpoint, load_checkpoint, pack_state, rng_state,
                                    save_checkpoint, set_rng_state, unpack_state)
from transferlab import devices
from transferlab.config import ConfigError, to_dict, write_json
from transferlab.schedules import SCHEDULES


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 1e-3
    epochs: int = 1
    steps: int = 0  # 0 = epochs * steps per epoch; > 0 overrides epochs
    optimizer: Literal["adamw", "adam", "sgd"] = "adamw"
    beta1: float = 0.9
    beta2: float = 0.99
    momentum: float = 0.0  # sgd
    weight_decay: float = 0.01
    schedule: Literal["constant", "slanted_triangular", "linear", "cosine"] = "constant"
    cut_frac: float = 0.1
    ratio: float = 32.0
    warmup: float = 0.0  # linear and cosine: a fraction of the steps below 1, else steps
    clip: float = 0.0  # max global gradient norm; 0 = off
    grad_accum: int = 1
    eval_every: int = 0  # steps; 0 = at the end of each epoch
    patience: int = 0  # evaluations without improvement before stopping; 0 = never stop early
    # "nt": non-monotonically triggered averaging (Merity et al. 2018; with optimizer="sgd" it is
    # their NT-ASGD): once the metric is worse than the best of all but the last `nt_interval`
    # evaluations, a running mean of the weights starts; evaluation and `best` use the mean
    average: Literal["none", "nt"] = "none"
    nt_interval: int = 5
    save_every: int = 0  # steps; 0 = at each evaluation and epoch end
    save_minutes: float = 0.0  # also save `last` when this many minutes passed since the last save; 0 = off
    seed: int = 0
    device: str = "auto"
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    log_every: int = 10  # steps; 0 = no step logs
    progress: bool = True
    threads: int = 0  # 0 = torch's default

    def __post_init__(self):
        rules = [("lr", self.lr > 0, "> 0"), ("epochs", self.epochs >= 1, ">= 1"),
                 ("steps", self.steps >= 0, ">= 0"), ("beta1", 0 <= self.beta1 < 1, "in [0, 1)"),
                 ("beta2", 0 <= self.beta2 < 1, "in [0, 1)"), ("momentum", self.momentum >= 0, ">= 0"),
                 ("weight_decay", self.weight_decay >= 0, ">= 0"), ("cut_frac", 0 < self.cut_frac < 1, "in (0, 1)"),
                 ("ratio", self.ratio >= 1, ">= 1"), ("warmup", self.warmup >= 0, ">= 0"),
                 ("clip", self.clip >= 0, ">= 0"), ("grad_accum", self.grad_accum >= 1, ">= 1"),
                 ("eval_every", self.eval_every >= 0, ">= 0"), ("patience", self.patience >= 0, ">= 0"),
                 ("save_every", self.save_every >= 0, ">= 0"), ("save_minutes", self.save_minutes >= 0, ">= 0"),
                 ("log_every", self.log_every >= 0, ">= 0"),
                 ("threads", self.threads >= 0, ">= 0"), ("nt_interval", self.nt_interval >= 1, ">= 1")]
        for name, ok, rule in rules:
            if not ok:
                raise ConfigError(f"train.{name} must be {rule}, got {getattr(self, name)!r}")
        for name, hint in _hints().items():
            allowed = typing.get_args(hint) if typing.get_origin(hint) is Literal else ()
            if allowed and getattr(self, name) not in allowed:
                raise ConfigError(f"train.{name} must be one of {', '.join(map(repr, allowed))}, "
                                  f"got {getattr(self, name)!r}")
        if self.device != "auto":
            try:
                torch.device(self.device)
            except RuntimeError:
                raise ConfigError(f"train.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', "
                                  f"got {self.device!r}") from None


def nt_triggered(values: list[float], n: int) -> bool:
    """Merity et al.'s non-monotone trigger on a loss history: the last value is worse than the
    best of all values but the last ``n`` before it, with more than ``n`` before it."""
    *before, last = values
    return len(before) > n and last > min(before[: len(before) - n])


@functools.cache
def _hints() -> dict:
    return typing.get_type_hints(TrainConfig)


@dataclass
class FitResult:
    step: int
    epoch: int
    best: float | None
    best_step: int | None
    history: list[dict]
    stopped_early: bool
    train_seconds: float  # this call's time in training steps (evaluation and saving excluded)
    examples_per_s: float
    tokens_per_s: float | None  # counted from batch["mask"] (sum) or batch["ids"] (numel)
    # wall-clock seconds the earlier calls of a resumed run spent up to its checkpoint (0 for a fresh run):
    # a recipe's wall_s covers this call, wall_s + earlier_wall_s the whole run
    earlier_wall_s: float = 0.0


@dataclass
class _Progress:
    """What fit keeps besides the weights and the optimizer; saved in state.json."""
    batch: int = 0  # micro-batches consumed in the current epoch
    epoch_starts: list[int] = field(default_factory=list)  # the step each begun epoch started at
    best: float | None = None
    best_step: int | None = None
    bad_evals: int = 0
    last_eval_step: int = -1
    stopped_early: bool = False
    history: list[dict] = field(default_factory=list)


class Trainer:
    """The state ``fit`` trains with, and what ``on_epoch_start(epoch, trainer)`` receives.

    ``model`` (the plain module), ``net`` (what the loss calls: ``model`` or its DDP wrapper),
    ``optimizer``, ``step`` (optimizer steps done), ``epoch``, ``total_steps``, ``cfg``.
    """

    def __init__(self, model: nn.Module, cfg: TrainConfig, total_steps: int, groups: list[dict],
                 device: torch.device, world: int = 1, find_unused_parameters: bool = False):
        self.model, self.cfg, self.total_steps, self.device, self.world = model, cfg, total_steps, device, world
        self.find_unused_parameters = find_unused_parameters
        self.step = 0
        self.epoch = 0
        self.net: nn.Module = model  # what the loss function calls: the DDP wrapper when distributed
        self._trainable: tuple | None = None
        fn = SCHEDULES[cfg.schedule]
        if cfg.schedule == "slanted_triangular":
            fn = partial(fn, cut_frac=cfg.cut_frac, ratio=cfg.ratio)
        elif cfg.schedule in ("linear", "cosine"):
            fn = partial(fn, warmup=cfg.warmup)
        self.schedule = fn
        self.optimizer = _optimizer(cfg, [self._prepare(g, i) for i, g in enumerate(groups)])
        self.set_lr()
        self.sync_ddp()

    def add_group(self, group: dict) -> None:
        """Add a parameter group (``params``, ``lr`` = its max lr, ``name``); it follows the schedule."""
        self.optimizer.add_param_group(self._prepare(group, len(self.optimizer.param_groups)))
        self.set_lr()

    def set_lr(self) -> None:
        for g in self.optimizer.param_groups:
            g["lr"] = self.schedule(self.step, self.total_steps, g["max_lr"])

    def sync_ddp(self) -> None:
        """(Re-)wrap the model in DDP when the set of trainable parameters changed."""
        if self.world <= 1:
            return
        trainable = tuple(p.requires_grad for p in self.model.parameters())
        if trainable != self._trainable:
            self.net = self.model  # drop the old wrapper (and its gradient hooks) first
            ids = [self.device.index] if self.device.type == "cuda" else None
            self.net = nn.parallel.DistributedDataParallel(self.model, device_ids=ids,
                                                           find_unused_parameters=self.find_unused_parameters)
            self._trainable = trainable

    def _prepare(self, group: dict, index: int) -> dict:
        if "params" not in group:
            raise ValueError(f"parameter group {group.get('name', index)!r} has no 'params'")
        g = dict(group, params=list(group["params"]))
        g["max_lr"] = float(g.get("max_lr", g.get("lr", self.cfg.lr)))
        g.setdefault("name", f"group{index}")
        return g


@contextmanager
def evaluating(model: nn.Module):
    """Eval mode (dropout off) inside the block, the model's previous mode restored after it."""
    was_training = model.training
    model.eval()
    try:
        yield model
    finally:
        model.train(was_training)


def _optimizer(cfg: TrainConfig, groups: list[dict]) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(groups, lr=cfg.lr, momentum=cfg.momentum, weight_decay=cfg.weight_decay)
    cls = torch.optim.AdamW if cfg.optimizer == "adamw" else torch.optim.Adam
    # the fused kernel updates every tensor in one pass: about 5x faster than the per-tensor
    # loop for a 22M-parameter BERT on 2 CPU cores (a tenth of a fine-tuning step); it needs
    # floating-point parameters on one CPU or CUDA device
    params = [p for g in groups for p in g["params"]]
    fused = bool(params) and all(p.is_floating_point() and p.device.type in ("cpu", "cuda") for p in params) \
        and len({p.device for p in params}) == 1
    return cls(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), weight_decay=cfg.weight_decay, fused=fused or None)


def fit(model: nn.Module, loss_fn: Callable[[nn.Module, dict], Tensor], data: Callable[[int], Iterable[dict]],
        cfg: TrainConfig, *, groups: list[dict] | None = None,
        evaluate: Callable[[nn.Module], dict[str, float]] | None = None, metric: str | None = None,
        mode: Literal["max", "min"] = "max", out_dir: str | Path | None = None, config: dict | None = None,
        files: dict | None = None, on_epoch_start: Callable[[int, Trainer], None] | None = None,
        steps_per_epoch: int | None = None, resume: bool = True, find_unused_parameters: bool = False) -> FitResult:
    """Train ``model`` on ``loss_fn`` over ``data(0), data(1), ...``; see the module docstring.

    Steps per epoch are ``steps_per_epoch`` if given (optimizer steps; the epoch is cut there),
    else ``ceil(len(data(epoch)) / grad_accum)``. With ``out_dir`` and ``resume``, a run whose
    ``out_dir/last`` exists continues from it and ends exactly where an uninterrupted run would.
    ``find_unused_parameters`` is DDP's, for a model whose steps leave some parameters unused.
    """
    if metric is not None and evaluate is None:
        raise ValueError(f"fit(metric={metric!r}) needs an evaluate= function")
    if mode not in ("max", "min"):
        raise ValueError(f"fit(mode=...) must be 'max' or 'min', got {mode!r}")
    rank, world, device = devices.setup(cfg)
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    random.seed(cfg.seed)
    np.random.seed(cfg.seed)
    torch.manual_seed(cfg.seed)
    model.to(device)
    out = Path(out_dir) if out_dir is not None else None
    ckpt = load_checkpoint(out / "last") if out is not None and resume and has_checkpoint(out / "last") else None
    start_epoch = ckpt.state["epoch"] if ckpt is not None else 0

    try:
        n_batches = len(data(start_epoch))  # type: ignore[arg-type]
    except TypeError:  # a stream (generator, IterableDataset loader) has no length
        n_batches = None
    spe = steps_per_epoch or (math.ceil(n_batches / cfg.grad_accum) if n_batches is not None else None)
    if cfg.steps == 0 and not spe:
        raise ValueError("data(epoch) has no len() (or is empty): pass fit(steps_per_epoch=...) or set train.steps")
    total = cfg.steps or cfg.epochs * spe
    if groups is None:
        groups = [{"params": [p for p in model.parameters() if p.requires_grad], "name": "all"}]
    trainer = Trainer(model, cfg, total, groups, device, world, find_unused_parameters)
    run = _Run(trainer, loss_fn, evaluate, metric, mode, out if rank == 0 else None,
               config if config is not None else {"train": to_dict(cfg)}, files, rank)
    if ckpt is not None:
        run.restore(ckpt, on_epoch_start)
    if run.out is not None:
        write_json(run.config, run.out / "config.json")
    try:
        run.train(data, on_epoch_start, spe if steps_per_epoch else None)
    finally:
        run.log.close()
    if world > 1:
        dist.barrier()
    return run.result()


class _Run:
    """One call of fit: the loop, evaluation, checkpoints and logs around a Trainer."""

    def __init__(self, trainer: Trainer, loss_fn, evaluate, metric, mode, out, config, files, rank):
        self.t, self.loss_fn, self.evaluate, self.metric, self.mode = trainer, loss_fn, evaluate, metric, mode
        self.out, self.config, self.files, self.rank = out, config, files, rank
        self.p = _Progress()
        self.pending_rng: dict | None = None
        self.scaler = devices.grad_scaler(trainer.cfg, trainer.device)
        self.autocast = devices.autocast(trainer.cfg, trainer.device)
        self.examples = self.tokens = 0
        self.seconds = 0.0
        self.started, self.earlier_wall = time.perf_counter(), 0.0
        self.saved_step = -1
        self.saved_at = time.monotonic()
        self.average = _WeightAverage()  # NT-ASGD's running mean of the weights (average="nt")
        self.log = _Log(out, trainer.cfg, trainer.total_steps, show=rank == 0)

    # --- resume -----------------------------------------------------------------------------
    def restore(self, ckpt, on_epoch_start) -> None:
        st, t = ckpt.state, self.t
        self.p = _Progress(**st["progress"])
        for epoch, step in enumerate(self.p.epoch_starts):  # re-create groups added mid-run, in order
            t.epoch, t.step = epoch, step
            if on_epoch_start is not None:
                on_epoch_start(epoch, t)
        check_shapes(t.model, ckpt.weights, ckpt.path / MODEL)  # another run's folder: named, not a dump
        t.model.load_state_dict(ckpt.weights)
        t.optimizer.load_state_dict(ckpt.optimizer_state)
        if hasattr(self.loss_fn, "load_state_dict") and "loss_state" in st:
            self.loss_fn.load_state_dict(unpack_state(st["loss_state"], ckpt.tensors, t.device))
        if self.scaler is not None and st.get("scaler"):
            self.scaler.load_state_dict(st["scaler"])
        if st.get("average"):
            self.average.restore(st["average"], ckpt.tensors, t.device)
        t.step, t.epoch = st["step"], st["epoch"]
        t.sync_ddp()
        self.pending_rng = st["rng"]
        self.saved_step = t.step
        self.log.bar.update(t.step)
        self.log.resumed_at = t.step  # the pace (for the time left) counts this call's steps only
        self.earlier_wall = float(st.get("wall_s", 0.0))
        self.log.restore(st.get("log_window"), t.step, t.device)  # no row twice, the loss window whole

    def _restore_rng(self) -> None:
        if self.pending_rng is not None:
            set_rng_state(self.pending_rng)
            self.pending_rng = None

    # --- the loop ---------------------------------------------------------------------------
    def train(self, data, on_epoch_start, cap: int | None) -> None:
        t, p = self.t, self.p
        t.net.train()
        while t.step < t.total_steps and not p.stopped_early and (t.cfg.steps or t.epoch < t.cfg.epochs):
            resuming = p.batch > 0  # into an epoch already begun
            if not resuming:
                self._restore_rng()
                p.epoch_starts.append(t.step)
                if on_epoch_start is not None:
                    on_epoch_start(t.epoch, t)
                    t.sync_ddp()
                    t.net.train()
                if hasattr(self.loss_fn, "reset"):
                    self.loss_fn.reset()
            it = iter(data(t.epoch))
            if resuming:
                for _ in itertools.islice(it, p.batch):
                    pass
                self._restore_rng()
            consumed = self._epoch(it, cap, resuming)
            if consumed == 0 and not resuming:
                raise ValueError(f"data({t.epoch}) yielded no batches")
            if not self._epoch_ended:  # the run ended (total steps, early stopping) inside the epoch
                break
            self._end_epoch()
        if self.evaluate is not None and p.last_eval_step != t.step:
            self._eval()
        if self.saved_step != t.step:
            self._save()

    def _epoch(self, it, cap: int | None, resuming: bool) -> int:
        """Train on the rest of one epoch; returns the micro-batches consumed here."""
        t, p, k = self.t, self.p, self.t.cfg.grad_accum
        self._epoch_ended = False
        steps_done = math.ceil(p.batch / k)
        if cap is not None and steps_done >= cap:  # resumed at the end of a capped epoch
            self._epoch_ended = True
            return 0
        consumed = count = 0
        losses: list[Tensor] = []
        nxt = next(it, _END)
        tic = time.perf_counter()
        while nxt is not _END:
            batch, nxt = nxt, next(it, _END)  # look ahead: is this the epoch's last micro-batch?
            if count == 0:
                t.set_lr()
            count += 1
            consumed += 1
            p.batch += 1
            last = count == k or nxt is _END
            losses.append(self._micro(batch, sync=last))
            if not last:
                continue
            self._optimizer_step(count)
            secs = time.perf_counter() - tic
            self.seconds += secs
            steps_done += 1
            self.log.step(self, torch.stack(losses).mean(), secs)
            count, losses = 0, []
            self._after_step()
            if nxt is _END or (cap is not None and steps_done >= cap):
                self._epoch_ended = True
                break
            if t.step >= t.total_steps or p.stopped_early:
                break
            tic = time.perf_counter()
        else:
            self._epoch_ended = True
        return consumed

    def _micro(self, batch: dict, sync: bool) -> Tensor:
        t = self.t
        ex, tok = _count(batch)
        self.examples += ex
        self.tokens += tok
        self.log.window(ex, tok)
        batch = devices.to_device(devices.shard(batch, self.rank, t.world), t.device, non_blocking=True)
        no_sync = t.net.no_sync() if (t.world > 1 and not sync) else nullcontext()
        with no_sync:
            with self.autocast():
                loss = self.loss_fn(t.net, batch)
            scaled = loss.float() / t.cfg.grad_accum
            (self.scaler.scale(scaled) if self.scaler is not None else scaled).backward()
        return loss.detach().float()

    def _optimizer_step(self, count: int) -> None:
        t = self.t
        params = [q for g in t.optimizer.param_groups for q in g["params"] if q.grad is not None]
        if count < t.cfg.grad_accum:  # a short last step of the epoch: make it a mean of `count`
            for q in params:
                q.grad.mul_(t.cfg.grad_accum / count)
        if self.scaler is not None:
            self.scaler.unscale_(t.optimizer)
        if t.cfg.clip > 0 and params:
            torch.nn.utils.clip_grad_norm_(params, t.cfg.clip)
        if self.scaler is not None:
            self.scaler.step(t.optimizer)
            self.scaler.update()
        else:
            t.optimizer.step()
        t.model.zero_grad(set_to_none=True)
        t.step += 1
        self.average.update(t.model)

    def _after_step(self) -> None:
        cfg, t = self.t.cfg, self.t
        evaluated = False
        if self.evaluate is not None and cfg.eval_every > 0 and t.step % cfg.eval_every == 0:
            self._eval()
            evaluated = True
        due = cfg.save_minutes > 0 and time.monotonic() - self.saved_at >= 60 * cfg.save_minutes
        if (cfg.save_every > 0 and t.step % cfg.save_every == 0) or (cfg.save_every == 0 and evaluated) or due:
            self._save()

    def _end_epoch(self) -> None:
        t, p, cfg = self.t, self.p, self.t.cfg
        if self.evaluate is not None and cfg.eval_every == 0 and p.last_eval_step != t.step:
            self._eval()
        t.epoch += 1
        p.batch = 0
        if cfg.save_every == 0:
            self._save()

    # --- evaluation and checkpoints ---------------------------------------------------------
    def _eval(self) -> None:
        with self.average.swapped_in(self.t.model):
            self._eval_and_keep_best()
        self._maybe_start_average()

    def _maybe_start_average(self) -> None:
        t, p = self.t, self.p
        if t.cfg.average != "nt" or self.average.started or self.metric is None:
            return
        sign = 1.0 if self.mode == "min" else -1.0
        if nt_triggered([sign * h[self.metric] for h in p.history], t.cfg.nt_interval):
            self.average.start(t.model)
            self.log.write({"step": t.step, "epoch": t.epoch, "event": "averaging starts"})

    def _eval_and_keep_best(self) -> None:
        t, p = self.t, self.p
        t.model.eval()
        with torch.no_grad(), self.autocast():
            metrics = {k: float(v) for k, v in self.evaluate(t.model).items()}
        t.net.train()
        if t.world > 1:  # every rank decides early stopping on rank 0's numbers
            values = torch.tensor(list(metrics.values()), dtype=torch.float64, device=t.device)
            dist.broadcast(values, 0)
            metrics = dict(zip(metrics, values.tolist()))
        p.last_eval_step = t.step
        p.history.append({"step": t.step, "epoch": t.epoch, **metrics})
        if self.rank == 0 and t.cfg.progress:
            shown = ", ".join(f"{k} {v:.4g}" for k, v in metrics.items())
            self.log.bar.write(f"[transferlab] step {t.step:,} (epoch {t.epoch + 1}): {shown}", file=sys.stderr)
        self.log.write({"step": t.step, "epoch": t.epoch, **{f"eval/{k}": v for k, v in metrics.items()}})
        if self.metric is not None:
            if self.metric not in metrics:
                raise KeyError(f"evaluate() returned {sorted(metrics)}, not the metric {self.metric!r}")
            value = metrics[self.metric]
            better = p.best is None or (value > p.best if self.mode == "max" else value < p.best)
            if better:
                p.best, p.best_step, p.bad_evals = value, t.step, 0
                if self.out is not None:
                    save_checkpoint(self.out / "best", t.model, config=self.config, files=self.files,
                                    state={"step": t.step, "epoch": t.epoch, "metric": self.metric,
                                           "value": value, "metrics": metrics})
            else:
                p.bad_evals += 1
                p.stopped_early = t.cfg.patience > 0 and p.bad_evals >= t.cfg.patience

    def _save(self) -> None:
        self.saved_step = self.t.step
        self.saved_at = time.monotonic()
        if self.out is None:
            return
        t = self.t
        state = {"step": t.step, "epoch": t.epoch, "total_steps": t.total_steps,
                 "progress": dataclasses.asdict(self.p), "rng": rng_state(),
                 "scaler": self.scaler.state_dict() if self.scaler is not None else None,
                 "groups": [{"name": g["name"], "max_lr": g["max_lr"], "lr": g["lr"]}
                            for g in t.optimizer.param_groups],
                 "wall_s": self.earlier_wall + time.perf_counter() - self.started,
                 "log_window": self.log.window_state()}
        tensors: dict[str, Tensor] = {}
        if hasattr(self.loss_fn, "state_dict"):
            state["loss_state"], tensors = pack_state(self.loss_fn.state_dict(), "loss")
        if self.average.started:
            state["average"], avg_tensors = self.average.pack()
            tensors = tensors | avg_tensors
        save_checkpoint(self.out / "last", t.model, config=self.config, files=self.files,
                        optimizer=t.optimizer, state=state, tensors=tensors or None)

    def result(self) -> FitResult:
        p = self.p
        secs = max(self.seconds, 1e-9)
        return FitResult(self.t.step, self.t.epoch, p.best, p.best_step, p.history, p.stopped_early, self.seconds,
                         self.examples / secs, self.tokens / secs if self.tokens else None, self.earlier_wall)


_END = object()


class _WeightAverage:
    """The running mean of the weights since the NT-ASGD trigger (Merity et al. 2017, section 3):
    updated after every optimizer step, swapped into the model for evaluation and the ``best``
    checkpoint, saved in ``last`` so a resumed run averages on exactly."""

    def __init__(self):
        self.weights: dict[str, Tensor] | None = None
        self.n = 0

    @property
    def started(self) -> bool:
        return self.weights is not None

    def start(self, model: nn.Module) -> None:
        self.weights = {n: q.detach().clone().float() for n, q in model.named_parameters()}
        self.n = 1

    def update(self, model: nn.Module) -> None:
        if self.weights is None:
            return
        self.n += 1
        with torch.no_grad():
            for name, q in model.named_parameters():
                a = self.weights[name]
                a.add_(q.detach().to(a.dtype) - a, alpha=1.0 / self.n)

    @contextmanager
    def swapped_in(self, model: nn.Module):
        """The model holds the averaged weights inside the block (once averaging has begun)."""
        if self.weights is None:
            yield
            return
        params = dict(model.named_parameters())
        current = {n: q.detach().clone() for n, q in params.items()}
        with torch.no_grad():
            for n, q in params.items():
                q.copy_(self.weights[n])
        try:
            yield
        finally:
            with torch.no_grad():
                for n, q in params.items():
                    q.copy_(current[n])

    def pack(self) -> tuple[dict, dict[str, Tensor]]:
        weights, tensors = pack_state(self.weights, "average")
        return {"weights": weights, "n": self.n}, tensors

    def restore(self, state: dict, tensors: dict[str, Tensor], device) -> None:
        self.weights = unpack_state(state["weights"], tensors, device)
        self.n = state["n"]


def _count(batch: dict) -> tuple[int, int]:
    """(examples, tokens) in a global batch: tokens are mask.sum() or ids.numel()."""
    first = batch.get("ids", next((v for v in batch.values() if isinstance(v, Tensor) and v.dim()), None))
    examples = int(first.shape[0]) if isinstance(first, Tensor) and first.dim() else 0
    if isinstance(batch.get("mask"), Tensor):
        return examples, int(batch["mask"].sum())
    if isinstance(batch.get("ids"), Tensor):
        return examples, batch["ids"].numel()
    return examples, 0


class _Log:
    """metrics.jsonl, TensorBoard (when installed) and the progress bar; rank 0 only."""

    def __init__(self, out: Path | None, cfg: TrainConfig, total: int, show: bool):
        self.cfg = cfg
        self.file = None
        self.tb = None
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            self.file = open(out / "metrics.jsonl", "a", encoding="utf-8")
            try:
                from torch.utils.tensorboard import SummaryWriter
                self.tb = SummaryWriter(str(out / "tb"))
            except ImportError:
                pass
        # a bar on a terminal only (tqdm's disable=None): redirected, the bar's carriage returns would make
        # one line of megabytes; there a plain line every log_every steps says how far the run is
        self.bar = tqdm(total=total, disable=None if show and cfg.progress else True, dynamic_ncols=True, desc="train")
        self.plain = show and cfg.progress and self.bar.disable
        self.started = time.monotonic()
        self.resumed_at = 0
        self.losses: list[Tensor] = []
        self.ex = self.tok = 0
        self.secs = 0.0

    def window(self, examples: int, tokens: int) -> None:
        self.ex += examples
        self.tok += tokens

    def step(self, run: _Run, loss: Tensor, seconds: float) -> None:
        t = run.t
        self.losses.append(loss)
        self.secs += seconds
        self.bar.update(1)
        if not self.cfg.log_every or t.step % self.cfg.log_every:
            return
        mean = torch.stack([x.float() for x in self.losses]).mean()
        if t.world > 1:
            dist.all_reduce(mean)
            mean /= t.world
        secs = max(self.secs, 1e-9)  # time in training steps only, not evaluation or saving
        record = {"step": t.step, "epoch": t.epoch, "loss": mean.item(),
                  "lr": {g["name"]: g["lr"] for g in t.optimizer.param_groups}, "examples_per_s": self.ex / secs}
        if self.tok:
            record["tokens_per_s"] = self.tok / secs
        self.write(record)
        speed = {"tok_s": f"{record['tokens_per_s']:.0f}"} if self.tok else {}
        self.bar.set_postfix(loss=f"{record['loss']:.4g}", ex_s=f"{record['examples_per_s']:.0f}", **speed)
        if self.plain:
            self.print_progress(t.step, t.total_steps, record)
        self.losses, self.ex, self.tok, self.secs = [], 0, 0, 0.0

    def window_state(self) -> dict:
        """The losses and counts since the last logged row, for a checkpoint (JSON)."""
        return {"losses": [float(x) for x in self.losses], "ex": self.ex, "tok": self.tok, "secs": self.secs}

    def restore(self, window: dict | None, step: int, device) -> None:
        """Resume the log at ``step``: the loss window of the checkpoint, and metrics.jsonl without the
        rows the interrupted call wrote after it (they are written again) or a half-written last line."""
        if window:
            self.losses = [torch.tensor(x, device=device) for x in window["losses"]]
            self.ex, self.tok, self.secs = window["ex"], window["tok"], window["secs"]
        if self.file is None:
            return
        path = Path(self.file.name)
        self.file.close()

        def kept(line: str) -> bool:
            try:
                return json.loads(line).get("step", 0) <= step
            except (ValueError, AttributeError):
                return False

        path.write_text("".join(line for line in path.read_text(encoding="utf-8").splitlines(keepends=True)
                                if kept(line)), encoding="utf-8")
        self.file = open(path, "a", encoding="utf-8")

    def print_progress(self, step: int, total: int, record: dict) -> None:
        """One line for a log file: step, loss, speed and the time left at this run's pace."""
        done = step - self.resumed_at
        left = (time.monotonic() - self.started) / max(done, 1) * (total - step)
        speed = f", {record['tokens_per_s']:,.0f} tokens/s" if "tokens_per_s" in record else ""
        print(f"[transferlab] step {step:,}/{total:,} ({100 * step / total:.0f}%): loss {record['loss']:.4g}{speed}, "
              f"{left / 60:.0f} min left", file=sys.stderr, flush=True)

    def write(self, record: dict) -> None:
        if self.file is None:
            return
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        if self.tb is not None:
            for key, value in record.items():
                if key == "lr":
                    for name, lr in value.items():
                        self.tb.add_scalar(f"lr/{name}", lr, record["step"])
                elif key not in ("step", "epoch") and isinstance(value, (int, float)):
                    self.tb.add_scalar(key if "/" in key else f"train/{key}", value, record["step"])

    def close(self) -> None:
        self.bar.close()
        if self.file is not None:
            self.file.close()
        if self.tb is not None:
            self.tb.close()
