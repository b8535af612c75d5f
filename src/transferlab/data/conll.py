"""Readers for CoNLL column files (CoNLL-2000/2003 chunking and NER) and CoNLL-U (Universal
Dependencies): one token per line, a blank line between sentences.

CoNLL-2003 lines are ``word POS chunk NER`` separated by spaces, with ``-DOCSTART-`` lines
between documents; any of the columns can be the tags (``tag_col=3`` or ``tag_col="ner"``).
CoNLL-U has ten tab-separated fields per word (https://universaldependencies.org/format.html);
multiword-token ranges (``1-2``) and empty nodes (``1.1``) are skipped, so ``tokens`` are the
syntactic words that ``heads`` index. Both readers stream and restart on each iteration.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from transferlab.data.errors import DataError
from transferlab.data.examples import ParsedSentence, TaggedSentence
from transferlab.data.lines import PathLike, Stream, check_file, iter_lines

CONLLU_FIELDS = ("ID", "FORM", "LEMMA", "UPOS", "XPOS", "FEATS", "HEAD", "DEPREL", "DEPS", "MISC")


def _unmark(line: str) -> str:
    """The line without byte-order marks: a BOM alone on a line (files concatenated from several
    UTF-8-with-BOM parts) is a sentence break like any whitespace-only line, and one glued to a
    token is not part of it."""
    return line.replace("\ufeff", "")


def _split(line: str) -> list[str]:
    # Tab-separated files may hold spaces inside a field; space-separated ones (CoNLL-2003) can't.
    return line.split("\t") if "\t" in line else line.split()


class ConllReader:
    """TaggedSentences from a CoNLL column file: tokens from ``token_col``, tags from ``tag_col``.

    ``columns`` names the columns (``("word", "pos", "chunk", "ner")``) so that ``tag_col`` can
    be a name and every row is checked to have that many; without it, every row must have as
    many columns as the first. ``rows()`` gives every column of every token instead.
    """

    def __init__(self, path: PathLike, columns: Sequence[str] | None = None,
                 tag_col: int | str = -1, token_col: int | str = 0,
                 doc_start: str = "-DOCSTART-") -> None:
        self.path = check_file(path)
        self.columns = tuple(columns) if columns is not None else None
        self.tag_col = self._index(tag_col)
        self.token_col = self._index(token_col)
        self.doc_start = doc_start

    def _index(self, col: int | str) -> int:
        if isinstance(col, int):
            if self.columns is not None and not -len(self.columns) <= col < len(self.columns):
                raise DataError(self.path, None, col, f"no such column in {self.columns}")
            return col
        if self.columns is None:
            raise DataError(self.path, None, col, "the file's columns have no names: name them with --columns "
                            "word,pos,ner (data.columns; columns=(...) in Python) or give the column's 0-based "
                            "index, --tags 3")
        if col not in self.columns:
            raise DataError(self.path, None, col, f"no such column; the columns are {', '.join(self.columns)}")
        return self.columns.index(col)

    def rows(self) -> Stream[list[tuple[str, ...]]]:
        """Per sentence, the list of its token rows with every column (restartable)."""
        return Stream(self._sentences)

    def _sentences(self) -> Iterator[list[tuple[str, ...]]]:
        width = len(self.columns) if self.columns is not None else None
        sentence: list[tuple[str, ...]] = []
        for number, line in iter_lines(self.path):
            fields = _split(_unmark(line).strip())
            if not fields:  # a blank or whitespace-only line (tabs, U+00A0, a BOM): end of sentence
                if sentence:
                    yield sentence
                sentence = []
                continue
            if fields[0] == self.doc_start:
                continue
            if width is None:
                width = len(fields)
            if len(fields) != width:
                field = self.columns[min(len(fields), width - 1)] if self.columns else None
                raise DataError(self.path, number, field, f"expected {width} columns, found {len(fields)}")
            sentence.append(tuple(fields))
        if sentence:  # the last sentence, when the file has no final blank line
            yield sentence

    def __iter__(self) -> Iterator[TaggedSentence]:
        for rows in self._sentences():
            yield TaggedSentence(tuple(r[self.token_col] for r in rows), tuple(r[self.tag_col] for r in rows))


class ConlluReader:
    """ParsedSentences from a CoNLL-U file; ``tagged("upos")`` gives TaggedSentences instead."""

    def __init__(self, path: PathLike) -> None:
        self.path = check_file(path)

    def tagged(self, tags: str = "upos") -> Stream[TaggedSentence]:
        """TaggedSentences with ``tags`` one of ``upos``, ``xpos``, ``deprels``, ``lemmas``."""
        ParsedSentence((), (), (), (), (), ()).tagged(tags)  # reject a bad name now, not mid-epoch
        return Stream(lambda: (s.tagged(tags) for s in self))

    def __iter__(self) -> Iterator[ParsedSentence]:
        comments: dict[str, str] = {}
        words: list[list[str]] = []
        for number, line in iter_lines(self.path):
            line = _unmark(line)
            if line.startswith("#"):
                key, sep, value = line[1:].partition("=")
                if sep:
                    comments.setdefault(key.strip(), value.strip())
                continue
            if not line.strip():
                if words:
                    yield self._sentence(words, comments)
                words, comments = [], {}
                continue
            fields = line.split("\t")
            if len(fields) != 10:
                raise DataError(self.path, number, None,
                                f"expected 10 tab-separated fields, found {len(fields)}")
            word_id = fields[0]
            if "-" in word_id or "." in word_id:  # multiword-token range or empty node
                continue
            if not word_id.isdigit():
                raise DataError(self.path, number, "ID", f"not a word index: {word_id!r}")
            if not fields[6].isdigit():
                raise DataError(self.path, number, "HEAD", f"not a word index: {fields[6]!r}")
            if not fields[1]:
                raise DataError(self.path, number, "FORM", "empty text")
            words.append(fields)
        if words:  # the last sentence, when the file has no final blank line
            yield self._sentence(words, comments)

    @staticmethod
    def _sentence(words: list[list[str]], comments: dict[str, str]) -> ParsedSentence:
        columns = list(zip(*words))
        return ParsedSentence(
            tokens=columns[1], lemmas=columns[2], upos=columns[3], xpos=columns[4],
            heads=tuple(int(h) for h in columns[6]), deprels=columns[7],
            text=comments.get("text", ""), sent_id=comments.get("sent_id", ""),
        )
