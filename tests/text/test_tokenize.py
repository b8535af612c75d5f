"""Tests for transferlab.text.tokenize."""

from __future__ import annotations

import pytest

from transferlab.text.tokenize import detokenize, whitespace_tokenize, word_tokenize


@pytest.mark.parametrize(
    "text, expected",
    [
        ("Don't stop, it's 3.14!", ["Do", "n't", "stop", ",", "it", "'s", "3.14", "!"]),
        ("I can't and won't.", ["I", "ca", "n't", "and", "wo", "n't", "."]),
        (
            "They're here; we've 10,000 at 12:30 -- ok?!",
            ["They", "'re", "here", ";", "we", "'ve", "10,000", "at", "12:30", "--", "ok", "?!"],
        ),
        ("Mr. Smith paid $5 in the U.S. today.", ["Mr.", "Smith", "paid", "$", "5", "in", "the",
                                                   "U.S.", "today", "."]),
        ('"Hi," she said (quietly)...', ['"', "Hi", ",", '"', "she", "said", "(", "quietly", ")",
                                          "..."]),
        ("students' books, O'Brien's well-made 24/7 AT&T", ["students", "'", "books", ",",
                                                             "O'Brien", "'s", "well-made", "24/7",
                                                             "AT&T"]),
        ("the end. Version 2.0.", ["the", "end", ".", "Version", "2.0", "."]),
        ("<unk> -LRB- x -RRB- \\*\\* 1\\/2-year", ["<unk>", "-LRB-", "x", "-RRB-", "\\*\\*",
                                                   "1\\/2-year"]),
        ("", []),
    ],
)
def test_word_tokenize_raw_text(text, expected):
    assert word_tokenize(text) == expected


def test_lower_applies_after_tokenizing():
    assert word_tokenize("DON'T Go.", lower=True) == ["do", "n't", "go", "."]
    assert whitespace_tokenize(" A  b\tC \n", lower=True) == ["a", "b", "c"]


def test_equals_whitespace_split_on_pretokenized_corpora(shared_data):
    """On PTB and SST-2 (already tokenized) word_tokenize is exactly str.split, every line."""
    files = [shared_data / "corpora" / "ptb" / f"{s}.txt" for s in ("train", "valid", "test")]
    files += [shared_data / "datasets" / "sst2" / f"{s}.tsv" for s in ("train", "valid", "test")]
    n_lines = 0
    for path in files:
        if not path.is_file():
            pytest.skip(f"{path} is absent from the shared data")
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
        if path.suffix == ".tsv":
            lines = [line.rsplit("\t", 1)[0] for line in lines[1:]]  # drop header and label
        mismatches = [line for line in lines if word_tokenize(line) != line.split()]
        assert not mismatches, f"{path.name}: {len(mismatches)} lines differ, e.g. {mismatches[:3]}"
        n_lines += len(lines)
    assert n_lines > 100_000


@pytest.mark.parametrize("text", [
    "Mr. Smith didn't pay $1,000 (today).",
    "It's fine, isn't it? Yes! We're 50% done; they'll see [soon].",
])
def test_detokenize_undoes_word_tokenize(text):
    assert detokenize(word_tokenize(text)) == text
    assert detokenize(word_tokenize(text, lower=True)) == text.lower()
