"""``transferlab data build``: splits by document hash, duplicate and task-overlap removal, the
README and manifest, idempotence and resumption, and the extractors' cleaning rules."""

from __future__ import annotations

import json

import pytest

from transferlab.data import build
from transferlab.data.build import BuildConfig, build_corpus, normalize, split_of
from transferlab.data.corpus_sources import SOURCES, Source, _GCIDE_HEAD, clean_line, rst_paragraphs


def _docs(_archive):
    yield "d1", "A first line of the first document.\nShared boilerplate line here.\n<b>Bold</b>  text\ttoo."
    yield "d2", "Shared boilerplate line here.\nit 's a charming and often affecting journey ."
    for i in range(400):
        yield f"n{i}", f"Document number {i} has its own words, word{i}."


@pytest.fixture()
def toy(monkeypatch, tmp_path):
    monkeypatch.setitem(SOURCES, "toy", Source("catalog", "toy", "a toy source", "public domain", _docs))
    monkeypatch.setitem(build.CORPORA, "toy-en", BuildConfig(sources=("toy",), exclude=("sst2",),
                                                             valid_per_mille=100, test_per_mille=100))
    monkeypatch.setattr(build, "fetch", lambda key, source, downloads: tmp_path / "unused")
    return tmp_path / "toy-en"


def _lines(folder, split):
    return (folder / f"{split}.txt").read_text(encoding="utf-8").splitlines()


def test_build_splits_by_document_drops_repeats_and_task_overlap(toy, shared_data):
    folder = build_corpus("toy-en", toy, log=lambda m: None)
    split = {s: _lines(folder, s) for s in build.SPLITS}
    everything = [line for lines in split.values() for line in lines]
    assert len(everything) == len(set(everything))  # repeated lines kept once
    assert everything.count("Shared boilerplate line here.") == 1
    assert "Bold text too." in everything  # markup and whitespace cleaned
    # an SST-2 sentence (test split, up to case and punctuation) never reaches the corpus
    assert not any(normalize(line) == normalize("it's a charming and often affecting journey.") for line in everything)
    cfg = build.CORPORA["toy-en"]
    for i in range(400):  # each document lies wholly in the split its hash names
        assert f"Document number {i} has its own words, word{i}." in split[split_of("toy", f"n{i}", cfg)]
    assert 20 < len(split["valid"]) < 70 and 20 < len(split["test"]) < 70  # 10% each of ~400
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["splits"]["train"]["excluded_lines"] + manifest["splits"]["valid"]["excluded_lines"] \
        + manifest["splits"]["test"]["excluded_lines"] == 1
    readme = (folder / "README.md").read_text()
    assert "| toy | a toy source |" in readme and "public domain" in readme


def test_build_is_idempotent_and_resumes_from_finished_sources(toy, shared_data, monkeypatch):
    folder = build_corpus("toy-en", toy, log=lambda m: None)
    before = (folder / "train.txt").stat().st_mtime_ns
    messages = []
    build_corpus("toy-en", toy, log=messages.append)
    assert (folder / "train.txt").stat().st_mtime_ns == before and "already built" in messages[0]
    # an interrupted merge: the finished source is not extracted again
    (folder / "manifest.json").unlink()
    (folder / "train.txt").unlink()
    monkeypatch.setitem(SOURCES, "toy", Source("catalog", "toy", "a toy source", "public domain",
                                               lambda a: (_ for _ in ()).throw(AssertionError("re-extracted"))))
    build_corpus("toy-en", toy, log=lambda m: None)
    assert "Bold text too." in _lines(folder, "train") + _lines(folder, "valid") + _lines(folder, "test")


def test_unknown_corpus_and_source_are_named():
    with pytest.raises(ValueError, match="unknown corpus 'nope'.*general-en"):
        build_corpus("nope")
    with pytest.raises(ValueError, match="unknown source.*bogus"):
        BuildConfig(sources=("imdb", "bogus"))


def test_clean_line_and_rst_prose():
    assert clean_line("  a<br />b\u00a0c\x02d \\ufffdq\\ufffd ") == "a b c d 'q'"
    rst = ("Title\n=====\n\nThe first paragraph is prose that\nwraps over two lines.\n\n"
           ".. note::\n\n   A directive body.\n\n"
           "Run this::\n\n    $ make all\n    echo done\n\nSee :func:`len` and ``x`` for the details here.\n")
    assert rst_paragraphs(rst).splitlines() == [
        "The first paragraph is prose that wraps over two lines.", "See len and x for the details here."]


def test_gcide_headwords_pronunciation_and_part_of_speech_are_dropped():
    for head, rest in [('Outluster \\Out*lus"ter\\, Outlustre \\Out*lus"tre\\, v. t.', ""),
                       ('Abjection \\Ab*jec"tion\\ ([a^]b*j[e^]k"sh[u^]n), n. [F.', "[F."),
                       ('\\maconnais\\, n. A fine wine', "A fine wine")]:
        assert _GCIDE_HEAD.sub("", head) == rest
