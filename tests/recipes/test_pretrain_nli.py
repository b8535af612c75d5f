"""``pretrain nli`` (tiny preset: 256 SICK training pairs) -> a ``sentence_rnn`` checkpoint (a
biLSTM-max over fixed GloVe embeddings) that ``load_backbone`` and ``senteval`` read unchanged;
its training pairs are never senteval's sick-e test pairs; SNLI offline fails with a clear error."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from transferlab import cli
from transferlab.adapt.sentence_features import sentence_embeddings
from transferlab.checkpoint import load_checkpoint
from transferlab.config import ConfigError
from transferlab.data.batching import pad_batch
from transferlab.recipes import senteval
from transferlab.recipes.pretrain_nli import NLIDataConfig, nli_pairs
from transferlab.tasks.loading import load_backbone
from transferlab.text.tokenize import TextConfig
from transferlab.text.vocab import Vocab


@pytest.fixture(scope="module")
def run(tmp_path_factory, shared_data):
    d = tmp_path_factory.mktemp("nli")
    assert cli.main(["pretrain", "nli", "--preset", "tiny", "--out", str(d / "run"), "--train.progress=false"]) == 0
    return d / "run"


def test_the_run_reports_accuracy_and_keeps_the_glove_embeddings_fixed(run):
    from transferlab.vectors.keyed import load_vectors

    results = json.loads((run / "results.json").read_text())
    assert results["steps"] == 20 and results["n"] == {"train": 256, "valid": 128, "test": 128}
    assert results["labels"] == ["CONTRADICTION", "ENTAILMENT", "NEUTRAL"]
    assert 0.0 <= results["test_accuracy"] <= 1.0 and 0.0 < results["test_majority"] < 1.0
    ckpt = load_checkpoint(run / "best")
    c = ckpt.config["sentence_rnn"]
    assert (c["cell"], c["bidirectional"], c["pooling"], c["dim"]) == ("lstm", True, "max", 50)
    assert c["vocab_size"] == len(ckpt.files["vocab"]["itos"]) == results["vocab_size"]
    vocab = Vocab.from_dict(ckpt.files["vocab"])
    glove = load_vectors("glove-6b-50d")
    weight = ckpt.weights["encoder.embedding.0.weight"]
    for word in ("man", "dog", "playing"):  # SICK words, fixed at their GloVe vectors
        assert torch.equal(weight[vocab.stoi[word]], torch.tensor(glove[word]))
    assert results["n_trained"] < results["n_params"]  # the embeddings are not trained


def test_the_checkpoint_loads_as_a_backbone_with_the_max_pooled_sentence_vector(run):
    backbone = load_backbone(str(run / "best"), TextConfig())
    assert backbone.family == "sentence_rnn"
    texts = ["A man is playing a guitar.", "Two dogs are running in the park", "nobody"]
    got = sentence_embeddings(backbone, texts, "auto")
    assert got.shape == (3, 64)  # 2 directions x 32
    ids = backbone.texts(texts)
    batch = pad_batch(ids, backbone.pad_id)
    encoder = backbone.encoder.eval()
    with torch.no_grad():
        states = encoder(batch["ids"], batch["mask"]).hidden  # (B, T, 64)
    want = np.stack([states[i, : len(s)].max(0).values.numpy() for i, s in enumerate(ids)])
    assert np.allclose(got, want, atol=1e-5)


def test_senteval_reads_the_checkpoint(run, tmp_path):
    cfg = senteval.SentEvalConfig(encoder=str(run / "best"), tasks="sick-e", max_examples=60,
                                  cache=str(tmp_path / "cache"), out=str(tmp_path / "se"), progress=False)
    results = senteval.run(cfg)
    assert results["dim"] == 64 and 0.0 <= results["tasks"]["sick-e"]["score"] <= 1.0


def test_training_pairs_are_senteval_sick_e_train_pairs_never_its_test_pairs(shared_data):
    pairs = nli_pairs(NLIDataConfig())
    task = senteval.TASKS["sick-e"]
    split = {role: senteval.read_split(task, name, 0) for role, name in zip(("train", "valid", "test"), task.splits)}
    key = lambda ex: (ex.text_a, ex.text_b)  # noqa: E731
    assert pairs["test"] == split["test"] and pairs["valid"] == split["valid"]
    held = {key(ex) for ex in split["test"] + split["valid"]}
    assert not {key(ex) for ex in pairs["train"]} & {key(ex) for ex in split["test"]}
    # the train split itself, less the few pairs SICK repeats word for word under another id
    assert pairs["train"] == [ex for ex in split["train"] if key(ex) not in held]
    assert 0 < len(split["train"]) - len(pairs["train"]) < 50


def test_hub_corpora_offline_and_unknown_corpora_are_config_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFERLAB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFERLAB_CACHE", str(tmp_path))
    with pytest.raises(ConfigError) as error:
        nli_pairs(NLIDataConfig(corpus="snli"))
    message = str(error.value)
    assert "stanfordnlp/snli" in message and "TRANSFERLAB_OFFLINE is set" in message and "--data.corpus=sick" in message
    with pytest.raises(ConfigError, match="nyu-mll/multi_nli"):
        nli_pairs(NLIDataConfig(corpus="multi_nli"))
    with pytest.raises(ConfigError, match="data.corpus must be one of sick, snli, multi_nli"):
        NLIDataConfig(corpus="rte")
