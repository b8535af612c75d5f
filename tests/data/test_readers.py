"""Readers on small synthetic files: quirks handled, every error located, every reader restartable."""

import json

import pytest

from transferlab.data.errors import DataError
from transferlab.data.examples import Analogy, Answer, PairExample, TextExample
from transferlab.data.readers import (JsonlReader, SquadReader, TableReader, TextLines, read_analogies,
                                      read_pair_examples, read_text_examples, read_word_pairs)


def _error(fn) -> DataError:
    with pytest.raises(DataError) as info:
        fn()
    return info.value


# ---- TextLines ------------------------------------------------------------------------------

def test_text_lines_strips_skips_blanks_and_restarts(write):
    path = write("c.txt", "\ufeff first line \r\n\n  \nsecond\x02line\nlast")
    lines = TextLines(path)
    assert list(lines) == ["first line", "second\x02line", "last"]
    assert list(lines) == list(lines)
    assert list(TextLines(path, skip_empty=False)) == ["first line", "", "", "second\x02line", "last"]


def test_text_lines_folder_sorted_and_list(tmp_path, write):
    write("corpus/b.txt", "bee\n")
    write("corpus/a.txt", "ay\n")
    write("corpus/notes.md", "ignored\n")
    assert list(TextLines(tmp_path / "corpus")) == ["ay", "bee"]
    assert list(TextLines([tmp_path / "corpus" / "b.txt", str(tmp_path / "corpus" / "a.txt")])) == ["bee", "ay"]


def test_text_lines_missing_file(tmp_path):
    assert "no such file" in str(_error(lambda: TextLines(tmp_path / "nope.txt")))


# ---- tables ---------------------------------------------------------------------------------

def test_tsv_by_header_name_strips_trailing_space(write):
    path = write("t.tsv", "sentence\tlabel\nit 's fine \t1\nbad \t0")
    rows = list(TableReader(path, {"text": "sentence", "label": "label"}))
    assert rows == [{"text": "it 's fine", "label": "1"}, {"text": "bad", "label": "0"}]


def test_tsv_quotes_are_text_not_quoting(write):
    # A CSV-style reader would merge these rows up to the next quote (MRPC, STS-B, RTE have such rows).
    path = write("q.tsv", '"Hello, he said\t1\nplain\t0\nend" quote\t1\n')
    texts = [e.text for e in read_text_examples(path, 0, 1)]
    assert texts == ['"Hello, he said', "plain", 'end" quote']


def test_tsv_extra_columns_ignored_when_asked_and_bom_header(write):
    path = write("p.tsv", "\ufeffQuality\tA\tB\n1\tx\ty\textra\tmore\n")
    assert list(read_pair_examples(path, "A", "B", "Quality", ignore_extra=True)) == [PairExample("x", "y", "1")]
    err = _error(lambda: list(read_pair_examples(path, "A", "B", "Quality")))  # not asked: an error (issue 24)
    assert (err.line, err.field) == (2, 3) and "expected 3 columns" in str(err) and "found 5" in str(err)


def test_csv_quoting_with_line_numbers(write):
    path = write("c.csv", 'review,stars\n"good, really",5\n"multi\nline",4\n"",3\n')
    err = _error(lambda: list(read_text_examples(path, "review", "stars")))
    assert (err.line, err.field) == (5, "review") and "empty text" in str(err)
    good = write("g.csv", 'review,stars\n"good, really",5\n')
    assert list(read_text_examples(good, "review", "stars")) == [TextExample("good, really", "5")]


def test_too_few_columns_names_file_line_field(write):
    path = write("few.tsv", "text\tlabel\nok\t1\nno label here\n")
    err = _error(lambda: list(read_text_examples(path, "text", "label")))
    assert str(path) in str(err) and err.line == 3 and err.field == "label"
    assert "expected at least 2 columns, found 1" in str(err)


def test_empty_text_and_missing_label(write):
    path = write("e.tsv", "a\t1\n \t0\n")
    err = _error(lambda: list(read_text_examples(path, 0, 1)))
    assert (err.line, err.field, err.problem) == (2, "text", "empty text")
    path = write("m.tsv", "sentence\tlabel\nfine\t1\nlabelless\t \n")
    err = _error(lambda: list(read_text_examples(path, "sentence", "label")))
    assert str(err) == f"{path}, line 3, field 'label': missing label"


def test_label_optional(write):
    path = write("u.tsv", "a\t1\nb\t\nc\n")
    got = list(read_text_examples(path, 0, 1, label_optional=True))
    assert got == [TextExample("a", "1"), TextExample("b", None), TextExample("c", None)]


def test_unknown_column_name_and_name_without_header(write):
    path = write("h.tsv", "sentence\tlabel\nx\t1\n")
    err = _error(lambda: list(read_text_examples(path, "review", "label")))
    assert err.field == "review" and err.line == 1 and "sentence" in err.problem
    assert "header" in str(_error(lambda: TableReader(path, {"text": "sentence"}, header=False)))


def test_table_invalid_utf8(write):
    path = write("bad.tsv", b"ok\t1\nbad \xe9 latin-1\t0\n")
    err = _error(lambda: list(read_text_examples(path, 0, 1)))
    assert err.line == 2 and "UTF-8" in err.problem


def test_all_columns_and_numbered(write):
    path = write("all.tsv", "a\tb\tc\n1\t\t3\n4\t5\n")
    assert list(TableReader(path, header=True)) == [{"a": "1", "b": None, "c": "3"}, {"a": "4", "b": "5", "c": None}]
    assert [n for n, _ in TableReader(path, {"x": 0}, header=True).numbered()] == [2, 3]


def test_table_examples_restart(write):
    path = write("r.tsv", "a\t1\nb\t0\n")
    examples = read_text_examples(path, 0, 1)
    assert list(examples) == list(examples) == [TextExample("a", "1"), TextExample("b", "0")]


# ---- JSONL ----------------------------------------------------------------------------------

def test_jsonl_examples_by_key(write):
    path = write("d.jsonl", '{"review": "great", "stars": 5}\n\n{"review": "meh", "stars": 2}\n')
    assert list(read_text_examples(path, "review", "stars")) == [TextExample("great", "5"), TextExample("meh", "2")]
    pairs = write("p.jsonl", '{"q": "a?", "d": "b.", "y": "yes"}\n')
    assert list(read_pair_examples(pairs, "q", "d", "y")) == [PairExample("a?", "b.", "yes")]


def test_jsonl_malformed_and_missing_key(write):
    path = write("bad.jsonl", '{"text": "ok"}\n{"text": "broken"\n')
    err = _error(lambda: list(JsonlReader(path)))
    assert err.line == 2 and "malformed JSON" in err.problem and str(path) in str(err)
    path = write("miss.jsonl", '{"text": "ok", "label": 1}\n{"text": "no label"}\n')
    err = _error(lambda: list(read_text_examples(path, "text", "label")))
    assert (err.line, err.field) == (2, "label")
    path = write("arr.jsonl", "[1, 2]\n")
    assert "JSON object" in str(_error(lambda: list(JsonlReader(path))))


# ---- SQuAD ----------------------------------------------------------------------------------

def _squad(write, data):
    return write("squad.json", json.dumps({"version": "v2.0", "data": data}, indent=1))


def test_squad_examples_and_article_filter(write):
    path = _squad(write, [
        {"title": "A", "paragraphs": [{"context": "Paris is in France.", "qas": [
            {"id": "q1", "question": "Where is Paris?", "answers": [{"text": "France", "answer_start": 12}]},
            {"id": "q2", "question": "Who?", "answers": [], "is_impossible": True}]}]},
        {"title": "B", "paragraphs": [{"context": "x", "qas": [{"id": "q3", "question": "y", "answers": []}]}]},
    ])
    got = list(SquadReader(path))
    assert [q.id for q in got] == ["q1", "q2", "q3"]
    assert got[0].answers == (Answer("France", 12),) and got[0].title == "A"
    assert got[1].is_impossible and not got[0].is_impossible
    assert [q.id for q in SquadReader(path, articles=lambda i, n: i == 1)] == ["q3"]


def test_squad_malformed_json_and_schema(write):
    path = write("broken.json", '{"data": [\n  {"title": "A",\n   "paragraphs": [}\n]}')
    err = _error(lambda: list(SquadReader(path)))
    assert err.line == 3 and "malformed JSON" in err.problem
    path = _squad(write, [{"title": "A", "paragraphs": [{"context": "c"}]}])
    err = _error(lambda: list(SquadReader(path)))
    assert err.field == "qas" and "article 0" in err.problem


# ---- word-vector evaluation files -------------------------------------------------------------

def test_word_pairs_and_analogies(write):
    pairs = write("ws.tsv", "# comment\n# Word 1\tWord 2\tHuman (mean)\nlove\tsex\t6.77\ntiger cat 7.35\n")
    assert list(read_word_pairs(pairs)) == [PairExample("love", "sex", "6.77"), PairExample("tiger", "cat", "7.35")]
    bad = write("bad.tsv", "a\tb\tnot-a-number\n")
    assert _error(lambda: list(read_word_pairs(bad))).field == "score"
    q = write("q.txt", ": capital\nAthens Greece Baghdad Iraq\n: family\nboy girl brother sister\n")
    assert list(read_analogies(q))[1] == Analogy("boy", "girl", "brother", "sister", "family")
    bad = write("bq.txt", ": s\na b c\n")
    assert _error(lambda: list(read_analogies(bad))).line == 2


def test_a_headerless_table_is_named_with_the_fix(tmp_path):
    from transferlab.data.readers import read_text_examples

    path = tmp_path / "h.tsv"
    path.write_text("great fun\tpos\nawful\tneg\nloved it\tpos\n")
    with pytest.raises(DataError) as info:
        list(read_text_examples(path, "text", "label"))
    message = str(info.value)
    assert "looks like data, not a header (column 1: 'pos' is also a value" in message
    assert "--text-col 0 --label-col 1" in message
    assert [e.label for e in read_text_examples(path, 0, 1)] == ["pos", "neg", "pos"]  # as the message says
    (tmp_path / "n.tsv").write_text("1\tgood\n0\tbad\n")
    with pytest.raises(DataError, match="column 0: '1' is a number"):
        list(read_text_examples(tmp_path / "n.tsv", "text", "label"))
