"""Word-word co-occurrence counts for GloVe (Pennington, Socher and Manning 2014, "GloVe: Global
Vectors for Word Representation"), with the semantics of the reference ``cooccur.c``.

For each word of a line, each of the ``window`` words before it in the same line (windows never
cross lines) adds ``1/d`` (``d`` = distance; ``1`` with ``distance_weighting=False``) to
``X[w_prev, w]`` and, when ``symmetric``, to ``X[w, w_prev]`` as well, so a word seen next to
itself adds twice to its diagonal cell, as in ``cooccur.c``. Out-of-vocabulary words are removed
by the caller before counting (``cooccur.c`` skips them the same way: they take no window slot).

The counting is vectorized per chunk of whole sentences: for each offset ``d`` the pairs
``(ids[:-d], ids[d:])`` that lie in one sentence are encoded as ``row * vocab_size + col``
(int64) and reduced with a sort. Memory is bounded as in ``cooccur.c``: reduced chunks are kept
until they reach a quarter of ``memory_mb``, then merged and spilled to ``tmp_dir`` as a sorted
shard (``.npy`` keys and values); the shards are merged at the end in key ranges small enough
for the budget (each shard memory-mapped and cut with ``np.searchsorted``), and removed.

Sums are exact: without distance weighting, or with ``window <= 16``, every weight ``1/d`` is a
whole number of ticks of ``1/lcm(1..window)``; the counts are summed as int64 ticks and divided
once at the end, so the result does not depend on the chunking, the spills or the memory
budget. Longer windows sum in float64.
"""

from __future__ import annotations

import math
import shutil
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

__all__ = ["Cooccurrence", "count_cooccurrences"]

_EXACT_WINDOW = 16  # lcm(1..16) = 720,720 ticks per unit: int64 holds sums up to ~1.3e13
_ENTRY_BYTES = 16  # one reduced entry: an int64 key and an int64 (or float64) value
_PAIR_BYTES = 40  # one raw pair while a chunk is reduced: key, sort copy, unique mask, counts


@dataclass
class Cooccurrence:
    """A sparse ``vocab_size x vocab_size`` co-occurrence matrix in COO form, sorted by (row, col).

    ``rows`` and ``cols`` are int32 word ids, ``values`` the float64 sums; each (row, col) appears
    once and only nonzero cells are stored.
    """

    rows: np.ndarray  # (nnz,) int32
    cols: np.ndarray  # (nnz,) int32
    values: np.ndarray  # (nnz,) float64
    vocab_size: int

    def __post_init__(self):
        if not (len(self.rows) == len(self.cols) == len(self.values)):
            raise ValueError(f"Cooccurrence: rows, cols and values differ in length "
                             f"({len(self.rows)}, {len(self.cols)}, {len(self.values)})")

    @property
    def nnz(self) -> int:
        return len(self.values)

    def to_dense(self, dtype=np.float64) -> np.ndarray:
        """The full (vocab_size, vocab_size) matrix: for tests and for mittens, which needs it."""
        dense = np.zeros((self.vocab_size, self.vocab_size), dtype=dtype)
        dense[self.rows, self.cols] = self.values
        return dense

    @classmethod
    def from_dense(cls, matrix: np.ndarray) -> Cooccurrence:
        """The nonzero cells of a square matrix (row-major order is (row, col) order)."""
        matrix = np.asarray(matrix)
        if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
            raise ValueError(f"Cooccurrence.from_dense needs a square matrix, got shape {matrix.shape}")
        rows, cols = np.nonzero(matrix)
        return cls(rows.astype(np.int32), cols.astype(np.int32),
                   matrix[rows, cols].astype(np.float64), int(matrix.shape[0]))


def count_cooccurrences(
    sentences: Iterable[Sequence[int]],
    vocab_size: int,
    window: int = 10,
    symmetric: bool = True,
    distance_weighting: bool = True,
    memory_mb: float = 1024,
    tmp_dir: str | Path | None = None,
    progress: bool = True,
) -> Cooccurrence:
    """Count co-occurrences over one pass of ``sentences`` (word ids in ``[0, vocab_size)``).

    ``memory_mb`` bounds the working memory (not the returned matrix, which must fit);
    ``tmp_dir`` is where shards go when it is exceeded (the system temp folder by default).
    """
    if vocab_size < 1 or vocab_size >= 2**31:
        raise ValueError(f"count_cooccurrences: vocab_size must be in [1, 2**31), got {vocab_size}")
    if window < 1:
        raise ValueError(f"count_cooccurrences: window must be >= 1, got {window}")
    if memory_mb <= 0:
        raise ValueError(f"count_cooccurrences: memory_mb must be > 0, got {memory_mb}")
    exact = window <= _EXACT_WINDOW or not distance_weighting
    scale = math.lcm(*range(1, window + 1)) if distance_weighting and exact else 1  # ticks per unit
    budget = int(memory_mb * 2**20)
    chunk_tokens = max(1, budget // (4 * _PAIR_BYTES * window * (2 if symmetric else 1)))
    counter = _Counter(vocab_size, window, symmetric, distance_weighting, scale, exact, budget, tmp_dir)
    bar = tqdm(unit="tok", file=sys.stderr, disable=None if progress else True, desc="cooccur")
    buffer: list[Sequence[int]] = []
    tokens = 0
    try:
        for sentence in sentences:
            if len(sentence) == 0:
                continue
            buffer.append(sentence)
            tokens += len(sentence)
            if tokens >= chunk_tokens:
                counter.add_chunk(buffer)
                bar.update(tokens)
                buffer, tokens = [], 0
        if buffer:
            counter.add_chunk(buffer)
            bar.update(tokens)
        keys, values = counter.finish()
    finally:
        bar.close()
        counter.cleanup()
    values = values / scale if exact else values.astype(np.float64)
    return Cooccurrence((keys // vocab_size).astype(np.int32), (keys % vocab_size).astype(np.int32),
                        values.astype(np.float64, copy=False), vocab_size)


def _reduce(keys: np.ndarray, values: np.ndarray, stable: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique keys and the sums of their values (``stable`` merges sorted runs fast)."""
    if len(keys) == 0:
        return keys, values
    order = np.argsort(keys, kind="stable" if stable else None)
    keys, values = keys[order], values[order]
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    return keys[starts], np.add.reduceat(values, starts)


class _Counter:
    """The in-memory reduced chunks, the shards on disk, and their final merge."""

    def __init__(self, vocab_size, window, symmetric, weighting, scale, exact, budget, tmp_dir):
        self.vocab_size, self.window, self.symmetric = vocab_size, window, symmetric
        self.weighting, self.scale, self.exact, self.budget = weighting, scale, exact, budget
        self.tmp_dir = tmp_dir
        self.value_dtype = np.int64 if exact else np.float64
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.part_bytes = 0
        self.shards: list[tuple[Path, Path]] = []
        self.folder: Path | None = None

    def add_chunk(self, sentences: list[Sequence[int]]) -> None:
        lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
        ids = np.concatenate([np.asarray(s, dtype=np.int64) for s in sentences])  # (T,)
        if ids.min() < 0 or ids.max() >= self.vocab_size:
            bad = ids[(ids < 0) | (ids >= self.vocab_size)][0]
            raise ValueError(f"count_cooccurrences: word id {bad} is outside [0, vocab_size={self.vocab_size})")
        # position of each token inside its sentence: (T,)
        position = np.arange(len(ids)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        keys, values = [], []
        for d in range(1, min(self.window, int(lengths.max()) - 1) + 1):
            same = position[d:] >= d  # the word d back is in the same sentence
            left, right = ids[:-d][same], ids[d:][same]
            pair = left * self.vocab_size + right
            if self.symmetric:
                pair = np.concatenate((pair, right * self.vocab_size + left))
            unique, counts = np.unique(pair, return_counts=True)
            weight = (self.scale // d if self.exact else 1.0 / d) if self.weighting else 1
            keys.append(unique)
            values.append(counts.astype(self.value_dtype) * weight)
        if not keys:
            return
        part = _reduce(np.concatenate(keys), np.concatenate(values), stable=True)
        self.parts.append(part)
        self.part_bytes += part[0].nbytes + part[1].nbytes
        if self.part_bytes > self.budget // 4:
            self._spill()

    def _merged_parts(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.parts:
            return np.zeros(0, np.int64), np.zeros(0, self.value_dtype)
        keys = np.concatenate([k for k, _ in self.parts])
        values = np.concatenate([v for _, v in self.parts])
        self.parts, self.part_bytes = [], 0
        return _reduce(keys, values, stable=True)

    def _spill(self) -> None:
        keys, values = self._merged_parts()
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="cooccur-", dir=self.tmp_dir))
        n = len(self.shards)
        paths = (self.folder / f"shard{n:05d}.keys.npy", self.folder / f"shard{n:05d}.values.npy")
        np.save(paths[0], keys)
        np.save(paths[1], values)
        self.shards.append(paths)

    def finish(self) -> tuple[np.ndarray, np.ndarray]:
        """All counts as sorted unique keys and summed values."""
        if not self.shards:
            return self._merged_parts()
        if self.parts:
            self._spill()
        shards = [(np.load(k, mmap_mode="r"), np.load(v, mmap_mode="r")) for k, v in self.shards]
        # each range takes at most `step` entries from each shard: a quarter of the budget in all,
        # which its concatenation, sort and reduction about fill
        step = max(1, self.budget // (4 * _ENTRY_BYTES * len(shards)))
        starts = [0] * len(shards)
        out_keys, out_values = [], []
        while any(s < len(k) for s, (k, _) in zip(starts, shards)):
            # the upper bound of this range: the smallest key `step` entries ahead in any shard
            ahead = [k[s + step] for s, (k, _) in zip(starts, shards) if s + step < len(k)]
            bound = min(ahead) if ahead else None
            keys, values = [], []
            for i, (k, v) in enumerate(shards):
                end = len(k) if bound is None else starts[i] + int(np.searchsorted(k[starts[i]:], bound))
                keys.append(np.asarray(k[starts[i]:end]))
                values.append(np.asarray(v[starts[i]:end]))
                starts[i] = end
            merged = _reduce(np.concatenate(keys), np.concatenate(values), stable=True)
            out_keys.append(merged[0])
            out_values.append(merged[1])
        del shards
        return np.concatenate(out_keys), np.concatenate(out_values)

    def cleanup(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
