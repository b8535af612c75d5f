"""UAS/LAS against a re-implementation of the CoNLL 2018 shared task's conll18_ud_eval.py (its
loading, word linking and UAS/LAS scoring; on gold tokenization its alignment is the identity)."""

import itertools
import random

import numpy as np
import pytest

from transferlab.data import catalog
from transferlab.data.conll import ConlluReader
from transferlab.data.examples import ParsedSentence
from transferlab.data.treebank import sentence_lines, with_tree
from transferlab.eval.parsing import attachment_scores, universal_relation
from transferlab.tasks.mst import mst_heads

ID, FORM, HEAD, DEPREL = 0, 1, 6, 7


class UDError(Exception):
    pass


class _Word:
    def __init__(self, columns):
        self.columns = columns
        self.columns[DEPREL] = columns[DEPREL].split(":")[0]  # "ignore language-specific deprel subtypes"
        self.parent = None


def _load_conllu(path):
    """conll18_ud_eval.load_conllu, the parts UAS and LAS read: words (multiword-token lines give their
    words, empty nodes skipped), each word's parent word (None for the root), cycles and roots checked."""
    words, characters, sentence_start = [], [], None
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\r\n")
            if sentence_start is None:
                if line.startswith("#"):
                    continue
                sentence_start = len(words)
            if not line:
                def process_word(word):
                    if word.parent == "remapping":
                        raise UDError("There is a cycle in a sentence")
                    if word.parent is None:
                        head = int(word.columns[HEAD])
                        if head < 0 or head > len(words) - sentence_start:
                            raise UDError("HEAD points outside of the sentence")
                        if head:
                            parent = words[sentence_start + head - 1]
                            word.parent = "remapping"
                            process_word(parent)
                            word.parent = parent

                for word in words[sentence_start:]:
                    process_word(word)
                if len([w for w in words[sentence_start:] if w.parent is None]) != 1:
                    raise UDError("There are multiple roots in a sentence")
                sentence_start = None
                continue
            columns = line.split("\t")
            if "." in columns[ID]:
                continue
            characters.extend(columns[FORM])
            if "-" in columns[ID]:  # its words follow on their own lines; they are read as words there
                continue
            if int(columns[ID]) != len(words) - sentence_start + 1:
                raise UDError("Incorrect word ID")
            words.append(_Word(columns))
    return words, characters


def _reference_scores(gold_path, system_path):
    """conll18_ud_eval.evaluate's UAS and LAS F1 when the two files hold the same words."""
    gold, gold_chars = _load_conllu(gold_path)
    system, system_chars = _load_conllu(system_path)
    if gold_chars != system_chars:
        raise UDError("The concatenation of tokens in gold file and in system file differ!")
    aligned = dict(zip(map(id, system), gold))  # the identity alignment (same forms, same order)
    assert all(g.columns[FORM].lower() == s.columns[FORM].lower() for g, s in zip(gold, system))

    def gold_parent(word):  # alignment.matched_words_map.get(word.parent) for system words
        return None if word.parent is None else aligned.get(id(word.parent), "NotAligned")

    uas = sum(g.parent is gold_parent(s) for g, s in zip(gold, system))
    las = sum(g.parent is gold_parent(s) and g.columns[DEPREL] == s.columns[DEPREL] for g, s in zip(gold, system))
    f1 = lambda correct: 2 * correct / (len(gold) + len(system))  # noqa: E731 (the script's Score.f1)
    return {"uas": f1(uas), "las": f1(las)}


def _perturbed(sentences, relations, seed=0):
    """Predicted trees: the gold tree's scores plus noise, decoded to a tree (so some heads are
    wrong but every sentence stays a tree), and relations swapped or re-subtyped now and then."""
    rng, prng = np.random.default_rng(seed), random.Random(seed)
    heads, deprels = [], []
    for s in sentences:
        n = len(s.tokens)
        scores = rng.normal(size=(n + 1, n + 1))
        scores[np.arange(1, n + 1), list(s.heads)] += 2.5
        heads.append([int(h) for h in mst_heads(scores)])
        out = []
        for r in s.deprels:
            u = prng.random()
            out.append(prng.choice(relations) if u < 0.1 else
                       universal_relation(r) + ":xx" if u < 0.2 else  # a subtype change LAS ignores
                       universal_relation(r) if u < 0.25 else r)
        deprels.append(out)
    return heads, deprels


def test_matches_conll18_ud_eval_on_perturbed_ewt_dev(shared_data, tmp_path):
    gold_path = shared_data / "datasets/ud-ewt/dev.conllu"
    sentences = list(ConlluReader(gold_path))
    relations = sorted({r for s in sentences for r in s.deprels})
    heads, deprels = _perturbed(sentences, relations)
    system_path = tmp_path / "system.conllu"
    with open(system_path, "w", encoding="utf-8") as f:
        for lines, h, r in zip(sentence_lines(gold_path), heads, deprels):
            f.write("\n".join(with_tree(lines, h, r)) + "\n\n")
    ours = attachment_scores(sentences, heads, deprels)
    reference = _reference_scores(gold_path, system_path)
    assert 0.5 < reference["las"] < reference["uas"] < 0.99  # the perturbation is neither nothing nor everything
    assert ours["uas"] == pytest.approx(reference["uas"], abs=1e-9)
    assert ours["las"] == pytest.approx(reference["las"], abs=1e-9)
    # our own CoNLL-U output read back gives the same figures
    again = list(ConlluReader(system_path))
    assert attachment_scores(sentences, [s.heads for s in again], [s.deprels for s in again]) == ours


def test_without_punctuation_leaves_out_gold_punct_words(shared_data):
    sentences = list(itertools.islice(catalog.load_examples("ud-ewt", "dev", parsed=True), 300))
    heads, deprels = _perturbed(sentences, sorted({r for s in sentences for r in s.deprels}), seed=1)
    kept = [[i for i, u in enumerate(s.upos) if u != "PUNCT"] for s in sentences]
    pick = lambda xs, ix: tuple(xs[i] for i in ix)  # noqa: E731
    stripped = [ParsedSentence(pick(s.tokens, k), pick(s.lemmas, k), pick(s.upos, k), pick(s.xpos, k),
                               pick(s.heads, k), pick(s.deprels, k)) for s, k in zip(sentences, kept)]
    plain = attachment_scores(stripped, [pick(h, k) for h, k in zip(heads, kept)],
                              [pick(r, k) for r, k in zip(deprels, kept)])
    ours = attachment_scores(sentences, heads, deprels)
    assert ours["uas_nopunct"] == pytest.approx(plain["uas"], abs=1e-12)
    assert ours["las_nopunct"] == pytest.approx(plain["las"], abs=1e-12)
    assert ours["uas_nopunct"] != ours["uas"]


def test_a_hand_scored_sentence():
    gold = [ParsedSentence(("She", "left", "."), ("",) * 3, ("PRON", "VERB", "PUNCT"), ("",) * 3, (2, 0, 2),
                           ("nsubj", "root", "punct"))]
    scores = attachment_scores(gold, [[2, 0, 1]], [["nsubj:pass", "root", "punct"]])
    assert scores == {"uas": 2 / 3, "las": 2 / 3, "uas_nopunct": 1.0, "las_nopunct": 1.0}
    with pytest.raises(ValueError, match="sentence 0"):
        attachment_scores(gold, [[2, 0]], [["nsubj", "root"]])
