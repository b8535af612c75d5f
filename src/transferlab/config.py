"""Typed configs: frozen dataclasses, TOML presets, dotted command-line overrides.

Every configurable component has an ``XConfig`` frozen dataclass next to ``X``; a recipe config
composes them. This module turns plain data (TOML, JSON, ``--train.lr=3e-4``) into those
dataclasses and back, rejecting unknown keys and wrong types with a message that names the flag.

    cfg = load_config(PretrainLMConfig, preset="small", overrides=["train.lr=3e-3"])
    write_json(to_dict(cfg), out_dir / "config.json")
"""

from __future__ import annotations

import dataclasses
import json
import tomllib
import types
import typing
from pathlib import Path
from typing import Any, Literal, TypeVar, get_args, get_origin

T = TypeVar("T")
PRESET_DIR = Path(__file__).parent / "configs"


class ConfigError(ValueError):
    """A config value or key that cannot be used; the message names the flag."""


def check_at_least(cfg: Any, section: str, low: float, names: tuple[str, ...], note: str = "") -> None:
    """A ConfigError naming ``section.NAME`` for the first of ``names`` whose value on ``cfg`` is
    below ``low``: what a config dataclass's ``__post_init__`` says of a size or count out of range
    (``note``, such as ``"0 = all"``, is put after the bound)."""
    for name in names:
        value = getattr(cfg, name)
        if value < low:
            flag = f"{section}.{name}" if section else name
            raise ConfigError(f"{flag} must be >= {low}{f' ({note})' if note else ''}, got {value}")


def to_dict(cfg: Any) -> dict:
    """A config dataclass as plain JSON-able data (tuples become lists)."""
    return json.loads(json.dumps(dataclasses.asdict(cfg)))


def from_dict(cls: type[T], data: dict, prefix: str = "") -> T:
    """Build ``cls`` from nested plain data, checking every key and type."""
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix.rstrip('.') or 'config'} must be a table, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        known = ", ".join(prefix + name for name in fields)
        raise ConfigError(f"unknown config key --{prefix}{unknown[0]} (known keys: {known})")
    kwargs = {name: _coerce(hints[name], _over_default(fields[name], value), prefix + name)
              for name, value in data.items()}
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{prefix.rstrip('.') or cls.__name__}: {e}") from e


def _over_default(f: dataclasses.Field, value: Any) -> Any:
    """A table given for a nested config goes over that field's own default (its
    ``default_factory``), not over the nested class's defaults: ``--train.epochs=3`` keeps the
    ``lr`` a recipe's ``TrainConfig(lr=...)`` default sets."""
    if isinstance(value, dict) and f.default_factory is not dataclasses.MISSING:
        default = f.default_factory()
        if dataclasses.is_dataclass(default):
            return merge(to_dict(default), value)
    return value


def _coerce(tp: Any, value: Any, flag: str) -> Any:
    origin, args = get_origin(tp), get_args(tp)
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, flag + ".")
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"--{flag} must be one of {', '.join(map(repr, args))}, got {value!r}")
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(arg, value, flag)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0] if len(errors) == 1 else f"--{flag}: {value!r} fits none of {tp}")
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"--{flag} must be a list, got {value!r}")
        item = args[0] if args else Any
        return tuple(_coerce(item, v, f"{flag}[{i}]") for i, v in enumerate(value))
    if tp is Any:
        return value
    if tp is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if tp is str and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # `--corpus=ptb` never needs quoting; numbers are strings where asked
    if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
        raise ConfigError(f"--{flag} must be {tp.__name__}, got {type(value).__name__} {value!r}")
    return value


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"train.lr=3e-4"`` -> (["train", "lr"], 3e-4). Values are read as TOML, else as strings."""
    key, sep, raw = text.lstrip("-").partition("=")
    if not sep or not key:
        raise ConfigError(f"override {text!r} must look like key.sub=value")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.replace("-", "_").split("."), value


def apply_overrides(data: dict, overrides: list[str]) -> dict:
    """Deep-copy ``data`` and set each dotted override in it."""
    data = json.loads(json.dumps(data))
    for text in overrides:
        path, value = parse_override(text)
        node = data
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--{'.'.join(path)}: {part} is not a table")
        node[path[-1]] = value
    return data


def merge(base: dict, update: dict) -> dict:
    """Recursively merge ``update`` into a copy of ``base``."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def read_toml(path: str | Path) -> dict:
    path = Path(path)
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}") from None


def preset_path(name: str | Path, kind: str = "") -> Path:
    """A preset name (``small`` for kind ``lm`` -> ``configs/small_lm.toml``) or a TOML path."""
    path = Path(name)
    if path.suffix == ".toml":
        return path
    return PRESET_DIR / (f"{name}_{kind}.toml" if kind else f"{name}.toml")


def preset_table(preset: str | Path | None, kind: str = "") -> dict:
    """A preset's settings (and what it ``extends``); ``{}`` for no preset; an unknown name is a
    ConfigError that lists the presets of this kind."""
    if preset is None or preset == "":
        return {}
    path = preset_path(preset, kind)
    if not path.exists():
        available = sorted(p.stem.removesuffix(f"_{kind}") for p in PRESET_DIR.glob(f"*_{kind}.toml"))
        raise ConfigError(f"preset {str(preset)!r} not found at {path} (presets: {', '.join(available)})")
    return read_preset(path, kind)


def load_config(cls: type[T], preset: str | Path | None = None, overrides: list[str] = (),
                base: dict | None = None, kind: str = "", config_file: str | Path | None = None) -> T:
    """Defaults, then ``base``, then the preset file (and what it ``extends``), then the
    ``config_file`` (``--config``), then ``--a.b=value`` overrides."""
    data = merge(dict(base or {}), preset_table(preset, kind))
    if config_file:
        data = merge(data, read_toml(config_file))
    return from_dict(cls, apply_overrides(data, list(overrides)))


def read_preset(path: Path, kind: str = "", _seen: tuple = ()) -> dict:
    """A preset's TOML with ``extends = "other"`` resolved: the named preset of the same kind
    (or a .toml path, relative to this file) is read first and this file merged over it."""
    if path.resolve() in _seen:
        chain = " -> ".join(str(p) for p in (*_seen, path.resolve()))
        raise ConfigError(f"presets extend each other in a cycle: {chain}")
    data = read_toml(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str):
        raise ConfigError(f"{path}: extends must be a preset name or a .toml path, got {parent!r}")
    parent_path = path.parent / parent if parent.endswith(".toml") else preset_path(parent, kind)
    if not parent_path.exists():
        raise ConfigError(f"{path}: extends {parent!r}, which is not at {parent_path}")
    return merge(read_preset(parent_path, kind, (*_seen, path.resolve())), data)


def write_json(data: Any, path: str | Path) -> Path:
    """Write JSON atomically (temporary file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path
