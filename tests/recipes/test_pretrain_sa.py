"""``transferlab pretrain sa`` (Dai & Le's sequence autoencoder) end to end on a small corpus: the
results, a checkpoint that `finetune --encoder awd_lstm --pretrained` takes as it takes a `pretrain
lm` one, and a stopped run that resumes bit-identical to an uninterrupted one."""

from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from transferlab import cli
from transferlab.encoders.backbone import checkpoint_family, pretrained_backbone
from transferlab.pretrain.lm import load_lm
from transferlab.text.tokenize import TextConfig


def _args(corpus, out, *extra):
    return ["pretrain", "sa", "--corpus", str(corpus), "--preset", "tiny", "--out", str(out),
            "--data.held_out=0.1", "--train.progress=false", *extra]


@pytest.fixture(scope="module")
def trained(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("sa") / "run"
    assert cli.main(_args(corpus, out, "--train.steps=60", "--train.lr=1e-2")) == 0
    return out


def test_pretraining_reports_reconstruction_and_saves_an_awd_lstm(trained):
    results = json.loads((trained / "results.json").read_text())
    assert results["steps"] == 60 and results["checkpoint"] == str(trained / "best")
    for split in ("valid", "test"):  # better than a uniform guess over the vocabulary, far from perfect
        assert 1.0 < results[f"{split}_ppl"] < results["vocab_size"] / 4 and math.isfinite(results[f"{split}_ppl"])
        assert 0.0 < results[f"{split}_accuracy"] < 1.0
    assert results["tokens_per_s"] > 0 and results["n_params"] > 0
    best = trained / "best"
    assert checkpoint_family(best) == "awd_lstm"  # what finetune and probe dispatch on
    config = json.loads((best / "config.json").read_text())
    assert config["awd_lstm"]["vocab_size"] == results["vocab_size"] and config["awd_lstm"]["pad_id"] == 0
    assert config["sa"] == {"samples": 0}
    weights = load_file(best / "model.safetensors")
    assert {k.split(".")[0] for k in weights} == {"encoder", "decoder"}  # a `pretrain lm` layout
    lm, vocab = load_lm(best)
    assert len(vocab) == results["vocab_size"] and vocab.itos[:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    b = pretrained_backbone(best, TextConfig(), max_len=None)  # the encoder without its decoder
    assert b.family == "awd_lstm" and b.pretrained
    own = b.encoder.state_dict()
    assert own.keys() == {k[len("encoder."):] for k in weights if k.startswith("encoder.")}
    assert all(torch.equal(own[k], weights[f"encoder.{k}"]) for k in own)


def test_finetune_takes_the_checkpoint_as_an_awd_lstm(trained, tmp_path):
    """Dai & Le's SA-LSTM: a classifier started from the autoencoder, through the same command as
    ULMFiT's (with and without target-task LM fine-tuning)."""
    rows = [(f"line {i} the movie was good and fun", "pos") for i in range(0, 40, 2)]
    rows += [(f"line {i} the film was bad and dull", "neg") for i in range(1, 40, 2)]
    (tmp_path / "t.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows))
    for lm_stage in ("true", "false"):
        out = tmp_path / f"clf-{lm_stage}"
        assert cli.main(["finetune", "--train", str(tmp_path / "t.tsv"), "--text-col", "text", "--label-col",
                         "label", "--encoder", "awd_lstm", "--pretrained", str(trained / "best"), "--preset", "tiny",
                         "--out", str(out), "--train.progress=false", "--lm_finetune.train.progress=false",
                         f"--lm_finetune.enabled={lm_stage}"]) == 0
        summary = json.loads((out / "results.json").read_text())
        assert summary["encoder"] == "awd_lstm" and summary["pretrained"]
        assert 0.0 <= summary["test_accuracy"] <= 1.0
        assert json.loads((out / "last" / "encoder.json").read_text())["name"] == "awd_lstm"


def test_a_stopped_run_resumes_bit_identical(corpus, tmp_path, capsys):
    """Stopped at step 10 of 20 (mid-epoch), then resumed: the weights equal a run never stopped;
    without --resume the folder is refused."""
    common = ("--train.schedule=constant", "--train.save_every=5", "--train.threads=1")
    assert cli.main(_args(corpus, tmp_path / "whole", "--train.steps=20", *common)) == 0
    assert cli.main(_args(corpus, tmp_path / "pieces", "--train.steps=10", *common)) == 0
    with pytest.raises(SystemExit):
        cli.main(_args(corpus, tmp_path / "pieces", "--train.steps=20", *common))
    assert "pass --resume to continue it" in capsys.readouterr().err
    assert cli.main(_args(corpus, tmp_path / "pieces", "--train.steps=20", "--resume", *common)) == 0
    assert "resuming from step 10" in capsys.readouterr().err  # not a fresh run of 20 steps
    a = load_file(tmp_path / "whole" / "last" / "model.safetensors")
    b = load_file(tmp_path / "pieces" / "last" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert json.loads((tmp_path / "pieces" / "results.json").read_text())["steps"] == 20


def test_sa_trains_an_awd_lstm_only(corpus, tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(_args(corpus, tmp_path / "run", "--encoder", "transformer"))
    assert "trains awd_lstm" in capsys.readouterr().err
