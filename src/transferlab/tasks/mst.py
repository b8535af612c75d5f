"""The highest-scoring dependency tree: Chu-Liu/Edmonds maximum spanning arborescence, one root child.

Chu & Liu (1965) and Edmonds (1967), as McDonald et al. (2005) use it for non-projective parsing:
every word takes its best head; a cycle is contracted into one node whose incoming arcs are scored
by what they gain over the cycle arc they break, the smaller graph is solved, and the cycle is
expanded again, broken where the chosen arc enters it. The result may cross arcs
(non-projective), as 288 of English-EWT's 12,544 training trees do (2.3%; 1.3% of test), so no
gold tree is out of reach; the projective Eisner (1996) algorithm would get those wrong.

Universal Dependencies trees have exactly one word attached to the root. An unconstrained
arborescence may give the root several children; then :func:`mst_heads` solves the graph again
with each candidate word as the root's only child (the others may not attach to the root) and
keeps the best, trying candidates from the best upper bound down and stopping when no remaining
bound can beat the best tree found, so the answer is the exact best single-root tree (Zmigrod et
al. 2020 discuss this constraint and faster ways to meet it).

Scores are ``scores[d, h]``: head ``h`` for dependent ``d``, index 0 the root, as the parser's
log-probabilities; numpy, O(n^3) in the worst case.
"""

from __future__ import annotations

import numpy as np

__all__ = ["mst_heads", "is_tree"]


def _cycle(heads: np.ndarray) -> np.ndarray | None:
    """The nodes of one cycle of ``heads`` (``heads[0]``, the root's, ignored), or None."""
    state = np.zeros(len(heads), np.int8)  # 0 unseen, 1 on the path being followed, 2 reaches the root
    state[0] = 2
    for start in range(1, len(heads)):
        path, v = [], start
        while state[v] == 0:
            state[v] = 1
            path.append(v)
            v = heads[v]
        if state[v] == 1:  # walked back onto this path: the cycle runs from v
            return np.array(path[path.index(v):])
        state[path] = 2
    return None


def _chu_liu_edmonds(s: np.ndarray) -> np.ndarray:
    """Heads (N,) of the maximum arborescence from node 0 of ``s (N, N)`` (``s[d, h]``, -inf where
    no arc; every node but 0 needs one finite incoming arc). ``heads[0]`` is 0."""
    heads = s.argmax(1)
    heads[0] = 0
    cyc = _cycle(heads)
    if cyc is None:
        return heads
    in_cyc = np.zeros(len(s), bool)
    in_cyc[cyc] = True
    rest = np.flatnonzero(~in_cyc)  # rest[0] == 0: the root is never in a cycle
    m = len(rest)
    t = np.full((m + 1, m + 1), -np.inf)  # the contracted graph: rest, then the cycle as node m
    t[:m, :m] = s[np.ix_(rest, rest)]
    gain = s[np.ix_(cyc, rest)] - s[cyc, heads[cyc]][:, None]  # (C, m): enter at c from h, breaking c's arc
    enter = gain.argmax(0)  # (m,): for each outside head, where it best enters the cycle
    t[m, :m] = gain[enter, np.arange(m)]
    leave = s[np.ix_(rest, cyc)]  # (m, C): a cycle node as the head of an outside word
    exit_ = leave.argmax(1)
    t[:m, m] = leave[np.arange(m), exit_]
    sub = _chu_liu_edmonds(t)
    out = heads.copy()  # the cycle keeps its arcs ...
    for k in range(1, m):
        out[rest[k]] = rest[sub[k]] if sub[k] < m else cyc[exit_[k]]
    h = sub[m]
    out[cyc[enter[h]]] = rest[h]  # ... but the one broken where the outside arc enters
    return out


def _score(s: np.ndarray, heads: np.ndarray) -> float:
    return float(s[np.arange(1, len(s)), heads[1:]].sum())


def mst_heads(scores: np.ndarray, one_root: bool = True) -> np.ndarray:
    """The best tree of ``scores (n+1, n+1)`` (``scores[d, h]``, 0 = root) as heads (n,): the
    CoNLL-U HEAD of words 1..n. With ``one_root`` exactly one word is attached to the root."""
    s = np.array(scores, dtype=np.float64)  # (n+1, n+1)
    np.fill_diagonal(s, -np.inf)  # no word heads itself
    s[0] = -np.inf  # the root has no head
    heads = _chu_liu_edmonds(s)
    if not one_root or int((heads[1:] == 0).sum()) <= 1:
        return heads[1:]
    inner = s.copy()
    inner[:, 0] = -np.inf  # no root arcs: one is added back per candidate
    best_inner = inner[1:].max(1)  # (n,): each word's best non-root head
    bound = s[1:, 0] + best_inner.sum() - best_inner  # (n,): root child r, every other word its best head
    best, best_score = heads, -np.inf
    for r in np.argsort(-bound, kind="stable") + 1:
        if bound[r - 1] <= best_score:
            break  # no remaining candidate can beat the best tree found
        graph = inner.copy()
        graph[r, 0] = s[r, 0]
        tree = _chu_liu_edmonds(graph)
        score = _score(graph, tree)
        if score > best_score:
            best, best_score = tree, score
    return best[1:]


def is_tree(heads) -> bool:
    """Whether CoNLL-U heads (n,) form a tree: each in 0..n, not itself, every word reaches 0."""
    n = len(heads)
    full = np.concatenate([[0], np.asarray(heads, dtype=np.int64)])
    if np.any(full[1:] < 0) or np.any(full[1:] > n) or np.any(full[1:] == np.arange(1, n + 1)):
        return False
    return _cycle(full) is None
