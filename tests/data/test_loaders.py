"""The splits we define where publishers have none, and loading a user's own files by path."""

import pytest

from transferlab.data.errors import DataError
from transferlab.data.examples import PairExample, QAExample, TaggedSentence, TextExample
from transferlab.data.loaders import SPLIT_RULES, path_examples, path_texts, texts


def test_split_rules_are_documented_deterministic_partitions():
    by_file = [SPLIT_RULES["every-20th-file"](i, 233, "") for i in range(233)]
    assert (by_file.count("valid"), by_file.count("test"), by_file.count("train")) == (12, 11, 210)
    assert by_file[10] == "valid" and by_file[19] == "test" and by_file[0] == "train"
    sick = [SPLIT_RULES["pair-id-mod-10"](0, 0, str(i)) for i in range(1, 101)]
    assert (sick.count("train"), sick.count("valid"), sick.count("test")) == (80, 10, 10)
    articles = [SPLIT_RULES["first-80%-articles"](i, 48, "") for i in range(48)]
    assert articles == ["train"] * 38 + ["test"] * 10


def test_path_formats_by_suffix(tmp_path, write):
    tsv = write("a.tsv", "q\td\ty\nhi\tthere\t1\n")
    assert list(path_examples(tsv, a_col="q", b_col="d", label_col="y")) == [PairExample("hi", "there", "1")]
    txt = write("b.txt", "one\ntwo\n")
    assert list(path_examples(txt)) == [TextExample("one"), TextExample("two")]
    assert list(path_examples(write("c.txt", "x\t0\n"), text_col=0, label_col=1)) == [TextExample("x", "0")]
    conll = write("d.conll", "EU B-ORG\nsaid O\n")
    assert list(path_examples(conll)) == [TaggedSentence(("EU", "said"), ("B-ORG", "O"))]
    conllu = write("e.conllu", "1\tHi\thi\tINTJ\tUH\t_\t0\troot\t_\t_\n")
    assert list(path_examples(conllu)) == [TaggedSentence(("Hi",), ("INTJ",))]
    squad = write("f.json", '{"data": [{"title": "t", "paragraphs": [{"context": "c", "qas": '
                            '[{"id": "1", "question": "q", "answers": []}]}]}]}')
    assert isinstance(next(iter(path_examples(squad))), QAExample)
    assert list(path_texts(tmp_path / "b.txt")) == ["one", "two"]
    assert list(path_texts(tsv, a_col="q", b_col="d")) == ["hi", "there"]


def test_path_errors_name_what_is_missing(write):
    tsv = write("a.tsv", "x\t1\n")
    with pytest.raises(DataError, match="text_col"):
        path_examples(tsv)
    with pytest.raises(DataError, match="format="):
        path_examples(write("a.xml", "<x/>"))


def test_task_names_a_catalog_entry_and_a_file_goes_to_train(write, monkeypatch, tmp_path):
    """``--task my.tsv`` is a user's slip for ``--train my.tsv``: the error says so, naming both flags."""
    from transferlab.data.tasks import TaskDataConfig

    write("mine.tsv", "text\tlabel\ngood\tpos\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"data.task takes a catalog name.*--train mine.tsv"):
        TaskDataConfig(task="mine.tsv")
    assert TaskDataConfig(task="sst2").task == "sst2"  # a catalog name still is one


def test_texts_of_every_example_kind():
    qa = [QAExample("1", "q1?", "ctx"), QAExample("2", "q2?", "ctx"), QAExample("3", "q3?", "other")]
    got = list(texts([TextExample("t"), PairExample("a", "b"), TaggedSentence(("x", "y"), ("1", "2"))] + qa))
    assert got == ["t", "a", "b", "x y", "ctx", "q1?", "q2?", "other", "q3?"]
