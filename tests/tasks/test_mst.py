import itertools

import numpy as np
import pytest

from transferlab.tasks.mst import is_tree, mst_heads


def _brute_force(s: np.ndarray, one_root: bool) -> float:
    """The best tree's score by trying every head assignment."""
    n = len(s) - 1
    best = -np.inf
    for heads in itertools.product(range(n + 1), repeat=n):
        if is_tree(heads) and (not one_root or heads.count(0) == 1):
            best = max(best, sum(s[d, h] for d, h in enumerate(heads, start=1)))
    return best


def _score(s: np.ndarray, heads) -> float:
    return sum(s[d, h] for d, h in enumerate(heads, start=1))


@pytest.mark.parametrize("one_root", [True, False])
def test_finds_the_best_tree_on_brute_forceable_graphs(one_root):
    rng = np.random.default_rng(0)
    for trial in range(150):
        n = int(rng.integers(1, 6))
        s = rng.normal(size=(n + 1, n + 1))
        if trial % 2:
            s[1:, 0] += 2.0  # the root attracts several words: the one-root search has work to do
        heads = mst_heads(s, one_root)
        assert is_tree(heads) and (not one_root or list(heads).count(0) == 1)
        assert _score(s, heads) == pytest.approx(_brute_force(s, one_root), abs=1e-9)


def test_always_returns_a_tree_with_one_root_child():
    rng = np.random.default_rng(1)
    for n in [1, 2, 7, 30, 80]:
        for spread in (0.1, 1.0, 10.0):  # flat to peaked, log-probabilities as a parser gives them
            logits = rng.normal(size=(n + 1, n + 1)) * spread
            logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
            heads = mst_heads(logp)
            assert len(heads) == n and is_tree(heads) and list(heads).count(0) == 1


def test_a_non_projective_tree_is_reachable():
    # 1 <- 3, 2 <- 4 cross: a projective decoder could not return this tree
    gold = [3, 4, 0, 3]
    s = np.full((5, 5), -5.0)
    for d, h in enumerate(gold, start=1):
        s[d, h] = 0.0
    assert list(mst_heads(s)) == gold


def test_is_tree_rejects_cycles_self_loops_and_out_of_range_heads():
    assert is_tree([2, 0, 2]) and is_tree([0])
    assert not is_tree([2, 1, 0])  # 1 <-> 2
    assert not is_tree([1, 0])  # word 1 heads itself
    assert not is_tree([0, 3])
