"""``pretrain gensen --preset tiny`` end to end: every task's held-out figures, a ``sentence_rnn``
checkpoint (a biGRU, its last states the sentence vector) that ``load_backbone`` reads unchanged,
the whole model reloaded with its heads, and a run stopped half way that resumes to the very
weights of the uninterrupted run."""

from __future__ import annotations

import json
import math

import pytest
import torch

from transferlab import cli
from transferlab.checkpoint import load_checkpoint
from transferlab.config import ConfigError
from transferlab.data.batching import pad_batch
from transferlab.pretrain.mt import MTDataConfig
from transferlab.recipes.pretrain_gensen import PretrainGenSenConfig, load_gensen
from transferlab.recipes.pretrain_nli import NLIDataConfig
from transferlab.tasks.loading import load_backbone
from transferlab.text.tokenize import TextConfig


def _args(out, *extra):
    return ["pretrain", "gensen", "--preset", "tiny", "--out", str(out), "--train.progress=false",
            "--train.threads=1", *extra]


@pytest.fixture(scope="module")
def run(tmp_path_factory, shared_data):
    out = tmp_path_factory.mktemp("gensen") / "run"
    assert cli.main(_args(out)) == 0
    return out


def test_the_run_reports_every_task(run):
    r = json.loads((run / "results.json").read_text())
    assert r["steps"] == 24 and r["labels"] == ["CONTRADICTION", "ENTAILMENT", "NEUTRAL"]
    assert r["train_examples"]["nli"] == 256 and 0 < r["train_examples"]["mt"] <= 300
    sizes = r["train_examples"]
    assert r["task_probabilities"]["next"] == pytest.approx(sizes["next"] / sum(sizes.values()))  # alpha = 1
    for split in ("valid", "test"):
        assert r[f"{split}_next_ppl"] < r["vocab_size"] and r[f"{split}_mt_ppl"] < r["mt_vocab_size"]  # beat uniform
        assert r[f"{split}_mt_ppl"] == pytest.approx(math.exp(r[f"{split}_mt_loss"]))
        assert 0.0 <= r[f"{split}_nli_accuracy"] <= 1.0 and r[f"{split}_relative_loss"] < 1.0
    assert 0.0 < r["test_nli_majority"] < 1.0 and r["n_params"] < r["n_params_total"]
    metrics = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert sum("eval/valid_relative_loss" in m and "eval/valid_nli_accuracy" in m for m in metrics) == 2


def test_the_checkpoint_is_a_sentence_rnn_that_load_backbone_reads(run):
    ckpt = load_checkpoint(run / "best")
    c = ckpt.config["sentence_rnn"]
    assert (c["cell"], c["bidirectional"], c["pooling"], c["hidden_dim"]) == ("gru", True, "last", 16)
    assert c["vocab_size"] == len(ckpt.files["vocab"]["itos"]) and "mt_tokenizer" in ckpt.files
    backbone = load_backbone(str(run / "best"), TextConfig())
    assert backbone.family == "sentence_rnn"
    ids = backbone.texts(["A man is playing a guitar.", "Thou art a villain"])
    batch = pad_batch(ids, backbone.pad_id)
    with torch.no_grad():
        vectors = backbone.encoder.eval().sentence(batch["ids"], batch["mask"])
    assert vectors.shape == (2, 32) and torch.isfinite(vectors).all()  # 2 directions x 16
    assert torch.equal(backbone.encoder.embedding[0].weight, ckpt.weights["encoder.embedding.0.weight"])


def test_the_whole_model_reloads_with_its_heads(run):
    model, vocab, german = load_gensen(run / "best")
    assert len(vocab) == model.encoder.cfg.vocab_size and german.vocab_size == 400
    assert model.heads["next"].embedding is model.encoder.embedding[0]  # the tie survives the reload
    assert model.heads["mt"].vocab.out_features == 400 and model.heads["nli"].classifier[-1].out_features == 3


def test_a_stopped_run_resumes_to_the_uninterrupted_weights(run, tmp_path, capsys):
    out = tmp_path / "stopped"
    assert cli.main(_args(out, "--train.steps=12")) == 0  # stops mid-epoch, after the evaluation at 12
    with pytest.raises(SystemExit):
        cli.main(_args(out))  # a run folder continues only when asked
    assert "--resume" in capsys.readouterr().err
    assert cli.main(_args(out, "--resume")) == 0
    assert json.loads((out / "results.json").read_text())["steps"] == 24
    resumed, whole = load_checkpoint(out / "last").weights, load_checkpoint(run / "last").weights
    assert resumed.keys() == whole.keys()
    assert all(torch.allclose(resumed[k], whole[k], atol=1e-6) for k in whole)


def test_moot_borrowed_keys_are_config_errors():
    with pytest.raises(ConfigError, match="nli.vectors_words"):
        PretrainGenSenConfig(nli=NLIDataConfig(vectors_words=100))
    with pytest.raises(ConfigError, match="mt.max_src_vocab"):
        PretrainGenSenConfig(mt=MTDataConfig(max_src_vocab=10))
