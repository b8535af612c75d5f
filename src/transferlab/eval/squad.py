"""SQuAD's exact match and F1, as the official ``evaluate-v1.1.py`` and ``evaluate-v2.0.py`` score them.

Rajpurkar et al. 2016 ("SQuAD: 100,000+ Questions for Machine Comprehension of Text") and 2018
("Know What You Don't Know: Unanswerable Questions for SQuAD"). An answer is normalized (lower
case, punctuation removed, the articles a/an/the removed, whitespace collapsed); exact match
compares the normalized strings, F1 the bags of their tokens; each question takes the best over
its gold answers. v2.0 drops gold answers that normalize to nothing, and a question left with
none is unanswerable: its one gold answer is the empty string, and an empty prediction (or an
empty gold against a non-empty prediction) scores 1 only when both are empty. v2.0 also reports
the answerable (``has_ans_*``) and unanswerable (``no_ans_*``) questions apart.

Figures are fractions in [0, 1] like the rest of :mod:`transferlab.eval` (the official scripts
print 100 times them). :func:`best_threshold` is the v2.0 script's ``find_best_thresh``: the
no-answer threshold on a score per question (null score minus best span score) that maximizes F1.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence

from transferlab.data.examples import QAExample

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s: str) -> str:
    """Lower case, punctuation and articles removed, whitespace collapsed (the official order)."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def exact_match(pred: str, gold: str) -> float:
    return float(normalize_answer(pred) == normalize_answer(gold))


def f1(pred: str, gold: str, version2: bool = False) -> float:
    """Token-bag F1 of the normalized answers; under v2.0 rules an empty side scores 1 only
    against another empty side (v1.1 scores it 0)."""
    p, g = normalize_answer(pred).split(), normalize_answer(gold).split()
    if version2 and (not p or not g):
        return float(p == g)
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def gold_answers(ex: QAExample, version2: bool) -> list[str]:
    """The texts a prediction is compared with: v2.0 keeps those that normalize to something and
    gives an unanswerable question the one empty answer."""
    texts = [a.text for a in ex.answers]
    if not version2:
        return texts
    return [t for t in texts if normalize_answer(t)] or [""]


def question_scores(examples: Sequence[QAExample], predictions: Mapping[str, str], version2: bool
                    ) -> tuple[dict[str, float], dict[str, float]]:
    """Exact match and F1 per question id, the best over its gold answers (a question without a
    prediction is scored as an empty one)."""
    em, f = {}, {}
    for ex in examples:
        pred, golds = predictions.get(ex.id, ""), gold_answers(ex, version2)
        em[ex.id] = max((exact_match(pred, g) for g in golds), default=0.0)
        f[ex.id] = max((f1(pred, g, version2) for g in golds), default=0.0)
    return em, f


def has_answer(ex: QAExample) -> bool:
    """Answerable, as the v2.0 script splits HasAns/NoAns: it has gold answers (whatever they normalize to)."""
    return bool(ex.answers) and not ex.is_impossible


def squad_metrics(examples: Sequence[QAExample], predictions: Mapping[str, str], version2: bool | None = None
                  ) -> dict[str, float]:
    """``exact_match`` and ``f1`` over the questions (``total``); under v2.0 (by default when a
    question has no answer) the same for answerable and unanswerable questions apart."""
    if version2 is None:
        version2 = any(not ex.answers or ex.is_impossible for ex in examples)
    em, f = question_scores(examples, predictions, version2)
    out = _mean(em, f, [ex.id for ex in examples], "")
    if version2:
        out |= _mean(em, f, [ex.id for ex in examples if has_answer(ex)], "has_ans_")
        out |= _mean(em, f, [ex.id for ex in examples if not has_answer(ex)], "no_ans_")
    return out


def _mean(em: dict, f: dict, ids: list[str], prefix: str) -> dict[str, float]:
    n = len(ids)
    return {f"{prefix}exact_match": sum(em[i] for i in ids) / max(n, 1),
            f"{prefix}f1": sum(f[i] for i in ids) / max(n, 1), f"{prefix}total": n}


def best_threshold(examples: Sequence[QAExample], predictions: Mapping[str, str], na_scores: Mapping[str, float]
                   ) -> tuple[float, float]:
    """The no-answer threshold that maximizes v2.0 F1, and that F1: a question is answered ``""``
    when its ``na_scores`` is above the threshold, else with its (non-empty) prediction.

    The official ``find_best_thresh``: start from every question unanswered, then answer them in
    order of rising score, keeping the best cut. Where answering none is best the threshold is
    below every score (the script says 0.0 there, which would answer the questions below 0)."""
    _, f = question_scores(examples, predictions, True)
    answerable = {ex.id: has_answer(ex) for ex in examples}
    score = best = float(sum(not a for a in answerable.values()))
    ids = sorted(answerable, key=lambda i: na_scores[i])
    thresh = na_scores[ids[0]] - 1.0 if ids else 0.0
    for i in ids:
        score += f[i] if answerable[i] else (-1.0 if predictions.get(i, "") else 0.0)
        if score > best:
            best, thresh = score, na_scores[i]
    return thresh, best / max(len(ids), 1)
