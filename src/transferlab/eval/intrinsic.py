"""Intrinsic evaluation of word vectors: word similarity and word analogies.

- **Similarity**: Spearman (and Pearson) correlation between cosine similarities and human
  judgements, on WordSim-353 (Finkelstein et al. 2002) and SimLex-999 (Hill et al. 2015).
- **Analogies**: the Google questions of Mikolov et al. (2013), ``a : b :: c : ?``, answered by
  3CosAdd (``argmax cos(x, b - a + c)``) or 3CosMul (Levy & Goldberg 2014).

Both follow gensim's ``KeyedVectors.evaluate_word_pairs`` / ``evaluate_word_analogies`` and
give the same numbers: only the first ``restrict_vocab`` words count; with
``case_insensitive`` every word is looked up upper-cased, through a map in which the first
(most frequent) of a word's case variants wins; a pair or question with a word outside that
map is skipped and counted as OOV; the question words are never an answer, nor is any word
whose upper-cased form is one of them. The analogies are answered in batches, as one matrix
product of the questions against the unit vectors of the restricted vocabulary each, not one
``most_similar`` call per question: the 19,544 Google questions take seconds, not minutes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import numpy as np

from transferlab.data.examples import Analogy, PairExample
from transferlab.eval.metrics import pearson, spearman
from transferlab.vectors.keyed import WordVectors

SCORE_CELLS = 2 ** 25  # floats per batch of candidate scores (128 MB), whatever the vocabulary


def _ok_vocab(wv: WordVectors, restrict_vocab: int | None, case_insensitive: bool) -> dict[str, int]:
    """Word (upper-cased if case-insensitive) -> row, over the first ``restrict_vocab`` rows;
    the first row of a word's case variants wins (gensim builds it over the reversed keys)."""
    ok: dict[str, int] = {}
    for i, key in enumerate(wv.keys[:restrict_vocab]):
        ok.setdefault(key.upper() if case_insensitive else key, i)
    return ok


def evaluate_word_pairs(wv: WordVectors, pairs: Iterable[PairExample], restrict_vocab: int | None = 300000,
                        case_insensitive: bool = True) -> dict:
    """Correlation of cosine similarity with the pairs' scores (``label``).

    Returns ``spearman``, ``pearson``, ``pairs`` (used), ``oov`` (skipped) and ``oov_ratio``
    (skipped / all, a fraction; gensim reports the same as a percentage).
    """
    ok = _ok_vocab(wv, restrict_vocab, case_insensitive)
    rows_a, rows_b, gold, oov = [], [], [], 0
    for pair in pairs:
        a, b = pair.text_a, pair.text_b
        if case_insensitive:
            a, b = a.upper(), b.upper()
        if a not in ok or b not in ok:
            oov += 1
            continue
        try:
            gold.append(float(pair.label))
        except (TypeError, ValueError):
            raise ValueError(f"pair ({pair.text_a!r}, {pair.text_b!r}) has no numeric score: {pair.label!r}") from None
        rows_a.append(ok[a])
        rows_b.append(ok[b])
    if not gold:
        raise ValueError(f"no pair to evaluate: all {oov} pairs are out of the first {restrict_vocab} words")
    from gensim.matutils import unitvec

    # gensim's float32 arithmetic, pair by pair: then even exact ties (a word with itself, two
    # case variants folded into one) round as they do there, and the ranks agree
    model = [float(np.dot(unitvec(wv.vectors[i]), unitvec(wv.vectors[j]))) for i, j in zip(rows_a, rows_b)]
    return {"spearman": spearman(gold, model), "pearson": pearson(gold, model), "pairs": len(gold),
            "oov": oov, "oov_ratio": oov / (len(gold) + oov)}


def _case_variants(wv: WordVectors, limit: int, case_insensitive: bool) -> dict[str, np.ndarray]:
    """Upper-cased word -> every row (of the first ``limit``) that upper-cases to it, for the
    words with more than one such row: gensim never answers with those either."""
    if not case_insensitive:
        return {}
    rows: dict[str, list[int]] = {}
    for i, key in enumerate(wv.keys[:limit]):
        rows.setdefault(key.upper(), []).append(i)
    return {w: np.asarray(r) for w, r in rows.items() if len(r) > 1}


def _scores(unit: np.ndarray, q: np.ndarray, method: str) -> np.ndarray:
    """(B, R) candidate scores for questions ``q`` (B, 3) of rows ``a, b, c``."""
    if method == "add":
        target = unit[q[:, 1]] + unit[q[:, 2]] - unit[q[:, 0]]  # (B, D); scale does not change the argmax
        return target @ unit.T
    cos = (1 + np.stack([unit[q[:, k]] for k in range(3)]) @ unit.T) / 2  # (3, B, R), shifted to [0, 1]
    return cos[1] * cos[2] / (cos[0] + 0.000001)


def _gensim_window(scores: np.ndarray, inputs: set[int], upper: list[str], ignore: set[str]) -> str | None:
    """gensim's answer when a word has many case variants: of the 5 best rows other than the
    inputs, the first whose upper-cased form is not a question word, else the last of them."""
    order = np.argsort(-scores, kind="stable")
    best = [i for i in order[: 5 + len(inputs)] if i not in inputs][:5]
    predicted = None
    for i in best:
        predicted = upper[i]
        if predicted not in ignore:
            break
    return predicted


def evaluate_analogies(wv: WordVectors, analogies: Iterable[Analogy], restrict_vocab: int | None = 300000,
                       method: Literal["add", "mul"] = "add", case_insensitive: bool = True) -> dict:
    """Accuracy on analogy questions, answered among the first ``restrict_vocab`` words.

    Returns ``accuracy``, ``correct``, ``total`` (questions answered), ``oov`` (skipped),
    ``oov_ratio`` and ``sections`` {name: {correct, total, accuracy}} in file order. ``method``
    "add" is 3CosAdd (gensim's ``evaluate_word_analogies``), "mul" 3CosMul.
    """
    if method not in ("add", "mul"):
        raise ValueError(f"method must be 'add' (3CosAdd) or 'mul' (3CosMul), not {method!r}")
    ok = _ok_vocab(wv, restrict_vocab, case_insensitive)
    limit = min(restrict_vocab or len(wv), len(wv))
    questions, expected, sections, section_of, oov = [], [], {}, [], 0
    for q in analogies:
        words = [q.a, q.b, q.c, q.d]
        if case_insensitive:
            words = [w.upper() for w in words]
        sections.setdefault(q.section, {"correct": 0, "total": 0, "accuracy": 0.0})
        if any(w not in ok for w in words):
            oov += 1
            continue
        questions.append([ok[w] for w in words[:3]])
        expected.append(words[3])
        section_of.append(q.section)
    correct = _answer(wv, np.asarray(questions, dtype=np.int64).reshape(-1, 3), expected, limit, method,
                      case_insensitive)
    for name, right in zip(section_of, correct):
        sections[name]["total"] += 1
        sections[name]["correct"] += int(right)
    for s in sections.values():
        s["accuracy"] = s["correct"] / s["total"] if s["total"] else 0.0
    n_right, n = int(np.sum(correct)), len(questions)
    return {"accuracy": n_right / n if n else 0.0, "correct": n_right, "total": n, "oov": oov,
            "oov_ratio": oov / (n + oov) if n + oov else 0.0, "sections": sections}


def _answer(wv: WordVectors, questions: np.ndarray, expected: list[str], limit: int, method: str,
            case_insensitive: bool) -> np.ndarray:
    """Whether each question (rows a, b, c) is answered with ``expected`` (B,) bool."""
    unit = wv.unit_vectors()[:limit]  # (R, D)
    upper = [k.upper() if case_insensitive else k for k in wv.keys[:limit]]
    variants = _case_variants(wv, limit, case_insensitive)
    batch = max(1, min(2048, SCORE_CELLS // (limit * (3 if method == "mul" else 1))))
    correct = np.zeros(len(questions), dtype=bool)
    for start in range(0, len(questions), batch):
        q = questions[start: start + batch]  # (B, 3)
        scores = _scores(unit, q, method)  # (B, R)
        answers = {}  # row -> gensim's answer, where its 5-candidate window decides
        for r, abc in enumerate(q if variants else ()):
            extra = {int(i) for w in {upper[j] for j in abc} if w in variants for i in variants[w]} - set(abc)
            if len(extra) >= 5:  # gensim may find no answer among its 5 candidates
                answers[r] = _gensim_window(scores[r], set(abc.tolist()), upper, {upper[j] for j in abc})
            if extra:
                scores[r, list(extra)] = -np.inf  # case variants of the question words are never the answer
        rows = np.arange(len(q))
        for k in range(3):
            scores[rows, q[:, k]] = -np.inf  # nor are the question words themselves
        best = np.argmax(scores, axis=1)  # (B,)
        for r in range(len(q)):
            predicted = answers[r] if r in answers else upper[best[r]]
            correct[start + r] = predicted == expected[start + r]
    return correct


def _data_examples(data: str | os.PathLike[str], split: str) -> Iterable:
    """A split of the ``wordvec-eval`` catalog entry, or of a folder with the same files."""
    from transferlab.data import catalog
    from transferlab.data.readers import read_analogies, read_word_pairs

    if Path(data).is_dir():
        path = Path(data) / catalog.CATALOG["wordvec-eval"].splits[split]
        return read_analogies(path) if split == "analogies" else read_word_pairs(path)
    return catalog.load_examples(os.fspath(data), split)


def evaluate(wv: WordVectors, data: str | os.PathLike[str] = "wordvec-eval", analogy_vocab: int | None = 100000,
             pair_vocab: int | None = 300000) -> dict:
    """WordSim-353, SimLex-999 (on the first ``pair_vocab`` words) and the Google analogies (3CosAdd
    among the first ``analogy_vocab``), from the catalog entry ``data`` or a folder of its files.

    A similarity task none of whose pairs is in the vocabulary gets ``spearman`` and ``pearson``
    None (where :func:`evaluate_word_pairs`, like gensim, raises).
    """
    result = {}
    for split in ("wordsim353", "simlex999"):
        pairs = list(_data_examples(data, split))
        try:
            result[split] = evaluate_word_pairs(wv, pairs, restrict_vocab=pair_vocab)
        except ValueError:  # every pair out of vocabulary (vectors from a tiny corpus): no score
            result[split] = {"spearman": None, "pearson": None, "pairs": 0, "oov": len(pairs), "oov_ratio": 1.0}
    result["analogies"] = evaluate_analogies(wv, _data_examples(data, "analogies"), restrict_vocab=analogy_vocab)
    return result


TASK_NAMES = {"wordsim353": "WordSim-353", "simlex999": "SimLex-999", "analogies": "Google analogies"}


def report(result: dict) -> str:
    """A markdown table of an :func:`evaluate` result, then the analogy accuracy per section."""
    lines = ["| task | score | used | skipped (OOV) |", "|---|---|---|---|"]
    for task, r in result.items():
        name = TASK_NAMES.get(task, task)
        if "spearman" in r:
            score = "n/a" if r["spearman"] is None else f"Spearman {r['spearman']:.3f} (Pearson {r['pearson']:.3f})"
            lines.append(f"| {name} | {score} | {r['pairs']} pairs | {r['oov']} ({100 * r['oov_ratio']:.1f}%) |")
        else:
            lines.append(f"| {name} | accuracy {r['accuracy']:.3f} | {r['total']} questions "
                         f"| {r['oov']} ({100 * r['oov_ratio']:.1f}%) |")
    for task, r in result.items():
        if "sections" in r:
            lines += ["", f"{TASK_NAMES.get(task, task)} by section:", "",
                      "| section | accuracy | correct / answered |", "|---|---|---|"]
            lines += [f"| {name} | {s['accuracy']:.3f} | {s['correct']} / {s['total']} |"
                      for name, s in r["sections"].items()]
    return "\n".join(lines)
