"""Tests for transferlab.text.subword."""

from __future__ import annotations

import itertools
import json

import pytest
import tokenizers
from tokenizers import models, pre_tokenizers

from transferlab.text.subword import OUR_SPECIALS, ROLES, SubwordTokenizer, train_tokenizer

CORPUS = [
    "The cat sat on the mat.",
    "The dog ate the homework, unbelievably.",
    "Unbelievable things happened to the cat and the dog!",
    "She walked the dog; he fed the cat.",
] * 20


@pytest.fixture(scope="module")
def wordpiece() -> SubwordTokenizer:
    return train_tokenizer(iter(CORPUS), "wordpiece", vocab_size=120)  # a generator: streamed


@pytest.fixture(scope="module")
def bpe() -> SubwordTokenizer:
    return train_tokenizer(iter(CORPUS), "bpe", vocab_size=320)


@pytest.fixture(scope="module")
def minilm():
    from transferlab.data import catalog

    return catalog.resolve("minilm-l6")


@pytest.mark.parametrize("kind, size", [("wordpiece", 120), ("bpe", 320)])
def test_train_specials_first_and_size(kind, size):
    tok = train_tokenizer(CORPUS, kind, vocab_size=size)
    inner = tok.tokenizer
    assert [inner.id_to_token(i) for i in range(7)] == [OUR_SPECIALS[r] for r in ROLES]
    assert tok.ids == {r: i for i, r in enumerate(ROLES)} and tok.pad_id == 0
    assert len(OUR_SPECIALS) < tok.vocab_size <= size
    assert tok.vocab_size == inner.get_vocab_size(with_added_tokens=True)


def test_encode_has_no_specials(wordpiece, bpe):
    for tok in (wordpiece, bpe):
        ids = tok.encode("the cat sat")
        assert ids and not set(ids) & set(range(7))
        assert tok.encode_batch(["the cat sat", "the dog"]) == [ids, tok.encode("the dog")]


def test_bpe_round_trip_is_the_lowercased_text(bpe):
    text = "The  Cat sat, on 'the' mat!\nZebra? héllo 日本"  # unseen bytes never become unk
    ids = bpe.encode(text)
    assert bpe.ids["unk"] not in ids
    assert bpe.decode(ids) == text.lower()


def test_wordpiece_round_trip_is_the_normalized_words(wordpiece):
    ids = wordpiece.encode("The CAT   ate the Homeworkdog")
    assert len(ids) > 5  # the unseen "homeworkdog" is several pieces, joined again by decode
    assert wordpiece.decode(ids) == "the cat ate the homeworkdog"
    assert wordpiece.ids["unk"] in wordpiece.encode("the xylophone")  # x, y not in alphabet


def test_train_errors():
    with pytest.raises(ValueError, match="no text"):
        train_tokenizer(line for line in ["", "  \n"])
    with pytest.raises(ValueError, match="vocab_size=100 is too small for bpe.*263"):
        train_tokenizer(CORPUS, "bpe", vocab_size=100)
    with pytest.raises(ValueError, match="vocab_size=20 is too small for this corpus"):
        train_tokenizer(CORPUS, "wordpiece", vocab_size=20)
    with pytest.raises(ValueError, match="kind must be one of"):
        train_tokenizer(CORPUS, "unigram")


@pytest.mark.parametrize("name", ["wordpiece", "bpe"])
def test_encode_words_first_pieces(name, request):
    tok: SubwordTokenizer = request.getfixturevalue(name)
    words = ["the", "hathomework", "cat", "homework"]
    ids, starts = tok.encode_words(words)
    enc = tok.tokenizer.encode(words, is_pretokenized=True, add_special_tokens=False)
    assert ids == enc.ids
    assert starts == [enc.word_ids.index(w) for w in range(len(words))]
    assert starts[2] - starts[1] > 1  # the unseen "hathomework" is several pieces
    assert tok.encode_words_batch([words, ["cat"]]) == [(ids, starts), tok.encode_words(["cat"])]


@pytest.mark.parametrize("name", ["wordpiece", "bpe"])
def test_encode_words_empty_word_gets_unk(name, request):
    tok: SubwordTokenizer = request.getfixturevalue(name)
    cat = tok.encode_words(["cat"])[0]
    words = ["cat", "", "cat"] if name == "bpe" else ["cat", "\x00", "", "cat"]
    ids, starts = tok.encode_words(words)
    unk = tok.ids["unk"]
    n_empty = len(words) - 2
    assert ids == cat + [unk] * n_empty + cat
    assert starts == [0] + [len(cat) + k for k in range(n_empty)] + [len(cat) + n_empty]
    assert tok.encode_words([]) == ([], [])


@pytest.mark.parametrize("name", ["wordpiece", "bpe"])
def test_dict_and_folder_round_trips(name, request, tmp_path):
    from transformers import PreTrainedTokenizerFast

    tok: SubwordTokenizer = request.getfixturevalue(name)
    text = "The dog sat on the unbelievable mat!"
    data = json.loads(json.dumps(tok.to_dict()))  # JSON-serializable
    assert data["specials"] == OUR_SPECIALS
    again = SubwordTokenizer.from_dict(data)
    assert again.encode(text) == tok.encode(text) and again.ids == tok.ids
    path = tok.save(tmp_path / "tok")
    assert path == tmp_path / "tok" / "tokenizer.json"
    for source in (tmp_path / "tok", path):
        loaded = SubwordTokenizer.load(source)
        assert loaded.encode(text) == tok.encode(text) and loaded.specials == OUR_SPECIALS
    hf = PreTrainedTokenizerFast(tokenizer_file=str(path))
    assert hf(text, add_special_tokens=False)["input_ids"] == tok.encode(text)
    assert tokenizers.Tokenizer.from_file(str(path)).encode(text).ids == tok.encode(text)


def test_malformed_input_errors_name_the_thing(wordpiece, tmp_path):
    with pytest.raises(ValueError, match="my checkpoint: expected a JSON object"):
        SubwordTokenizer.from_dict([1, 2], source="my checkpoint")
    with pytest.raises(ValueError, match="ckpt: 'tokenizer' is not a valid"):
        SubwordTokenizer.from_dict({"tokenizer": {"model": 3}, "specials": {}}, source="ckpt")
    data = wordpiece.to_dict()
    data["specials"] = {"cls": "<CLS-TYPO>"}
    with pytest.raises(ValueError, match="ckpt: special token '<CLS-TYPO>'"):
        SubwordTokenizer.from_dict(data, source="ckpt")
    with pytest.raises(ValueError, match="unknown special-token role 'start'"):
        SubwordTokenizer(wordpiece.tokenizer, {"start": "[CLS]"})
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        SubwordTokenizer.load(tmp_path)
    (tmp_path / "tokenizer.json").write_text("{broken")
    with pytest.raises(ValueError, match="tokenizer.json: not a valid"):
        SubwordTokenizer.load(tmp_path)


def test_hf_folder_roles_from_config_or_known_strings(tmp_path):
    vocab = {"<|endoftext|>": 0, "<s>": 1, "a": 2, "b": 3}
    inner = tokenizers.Tokenizer(models.WordLevel(vocab, unk_token="<|endoftext|>"))
    inner.pre_tokenizer = pre_tokenizers.Whitespace()
    inner.save(str(tmp_path / "tokenizer.json"))
    gpt2 = SubwordTokenizer.load(tmp_path)  # no config: known strings; <s> beats <|endoftext|>
    assert gpt2.ids == {"cls": 1, "sep": 0, "bos": 1, "eos": 0}
    assert gpt2.pad_id == 0 and gpt2.encode("a b") == [2, 3]
    config = {"bos_token": {"content": "<|endoftext|>", "lstrip": False},
              "eos_token": "<|endoftext|>", "pad_token": None}
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    assert SubwordTokenizer.load(tmp_path / "tokenizer.json").ids == {"bos": 0, "eos": 0}
    (tmp_path / "special_tokens_map.json").write_text(json.dumps({"mask_token": "<mask>"}))
    with pytest.raises(ValueError, match="special token '<mask>'"):
        SubwordTokenizer.load(tmp_path)


def test_minilm_folder(minilm):
    tok = SubwordTokenizer.load(minilm)
    assert tok.vocab_size == 30522
    assert tok.ids == {"pad": 0, "unk": 100, "cls": 101, "sep": 102, "mask": 103}
    assert tok.tokenizer.truncation is None and tok.tokenizer.padding is None
    assert len(tok.encode(" ".join(["wonderful film"] * 150))) == 300  # no truncation at 128


def test_minilm_matches_transformers(minilm):
    from transformers import AutoTokenizer

    from transferlab.data import catalog

    tok = SubwordTokenizer.load(minilm)
    hf = AutoTokenizer.from_pretrained(str(minilm))
    texts = [ex.text for ex in itertools.islice(catalog.load_examples("sst2", "valid"), 8)]
    texts.append("Unbelievably, the Café's déjà-vu wasn't worth $12.50!")
    expected = [hf(t, add_special_tokens=False)["input_ids"] for t in texts]
    assert tok.encode_batch(texts) == expected
    assert all(ids and 101 not in ids for ids in expected)
    words = "the unbelievably overwrought screenplay".split()
    ids, starts = tok.encode_words(words)
    enc = hf(words, is_split_into_words=True, add_special_tokens=False)
    assert ids == enc["input_ids"]
    assert starts == [enc.word_ids().index(w) for w in range(len(words))]
