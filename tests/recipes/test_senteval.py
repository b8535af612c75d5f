"""``transferlab senteval`` end to end on the shared data with GloVe (60 examples a split): the
table, JSON and chart, a second run served from the feature cache with the same figures; the
sentence vectors themselves (a static encoder's mean is the bag of vectors); bad input named."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from transferlab import cli
from transferlab.adapt.sentence_features import cached_sentence_features, pool, sentence_embeddings
from transferlab.encoders.backbone import static_backbone
from transferlab.recipes import senteval
from transferlab.text.tokenize import TextConfig
from transferlab.vectors.features import bag_of_vectors
from transferlab.vectors.keyed import WordVectors


def test_senteval_runs_end_to_end_then_from_the_cache(shared_data, tmp_path, capsys, monkeypatch):
    argv = ["senteval", "glove-6b-50d", "--tasks", "mrpc,stsb", "--max-examples", "60", "--out", str(tmp_path / "a"),
            f"--cache={json.dumps(str(tmp_path / 'cache'))}", "--progress=false", "--threads=1",
            "--classifier.kfold=5", "--classifier.epoch_size=2", "--classifier.tenacity=2"]
    assert cli.main(argv) == 0
    table = capsys.readouterr().out
    assert "| mrpc | accuracy |" in table and "| stsb | pearson |" in table and "5-fold" in table
    first = json.loads((tmp_path / "a" / "senteval.json").read_text())
    assert (tmp_path / "a" / "senteval.png").stat().st_size > 1000
    mrpc, stsb = first["tasks"]["mrpc"], first["tasks"]["stsb"]
    assert mrpc["n"] == {"train": 60, "test": 60} and mrpc["selection"] == "5-fold"
    assert 0.0 <= mrpc["score"] <= 1.0 and set(mrpc["grid"]) == {"1e-05", "0.0001", "0.001", "0.01"}
    assert stsb["n"] == {"train": 60, "dev": 60, "test": 60} and -1.0 <= stsb["score"] <= 1.0
    assert stsb["score"] == stsb["cosine"]["pearson"] > 0.1  # GloVe's cosine tracks similarity somewhat
    assert not mrpc["features_from_cache"] and first["config"]["max_examples"] == 60 and first["dim"] == 50

    argv[argv.index(str(tmp_path / "a"))] = str(tmp_path / "b")

    def no_encoder(*args, **kwargs):
        raise AssertionError("the encoder was loaded although every feature is in the cache")

    monkeypatch.setattr(senteval, "load_backbone", no_encoder)
    assert cli.main(argv) == 0
    second = json.loads((tmp_path / "b" / "senteval.json").read_text())
    assert all(t["features_from_cache"] for t in second["tasks"].values())
    for name in ("mrpc", "stsb"):
        assert second["tasks"][name]["score"] == first["tasks"][name]["score"]
    assert len(list((tmp_path / "cache").glob("*.npy"))) == 2 * 2 + 3 * 2  # (split x side) per task


def test_mean_of_a_static_encoder_is_the_bag_of_vectors(tmp_path):
    wv = WordVectors(["good", "film", "bad", "plot"], np.arange(12, dtype=np.float32).reshape(4, 3) + 1)
    b = static_backbone(wv, TextConfig())
    texts = ["good film", "bad zzz plot", "zzz", "good film"]
    x = sentence_embeddings(b, texts, "mean", batch_tokens=2)
    expected = bag_of_vectors(wv, [t.split() for t in texts], "mean")
    assert np.allclose(x, expected)  # the unknown word left out; a text of none is zeros
    with pytest.raises(ValueError, match="--pooling mean"):
        sentence_embeddings(b, texts, "cls")
    cached, hit = cached_sentence_features(lambda: b, "toy", texts, tmp_path, "toy-train-text")
    again, hit_again = cached_sentence_features(lambda: b, "toy", texts, tmp_path, "toy-train-text")
    assert not hit and hit_again and np.array_equal(cached, again) and np.allclose(cached, expected)
    _, other = cached_sentence_features(lambda: b, "toy", texts[:2], tmp_path, "toy-train-text")
    assert not other  # other texts, another key


def test_pooling_mean_over_the_mask_and_cls_the_first_position():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [9.0, 9.0]]])  # (B=1, T=3, D=2)
    mask = torch.tensor([[True, True, False]])
    assert pool(hidden, mask, "mean").tolist() == [[2.0, 3.0]]
    assert pool(hidden, mask, "cls").tolist() == [[1.0, 2.0]]


def test_unknown_task_is_named_with_the_known_ones():
    with pytest.raises(ValueError, match="snli.*known: sst2"):
        senteval.SentEvalConfig(tasks="sst2,snli")


def test_pooling_layers_is_the_mean_over_tokens_of_every_layers_average():
    from transferlab.adapt.sentence_features import layer_average
    from transferlab.encoders import backbone as bb
    from transferlab.encoders.transformer import TransformerConfig

    texts = ["the movie was good", "a dull plot", "good fun, the film"]
    torch.manual_seed(0)
    b = bb.transformer_backbone(TransformerConfig(dim=16, n_layers=2, n_heads=2, ffn_dim=32, max_len=16),
                                bb.SubwordConfig(vocab_size=60, min_freq=1), "", texts, True, 16)
    got = sentence_embeddings(b, texts, "layers")
    b.encoder.eval()
    for i, ids in enumerate(b.texts(texts)):
        x = torch.tensor([b.framing.single(ids).ids])
        out = b.encoder(x, torch.ones_like(x, dtype=torch.bool))
        assert len(out.layers) == 3  # the embedding output and two blocks
        want = torch.stack(out.layers).mean(0)[0].mean(0)
        np.testing.assert_allclose(got[i], want.detach().numpy(), atol=1e-5)
    assert not np.allclose(got, sentence_embeddings(b, texts, "mean"), atol=1e-3)  # not the top layer alone
    with pytest.raises(ValueError, match="one width"):
        layer_average([torch.zeros(1, 2, 4), torch.zeros(1, 2, 8)])
