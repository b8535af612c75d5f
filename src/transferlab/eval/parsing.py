"""Attachment scores of dependency trees, as the CoNLL 2018 shared task computes them.

The shared task's ``conll18_ud_eval.py`` (Zeman et al. 2018) aligns system words to gold words;
on gold tokenization (a parser given the treebank's words) the alignment is the identity, and its
precision, recall and F1 are all ``correct / words``. There,

- every syntactic word counts: the parts of a multiword token do, empty nodes (``8.1``) do not,
  and punctuation does: ``uas`` (HEAD right) and ``las`` (HEAD and relation right);
- a relation is compared by its universal part, the text before ``:`` (``obl:tmod`` is ``obl``).

The older convention of the CoNLL-X (2006) shared task and of most Penn Treebank results (Dozat &
Manning 2017 among them) leaves punctuation out: ``uas_nopunct`` and ``las_nopunct`` are the same
figures over the words whose gold UPOS is not ``PUNCT`` (CoNLL-X judged punctuation by the token's
characters, the PTB work by its gold POS tag; UPOS is UD's version of the latter).
"""

from __future__ import annotations

from collections.abc import Sequence

from transferlab.data.examples import ParsedSentence

__all__ = ["universal_relation", "attachment_scores"]


def universal_relation(deprel: str) -> str:
    """The universal part of a UD relation: ``nmod:poss`` -> ``nmod`` (conll18_ud_eval.py's rule)."""
    return deprel.split(":")[0]


def attachment_scores(gold: Sequence[ParsedSentence], heads: Sequence[Sequence[int]],
                      deprels: Sequence[Sequence[str]]) -> dict[str, float]:
    """UAS and LAS over all words (``uas``, ``las``) and without punctuation (``uas_nopunct``,
    ``las_nopunct``), for predicted ``heads`` (CoNLL-U HEAD, 0 = root) and ``deprels`` per
    sentence; 0.0 where there are no words."""
    if not len(gold) == len(heads) == len(deprels):
        raise ValueError(f"attachment_scores: {len(gold)} gold sentences but {len(heads)} predicted heads "
                         f"and {len(deprels)} predicted relation lists")
    total = {"all": 0, "nopunct": 0}
    unlabeled = {"all": 0, "nopunct": 0}
    labeled = {"all": 0, "nopunct": 0}
    for k, (g, h, r) in enumerate(zip(gold, heads, deprels)):
        if not len(g.heads) == len(h) == len(r):
            raise ValueError(f"attachment_scores: sentence {k} has {len(g.heads)} words but {len(h)} predicted "
                             f"heads and {len(r)} relations")
        for gh, gr, upos, ph, pr in zip(g.heads, g.deprels, g.upos, h, r):
            head_ok = gh == ph
            label_ok = head_ok and universal_relation(gr) == universal_relation(pr)
            for part in ("all", "nopunct") if upos != "PUNCT" else ("all",):
                total[part] += 1
                unlabeled[part] += head_ok
                labeled[part] += label_ok

    def ratio(n: int, part: str) -> float:
        return n / total[part] if total[part] else 0.0

    return {"uas": ratio(unlabeled["all"], "all"), "las": ratio(labeled["all"], "all"),
            "uas_nopunct": ratio(unlabeled["nopunct"], "nopunct"), "las_nopunct": ratio(labeled["nopunct"], "nopunct")}
