"""Tests for transferlab.text.vocab."""

from __future__ import annotations

import json

import pytest

from transferlab.text.vocab import SPECIALS, Vocab

CORPUS = [["b", "a", "c"], ["a", "b", "d"], ["a", "<unk>", "e"]]


def test_specials_and_frequency_order():
    v = Vocab.build(iter(CORPUS))  # a generator: build streams
    assert v.itos[:4] == list(SPECIALS)
    assert (v.pad_id, v.unk_id, v.bos_id, v.eos_id) == (0, 1, 2, 3)
    # a (3) then b (2), then the count-1 words in first-occurrence order: c, d, e
    assert v.itos[4:] == ["a", "b", "c", "d", "e"]
    assert len(v) == 9 and "a" in v and "z" not in v
    assert v.stoi["a"] == 4


def test_literal_unk_is_the_special():
    v = Vocab.build(CORPUS)
    assert v.itos.count("<unk>") == 1
    assert v.encode(["<unk>", "a", "never-seen", "<eos>"]) == [v.unk_id, 4, v.unk_id, v.eos_id]
    assert v.decode([4, 5, v.eos_id]) == ["a", "b", "<eos>"]
    with pytest.raises(IndexError, match="outside the vocabulary"):
        v.decode([len(v)])


def test_min_freq_and_max_size():
    assert Vocab.build(CORPUS, min_freq=2).itos[4:] == ["a", "b"]
    assert Vocab.build(CORPUS, max_size=1).itos[4:] == ["a"]
    with pytest.raises(ValueError, match="no word occurs min_freq=5"):
        Vocab.build(CORPUS, min_freq=5)
    with pytest.raises(ValueError, match="no word"):
        Vocab.build([["<unk>"], []])


def test_save_load_round_trip(tmp_path):
    v = Vocab.build(CORPUS, min_freq=1)
    path = tmp_path / "vocab.json"
    v.save(path)
    data = json.loads(path.read_text())
    assert data["itos"] == v.itos and data["specials"]["unk"] == "<unk>" and data["min_freq"] == 1
    w = Vocab.load(path)
    assert w == v and w.stoi == v.stoi
    assert Vocab.from_dict(v.to_dict()) == v


def test_malformed_json_names_the_file(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="broken.json"):
        Vocab.load(bad)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"itos": ["a", "b"]}))
    with pytest.raises(ValueError, match="wrong.json.*specials"):
        Vocab.load(wrong)
    wrong.write_text(json.dumps([1, 2]))
    with pytest.raises(ValueError, match="wrong.json.*itos"):
        Vocab.load(wrong)
    wrong.write_text(json.dumps({"itos": [*SPECIALS, "a", "a"]}))
    with pytest.raises(ValueError, match="wrong.json.*duplicate"):
        Vocab.load(wrong)


def test_ptb_vocabulary(shared_data):
    path = shared_data / "corpora" / "ptb" / "train.txt"
    if not path.is_file():
        pytest.skip(f"{path} is absent from the shared data")
    with open(path, encoding="utf-8") as f:
        v = Vocab.build(line.split() for line in f)
    assert len(v) == 10_002  # PTB's 10k (9,999 words with <unk>, plus <eos>), <pad>, <bos>
    assert v.itos[4] == "the"
