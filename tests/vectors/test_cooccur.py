"""Co-occurrence counting against a naive transcription of GloVe's cooccur.c."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from transferlab.vectors import cooccur
from transferlab.vectors.cooccur import Cooccurrence, count_cooccurrences


def naive(sentences, window, symmetric, weighting) -> dict[tuple[int, int], float]:
    """cooccur.c's loop, one token at a time: the `window` words before each word in its line."""
    counts: dict[tuple[int, int], float] = defaultdict(float)
    for sentence in sentences:
        for j, w2 in enumerate(sentence):
            for k in range(j - 1, max(j - window, 0) - 1, -1):
                w1 = sentence[k]
                weight = 1.0 / (j - k) if weighting else 1.0
                counts[w1, w2] += weight
                if symmetric:
                    counts[w2, w1] += weight
    return dict(counts)


def random_corpus(seed: int, n: int = 60, vocab_size: int = 25) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    # a skewed distribution so that some pairs repeat many times and self-pairs occur
    probs = 1.0 / np.arange(1, vocab_size + 1)
    probs /= probs.sum()
    return [rng.choice(vocab_size, size=rng.integers(0, 30), p=probs).tolist() for _ in range(n)]


def as_dict(c: Cooccurrence) -> dict[tuple[int, int], float]:
    return {(int(r), int(k)): float(v) for r, k, v in zip(c.rows, c.cols, c.values)}


@pytest.mark.parametrize("window", [1, 3, 10, 20])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("weighting", [True, False])
def test_matches_naive_reference(window, symmetric, weighting):
    corpus = random_corpus(window)
    got = count_cooccurrences(corpus, 25, window=window, symmetric=symmetric,
                              distance_weighting=weighting, progress=False)
    want = naive(corpus, window, symmetric, weighting)
    assert got.rows.dtype == np.int32 and got.cols.dtype == np.int32
    assert got.nnz == len(want)
    assert set(as_dict(got)) == set(want)
    for key, value in as_dict(got).items():
        assert value == pytest.approx(want[key], rel=1e-12)
    keys = got.rows.astype(np.int64) * 25 + got.cols
    assert np.all(np.diff(keys) > 0), "entries must be sorted by (row, col) and unique"


def test_dense_matches_and_symmetric_is_symmetric():
    corpus = random_corpus(7)
    dense = count_cooccurrences(corpus, 25, window=5, progress=False).to_dense()
    np.testing.assert_array_equal(dense, dense.T)
    one_way = count_cooccurrences(corpus, 25, window=5, symmetric=False, progress=False).to_dense()
    # symmetric counts are the one-way counts plus their transpose (cooccur.c adds both)
    np.testing.assert_allclose(dense, one_way + one_way.T, rtol=1e-12)
    back = Cooccurrence.from_dense(dense)
    np.testing.assert_array_equal(back.to_dense(), dense)


def test_spills_give_exactly_the_same_result(tmp_path, monkeypatch):
    corpus = random_corpus(3, n=400, vocab_size=40)
    spills = []
    real_spill = cooccur._Counter._spill

    def counting_spill(self):
        spills.append(1)
        real_spill(self)

    monkeypatch.setattr(cooccur._Counter, "_spill", counting_spill)
    for window in (4, 20):  # exact int64 ticks, and float64 sums beyond window 16
        whole = count_cooccurrences(corpus, 40, window=window, progress=False)
        assert not spills
        spilled = count_cooccurrences(corpus, 40, window=window, memory_mb=0.02, tmp_dir=tmp_path,
                                      progress=False)
        assert len(spills) >= 3, "the tiny budget must force several shards"
        np.testing.assert_array_equal(spilled.rows, whole.rows)
        np.testing.assert_array_equal(spilled.cols, whole.cols)
        if window <= 16:
            np.testing.assert_array_equal(spilled.values, whole.values)
        else:
            np.testing.assert_allclose(spilled.values, whole.values, rtol=1e-12)
        assert list(tmp_path.iterdir()) == [], "shards must be removed"
        spills.clear()


def test_shards_removed_on_error(tmp_path):
    corpus = random_corpus(4, n=300, vocab_size=40)

    def failing():
        yield from corpus
        yield [0, 99]  # out of the vocabulary: raises once shards exist

    with pytest.raises(ValueError, match="outside"):
        count_cooccurrences(failing(), 40, window=5, memory_mb=0.02, tmp_dir=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_empty_and_single_word_sentences():
    empty = count_cooccurrences([], 10, progress=False)
    assert empty.nnz == 0 and empty.to_dense().shape == (10, 10)
    singles = count_cooccurrences([[3], [4], [], [5]], 10, progress=False)
    assert singles.nnz == 0
    # windows never cross lines: two lines of one word each give nothing, one line of two does
    assert count_cooccurrences([[3, 4]], 10, progress=False).nnz == 2


def test_accepts_numpy_sentences_and_validates():
    corpus = [np.array(s, dtype=np.int32) for s in random_corpus(5)]
    got = count_cooccurrences(corpus, 25, window=3, progress=False)
    assert as_dict(got) == pytest.approx(naive([s.tolist() for s in corpus], 3, True, True))
    with pytest.raises(ValueError, match="window"):
        count_cooccurrences([[1, 2]], 10, window=0)
    with pytest.raises(ValueError, match="memory_mb"):
        count_cooccurrences([[1, 2]], 10, memory_mb=0)
