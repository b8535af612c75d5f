"""Reading text files one line at a time, with decode errors that name the line.

Every reader in ``transferlab.data`` is built on :func:`iter_lines`. It reads *bytes* and decodes
each line on its own, so that invalid UTF-8 becomes a :class:`DataError` with the line number
(a text-mode ``open`` reports only a byte offset into a buffer) and so that only ``\\n`` ends a
line: Python's universal newlines would also split on a lone ``\\r``, and ``str.splitlines`` on
U+2028 and on control characters such as U+001C, none of which end a record in these files.

It also absorbs the publishers' quirks once for everyone: a UTF-8 byte-order mark on the first
line (MRPC), ``\\r\\n`` endings, and a last line without a final newline (CoLA dev, SICK).

:class:`Stream` turns a generator function into a restartable iterable (gensim's
``LineSentence`` idea): each ``iter()`` starts the generator afresh, so a corpus can be read
once per epoch without being held in memory.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Generic, TypeVar

from transferlab.data.errors import DataError

T = TypeVar("T")
PathLike = str | os.PathLike[str]


def iter_lines(path: PathLike, keep_ends: bool = False) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` for each line of a UTF-8 file, numbered from 1.

    The line ending (``\\n`` or ``\\r\\n``) is removed unless ``keep_ends`` (the ``csv`` module
    wants it, to see quoted newlines); other whitespace and control characters are kept.
    """
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8):]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                snippet = raw[max(0, e.start - 10): e.start + 10]
                raise DataError(
                    path, number, None,
                    f"invalid UTF-8 (byte {raw[e.start]:#04x} at column {e.start + 1}, near {snippet!r}); "
                    "the file must be UTF-8 encoded",
                ) from None
            if not keep_ends:
                text = text[:-1] if text.endswith("\n") else text
                text = text[:-1] if text.endswith("\r") else text
            yield number, text


def line_of_offset(data: bytes, offset: int) -> int:
    """The 1-based line number of a byte offset, for errors found in a whole-file parse (JSON)."""
    return data.count(b"\n", 0, offset) + 1


def decode_whole(path: PathLike) -> str:
    """Read a whole file as UTF-8 (BOM allowed); a decode error names its line.

    Only for formats that must be parsed as a whole, such as SQuAD's single JSON document.
    """
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DataError(path, line_of_offset(data, e.start), None,
                        f"invalid UTF-8 (byte {data[e.start]:#04x}); the file must be UTF-8 encoded") from None


def check_file(path: PathLike) -> Path:
    """``path`` as a Path, or a DataError that says the file is missing (before any reading)."""
    p = Path(path)
    if not p.is_file():
        problem = "is a folder, not a file" if p.is_dir() else "no such file"
        raise DataError(p, None, None, problem)
    return p


class Stream(Generic[T]):
    """A restartable iterable: ``iter()`` calls ``make(*args, **kwargs)`` again each time.

    Readers return these instead of generators, because a generator is spent after one pass and
    training reads its data once per epoch.
    """

    def __init__(self, make: Callable[..., Iterable[T]], *args, **kwargs) -> None:
        self._make, self._args, self._kwargs = make, args, kwargs

    def __iter__(self) -> Iterator[T]:
        return iter(self._make(*self._args, **self._kwargs))

    def __repr__(self) -> str:
        args = ", ".join([repr(a) for a in self._args] + [f"{k}={v!r}" for k, v in self._kwargs.items()])
        return f"Stream({getattr(self._make, '__name__', self._make)}, {args})"


def chain_streams(streams: Iterable[Iterable[T]]) -> Stream[T]:
    """One restartable stream that reads each of ``streams`` in turn (restartable if they are)."""
    streams = list(streams)

    def _chain() -> Iterator[T]:
        for s in streams:
            yield from s

    return Stream(_chain)
