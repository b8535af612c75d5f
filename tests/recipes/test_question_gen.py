"""``transferlab qg`` end to end on 40 SQuAD questions from a tiny PTB language model: the run
writes results.json with finite BLEU and copy BLEU (sacreBLEU's, on the LM's words), its
questions file agrees with them and with the checkpoint reloaded; the data are the sentences that
hold the answers, split by article."""

from __future__ import annotations

import csv
import json
import math

import pytest
from sacrebleu.metrics import BLEU

from transferlab import cli
from transferlab.recipes.pretrain_mt import bleu
from transferlab.recipes.question_gen import (QGDataConfig, QGExample, answer_sentence, load_question_generator,
                                              qg_splits)


@pytest.fixture(scope="module")
def lm(tmp_path_factory, shared_data):
    out = tmp_path_factory.mktemp("qg") / "lm"
    assert cli.main(["pretrain", "lm", "--corpus", "ptb", "--preset", "tiny", "--out", str(out),
                     "--train.progress=false", "--train.threads=1"]) == 0
    return out  # the run folder: qg reads its best checkpoint


def test_answer_sentence():
    context = "Mr. Smith came home. He ate at 5 p.m. sharp. Then he slept."
    at = context.index("5 p.m.")
    assert answer_sentence(context, at, at + 6) == "He ate at 5 p.m. sharp."
    assert answer_sentence(context, context.index("home"), context.index("ate") + 3) == \
        "Mr. Smith came home. He ate at 5 p.m. sharp."  # an answer across a boundary: both sentences


def test_splits_hold_the_answers_and_share_no_article(shared_data):
    splits = qg_splits(QGDataConfig(valid_frac=0.1))
    assert all(len(splits[s]) > 500 for s in ("train", "valid", "test"))
    for exs in splits.values():
        assert sum(ex.answer in ex.sentence for ex in exs) / len(exs) > 0.99
        assert all(len(ex.sentence) < 2000 for ex in exs)  # sentences, not whole contexts
    sentences = {s: {ex.sentence for ex in splits[s]} for s in splits}
    assert not sentences["train"] & sentences["valid"] and not sentences["train"] & sentences["test"]


def test_qg_end_to_end(lm, tmp_path, shared_data):
    out = tmp_path / "qg"
    assert cli.main(["qg", "--pretrained", str(lm), "--init", "lm", "--preset", "tiny", "--train-size", "40",
                     "--out", str(out), "--aux_lm=0.5", "--train.progress=false", "--train.threads=1"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["train_size"] <= 40 and results["steps"] == 30 and results["test_questions"] == 40
    for key in ("bleu", "copy_bleu", "valid_ppl", "test_ppl", "wall_s"):
        assert math.isfinite(results[key]), key
    assert results["copy_bleu"] > 1.0 and results["valid_ppl"] > 1 and results["init"] == "lm"
    assert "tok:none" in results["bleu_signature"]
    with open(out / "test_questions.tsv", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\"))[1:]
    assert len(rows) == 40
    refs = [r[2] for r in rows]
    assert results["bleu"] == pytest.approx(bleu([r[3] for r in rows], refs, BLEU(tokenize="none")))
    gen = load_question_generator(out)  # the run folder: its best checkpoint
    assert gen.words.text.lower and gen.model.cfg.attention == "general"
    copies = [" ".join(gen.words.tokens(r[0])) for r in rows]
    assert results["copy_bleu"] == pytest.approx(bleu(copies, refs, BLEU(tokenize="none")))
    assert gen.questions([QGExample(r[0], r[1], "") for r in rows[:8]]) == [r[3] for r in rows[:8]]


def test_init_lm_needs_pretrained(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["qg", "--init", "lm", "--preset", "tiny"])
    assert e.value.code == 2 and "--pretrained" in capsys.readouterr().err
