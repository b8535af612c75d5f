"""Static vectors from the command line: `pretrain word2vec|fasttext|doc2vec|glove`, `vectors eval |
neighbors | analogy | convert | classify`, and `finetune --encoder fasttext --vectors` (with the
embedding initialized from them, for the fastText classifier and the AWD-LSTM alike)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from transferlab import cli
from transferlab.tasks.loading import load_task_model
from transferlab.vectors.keyed import WordVectors

GOOD, BAD = "good great fun loved fine".split(), "bad awful boring dull waste".split()
FILL = "the a movie film plot was it".split()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, shared_data):
    d = tmp_path_factory.mktemp("vectors")
    lines = (shared_data / "corpora/ptb/train.txt").read_text(encoding="utf-8").splitlines()[:4000]
    (d / "ptb4k.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rng = random.Random(0)
    rows = [(" ".join(rng.sample(GOOD if i % 2 else BAD, 2) + rng.sample(FILL, 3)), "pos" if i % 2 else "neg")
            for i in range(80)]
    for name, part in (("train", rows[:60]), ("test", rows[60:])):
        (d / f"{name}.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in part), encoding="utf-8")
    return d


def _run(argv, capsys, err: list | None = None) -> str:
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    if err is not None:
        err.append(captured.err)
    return captured.out


@pytest.mark.parametrize("method", ["word2vec", "fasttext", "doc2vec", "glove"])
def test_pretrain_writes_vectors_and_scores(method, corpus, tmp_path, capsys):
    out = tmp_path / method
    summary = json.loads(_run(["pretrain", method, "--corpus", str(corpus / "ptb4k.txt"), "--preset", "tiny",
                               "--out", str(out), "--progress=false"], capsys))
    wv = WordVectors.load(out / "vectors")
    assert len(wv) == summary["vocab_size"] > 1000 and wv.dim == 16
    assert wv.meta["trainer"] == method and wv.keys[0] == "the"
    assert summary["intrinsic"]["wordsim353"]["pairs"] > 0  # scored against the shared eval data
    assert json.loads((out / "config.json").read_text())["method"] == method
    assert not list(out.glob("tokens-*"))  # the token file is cleaned up
    if method == "doc2vec":
        assert (out / "doc2vec" / "doc2vec.safetensors").is_file()


def test_min_count_above_every_word_is_a_clear_error(corpus, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["pretrain", "word2vec", "--corpus", str(corpus / "ptb4k.txt"), "--word2vec.min_count=100000",
                  "--out", str(tmp_path / "x"), "--progress=false"])
    assert e.value.code == 1
    assert "no word occurs at least min_count=100000 times" in capsys.readouterr().err


def test_vectors_commands(corpus, tmp_path, capsys):
    out = tmp_path / "w2v"
    _run(["pretrain", "word2vec", "--corpus", str(corpus / "ptb4k.txt"), "--preset", "tiny", "--out", str(out),
          "--evaluate=false", "--progress=false"], capsys)
    vectors = str(out / "vectors")
    report = _run(["vectors", "eval", vectors, "--json", str(tmp_path / "s.json")], capsys)
    assert "WordSim-353" in report or "wordsim353" in report.lower()
    assert "spearman" in json.dumps(json.loads((tmp_path / "s.json").read_text()))
    near = _run(["vectors", "neighbors", vectors, "company", "--topn", "3"], capsys)
    assert near.startswith("company: ") and near.count(",") == 2
    assert "company : companies :: stock :" in _run(["vectors", "analogy", vectors, "company", "companies", "stock"],
                                                     capsys)
    _run(["vectors", "convert", vectors, str(tmp_path / "w.txt")], capsys)
    again = WordVectors.load_word2vec(tmp_path / "w.txt")
    assert again.keys == WordVectors.load(vectors).keys
    with pytest.raises(SystemExit):
        cli.main(["vectors", "neighbors", vectors, "qwertyuiop"])
    assert "qwertyuiop" in capsys.readouterr().err


@pytest.mark.parametrize("encoder", ["fasttext", "awd_lstm"])
def test_finetune_from_vectors(encoder, corpus, tmp_path, capsys):
    rng = np.random.default_rng(0)
    words = GOOD + BAD + FILL
    wv = WordVectors(words, rng.normal(size=(len(words), 12)).astype(np.float32))
    wv.save(tmp_path / "wv")
    out, err = tmp_path / "clf", []
    summary = json.loads(_run(["finetune", "--encoder", encoder, "--train", str(corpus / "train.tsv"),
                               "--test", str(corpus / "test.tsv"), "--vectors", str(tmp_path / "wv"),
                               *(["--preset", "tiny"] if encoder == "awd_lstm" else []),  # fasttext: its defaults
                               "--train.epochs=30", "--out", str(out), "--train.progress=false"], capsys, err))
    # every word of the task is in the vectors; the four specials are not counted
    assert f"{len(words)} of {len(words)} tokens initialized from the vectors; 0 missing" in err[0]
    model = load_task_model(out / "last")
    assert model.model.encoder.embedding.weight.shape[1] == 12  # the encoder took the vectors' dimension
    if encoder == "fasttext":
        assert summary["test_accuracy"] >= 0.9


def test_vectors_classify_on_pairs_and_texts(corpus, tmp_path, capsys):
    rng = np.random.default_rng(0)
    words = GOOD + BAD + FILL
    vecs = rng.normal(size=(len(words), 8)).astype(np.float32)
    vecs[: len(GOOD), 0] += 3.0  # a "sentiment" direction
    WordVectors(words, vecs).save(tmp_path / "wv")
    result = json.loads(_run(["vectors", "classify", str(tmp_path / "wv"), "--train", str(corpus / "train.tsv"),
                              "--test", str(corpus / "test.tsv"), "--pooling", "meanmax"], capsys))
    assert result["test_accuracy"] >= 0.9 and result["features"] == 16 and result["kind"] == "classify"
