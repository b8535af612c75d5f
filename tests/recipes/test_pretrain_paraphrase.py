"""``pretrain paraphrase`` (tiny preset: 200 MRPC paraphrase pairs, 200 STS-B pairs per held-out
split) -> a ``fasttext`` checkpoint that ``load_backbone`` and ``senteval`` read unchanged, whose
sentence vector is the average of its word vectors."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from transferlab import cli
from transferlab.adapt.sentence_features import sentence_embeddings
from transferlab.checkpoint import load_checkpoint
from transferlab.recipes import senteval
from transferlab.tasks.loading import load_backbone
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.text.vocab import Vocab


@pytest.fixture(scope="module")
def run(tmp_path_factory, shared_data):
    d = tmp_path_factory.mktemp("paraphrase")
    assert cli.main(["pretrain", "paraphrase", "--preset", "tiny", "--out", str(d / "run"),
                     "--train.progress=false"]) == 0
    return d / "run"


def test_the_run_reports_sts_correlations_before_and_after(run):
    results = json.loads((run / "results.json").read_text())
    assert results["steps"] == 20 and results["train_pairs"] == 200
    for key in ("valid_pearson", "valid_spearman", "test_pearson", "test_spearman", "init_valid_pearson",
                "init_test_pearson"):
        assert -1.0 <= results[key] <= 1.0
    assert results["valid_pearson"] != results["init_valid_pearson"]  # training moved the vectors
    ckpt = load_checkpoint(run / "best")
    assert ckpt.config["fasttext"]["ngrams"] == 1 and ckpt.config["fasttext"]["dim"] == 50
    assert ckpt.config["fasttext"]["vocab_size"] == len(ckpt.files["vocab"]["itos"]) == results["vocab_size"]


def test_the_checkpoint_loads_as_a_backbone_whose_sentence_vector_is_the_average(run):
    backbone = load_backbone(str(run / "best"), TextConfig())
    assert backbone.family == "fasttext"
    texts = ["A man is playing a guitar.", "the cat sat on the mat", "Qwzx unknownword"]
    got = sentence_embeddings(backbone, texts, "auto")
    ckpt = load_checkpoint(run / "best")
    vocab = Vocab.from_dict(ckpt.files["vocab"])
    weight = backbone.encoder.embedding.weight.detach()
    tok = tokenizer(TextConfig())
    want = np.stack([weight[vocab.encode(tok(t))].mean(0).numpy() for t in texts])
    assert np.allclose(got, want, atol=1e-6)


def test_words_the_pairs_never_show_keep_their_glove_vector(run):
    from transferlab.vectors.keyed import load_vectors

    glove = load_vectors("glove-6b-50d")
    ckpt = load_checkpoint(run / "best")
    vocab = Vocab.from_dict(ckpt.files["vocab"])
    weight = ckpt.weights["encoder.embedding.weight"]
    last = vocab.itos[-1]  # the vocabulary ends with GloVe's frequent words that training lacks
    assert torch.equal(weight[-1], torch.tensor(glove[last]))
    moved = [w for w in ("the", "a", "of") if not torch.equal(weight[vocab.stoi[w]], torch.tensor(glove[w]))]
    assert moved  # words of the training pairs did move


def test_senteval_scores_the_checkpoint_as_the_run_did(run, tmp_path):
    results = json.loads((run / "results.json").read_text())
    cfg = senteval.SentEvalConfig(encoder=str(run / "best"), tasks="stsb", max_examples=200,
                                  cache=str(tmp_path / "cache"), out=str(tmp_path / "se"), progress=False)
    stsb = senteval.run(cfg)["tasks"]["stsb"]  # the same fixed subsets of STS-B dev and test
    assert stsb["cosine"]["pearson"] == pytest.approx(results["test_pearson"], abs=1e-6)
    assert stsb["cosine_dev"]["spearman"] == pytest.approx(results["valid_spearman"], abs=1e-6)


def test_a_tsv_file_of_pairs_and_errors_that_name_the_flag(tmp_path, shared_data, capsys):
    rows = [f"the {w} is here\ta {w} is present" for w in "dog cat car tree house lamp door road".split()]
    (tmp_path / "pairs.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    args = ["pretrain", "paraphrase", "--corpus", str(tmp_path / "pairs.tsv"), "--preset", "tiny",
            "--out", str(tmp_path / "run"), "--train.progress=false", "--train.steps=2", "--data.batch_size=4",
            "--data.eval_size=20"]
    assert cli.main(args) == 0
    results = json.loads((tmp_path / "run" / "results.json").read_text())
    assert results["train_pairs"] == 8 and results["steps"] == 2
    for bad, flag in (("--fasttext.ngrams=2", "fasttext.ngrams"), ("--data.batch_size=1", "data.batch_size")):
        with pytest.raises(SystemExit):
            cli.main([*args[:-4], "--out", str(tmp_path / "bad"), bad])
        assert flag in capsys.readouterr().err
