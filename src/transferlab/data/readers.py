"""Readers for plain-text, table (TSV/CSV), JSONL and SQuAD files: raw files -> examples.

Every reader streams and is restartable: iterating it reopens the file (gensim's
``LineSentence``), so a corpus larger than memory works and a training loop can read its data
once per epoch. Only SQuAD, a single JSON document, is parsed whole; its examples are still
yielded one at a time.

Tables are split on tabs with quoting *off*. The GLUE-style TSVs are not CSV-quoted: a field
that starts with ``"`` is literal text, and a quoting reader would swallow the following rows
up to the next quote (MRPC, STS-B, AG News and RTE all have such rows). Only ``.csv`` files (or
an explicit non-tab ``delimiter``) go through the ``csv`` module with quoting on.

Columns are chosen by header name or by 0-based index and mapped to roles (``text``, ``label``,
``a``, ``b``). A row with more fields than the header (or, without a header, than the first
row) is a :class:`DataError` naming the line and the counts, like a row with too few: a stray tab
inside a text would otherwise shift the label silently. ``ignore_extra=True`` (``--data.extra_columns
=ignore``; the catalog's STS-B, whose rows carry extra source columns) ignores the extra fields.
Fields beyond the header that are all blank (a trailing tab) are harmless and accepted. Empty
text and a missing label are DataErrors too. The
CoNLL readers live in :mod:`transferlab.data.conll` and are re-exported here.
"""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path

from transferlab.data.conll import ConllReader, ConlluReader
from transferlab.data.errors import DataError
from transferlab.data.examples import Analogy, Answer, PairExample, QAExample, TextExample
from transferlab.data.lines import PathLike, Stream, check_file, decode_whole, iter_lines, line_of_offset

__all__ = [
    "TextLines", "TableReader", "JsonlReader", "SquadReader", "ConllReader", "ConlluReader",
    "read_text_examples", "read_pair_examples", "read_word_pairs", "read_analogies",
]

Column = str | int
JSONL_SUFFIXES = (".jsonl", ".ndjson")


class TextLines:
    """One sentence or document per line, stripped; from a file, a folder of ``*.txt`` or a list.

    A folder is read as its ``*.txt`` files in sorted name order, so the stream is the same on
    every machine. Blank lines are skipped unless ``skip_empty=False``.
    """

    def __init__(self, path_or_paths: PathLike | Iterable[PathLike], skip_empty: bool = True) -> None:
        if isinstance(path_or_paths, (str, Path)) or hasattr(path_or_paths, "__fspath__"):
            path_or_paths = [path_or_paths]
        self.paths: list[Path] = []
        for p in map(Path, path_or_paths):
            if p.is_dir():
                found = sorted(p.glob("*.txt"))
                if not found:
                    raise DataError(p, None, None, "folder holds no *.txt files")
                self.paths.extend(found)
            else:
                self.paths.append(check_file(p))
        self.skip_empty = skip_empty

    def __iter__(self) -> Iterator[str]:
        for path in self.paths:
            for _, line in iter_lines(path):
                line = line.strip()
                if line or not self.skip_empty:
                    yield line

    def __repr__(self) -> str:
        return f"TextLines({[str(p) for p in self.paths]!r})"


def _default_delimiter(path: Path) -> str:
    return "," if path.suffix.lower() == ".csv" else "\t"


def _missing_problem(key: str) -> str:
    return "missing label" if key == "label" else "empty text" if key in ("text", "a", "b") else "missing value"


class TableReader:
    """Rows of a TSV/CSV file as ``dict[role, str | None]``, one per non-blank line.

    ``columns`` maps each role to a header name or a 0-based index, e.g.
    ``{"text": "sentence", "label": "label"}`` or ``{"text": 3, "label": 1}``; ``None`` reads
    every column, keyed by header name (or by index as a string when there is no header).
    ``header=None`` means: the first line is a header iff some column is given by name.
    ``delimiter=None`` picks ``,`` for ``.csv`` and a tab otherwise. Values are stripped; a role
    in ``optional`` (or ``label`` with ``label_optional``) may be empty or absent and is then
    ``None``; any other empty value is a DataError. A row with more non-blank fields than the
    header (or the first row, without one) is a DataError unless ``ignore_extra``.
    """

    def __init__(self, path: PathLike, columns: Mapping[str, Column] | None = None,
                 header: bool | None = None, delimiter: str | None = None,
                 optional: Collection[str] = (), label_optional: bool = False, ignore_extra: bool = False) -> None:
        self.path = check_file(path)
        self.columns = dict(columns) if columns is not None else None
        specs = list(self.columns.values()) if self.columns else []
        self.header = any(isinstance(s, str) for s in specs) if header is None else header
        if not self.header and any(isinstance(s, str) for s in specs):
            named = [s for s in specs if isinstance(s, str)]
            raise DataError(self.path, None, named[0], "a column given by name needs a header line (header=True)")
        self.delimiter = delimiter or _default_delimiter(self.path)
        self.optional = set(optional) | ({"label"} if label_optional else set())
        self.ignore_extra = ignore_extra

    def _records(self) -> Iterator[tuple[int, list[str]]]:
        """``(line, fields)`` per non-blank record; tabs split plainly, other delimiters via csv."""
        if self.delimiter == "\t":
            for number, line in iter_lines(self.path):
                if line.strip():
                    yield number, line.split("\t")
            return
        current = [0]

        def feed() -> Iterator[str]:
            for number, line in iter_lines(self.path, keep_ends=True):
                current[0] = number
                yield line

        start = 1
        try:
            for fields in csv.reader(feed(), delimiter=self.delimiter):
                if any(f.strip() for f in fields):
                    yield start, fields
                start = current[0] + 1
        except csv.Error as e:
            raise DataError(self.path, current[0], None, f"malformed CSV: {e}") from None

    def _index(self, header: list[str] | None, header_line: int) -> dict[str, int]:
        """Role -> column index, resolving header names; unknown names are a DataError."""
        index = {}
        for role, spec in self.columns.items():
            if isinstance(spec, int):
                if spec < 0:
                    raise DataError(self.path, None, role, f"column index must be >= 0, not {spec}")
                index[role] = spec
            elif header is not None and spec in header:
                index[role] = header.index(spec)
            else:
                raise DataError(self.path, header_line, spec, f"no such column; the header has {header}")
        return index

    def numbered(self) -> Iterator[tuple[int, dict[str, str | None]]]:
        """``(line_number, row)`` pairs, for callers that validate values and report the line."""
        records = self._records()
        header, header_line = None, 0
        if self.header:
            first = next(records, None)
            if first is None:
                return
            header_line, fields = first
            header = [f.strip() for f in fields]
        records = self._counted(records, len(header) if header is not None else None, header_line)
        if self.columns is None:  # every column, unvalidated: keyed by header name or position
            for number, fields in records:
                keys = header or [str(i) for i in range(len(fields))]
                values = [f.strip() or None for f in fields] + [None] * (len(keys) - len(fields))
                yield number, dict(zip(keys, values))
            return
        try:
            index = self._index(header, header_line)
        except DataError as e:
            raise DataError(self.path, e.line, e.field, e.problem + self._headerless_hint(header, records)) from None
        for number, fields in records:
            yield number, self._row(number, fields, index, header)

    def _counted(self, records: Iterator[tuple[int, list[str]]], expected: int | None,
                 header_line: int) -> Iterator[tuple[int, list[str]]]:
        """The records, a row with more (non-blank) fields than the header, or than the first row
        of a file without one, being a DataError: a tab or comma inside a text shifts the columns."""
        source = f"the header on line {header_line}" if expected is not None else ""
        for number, fields in records:
            if expected is None:
                expected, source = len(fields), f"line {number}, the first row"
            elif len(fields) > expected and not self.ignore_extra and any(f.strip() for f in fields[expected:]):
                raise DataError(self.path, number, expected,
                                f"expected {expected} columns (as {source}), found {len(fields)}: a "
                                f"{'tab' if self.delimiter == chr(9) else repr(self.delimiter)} inside a text? "
                                "To ignore extra columns pass data.extra_columns=ignore "
                                "(on the command line --data.extra_columns=ignore)")
            yield number, fields

    def _headerless_hint(self, header: list[str] | None, records: Iterator[tuple[int, list[str]]]) -> str:
        """What to type when a named column is not in the first line: if that line looks like a
        row of data (a value it holds recurs in the same column below, or it is a number), say so."""
        hint = ("; if the file has no header line, name the columns by 0-based position "
                "(text_col=0, label_col=1; on the command line --text-col 0 --label-col 1)")
        if not header:
            return hint
        below = [fields for _, fields in itertools.islice(records, 200)]
        for i, name in enumerate(header):
            numeric = name.replace(".", "", 1).lstrip("-").isdigit()
            if numeric or any(i < len(f) and f[i].strip() == name for f in below):
                why = "is a number" if numeric else "is also a value of that column further down"
                return (f"; its first line looks like data, not a header (column {i}: {name!r} {why})" + hint)
        return hint

    def _row(self, number: int, fields: list[str], index: dict[str, int],
             header: list[str] | None) -> dict[str, str | None]:
        row: dict[str, str | None] = {}
        for role, i in index.items():
            value = fields[i].strip() if i < len(fields) else None
            if value:
                row[role] = value
            elif role in self.optional:
                row[role] = None
            elif value is None:
                field = header[i] if header and i < len(header) else role
                need = max(i for r, i in index.items() if r not in self.optional) + 1
                raise DataError(self.path, number, field,
                                f"expected at least {need} columns, found {len(fields)}"
                                + (" (is the delimiter right?)" if len(fields) == 1 else ""))
            else:
                raise DataError(self.path, number, header[i] if header else role, _missing_problem(role))
        return row

    def __iter__(self) -> Iterator[dict[str, str | None]]:
        for _, row in self.numbered():
            yield row


class JsonlReader:
    """One JSON object per line (JSON Lines), yielded as a dict; blank lines are skipped."""

    def __init__(self, path: PathLike) -> None:
        self.path = check_file(path)

    def numbered(self) -> Iterator[tuple[int, dict]]:
        for number, line in iter_lines(self.path):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise DataError(self.path, number, None, f"malformed JSON: {e.msg} at column {e.colno}") from None
            if not isinstance(obj, dict):
                raise DataError(self.path, number, None, f"expected a JSON object, found {type(obj).__name__}")
            yield number, obj

    def __iter__(self) -> Iterator[dict]:
        for _, obj in self.numbered():
            yield obj


def _jsonl_rows(path: PathLike, columns: Mapping[str, Column],
                optional: Collection[str]) -> Iterator[tuple[int, dict[str, str | None]]]:
    """JSONL objects as table-style rows: keys are the columns; scalars become strings."""
    reader = JsonlReader(path)
    for role, key in columns.items():
        if not isinstance(key, str):
            raise DataError(reader.path, None, role, f"JSONL columns are keys (strings), not {key!r}")
    for number, obj in reader.numbered():
        row: dict[str, str | None] = {}
        for role, key in columns.items():
            value = obj.get(key)
            if isinstance(value, (dict, list)):
                raise DataError(reader.path, number, key, f"expected a string or number, found {type(value).__name__}")
            text = "" if value is None else str(value).strip()
            if not text and role not in optional:
                problem = "missing key" if key not in obj else _missing_problem(role)
                raise DataError(reader.path, number, key, problem)
            row[role] = text or None
        yield number, row


def table_rows(path: PathLike, columns: Mapping[str, Column], header: bool | None = None,
               delimiter: str | None = None, optional: Collection[str] = (), ignore_extra: bool = False
               ) -> Iterator[tuple[int, dict[str, str | None]]]:
    """``(line, row)`` from a TSV/CSV or JSONL file, chosen by suffix; the examples' common source."""
    if Path(path).suffix.lower() in JSONL_SUFFIXES:
        return _jsonl_rows(path, columns, optional)
    return TableReader(path, columns, header=header, delimiter=delimiter, optional=optional,
                       ignore_extra=ignore_extra).numbered()


def read_text_examples(path: PathLike, text_col: Column, label_col: Column | None = None,
                       header: bool | None = None, delimiter: str | None = None,
                       label_optional: bool = False, ignore_extra: bool = False) -> Stream[TextExample]:
    """TextExamples from a TSV/CSV/JSONL file: ``--train my.tsv --text-col review --label-col stars``."""
    columns = {"text": text_col} if label_col is None else {"text": text_col, "label": label_col}
    optional = ("label",) if label_optional else ()
    check_file(path)

    def _examples() -> Iterator[TextExample]:
        for _, row in table_rows(path, columns, header, delimiter, optional, ignore_extra):
            yield TextExample(row["text"], row.get("label"))

    return Stream(_examples)


def read_pair_examples(path: PathLike, a_col: Column, b_col: Column, label_col: Column | None = None,
                       header: bool | None = None, delimiter: str | None = None,
                       label_optional: bool = False, ignore_extra: bool = False) -> Stream[PairExample]:
    """PairExamples (sentence pairs: paraphrase, NLI, similarity) from a TSV/CSV/JSONL file."""
    columns: dict[str, Column] = {"a": a_col, "b": b_col}
    if label_col is not None:
        columns["label"] = label_col
    optional = ("label",) if label_optional else ()
    check_file(path)

    def _examples() -> Iterator[PairExample]:
        for _, row in table_rows(path, columns, header, delimiter, optional, ignore_extra):
            yield PairExample(row["a"], row["b"], row.get("label"))

    return Stream(_examples)


def _need(obj: dict, key: str, kind: type | tuple[type, ...], path: Path, where: str):
    """``obj[key]`` if it has the type SQuAD's schema says; otherwise a DataError naming the key."""
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        kinds = kind if isinstance(kind, tuple) else (kind,)
        found = "nothing" if value is None else f"a {type(value).__name__}"
        raise DataError(path, None, key, f"{where}: expected {' or '.join(k.__name__ for k in kinds)}, found {found}")
    return value


class SquadReader:
    """QAExamples from a SQuAD v1.1 or v2.0 JSON file (v2.0 adds ``is_impossible``).

    The JSON is parsed whole (it is one document) on each iteration; examples are yielded
    lazily. ``articles(i, n)``, if given, keeps article ``i`` of ``n``: the catalog splits a dev
    set into train and test by article this way, so that no context is shared across the split.
    """

    def __init__(self, path: PathLike, articles: Callable[[int, int], bool] | None = None) -> None:
        self.path = check_file(path)
        self.articles = articles

    def _articles(self) -> list:
        try:
            doc = json.loads(decode_whole(self.path))
        except json.JSONDecodeError as e:
            line = line_of_offset(self.path.read_bytes(), len(e.doc[: e.pos].encode("utf-8")))
            raise DataError(self.path, line, None, f"malformed JSON: {e.msg}") from None
        if not isinstance(doc, dict):
            raise DataError(self.path, None, None, "expected a SQuAD JSON object with a 'data' list")
        return _need(doc, "data", list, self.path, "top level")

    def __iter__(self) -> Iterator[QAExample]:
        articles = self._articles()
        for i, article in enumerate(articles):
            if self.articles is None or self.articles(i, len(articles)):
                yield from self._article_examples(article, i)

    def _article_examples(self, article: dict, i: int) -> Iterator[QAExample]:
        title = str(article.get("title", ""))
        for paragraph in _need(article, "paragraphs", list, self.path, f"article {i} ({title!r})"):
            context = _need(paragraph, "context", str, self.path, f"article {i} ({title!r})")
            for qa in _need(paragraph, "qas", list, self.path, f"article {i} ({title!r})"):
                qid = str(_need(qa, "id", (str, int), self.path, f"article {i}"))
                answers = tuple(
                    Answer(str(_need(a, "text", str, self.path, f"question {qid}")),
                           int(_need(a, "answer_start", int, self.path, f"question {qid}")))
                    for a in qa.get("answers", ()))
                yield QAExample(id=qid, question=str(_need(qa, "question", str, self.path, f"question {qid}")),
                                context=context, answers=answers,
                                is_impossible=bool(qa.get("is_impossible", False)), title=title)


def read_word_pairs(path: PathLike) -> Stream[PairExample]:
    """Word-similarity pairs (WordSim-353, SimLex-999 as gensim ships them): ``w1 w2 score``.

    Lines starting with ``#`` are comments. The score stays a string in ``label``.
    """
    check_file(path)

    def _pairs() -> Iterator[PairExample]:
        for number, line in iter_lines(path):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            fields = line.split("\t") if "\t" in line else line.split()
            if len(fields) < 3:
                raise DataError(path, number, None, f"expected 'word1 word2 score', found {len(fields)} fields")
            try:
                float(fields[2])
            except ValueError:
                raise DataError(path, number, "score", f"not a number: {fields[2]!r}") from None
            yield PairExample(fields[0].strip(), fields[1].strip(), fields[2].strip())

    return Stream(_pairs)


def read_analogies(path: PathLike) -> Stream[Analogy]:
    """Analogy questions in the word2vec ``questions-words.txt`` format (``: section`` headers)."""
    check_file(path)

    def _analogies() -> Iterator[Analogy]:
        section = ""
        for number, line in iter_lines(path):
            if line.startswith(":"):
                section = line[1:].strip()
                continue
            words = line.split()
            if not words:
                continue
            if len(words) != 4:
                raise DataError(path, number, None, f"expected 4 words, found {len(words)}")
            yield Analogy(*words, section=section)

    return Stream(_analogies)
