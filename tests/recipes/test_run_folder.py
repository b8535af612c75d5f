"""A pretraining run folder (issue 24): ``--resume`` continues only the run's own config (the
differing keys are named; progress, log and thread settings may differ) and says from which
step; ``--overwrite`` starts over, moving the old run aside, never deleting it unasked."""

from __future__ import annotations

import json

import pytest

from transferlab import cli


def _args(corpus, out, *extra):
    return ["pretrain", "lm", "--corpus", str(corpus), "--preset", "tiny", "--out", str(out),
            "--train.steps=10", "--train.progress=false", "--lm.samples=16", *extra]


def _error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def test_resume_with_another_config_names_the_keys(corpus, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main(_args(corpus, run)) == 0
    weights = (run / "last" / "model.safetensors").read_bytes()
    capsys.readouterr()
    line = _error(capsys, _args(corpus, run, "--resume", "--train.lr=0.01", "--data.bptt=10"))
    assert line.startswith(f"transferlab pretrain: config error: {run} holds a run with another config")
    assert "data.bptt: 20 in the run, 10 now; train.lr: 0.003 in the run, 0.01 now)" in line
    assert "--overwrite to start over" in line
    assert (run / "last" / "model.safetensors").read_bytes() == weights  # nothing touched
    # the same config (its progress, logging and threads aside) resumes, and says from where
    assert cli.main(_args(corpus, run, "--resume", "--train.log_every=5", "--train.threads=1")) == 0
    assert f"resuming from step 10 ({run / 'last'})" in capsys.readouterr().err


def test_overwrite_moves_the_old_run_aside_and_starts_over(corpus, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main(_args(corpus, run)) == 0
    old = json.loads((run / "config.json").read_text())
    assert "--overwrite to start over" in _error(capsys, _args(corpus, run, "--train.lr=0.01"))
    assert cli.main(_args(corpus, run, "--train.lr=0.01", "--overwrite")) == 0
    assert json.loads((run / "config.json").read_text())["train"]["lr"] == 0.01
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("run.replaced-")]
    assert len(aside) == 1 and json.loads((aside[0] / "config.json").read_text()) == old
    assert "--overwrite moved it to" in capsys.readouterr().err
    assert _error(capsys, _args(corpus, run, "--resume", "--overwrite")).endswith("pass one of them")


def test_finetune_into_a_folder_of_another_run_is_refused_by_key(tmp_path, capsys):
    train = tmp_path / "t.tsv"
    train.write_text("review\tstars\n" + "good fun\tgood\nbad dull\tbad\n" * 8, encoding="utf-8")
    args = ["finetune", "--train", str(train), "--text-col", "review", "--label-col", "stars", "--preset", "tiny",
            "--out", str(tmp_path / "m"), "--train.progress=false", "--train.epochs=1"]
    assert cli.main(args) == 0
    line = _error(capsys, args + ["--train.lr=0.05"])
    assert "holds a run with another config" in line and "train.lr: 0.01 in the run, 0.05 now" in line
    assert cli.main(args + ["--train.lr=0.05", "--overwrite"]) == 0
    assert json.loads((tmp_path / "m" / "config.json").read_text())["train"]["lr"] == 0.05
    assert cli.main(args + ["--train.lr=0.05"]) == 0  # the same config: resumed (finished, so at once)
    assert "resuming from step" in capsys.readouterr().err


def test_config_differences_skip_reporting_settings_anywhere_and_other_versions_keys():
    from transferlab.checkpoint import config_differences

    run = {"train": {"lr": 1, "progress": True}, "lm_finetune": {"train": {"progress": True, "lr": 2}}, "out": "a",
           "old_key": 1, "transformer": {"vocab_size": 99}}
    now = {"train": {"lr": 1, "progress": False}, "lm_finetune": {"train": {"progress": False, "lr": 3}}, "out": "b",
           "new_key": 2, "transformer": {"vocab_size": 0}}
    assert config_differences(run, now, derived=("transformer",)) == [("lm_finetune.train.lr", 2, 3)]
