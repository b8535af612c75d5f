"""Checkpoints: a folder of safetensors weights and JSON; written atomically; resumable.

    ckpt/
      model.safetensors        weights; tied tensors stored once (aliases in the file's metadata)
      config.json              the resolved config
      vocab.json, labels.json  extra JSON files (``files={"vocab": ..., "labels": ...}``)
      state.json               step, epoch, data position, best metric, RNG states, and the
                               non-tensor part of the optimizer state (hyperparameters per group)
      optimizer.safetensors    optimizer state tensors, keyed ``state.<param index>.<name>``
      extra_state.safetensors  named tensors, such as a recurrent LM state (``tensors=``)

A save writes everything into a temporary sibling folder, fsyncs it, then swaps it in with two
renames (old -> ``.<name>.old``, new -> ``<name>``); a crash at any point leaves a complete old
or new checkpoint, and :func:`load_checkpoint` finds the old one if it was caught between the
renames. Nothing is ever pickled: tensors go through safetensors, everything else through JSON.
"""

from __future__ import annotations

import base64
import json
import os
import random
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import Tensor, nn

from transferlab.config import ConfigError
from transferlab.log import log

MODEL = "model.safetensors"
CONFIG = "config.json"
STATE = "state.json"
OPTIMIZER = "optimizer.safetensors"
EXTRA = "extra_state.safetensors"


class CheckpointError(Exception):
    """A checkpoint folder or file that is missing or corrupt; the message names the file."""


@dataclass
class Checkpoint:
    weights: dict[str, Tensor]
    config: dict
    files: dict[str, Any] = field(default_factory=dict)  # "vocab" for vocab.json, ...
    state: dict | None = None
    optimizer_state: dict | None = None  # what ``optimizer.load_state_dict`` takes
    tensors: dict[str, Tensor] = field(default_factory=dict)
    path: Path | None = None  # the folder actually read (the backup after an interrupted swap)


def save_checkpoint(path: str | Path, model: nn.Module, *, config: dict, files: dict[str, Any] | None = None,
                    optimizer: torch.optim.Optimizer | None = None, state: dict | None = None,
                    tensors: dict[str, Tensor] | None = None) -> Path:
    """Write the checkpoint folder ``path`` atomically and return it.

    ``files`` maps a name (``"vocab"`` or ``"vocab.json"``) to JSON-able data; ``state`` is
    JSON-able (it must not use the key ``"optimizer"``, which holds the optimizer's non-tensor
    state); ``tensors`` are saved to ``extra_state.safetensors``.
    """
    path = Path(path)
    names = {_json_name(name): obj for name, obj in (files or {}).items()}
    if state is not None and "optimizer" in state:
        raise ValueError("state['optimizer'] is reserved for the optimizer state; use another key")
    path.parent.mkdir(parents=True, exist_ok=True)
    _recover(path)
    tmp, old = _tmp_path(path), _old_path(path)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        weights, aliases = _dedupe(unwrap(model).state_dict())
        _write_safetensors(tmp / MODEL, weights, {"aliases": json.dumps(aliases)} if aliases else None)
        _write_json(tmp / CONFIG, config)
        for name, obj in names.items():
            _write_json(tmp / name, obj)
        if optimizer is not None:
            opt_tensors, opt_meta = _flatten_optimizer(optimizer.state_dict())
            _write_safetensors(tmp / OPTIMIZER, opt_tensors)
            state = {**(state or {}), "optimizer": opt_meta}
        if state is not None:
            _write_json(tmp / STATE, state)
        if tensors:
            _write_safetensors(tmp / EXTRA, {k: v.detach().cpu().clone() for k, v in tensors.items()})
        _fsync_dir(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _swap(tmp, path, old)
    return path


def load_checkpoint(path: str | Path, json_only: bool = False) -> Checkpoint:
    """Read a checkpoint folder written by :func:`save_checkpoint` (tensors on the CPU).
    ``json_only=True`` reads its config and JSON files alone (``weights`` is empty, no optimizer
    state): what a caller needs to build the model or find its vocabulary."""
    folder = _resolve(Path(path))
    config = _read_json(folder / CONFIG)
    files = {p.stem: _read_json(p) for p in sorted(folder.glob("*.json")) if p.name not in (CONFIG, STATE)}
    if json_only:
        return Checkpoint({}, config, files, None, None, {}, folder)
    weights, meta = _read_safetensors(folder / MODEL)
    for alias, name in json.loads(meta.get("aliases", "{}")).items():
        weights[alias] = weights[name]
    state = _read_json(folder / STATE) if (folder / STATE).exists() else None
    optimizer_state = None
    if state is not None and "optimizer" in state:
        opt_tensors, _ = _read_safetensors(folder / OPTIMIZER)
        optimizer_state = _unflatten_optimizer(opt_tensors, state.pop("optimizer"))
    tensors = _read_safetensors(folder / EXTRA)[0] if (folder / EXTRA).exists() else {}
    return Checkpoint(weights, config, files, state, optimizer_state, tensors, folder)


def load_weights(model: nn.Module, path: str | Path, strict: bool = True):
    """Load the weights of checkpoint folder ``path`` (or a ``.safetensors`` file) into ``model``.

    Returns what ``load_state_dict`` returns (the missing and unexpected keys).
    """
    path = Path(path)
    file = path if path.suffix == ".safetensors" else _resolve(path) / MODEL
    weights, meta = _read_safetensors(file)
    for alias, name in json.loads(meta.get("aliases", "{}")).items():
        weights[alias] = weights[name]
    check_shapes(unwrap(model), weights, file, strict)
    return unwrap(model).load_state_dict(weights, strict=strict)


def check_shapes(model: nn.Module, weights: dict[str, Tensor], file: str | Path, strict: bool = True) -> None:
    """Weights that do not fit the model built from the checkpoint's config (an edited config.json,
    another run's folder) are a CheckpointError naming the file, the tensor and both shapes, not
    PyTorch's page-long state_dict dump."""
    own = unwrap(model).state_dict()
    config = f"the model that {Path(file).parent}'s config.json (and encoder.json, if any) describes"
    for name, t in weights.items():
        if name in own and tuple(own[name].shape) != tuple(t.shape):
            raise CheckpointError(f"{file}: tensor {name!r} has shape {tuple(t.shape)}, but {config} has "
                                  f"{tuple(own[name].shape)}: the config does not match the weights (an edited "
                                  f"config, or another run's checkpoint)")
    missing, unexpected = sorted(set(own) - set(weights)), sorted(set(weights) - set(own))
    if strict and (missing or unexpected):
        parts = ([f"missing {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''}"] if missing else []) + (
            [f"unexpected {', '.join(unexpected[:3])}{' ...' if len(unexpected) > 3 else ''}"] if unexpected else [])
        raise CheckpointError(f"{file}: the weights do not fit {config} ({'; '.join(parts)}): "
                              f"another kind of model's checkpoint?")


def has_checkpoint(path: str | Path) -> bool:
    """Whether ``path`` holds a checkpoint (or its backup, left by a crash between renames)."""
    path = Path(path)
    return (path / MODEL).exists() or (_old_path(path) / MODEL).exists()


def checkpoint_folder(path: str | Path) -> Path:
    """``path`` if it holds a checkpoint, else its ``best`` if that does (a run folder stands for
    its best checkpoint), else ``path`` as given (its reader says what is missing)."""
    path = Path(path)
    if not has_checkpoint(path) and has_checkpoint(path / "best"):
        return path / "best"
    return path


# settings that change how a run reports or where it runs, not what it computes: a resumed run may differ in them
# (the train.* ones in any section: lm_finetune.train.progress too)
RESUME_IGNORES = ("resume", "overwrite", "out", "train.progress", "train.log_every", "train.threads")
# the run's length: a resumed run may be made longer (or shorter), which the log says
RESUME_LENGTH = ("train.steps", "train.epochs")


def check_run_folder(out: str | Path, resume: bool, config: dict | None = None, overwrite: bool = False,
                     derived: tuple[str, ...] = ()) -> int | None:
    """A run folder that holds a run is continued only when asked (``--resume``) and only with the
    run's own config (the differing keys are named; :data:`RESUME_IGNORES` may differ), never
    silently; ``overwrite`` moves the old run aside (``OUT.replaced-<time>``) and starts over.
    Sections in ``derived`` are rewritten by the recipe before saving (an encoder's config with its
    vocabulary size); they are not compared (a shape change there fails when the weights load).
    Returns the step a resumed run continues from, else None."""
    out = Path(out)
    last = out / "last"
    if not has_checkpoint(last):
        return None
    if overwrite:
        if out.resolve() in (Path.cwd(), *Path.cwd().parents):
            raise ConfigError(f"--overwrite would move {out}, which holds the working directory: choose another --out")
        aside = out.with_name(f"{out.name}.replaced-{time.strftime('%Y%m%d-%H%M%S')}")
        while aside.exists():
            aside = aside.with_name(aside.name + "-1")
        os.replace(out, aside)
        log(f"{out} held a run; --overwrite moved it to {aside} (delete it when no longer needed) and starts over")
        return None
    if not resume:
        raise ConfigError(f"{out} holds a run (its last checkpoint is {last}): pass --resume to continue it, "
                          f"--overwrite to start over (the old run is moved aside), or choose another --out")
    folder = _resolve(last)
    if config is not None:
        saved = _read_json(folder / CONFIG)
        differ = config_differences(saved, config, derived)
        for k, a, b in [d for d in differ if d[0] in RESUME_LENGTH]:
            log(f"{k}: {json.dumps(a)} in the run, {json.dumps(b)} now: the resumed run continues to the new length "
                f"(a schedule over the steps follows the new total)")
        differ = [d for d in differ if d[0] not in RESUME_LENGTH]
        if differ:
            shown = "; ".join(f"{k}: {json.dumps(a)} in the run, {json.dumps(b)} now" for k, a, b in differ[:6])
            raise ConfigError(f"{out} holds a run with another config ({shown}{' ...' if len(differ) > 6 else ''}): "
                              f"continue it with the run's own settings, pass --overwrite to start over (the old "
                              f"run is moved aside), or choose another --out")
    state = _read_json(folder / STATE) if (folder / STATE).exists() else {}
    step = int(state.get("step", 0))
    log(f"resuming from step {step:,} ({folder})")
    return step


def config_differences(saved: dict, config: dict, derived: tuple[str, ...] = ()) -> list[tuple[str, Any, Any]]:
    """``(dotted key, saved value, new value)`` for every key both configs hold that differs, except
    :data:`RESUME_IGNORES` and the ``derived`` sections (keys of only one side: another version's)."""
    a, b = _flatten(saved), _flatten(json.loads(json.dumps(config, default=str)))  # tuples as JSON lists
    def ignored(k: str) -> bool:
        return k in RESUME_IGNORES or any(k.endswith("." + i) for i in RESUME_IGNORES if i.startswith("train."))

    return [(k, a[k], b[k]) for k in sorted(set(a) & set(b))
            if a[k] != b[k] and not ignored(k) and k.split(".", 1)[0] not in derived]


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out |= _flatten(v, f"{prefix}{k}.")
        else:
            out[f"{prefix}{k}"] = v
    return out


def unwrap(model: nn.Module) -> nn.Module:
    """The plain module inside DistributedDataParallel / DataParallel / torch.compile wrappers."""
    while True:
        if isinstance(model, (nn.parallel.DistributedDataParallel, nn.DataParallel)):
            model = model.module
        elif isinstance(getattr(model, "_orig_mod", None), nn.Module):
            model = model._orig_mod
        else:
            return model


# --- RNG states and nested tensor state, as JSON ------------------------------------------------

def rng_state() -> dict:
    """The python, numpy, torch (and CUDA, where used) RNG states as JSON-able data."""
    version, internal, gauss = random.getstate()
    name, keys, pos, has_gauss, cached = np.random.get_state()
    out = {"python": [version, list(internal), gauss],
           "numpy": [name, keys.tolist(), int(pos), int(has_gauss), float(cached)],
           "torch": _b64(torch.get_rng_state())}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        out["cuda"] = [_b64(s) for s in torch.cuda.get_rng_state_all()]
    return out


def set_rng_state(state: dict) -> None:
    """Restore what :func:`rng_state` returned."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    name, keys, pos, has_gauss, cached = state["numpy"]
    np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(_unb64(state["torch"]))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([_unb64(s) for s in state["cuda"]])


def pack_state(obj: Any, prefix: str) -> tuple[Any, dict[str, Tensor]]:
    """Nested dicts/lists/tuples of tensors and JSON scalars -> (JSON-able skeleton, tensors)."""
    tensors: dict[str, Tensor] = {}

    def walk(o: Any, key: str) -> Any:
        if isinstance(o, Tensor):
            tensors[key] = o.detach().cpu().clone()
            return {"__tensor__": key}
        if isinstance(o, dict):
            return {str(k): walk(v, f"{key}.{k}") for k, v in o.items()}
        if isinstance(o, tuple):
            return {"__tuple__": [walk(v, f"{key}.{i}") for i, v in enumerate(o)]}
        if isinstance(o, list):
            return [walk(v, f"{key}.{i}") for i, v in enumerate(o)]
        return o

    return walk(obj, prefix), tensors


def unpack_state(skeleton: Any, tensors: dict[str, Tensor], device: torch.device | str = "cpu") -> Any:
    """Inverse of :func:`pack_state`, with the tensors moved to ``device``."""
    if isinstance(skeleton, dict):
        if set(skeleton) == {"__tensor__"}:
            return tensors[skeleton["__tensor__"]].to(device)
        if set(skeleton) == {"__tuple__"}:
            return tuple(unpack_state(v, tensors, device) for v in skeleton["__tuple__"])
        return {k: unpack_state(v, tensors, device) for k, v in skeleton.items()}
    if isinstance(skeleton, list):
        return [unpack_state(v, tensors, device) for v in skeleton]
    return skeleton


# --- files --------------------------------------------------------------------------------------

def _json_name(name: str) -> str:
    stem = name.removesuffix(".json")
    if not stem or "/" in stem or "\\" in stem or stem.startswith("."):
        raise ValueError(f"checkpoint file name {name!r} must be a plain name such as 'vocab'")
    if stem in ("config", "state"):
        raise ValueError(f"checkpoint file name {name!r} is reserved; pass it as config= or state=")
    return stem + ".json"


def _write_json(path: Path, obj: Any) -> None:
    text = json.dumps(obj, indent=2, ensure_ascii=False) + "\n"
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CheckpointError(f"{path} is missing from the checkpoint") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"{path} is not valid JSON ({e})") from None


def _write_safetensors(path: Path, tensors: dict[str, Tensor], metadata: dict[str, str] | None = None) -> None:
    save_file(tensors, str(path), metadata=metadata)
    with open(path, "rb+") as f:
        os.fsync(f.fileno())


def _read_safetensors(path: Path) -> tuple[dict[str, Tensor], dict[str, str]]:
    if not path.is_file():
        raise CheckpointError(f"{path} is missing from the checkpoint")
    try:
        with safe_open(str(path), framework="pt", device="cpu") as f:
            return {k: f.get_tensor(k) for k in f.keys()}, dict(f.metadata() or {})
    except Exception as e:  # safetensors raises its own error types for bad headers and sizes
        raise CheckpointError(f"{path} is corrupt or truncated ({e})") from None


def _dedupe(state_dict: dict[str, Any]) -> tuple[dict[str, Tensor], dict[str, str]]:
    """CPU tensors to save, each storage once, and {alias: saved name} for tied tensors."""
    out, aliases, seen, storages = {}, {}, {}, set()
    for name, t in state_dict.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"state_dict entry {name!r} is a {type(t).__name__}, not a tensor")
        t = t.detach()
        view = (t.device, t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()))
        if t.numel() and view in seen:
            aliases[name] = seen[view]
            continue
        seen[view] = name
        cpu = t.cpu()
        storage = cpu.untyped_storage().data_ptr()
        # safetensors refuses views sharing memory and non-contiguous tensors: copy those
        whole = cpu.numel() * cpu.element_size() == cpu.untyped_storage().nbytes()
        if storage in storages or not cpu.is_contiguous() or not whole:
            cpu = cpu.clone(memory_format=torch.contiguous_format)
        storages.add(cpu.untyped_storage().data_ptr())
        out[name] = cpu
    return out, aliases


def _flatten_optimizer(sd: dict) -> tuple[dict[str, Tensor], dict]:
    tensors, meta = {}, {}
    for index, param_state in sd["state"].items():
        meta[str(index)] = {}
        for key, value in param_state.items():
            if isinstance(value, Tensor):
                tensors[f"state.{index}.{key}"] = value.detach().cpu().clone()
            else:
                meta[str(index)][key] = value
    groups = [{k: (v.item() if isinstance(v, Tensor) else v) for k, v in g.items()} for g in sd["param_groups"]]
    return tensors, {"state": meta, "param_groups": groups}


def _unflatten_optimizer(tensors: dict[str, Tensor], meta: dict) -> dict:
    state = {int(index): dict(values) for index, values in meta["state"].items()}
    for key, value in tensors.items():
        _, index, name = key.split(".", 2)
        state.setdefault(int(index), {})[name] = value
    groups = [{k: (tuple(v) if k == "betas" else v) for k, v in g.items()} for g in meta["param_groups"]]
    return {"state": state, "param_groups": groups}


# --- the atomic swap ----------------------------------------------------------------------------

def _tmp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.tmp")


def _old_path(path: Path) -> Path:
    return path.with_name(f".{path.name}.old")


def _resolve(path: Path) -> Path:
    if path.is_dir():
        return path
    if path.exists():
        raise CheckpointError(f"checkpoint {path} is a file, not a folder")
    if _old_path(path).is_dir():  # a save was interrupted between its two renames
        return _old_path(path)
    raise CheckpointError(f"checkpoint folder {path} does not exist")


def _recover(path: Path) -> None:
    old = _old_path(path)
    if old.is_dir():
        if path.is_dir():
            shutil.rmtree(old)
        else:
            os.replace(old, path)


def _swap(tmp: Path, path: Path, old: Path) -> None:
    if path.exists():
        os.replace(path, old)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, path)
        _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # Windows cannot open folders; its renames are durable enough
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _b64(t: Tensor) -> str:
    return base64.b64encode(t.cpu().numpy().tobytes()).decode("ascii")


def _unb64(s: str) -> Tensor:
    return torch.frombuffer(bytearray(base64.b64decode(s)), dtype=torch.uint8)
