from dataclasses import dataclass, field
from typing import Literal

import pytest

from transferlab.config import (ConfigError, apply_overrides, check_at_least, from_dict, load_config, parse_override,
                                to_dict)


@dataclass(frozen=True)
class Inner:
    lr: float = 1e-3
    steps: int = 10
    mode: Literal["a", "b"] = "a"
    sizes: tuple[int, ...] = (1, 2)

    def __post_init__(self):
        if self.lr <= 0:
            raise ValueError(f"inner.lr must be > 0, got {self.lr}")


@dataclass(frozen=True)
class Outer:
    inner: Inner = field(default_factory=Inner)
    name: str = "x"
    path: str | None = None


def test_round_trip_and_overrides():
    cfg = from_dict(Outer, apply_overrides({}, ["inner.lr=3e-4", "--inner.mode=b", "name=ptb", "inner.sizes=[3,4]"]))
    assert cfg.inner.lr == 3e-4 and cfg.inner.mode == "b" and cfg.name == "ptb" and cfg.inner.sizes == (3, 4)
    assert from_dict(Outer, to_dict(cfg)) == cfg


def test_int_is_accepted_for_float_but_not_the_reverse():
    assert from_dict(Inner, {"lr": 1}).lr == 1.0
    with pytest.raises(ConfigError, match="--inner.steps must be int"):
        from_dict(Outer, {"inner": {"steps": 1.5}})


def test_unknown_key_names_the_flag():
    with pytest.raises(ConfigError, match=r"--inner\.lrr"):
        from_dict(Outer, apply_overrides({}, ["inner.lrr=1"]))


def test_literal_and_validation_messages_name_the_flag():
    with pytest.raises(ConfigError, match="--inner.mode must be one of"):
        from_dict(Outer, {"inner": {"mode": "c"}})
    with pytest.raises(ConfigError, match="inner.lr must be > 0"):
        from_dict(Outer, {"inner": {"lr": -1.0}})
    with pytest.raises(ConfigError, match="--inner.steps must be int, got bool"):
        from_dict(Outer, {"inner": {"steps": True}})


def test_parse_override_reads_toml_values_and_bare_strings():
    assert parse_override("a.b=3") == (["a", "b"], 3)
    assert parse_override("a=true") == (["a"], True)
    assert parse_override("a=ptb,sotu") == (["a"], "ptb,sotu")
    with pytest.raises(ConfigError):
        parse_override("novalue")


def test_preset_files(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text('name = "from-file"\n[inner]\nsteps = 7\n')
    cfg = load_config(Outer, path, ["inner.steps=8"])
    assert cfg.name == "from-file" and cfg.inner.steps == 8
    with pytest.raises(ConfigError, match="not found"):
        load_config(Outer, "no-such-preset", kind="lm")


def test_preset_extends(tmp_path):
    (tmp_path / "base.toml").write_text('name = "base"\n[inner]\nsteps = 7\nlr = 0.5\n')
    (tmp_path / "child.toml").write_text('extends = "base.toml"\n[inner]\nsteps = 9\n')
    cfg = load_config(Outer, tmp_path / "child.toml")
    assert cfg.name == "base" and cfg.inner.steps == 9 and cfg.inner.lr == 0.5
    (tmp_path / "loop.toml").write_text('extends = "loop.toml"\n')
    with pytest.raises(ConfigError, match="cycle"):
        load_config(Outer, tmp_path / "loop.toml")
    (tmp_path / "orphan.toml").write_text('extends = "gone.toml"\n')
    with pytest.raises(ConfigError, match="gone.toml"):
        load_config(Outer, tmp_path / "orphan.toml")


def test_demo_preset_is_the_small_one_for_fewer_steps():
    from transferlab.recipes.pretrain_lm import PretrainLMConfig

    small, demo = (load_config(PretrainLMConfig, name, kind="lm") for name in ("small", "demo"))
    assert demo.train.steps < small.train.steps
    assert demo.awd_lstm == small.awd_lstm and demo.data == small.data


def test_config_file_goes_over_the_preset_and_under_the_overrides(tmp_path):
    (tmp_path / "preset.toml").write_text('name = "preset"\n[inner]\nsteps = 7\nlr = 0.5\n')
    (tmp_path / "mine.toml").write_text('name = "file"\n[inner]\nsteps = 8\n')
    cfg = load_config(Outer, tmp_path / "preset.toml", ["inner.steps=9"], config_file=tmp_path / "mine.toml")
    assert (cfg.name, cfg.inner.steps, cfg.inner.lr) == ("file", 9, 0.5)


def test_finetune_config_layers(tmp_path):
    """family defaults < preset < the features rate < --config < overrides, one function for the
    CLI, `curve` and the benchmarks."""
    from transferlab.recipes.finetune import FEATURES_DEFAULTS, load_finetune_config

    hf = load_finetune_config(None, ['encoder="minilm-l6"'])
    assert hf.train.lr == 5e-5 and hf.train.schedule == "linear"  # configs/defaults_hf.toml
    assert load_finetune_config("small", []).train.lr == 1e-2  # the AWD-LSTM preset
    features = load_finetune_config("small", ['adapt="features"'])
    assert features.train.lr == FEATURES_DEFAULTS["train"]["lr"] and features.awd_lstm.dim == 200
    (tmp_path / "mine.toml").write_text('encoder = "minilm-l6"\nadapt = "features"\n[train]\nlr = 0.02\n')
    mine = load_finetune_config(None, [], config_file=tmp_path / "mine.toml")
    assert mine.train.lr == 0.02 and mine.train.schedule == "linear"  # the file picked the family too
    assert load_finetune_config(None, ["train.lr=0.03"], config_file=tmp_path / "mine.toml").train.lr == 0.03


def test_a_partial_table_keeps_the_fields_own_default():
    """``--inner.steps=8`` on a field whose default is ``Inner(lr=0.5)`` keeps lr=0.5."""
    @dataclass(frozen=True)
    class Custom:
        inner: Inner = field(default_factory=lambda: Inner(lr=0.5, sizes=(7,)))

    cfg = from_dict(Custom, apply_overrides({}, ["inner.steps=8"]))
    assert cfg.inner == Inner(lr=0.5, steps=8, sizes=(7,))
    from transferlab.recipes.finetune import FinetuneConfig

    ft = from_dict(FinetuneConfig, apply_overrides({}, ["train.epochs=2", "awd_lstm.dim=16"]))
    assert ft.train.lr == 1e-2 and ft.train.schedule == "slanted_triangular" and ft.awd_lstm.input_p == 0.4


@pytest.mark.parametrize("budget", ["1h", "3h"])
def test_budget_presets_load_and_the_longer_budget_only_trains_longer(budget):
    """`pretrain lm|mlm --budget 3h` is the 1h recipe with three times the steps (same model,
    corpus and rates), so a 3h run's transfer differs from the 1h run's only by its length."""
    from transferlab.recipes.pretrain_lm import PretrainLMConfig
    from transferlab.recipes.pretrain_transformer import PretrainTransformerConfig

    for cls, kind in ((PretrainLMConfig, "lm"), (PretrainTransformerConfig, "mlm")):
        cfg, one = load_config(cls, budget, kind=kind), to_dict(load_config(cls, "1h", kind=kind))
        assert cfg.train.steps == one["train"]["steps"] * (3 if budget == "3h" else 1)
        mine = to_dict(cfg)
        for d in (mine, one):
            d["train"].pop("steps"), d["train"].pop("eval_every")
        assert mine == one


def test_check_at_least_names_the_first_flag_out_of_range():
    @dataclass
    class Data:
        batch_size: int = 8
        min_freq: int = 0
        train_size: int = -1

    check_at_least(Data(), "data", 0, ("batch_size", "min_freq"))
    with pytest.raises(ConfigError, match=r"^data\.min_freq must be >= 1, got 0$"):
        check_at_least(Data(), "data", 1, ("batch_size", "min_freq", "train_size"))
    with pytest.raises(ConfigError, match=r"^data\.train_size must be >= 0 \(0 = all\), got -1$"):
        check_at_least(Data(), "data", 0, ("train_size",), "0 = all")
