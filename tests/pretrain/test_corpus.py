"""The pretraining corpus: a user corpus holds out lines for valid and test, given held-out files
are used as they are, a catalog corpus keeps its own splits."""

from __future__ import annotations

import pytest

from transferlab.pretrain.corpus import LMDataConfig, lm_texts

def test_a_user_corpus_holds_out_lines_for_valid_and_test(corpus):
    d = LMDataConfig(corpus=str(corpus), held_out=0.1)
    texts = {split: list(lines) for split, lines in lm_texts(d).items()}
    train, valid, test = (set(texts[s]) for s in ("train", "valid", "test"))
    assert not (train & valid) and not (train & test) and not (valid & test)
    assert sum(map(len, texts.values())) == 600
    assert 15 < len(valid) < 50 and 15 < len(test) < 50  # 5% each
    assert texts == {s: list(v) for s, v in lm_texts(d).items()}  # the same lines every time


def test_a_jsonl_corpus_reads_its_text_field(tmp_path):
    """A JSONL dump (one object per line, as the hub's datasets write them) pretrains on its
    ``text`` field; other fields are ignored, and a line without ``text`` is named."""
    rows = "".join(f'{{"id": {i}, "text": "line {i} of the corpus", "meta": {{"src": "x"}}}}\n' for i in range(200))
    (tmp_path / "c.jsonl").write_text(rows)
    texts = {split: list(lines) for split, lines in lm_texts(LMDataConfig(corpus=str(tmp_path / "c.jsonl"))).items()}
    assert sorted(sum(texts.values(), [])) == sorted(f"line {i} of the corpus" for i in range(200))
    (tmp_path / "bad.jsonl").write_text('{"text": "one"}\n{"body": "two"}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl, line 2, field 'text'"):
        list(lm_texts(LMDataConfig(corpus=str(tmp_path / "bad.jsonl")))["train"])


def test_valid_and_test_files_are_used_as_given(corpus, tmp_path):
    (tmp_path / "v.txt").write_text("the movie was good\n")
    (tmp_path / "t.txt").write_text("a dull plot\n")
    d = LMDataConfig(corpus=str(corpus), valid=str(tmp_path / "v.txt"), test=str(tmp_path / "t.txt"))
    texts = {split: list(lines) for split, lines in lm_texts(d).items()}
    assert texts["valid"] == ["the movie was good"] and texts["test"] == ["a dull plot"]
    assert len(texts["train"]) == 600
    with pytest.raises(ValueError, match="data.valid and data.test go together"):
        lm_texts(LMDataConfig(corpus=str(corpus), valid=str(tmp_path / "v.txt")))


def test_a_catalog_corpus_keeps_its_own_splits(shared_data):
    texts = lm_texts(LMDataConfig(corpus="ptb"))
    assert next(iter(texts["valid"])) != next(iter(texts["train"]))


def test_too_little_held_out_text_is_refused_before_training(tmp_path):
    """A corpus so small that the held-out share has no test text stops at encoding, before
    hours of training would end in the same error."""
    from transferlab.config import ConfigError
    from transferlab.pretrain.corpus import encode_lm_corpus

    (tmp_path / "c.txt").write_text("".join(f"line {i} of text\n" for i in range(30)))
    with pytest.raises(ConfigError, match="(valid|test) text of .* has 0 tokens"):
        encode_lm_corpus(LMDataConfig(corpus=str(tmp_path / "c.txt"), held_out=0.02), str.split, tmp_path / "out")
