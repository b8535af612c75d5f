"""Fuzzing every reader: from a valid file of each format, thousands of corrupted copies (random
bytes written over it, truncation, ragged rows, bad UTF-8, a huge line, lines shuffled or
doubled). Whatever a reader makes of them, the only error that may escape is our ``DataError``,
naming the file and, in every line-oriented format, the line: never a UnicodeDecodeError, an IndexError,
a KeyError or a json/csv/numpy error from inside. The count of cases tried is printed."""

from __future__ import annotations

import json
import random

import pytest

from transferlab.data.conll import ConllReader, ConlluReader
from transferlab.data.errors import DataError
from transferlab.data.readers import (JsonlReader, SquadReader, TextLines, read_analogies, read_pair_examples,
                                      read_text_examples, read_word_pairs)
from transferlab.vectors.formats import read_glove, read_word2vec

SQUAD = json.dumps({"version": "1.1", "data": [{"title": "T", "paragraphs": [{"context": "Paris is in France.", "qas": [
    {"id": "q1", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12}]}]}]}]})

VALID = {
    "tsv": ("review\tlabel\ngreat fun\tpos\nawful\tneg\nfine film\tpos\n",
            lambda p: list(read_text_examples(p, "review", "label"))),
    "pairs": ("a\tb\ty\nthe cat\ta cat\t1\ndog\tcat\t0\n", lambda p: list(read_pair_examples(p, "a", "b", "y"))),
    "csv": ('text,label\n"a, b",1\nc,0\n', lambda p: list(read_text_examples(p, "text", "label", delimiter=","))),
    "jsonl": ('{"text": "good", "label": "pos"}\n{"text": "bad", "label": "neg"}\n',
              lambda p: list(read_text_examples(p, "text", "label"))),
    "jsonl-raw": ('{"a": 1}\n{"a": [2]}\n', lambda p: list(JsonlReader(p))),
    "conll": ("EU NNP B-ORG\nrejects VBZ O\n\nPeter NNP B-PER\n", lambda p: list(ConllReader(p))),
    "conllu": ("# sent_id = 1\n1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n2\t!\t!\tPUNCT\t.\t_\t1\tpunct\t_\t_\n",
               lambda p: list(ConlluReader(p))),
    "squad": (SQUAD, lambda p: list(SquadReader(p))),
    "lines": ("one line\ntwo lines\n", lambda p: list(TextLines(p))),
    "word-pairs": ("# comment\ntiger\tcat\t7.35\nbook\tpaper\t7.46\n", lambda p: list(read_word_pairs(p))),
    "analogies": (": capital\nAthens Greece Baghdad Iraq\nParis France Rome Italy\n",
                  lambda p: list(read_analogies(p))),
    "word2vec": ("2 3\ncat 0.1 0.2 0.3\ndog 0.4 0.5 0.6\n", lambda p: read_word2vec(p, binary=False)),
    "glove": ("cat 0.1 0.2 0.3\ndog 0.4 0.5 0.6\n", lambda p: read_glove(p)),
}
SUFFIX = {"tsv": ".tsv", "pairs": ".tsv", "csv": ".csv", "jsonl": ".jsonl", "jsonl-raw": ".jsonl", "conll": ".conll",
          "conllu": ".conllu", "squad": ".json", "lines": ".txt", "word-pairs": ".txt", "analogies": ".txt",
          "word2vec": ".txt", "glove": ".txt"}
CASES = 60  # per reader and corruption


def corrupt(data: bytes, kind: str, rng: random.Random) -> bytes:
    b = bytearray(data)
    if kind == "bytes":  # a few random bytes written anywhere
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == "truncate":
        b = b[: rng.randrange(len(b))]
    elif kind == "ragged":  # a field separator or a line break inserted or deleted
        i = rng.randrange(len(b))
        if rng.random() < 0.5:
            b[i:i] = rng.choice([b"\t", b" ", b",", b"\n", b"\n\n", b'"', b"{", b"]"])
        else:
            del b[i]
    elif kind == "utf8":  # an invalid UTF-8 sequence in the middle of a line
        i = rng.randrange(len(b))
        b[i:i] = rng.choice([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\x80abc"])
    elif kind == "huge":  # one line of a megabyte
        i = rng.randrange(len(b))
        b[i:i] = bytes(rng.choice(b"ab \t0.") for _ in range(1 << 20)) if rng.random() < 0.1 else b"x" * 5000
    elif kind == "lines":  # lines shuffled, doubled or dropped
        lines = bytes(b).split(b"\n")
        rng.shuffle(lines)
        b = bytearray(b"\n".join(lines[: rng.randint(0, 2 * len(lines))] * 2))
    return bytes(b)


@pytest.mark.filterwarnings("ignore::UserWarning")  # repeated words in a vectors file: warned, kept once
@pytest.mark.parametrize("fmt", sorted(VALID))
def test_readers_raise_only_located_data_errors(fmt, tmp_path, capsys):
    text, read = VALID[fmt]
    path = tmp_path / f"in{SUFFIX[fmt]}"
    path.write_text(text, encoding="utf-8")
    read(path)  # the valid file reads
    rng = random.Random(f"fuzz-{fmt}")
    tried = raised = 0
    for kind in ("bytes", "truncate", "ragged", "utf8", "huge", "lines"):
        for _ in range(CASES if kind != "huge" else CASES // 6):
            data = corrupt(text.encode("utf-8"), kind, rng)
            path.write_bytes(data)
            tried += 1
            try:
                read(path)
            except DataError as e:
                raised += 1
                assert e.path == str(path), f"{fmt}/{kind}: {e} does not name the file"
                assert str(path) in str(e)
                # a line-oriented file names the line too (SQuAD's JSON names the question or article
                # instead; an empty file has no line to name)
                if fmt != "squad" and "empty" not in e.problem:
                    assert e.line is not None and f"line {e.line}" in str(e), f"{fmt}/{kind}: {e} names no line"
            except Exception as e:  # anything else is a bug in the reader
                pytest.fail(f"{fmt}/{kind}: {type(e).__name__}: {e}\ninput: {data[:300]!r}")
    with capsys.disabled():
        print(f"\n[fuzz] {fmt}: {tried} corrupted files, {raised} refused with a located DataError")
