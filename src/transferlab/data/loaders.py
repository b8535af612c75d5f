"""From a resolved catalog entry (or a user's path) to a restartable stream of examples or text.

One loader per file format (:data:`EXAMPLE_LOADERS`), each knowing its datasets' quirks through
the entry (columns, header, labels), and the splits we define where the publisher has none
(:data:`SPLIT_RULES`, all deterministic, so every machine sees the same split):

- ``every-20th-file`` (SOTU, Shakespeare: one file per address or play): files in sorted name
  order; index ``i % 20 == 10`` is ``valid``, ``i % 20 == 19`` is ``test``, the rest ``train``
  (about 90/5/5, spread over the years for SOTU; whole documents never straddle a split).
- ``pair-id-mod-10`` (SICK, whose split column this copy lacks): ``pair_ID % 10 == 8`` is
  ``valid``, ``== 9`` is ``test``, the rest ``train`` (about 80/10/10).
- ``first-80%-articles`` (SQuAD, only dev sets offline): articles in file order, the first
  ``floor(0.8 n)`` are ``train``, the rest ``test``, so no paragraph is in both.

:func:`texts` turns any examples into text lines for language-model (fine-)tuning.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from transferlab.data.conll import ConllReader, ConlluReader
from transferlab.data.errors import DataError
from transferlab.data.examples import PairExample, ParsedSentence, QAExample, TaggedSentence, TextExample
from transferlab.data.lines import Stream, chain_streams
from transferlab.data.readers import (Column, SquadReader, TextLines, read_analogies, read_pair_examples,
                                      read_text_examples, read_word_pairs, table_rows)

if TYPE_CHECKING:
    from transferlab.data.entries import CatalogEntry

__all__ = ["SPLIT_RULES", "EXAMPLE_LOADERS", "PATH_SUFFIXES", "entry_examples", "entry_texts",
           "path_examples", "path_texts", "texts", "chain_streams"]

PATH_SUFFIXES = (".txt", ".tsv", ".csv", ".jsonl", ".ndjson", ".json", ".conll", ".conllu")


def _every_20th(index: int, count: int, key: str) -> str:
    return {10: "valid", 19: "test"}.get(index % 20, "train")


def _pair_id_mod_10(index: int, count: int, key: str) -> str:
    return {8: "valid", 9: "test"}.get(int(key) % 10, "train")


def _first_80_percent(index: int, count: int, key: str) -> str:
    return "train" if index < int(0.8 * count) else "test"


# rule(index, count, key) -> split of the item (a file, a row with id ``key``, an article).
SPLIT_RULES: dict[str, Callable[[int, int, str], str]] = {
    "every-20th-file": _every_20th,
    "pair-id-mod-10": _pair_id_mod_10,
    "first-80%-articles": _first_80_percent,
}


def _documents(key: str, entry: CatalogEntry, folder: Path, split: str) -> TextLines:
    files = sorted(folder.glob(entry.splits[split]))
    rule = SPLIT_RULES[entry.split_rule] if entry.split_rule else None
    chosen = [f for i, f in enumerate(files) if rule is None or rule(i, len(files), f.name) == split]
    return TextLines(chosen)


def _load_lines(key: str, entry: CatalogEntry, folder: Path, split: str) -> Stream[TextExample]:
    if entry.format == "lines":
        lines = TextLines(folder / entry.splits[split])
    else:
        lines = _documents(key, entry, folder, split)
    return Stream(lambda: (TextExample(line) for line in lines))


def _load_table(key: str, entry: CatalogEntry, folder: Path, split: str,
                text_col: Column | None = None, label_col: Column | None = None,
                a_col: Column | None = None, b_col: Column | None = None, header: bool | None = None,
                delimiter: str | None = None, label_optional: bool = False) -> Stream:
    columns = dict(entry.columns)
    if text_col is not None:  # a pair dataset read as single texts, or another text column
        columns = {k: v for k, v in columns.items() if k not in ("a", "b")} | {"text": text_col}
    if a_col is not None or b_col is not None:
        columns.pop("text", None)
        columns.update({k: v for k, v in (("a", a_col), ("b", b_col)) if v is not None})
    if label_col is not None:
        columns["label"] = label_col
    # Only the catalog's own label column has a fixed label set (not, say, SICK relatedness).
    labels = entry.labels if label_col is None else ()
    path = folder / entry.splits[split]
    rule = SPLIT_RULES[entry.split_rule] if entry.split_rule else None
    optional = ("label",) if label_optional else ()

    def _examples() -> Iterator[TextExample | PairExample]:
        for line, row in table_rows(path, columns, entry.header if header is None else header, delimiter, optional,
                                    ignore_extra=entry.extra_columns):
            if rule is not None and rule(0, 0, row["id"]) != split:
                continue
            label = row.get("label")
            if labels and label is not None and label not in labels:
                raise DataError(path, line, entry.columns.get("label"),
                                f"unexpected label {label!r}; {key} labels are {', '.join(labels)}")
            yield TextExample(row["text"], label) if "text" in columns else PairExample(row["a"], row["b"], label)

    return Stream(_examples)


def _load_conll(key: str, entry: CatalogEntry, folder: Path, split: str, tags: str | int = -1) -> ConllReader:
    return ConllReader(folder / entry.splits[split], columns=entry.layout or None, tag_col=tags)


def _load_conllu(key: str, entry: CatalogEntry, folder: Path, split: str,
                 tags: str = "upos", parsed: bool = False) -> Iterable:
    reader = ConlluReader(folder / entry.splits[split])
    return reader if parsed else reader.tagged(tags)


def _load_squad(key: str, entry: CatalogEntry, folder: Path, split: str) -> SquadReader:
    rule = SPLIT_RULES[entry.split_rule] if entry.split_rule else None
    return SquadReader(folder / entry.splits[split],
                       articles=None if rule is None else (lambda i, n: rule(i, n, "") == split))


def _load_wordvec_eval(key: str, entry: CatalogEntry, folder: Path, split: str) -> Stream:
    path = folder / entry.splits[split]
    return read_analogies(path) if split == "analogies" else read_word_pairs(path)


# Entry format -> loader(key, entry, folder, split, **options) -> restartable examples.
EXAMPLE_LOADERS: dict[str, Callable[..., Iterable]] = {
    "lines": _load_lines, "documents": _load_lines, "table": _load_table, "conll": _load_conll,
    "conllu": _load_conllu, "squad": _load_squad, "wordvec-eval": _load_wordvec_eval,
}


def _options(key: str, fn: Callable, options: dict) -> None:
    """Reject options a loader does not take, naming them (``load_examples('sst2', tags=...)``)."""
    accepted = [p for p in inspect.signature(fn).parameters if p not in ("key", "entry", "folder", "split")]
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        takes = ", ".join(f"{a}=" for a in accepted) or "no options"
        raise DataError(None, None, unknown[0], f"{key} does not take {unknown[0]}=; it takes {takes}")


def entry_examples(key: str, entry: CatalogEntry, folder: Path, split: str, **options) -> Iterable:
    """The examples of one split of a resolved catalog entry."""
    loader = EXAMPLE_LOADERS.get(entry.format)
    if loader is None:
        raise DataError(folder, None, None, f"{key} is a {entry.kind}, not a dataset: load it with its own module")
    _options(key, loader, options)
    return loader(key, entry, folder, split, **options)


def texts(examples: Iterable) -> Iterator[str]:
    """Text lines of any examples: both sides of pairs, contexts (once) and questions for QA."""
    context = None
    for ex in examples:
        if isinstance(ex, TextExample):
            yield ex.text
        elif isinstance(ex, PairExample):
            yield ex.text_a
            yield ex.text_b
        elif isinstance(ex, ParsedSentence):
            yield ex.text or " ".join(ex.tokens)
        elif isinstance(ex, TaggedSentence):
            yield " ".join(ex.tokens)
        elif isinstance(ex, QAExample):
            if ex.context != context:  # a paragraph's questions are consecutive
                context = ex.context
                yield context
            yield ex.question
        else:
            raise DataError(None, None, None, f"no text in a {type(ex).__name__}")


def entry_texts(key: str, entry: CatalogEntry, folder: Path, split: str, **options) -> Iterable[str]:
    """Text lines of one split: a corpus's lines, or the texts of a dataset's examples."""
    if entry.format == "lines" and not options:
        return TextLines(folder / entry.splits[split])
    if entry.format == "documents" and not options:
        return _documents(key, entry, folder, split)
    if entry.format == "wordvec-eval":
        raise DataError(folder, None, None, f"{key} holds word lists for evaluation, not text")
    examples = entry_examples(key, entry, folder, split, **options)
    return Stream(texts, examples)


def _format_of(path: Path, has_columns: bool) -> str:
    suffix = path.suffix.lower()
    if path.is_dir():
        return "lines"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    if suffix == ".json":
        return "squad"
    if suffix in (".conll", ".conllu"):
        return suffix[1:]
    if suffix in (".tsv", ".csv") or (suffix == ".txt" and has_columns):
        return "table"
    if suffix == ".txt":
        return "lines"
    raise DataError(path, None, None, f"cannot tell the format from {suffix or 'no suffix'!r}; "
                    "pass format='lines'|'table'|'jsonl'|'conll'|'conllu'|'squad'")


def path_examples(path: Path, format: str | None = None, text_col: Column | None = None,
                  label_col: Column | None = None, a_col: Column | None = None, b_col: Column | None = None,
                  header: bool | None = None, delimiter: str | None = None, label_optional: bool = False,
                  tags: str | int | None = None, parsed: bool = False,
                  columns: tuple[str, ...] | None = None, ignore_extra: bool = False) -> Iterable:
    """Examples from a user's file or folder, its format chosen by suffix unless ``format``."""
    fmt = format or _format_of(path, any(c is not None for c in (text_col, a_col, b_col)))
    if fmt == "lines":
        lines = TextLines(path)
        return Stream(lambda: (TextExample(line) for line in lines))
    if fmt in ("table", "jsonl"):
        if a_col is not None and b_col is not None:
            return read_pair_examples(path, a_col, b_col, label_col, header, delimiter, label_optional, ignore_extra)
        if text_col is None:
            raise DataError(path, None, None, "say which column holds the text: text_col=... "
                            "(or a_col=... and b_col=... for sentence pairs)")
        return read_text_examples(path, text_col, label_col, header, delimiter, label_optional, ignore_extra)
    if fmt == "conll":
        return ConllReader(path, columns=columns, tag_col=-1 if tags is None else tags)
    if fmt == "conllu":
        reader = ConlluReader(path)
        return reader if parsed else reader.tagged(tags or "upos")
    if fmt == "squad":
        return SquadReader(path)
    raise DataError(path, None, "format", f"unknown format {fmt!r}")


def path_texts(path: Path, **options) -> Iterable[str]:
    """Text lines of a user's file or folder (a ``.txt`` or a folder of them: its lines; a JSONL
    file: its ``text`` field unless ``text_col`` names another, other fields ignored)."""
    fmt = options.get("format") or _format_of(path, False)
    if not options and fmt == "lines":
        return TextLines(path)
    if fmt == "jsonl" and all(options.get(c) is None for c in ("text_col", "a_col", "b_col")):
        options = {"ignore_extra": True, "label_optional": True, **options, "text_col": "text"}
    return Stream(texts, path_examples(path, **options))
