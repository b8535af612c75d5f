"""``pretrain skipthought --preset tiny`` end to end on Shakespeare: held-out perplexity below a
uniform guess, a checkpoint ``senteval`` reads, and vocabulary expansion that gives a word outside
the vocabulary its mapped GloVe vector when the checkpoint is loaded as a backbone."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from transferlab import cli
from transferlab.checkpoint import load_checkpoint
from transferlab.config import ConfigError
from transferlab.encoders.backbone import pretrained_backbone
from transferlab.recipes.pretrain_skipthought import PretrainSkipThoughtConfig, load_skip_thought
from transferlab.encoders.sentence_rnn import SentenceRNNConfig
from transferlab.text.tokenize import TextConfig
from transferlab.vectors.keyed import load_vectors


def _args(d, *extra):
    return ["pretrain", "skipthought", "--preset", "tiny", "--out", str(d / "run"), "--train.progress=false",
            "--train.threads=1", *extra]


@pytest.fixture(scope="module")
def trained(shared_data, tmp_path_factory):
    d = tmp_path_factory.mktemp("skipthought")
    assert cli.main(_args(d)) == 0
    return d


def test_pretraining_writes_results_and_an_expanded_checkpoint(trained):
    results = json.loads((trained / "run" / "results.json").read_text())
    assert results["steps"] == 20 and results["train_triples"] == results["train_sentences"] - 2  # one document
    assert math.isfinite(results["test_ppl"]) and results["valid_ppl"] < results["vocab_size"]  # beats uniform
    assert results["valid_ppl"] == pytest.approx(math.exp(results["valid_loss"]))
    assert results["expansion_vectors"] == "glove-6b-50d" and results["expansion_r2"] <= 1.0
    assert results["expansion_fit_words"] > 50 and results["n_params"] < results["n_params_total"]
    ckpt = load_checkpoint(trained / "run" / "best")
    assert ckpt.config["sentence_rnn"]["vocab_size"] == results["vocab_size"] and "vocab" in ckpt.files
    assert ckpt.weights["encoder.expansion"].shape == (50, 16)  # glove's 50 dims -> our 16-d embeddings
    model, vocab = load_skip_thought(trained / "run" / "best")
    assert len(vocab) == results["vocab_size"] and model.encoder.expansion.abs().sum() > 0


def test_resuming_a_finished_run_reloads_its_expanded_best(trained):
    assert cli.main(_args(trained, "--resume")) == 0
    assert json.loads((trained / "run" / "results.json").read_text())["steps"] == 20


def test_senteval_reads_the_checkpoint(trained, tmp_path, capsys):
    argv = ["senteval", str(trained / "run" / "best"), "--tasks", "sst2", "--max-examples", "200",
            "--out", str(tmp_path / "se"), f"--cache={json.dumps(str(tmp_path / 'cache'))}", "--progress=false",
            "--threads=1"]
    assert cli.main(argv) == 0
    result = json.loads((tmp_path / "se" / "senteval.json").read_text())
    assert result["dim"] == 32 and 0.0 <= result["tasks"]["sst2"]["score"] <= 1.0  # the GRU's last state


def test_expansion_gives_an_unseen_word_its_mapped_vector(trained):
    backbone = pretrained_backbone(trained / "run" / "best", TextConfig(), None)
    vocab_size = backbone.encoder.cfg.vocab_size
    glove = load_vectors("glove-6b-50d")
    word = next(w for w in ("zebra", "keyboard", "internet", "volcano") if w not in backbone.files["vocab"]["itos"])
    ids = backbone.texts([f"the {word} qwzxvq ."])[0]
    assert ids[1] >= vocab_size and ids[2] == 1  # the word glove knows gets a new row; a word nobody knows: <unk>
    row = backbone.encoder.embed(0, torch.tensor([ids]))[0, 1].detach()
    expected = torch.tensor(np.array(glove[word]), dtype=torch.float32) @ backbone.encoder.expansion
    assert torch.allclose(row, expected, atol=1e-5)
    assert np.isfinite(backbone.encoder.sentence(torch.tensor([ids])).detach().numpy()).all()
    assert backbone.texts([f"a {word}"])[0][1] == ids[1]  # the same word keeps its row


def test_skip_thought_takes_one_tower():
    with pytest.raises(ConfigError, match="sentence_rnn.towers"):
        PretrainSkipThoughtConfig(sentence_rnn=SentenceRNNConfig(towers=2))


def test_a_classifier_on_the_expanded_encoder_reloads_and_predicts(trained, tmp_path):
    """finetune from the skip-thought checkpoint: task words outside its vocabulary get mapped
    GloVe rows (not saved), and the saved classifier reloads and predicts on new unseen words."""
    from transferlab.tasks.loading import load_task_model

    rows = [(f"the zebra was good and fun {i}", "pos") for i in range(0, 40, 2)]
    rows += [(f"the volcano was bad and dull {i}", "neg") for i in range(1, 40, 2)]
    (tmp_path / "t.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows))
    out = tmp_path / "clf"
    assert cli.main(["finetune", "--train", str(tmp_path / "t.tsv"), "--text-col", "text", "--label-col", "label",
                     "--pretrained", str(trained / "run" / "best"), "--preset", "tiny", "--out", str(out),
                     "--train.progress=false", "--lm_finetune.enabled=false"]) == 0
    summary = json.loads((out / "results.json").read_text())
    assert summary["encoder"] == "sentence_rnn" and summary["pretrained"]
    predictor = load_task_model(summary["checkpoint"])
    assert predictor.model.encoder.cfg.expand == "glove-6b-50d"
    from transferlab.data.examples import TextExample

    unseen = [TextExample("the keyboard was fun", "pos"), TextExample("a zebra", "neg")]
    assert predictor.outputs(unseen).shape == (2, 2)
    assert predictor.model.encoder.extra.size(0) > 0  # keyboard and zebra read their mapped GloVe rows
