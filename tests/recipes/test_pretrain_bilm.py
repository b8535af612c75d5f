"""``pretrain bilm`` -> ``finetune --pretrained`` -> ``predict`` and ``probe`` with ELMo: a word the
biLM never saw still gets its characters (not ``<unk>``), and a saved task model reloads."""

from __future__ import annotations

import json

import pytest
import torch

from transferlab import cli
from transferlab.encoders import backbone as bb
from transferlab.text.tokenize import TextConfig

WORDS = "the a movie film plot was it good bad great dull fun and of to in".split()


@pytest.fixture(scope="module")
def elmo(tmp_path_factory):
    d = tmp_path_factory.mktemp("elmo")
    (d / "corpus.txt").write_text("\n".join(" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(9))
                                            for i in range(300)) + "\n", encoding="utf-8")
    assert cli.main(["pretrain", "bilm", "--corpus", str(d / "corpus.txt"), "--preset", "tiny",
                     "--out", str(d / "bilm"), "--train.progress=false"]) == 0
    results = json.loads((d / "bilm" / "results.json").read_text())
    assert results["valid_forward_ppl"] > 1 and results["test_backward_ppl"] > 1
    return d


def test_unseen_words_get_their_characters(elmo):
    b = bb.pretrained_backbone(elmo / "bilm" / "best", TextConfig(lower=False), None)
    assert b.family == "elmo" and not b.causal
    ids = b.texts(["the zyzzyva film", "zyzzyva again"])
    vocab_size = len(json.loads((elmo / "bilm" / "best" / "vocab.json").read_text())["itos"])
    assert ids[0][1] >= vocab_size and ids[1][0] == ids[0][1] and ids[1][1] == ids[0][1] + 1
    with torch.no_grad():
        out = b.encoder(torch.tensor([ids[0]]))
    assert len(out.layers) == 3 and out.hidden.shape == (1, 3, b.encoder.dim)


def test_input_follows_the_biLMs_own_casing_whatever_the_run_says(elmo, tmp_path, capsys):
    """ELMo pretrains on cased words (``text.lower=false``): a run's default ``--text.lower=true`` must
    not lower-case its input, here, in a saved task model, in TagLM, or in a feature cache's key."""
    best = elmo / "bilm" / "best"
    b = bb.pretrained_backbone(best, TextConfig(), None)  # the run's default: lower=True
    assert b.files["text"]["lower"] is False
    cased, lower = b.texts(["The film"])[0], b.texts(["the film"])[0]
    assert cased[0] != lower[0] and cased[1] == lower[1]  # "The" is a word of its own
    assert bb.input_text(str(best), TextConfig()) == TextConfig(lower=False)
    assert bb.input_text("glove-6b-50d", TextConfig()) == TextConfig()
    taglm = bb.taglm_backbone(best, bb.TagLMConfig(), ["The film", "the film"], TextConfig(), None)
    assert taglm.files["text"]["lower"] is False and taglm.texts(["The"])[0] != taglm.texts(["the"])[0]
    rows = [("Good fun film", "pos"), ("a great movie", "pos"), ("Dull bad plot", "neg"), ("bad and dull", "neg")]
    (tmp_path / "t.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows * 6))
    assert cli.main(["finetune", "--train", str(tmp_path / "t.tsv"), "--text-col", "text", "--label-col", "label",
                     "--pretrained", str(best), "--preset", "tiny", "--out", str(tmp_path / "clf"),
                     "--train.epochs=1", "--train.progress=false"]) == 0
    assert json.loads((tmp_path / "clf" / "last" / "text.json").read_text())["lower"] is False
    from transferlab.tasks.loading import load_task_model

    reloaded = load_task_model(tmp_path / "clf" / "last").backbone
    assert reloaded.texts(["The film"]) == b.texts(["The film"])
    assert bb.input_text(str(tmp_path / "clf" / "last"), TextConfig()) == TextConfig(lower=False)


def test_finetune_predict_and_probe(elmo, tmp_path, capsys):
    rows = [("good fun film", "pos"), ("a great movie", "pos"), ("dull bad plot", "neg"), ("bad and dull", "neg")]
    (tmp_path / "t.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows * 6))
    assert cli.main(["finetune", "--train", str(tmp_path / "t.tsv"), "--text-col", "text", "--label-col", "label",
                     "--pretrained", str(elmo / "bilm" / "best"), "--preset", "tiny", "--out", str(tmp_path / "clf"),
                     "--train.progress=false"]) == 0
    capsys.readouterr()
    assert cli.main(["predict", "--model", str(tmp_path / "clf" / "last"), "a zyzzyva of fun"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["label"] in ("pos", "neg")
    assert cli.main(["probe", "--encoder", str(elmo / "bilm" / "best"), "--tasks", "length", "--corpus",
                     str(elmo / "corpus.txt"), "--out", str(tmp_path / "probe")]) == 0
    probe = json.loads((tmp_path / "probe" / "probe.json").read_text())
    assert probe["n_layers"] == 3 and len(probe["tasks"]["length"]["accuracy"]) == 3
