"""Metrics against their references: scikit-learn, scipy.stats and seqeval (default mode)."""

import random

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import accuracy_score, f1_score, mean_squared_error
from sklearn.metrics import matthews_corrcoef as sk_mcc

from transferlab.eval.metrics import (
    accuracy,
    average_ranks,
    binary_f1,
    entity_prf,
    entity_spans,
    glue_metrics,
    macro_f1,
    matthews_corrcoef,
    pearson,
    regression_metrics,
    spearman,
    tagging_metrics,
)

TYPES = ("PER", "LOC", "ORG", "MISC")


def test_metrics_equal_scikit_learn():
    rng = random.Random(0)
    for n_labels in (2, 3, 5):
        gold = [rng.randrange(n_labels) for _ in range(200)]
        pred = [g if rng.random() < 0.6 else rng.randrange(n_labels) for g in gold]
        assert abs(accuracy(gold, pred) - accuracy_score(gold, pred)) < 1e-12
        assert abs(macro_f1(gold, pred) - f1_score(gold, pred, average="macro")) < 1e-12
    # a class predicted but never gold, and one never predicted
    gold, pred = [0, 0, 1, 1], [0, 2, 0, 0]
    assert abs(macro_f1(gold, pred) - f1_score(gold, pred, average="macro")) < 1e-12


def test_binary_f1_and_mcc_equal_scikit_learn():
    rng = random.Random(1)
    for n_labels, n in ((2, 7), (2, 300), (3, 300), (5, 1000)):
        gold = [rng.randrange(n_labels) for _ in range(n)]
        pred = [g if rng.random() < 0.5 else rng.randrange(n_labels) for g in gold]
        assert abs(matthews_corrcoef(gold, pred) - sk_mcc(gold, pred)) < 1e-12
        if n_labels == 2:
            for positive in (0, 1):
                expected = f1_score(gold, pred, pos_label=positive)
                assert abs(binary_f1(gold, pred, positive=positive) - expected) < 1e-12
    names = ["acceptable", "unacceptable"]  # labels need not be ints
    gold = [rng.choice(names) for _ in range(100)]
    pred = [rng.choice(names) for _ in range(100)]
    assert abs(matthews_corrcoef(gold, pred) - sk_mcc(gold, pred)) < 1e-12
    assert binary_f1(gold, pred, positive="acceptable") == pytest.approx(
        f1_score(gold, pred, pos_label="acceptable"), abs=1e-12)


def test_binary_f1_and_mcc_degenerate_cases_are_zero():
    assert binary_f1([0, 0, 0], [0, 0, 0]) == 0.0  # no positive anywhere
    assert binary_f1([1, 0], [0, 1]) == 0.0
    assert binary_f1([1, 1, 0], [1, 1, 0]) == 1.0
    assert matthews_corrcoef([0, 1, 0, 1], [1, 1, 1, 1]) == 0.0 == sk_mcc([0, 1, 0, 1], [1, 1, 1, 1])
    assert matthews_corrcoef([0, 1, 2], [0, 1, 2]) == 1.0
    assert matthews_corrcoef([0, 1, 0, 1], [1, 0, 1, 0]) == -1.0
    with pytest.raises(ValueError):
        binary_f1([0, 1], [0])


def test_pearson_spearman_equal_scipy_with_ties():
    rng = np.random.default_rng(2)
    for n in (3, 50, 500):
        x = rng.normal(size=n)
        y = 0.5 * x + rng.normal(size=n)
        cases = [(x, y), (np.round(x), np.round(y * 2) / 2), (rng.integers(0, 4, n), rng.integers(0, 3, n))]
        for a, b in cases:
            if len(set(a)) < 2 or len(set(b)) < 2:
                continue
            assert abs(pearson(a.tolist(), b.tolist()) - stats.pearsonr(a, b)[0]) < 1e-12
            assert abs(spearman(a.tolist(), b.tolist()) - stats.spearmanr(a, b)[0]) < 1e-12
            np.testing.assert_array_equal(average_ranks(a), stats.rankdata(a))
    assert average_ranks([3.0, 1.0, 3.0, 2.0, 3.0]).tolist() == [4.0, 1.0, 4.0, 2.0, 4.0]
    assert spearman([1, 2, 3, 4], [1, 4, 9, 16]) == pytest.approx(1.0)  # monotone, not linear
    assert pearson([1, 2, 3, 4], [1, 4, 9, 16]) < 0.99


def test_correlations_of_constant_input_are_zero():
    assert pearson([0.1] * 5, [1, 2, 3, 4, 5]) == 0.0  # 0.1 * 5 / 5 != 0.1 in floats: still constant
    assert spearman([1, 2, 3], [7, 7, 7]) == 0.0
    assert pearson([1.0], [2.0]) == 0.0
    assert regression_metrics([1, 2, 3], [2, 2, 2]) == {"pearson": 0.0, "spearman": 0.0, "mse": pytest.approx(2 / 3)}


def test_regression_metrics_equal_scipy_and_scikit_learn():
    rng = np.random.default_rng(3)
    gold = rng.uniform(0, 5, 400).round(1)  # STS-B-like scores with ties
    pred = np.clip(gold + rng.normal(0, 1, 400), 0, 5)
    got = regression_metrics(gold.tolist(), pred.tolist())
    assert set(got) == {"pearson", "spearman", "mse"}
    assert abs(got["pearson"] - stats.pearsonr(gold, pred)[0]) < 1e-12
    assert abs(got["spearman"] - stats.spearmanr(gold, pred)[0]) < 1e-12
    assert abs(got["mse"] - mean_squared_error(gold, pred)) < 1e-12


def test_entity_spans_follow_conlleval_rules():
    assert entity_spans(["B-PER", "I-PER", "O", "B-LOC"]) == [("PER", 0, 2), ("LOC", 3, 4)]
    assert entity_spans(["O", "I-PER", "I-PER"]) == [("PER", 1, 3)]  # I- after O starts one
    assert entity_spans(["B-PER", "I-LOC", "B-LOC", "B-LOC"]) == [
        ("PER", 0, 1), ("LOC", 1, 2), ("LOC", 2, 3), ("LOC", 3, 4)]
    assert entity_spans(["B", "I", "O", "I", "B"]) == [("_", 0, 2), ("_", 3, 4), ("_", 4, 5)]
    assert entity_spans(["S-PER", "B-LOC", "E-LOC", "E-LOC", "I-ORG"]) == [
        ("PER", 0, 1), ("LOC", 1, 3), ("LOC", 3, 4), ("ORG", 4, 5)]
    assert entity_spans([]) == [] and entity_spans(["O", "O"]) == []


def _random_tags(rng: random.Random, n: int, prefixes: str = "BIO") -> list[str]:
    """Random tags, ill-formed ones included (I- after O or after another type)."""
    tags = []
    for _ in range(n):
        p = rng.choice(prefixes)
        tags.append("O" if p == "O" else f"{p}-{rng.choice(TYPES)}" if rng.random() < 0.9 else p)
    return tags


def test_entity_spans_equal_seqeval_get_entities():
    seqeval = pytest.importorskip("seqeval.metrics.sequence_labeling")
    rng = random.Random(4)
    for prefixes in ("BIO", "BIOO", "BIOES"):
        for _ in range(300):
            tags = _random_tags(rng, rng.randrange(0, 15), prefixes)
            expected = [(t, s, e + 1) for t, s, e in seqeval.get_entities(tags)]
            assert entity_spans(tags) == expected, tags


def _assert_equal_seqeval(gold: list[list[str]], pred: list[list[str]]) -> None:
    sm = pytest.importorskip("seqeval.metrics")
    got = entity_prf(gold, pred)
    assert abs(got["precision"] - sm.precision_score(gold, pred)) < 1e-9
    assert abs(got["recall"] - sm.recall_score(gold, pred)) < 1e-9
    assert abs(got["f1"] - sm.f1_score(gold, pred)) < 1e-9
    report = sm.classification_report(gold, pred, output_dict=True)
    types = {k for k in report if not k.endswith(" avg")}
    assert set(got["per_type"]) == types
    for t in types:
        ours, theirs = got["per_type"][t], report[t]
        assert ours["support"] == theirs["support"]
        for key, their_key in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score")):
            assert abs(ours[key] - theirs[their_key]) < 1e-9, (t, key)


@pytest.mark.filterwarnings("ignore")  # seqeval warns on undefined per-type scores and "B"/"I"
def test_entity_prf_equals_seqeval_on_random_sequences():
    pytest.importorskip("seqeval")
    rng = random.Random(5)
    for prefixes in ("BIOO", "BIOES"):
        gold = [_random_tags(rng, rng.randrange(1, 20), prefixes) for _ in range(400)]
        pred = [[t if rng.random() < 0.7 else _random_tags(rng, 1, prefixes)[0] for t in seq] for seq in gold]
        _assert_equal_seqeval(gold, pred)
        assert 0.2 < entity_prf(gold, pred)["f1"] < 0.9  # neither trivial nor hopeless


@pytest.mark.filterwarnings("ignore")
def test_entity_prf_equals_seqeval_on_conll2003_test(shared_data):
    pytest.importorskip("seqeval")
    if not (shared_data / "datasets" / "conll2003").is_dir():
        pytest.skip(f"conll2003 is absent from {shared_data}")
    from transferlab.data import catalog

    gold = [list(s.tags) for s in catalog.load_examples("conll2003", "test")]
    assert len(gold) > 3000 and {t for seq in gold for t in seq} >= {"O", "B-PER", "I-PER"}
    rng = random.Random(6)
    tag_set = sorted({t for seq in gold for t in seq})
    pred = [[rng.choice(tag_set) if rng.random() < 0.1 else t for t in seq] for seq in gold]
    _assert_equal_seqeval(gold, pred)
    assert entity_prf(gold, gold)["f1"] == 1.0
    assert 0.5 < entity_prf(gold, pred)["f1"] < 0.95


def test_entities_never_span_two_sentences():
    gold = [["O", "B-PER"], ["I-PER", "O"]]
    got = entity_prf(gold, [["O", "B-PER"], ["B-PER", "O"]])
    assert got["per_type"]["PER"]["support"] == 2  # "I-PER" opens a new entity in sentence 2
    assert got["f1"] == 1.0
    wrong_sentence = entity_prf([["B-PER"], ["O"]], [["O"], ["B-PER"]])
    assert wrong_sentence["precision"] == wrong_sentence["recall"] == 0.0
    with pytest.raises(ValueError):
        entity_prf([["O", "O"]], [["O"]])


def test_tagging_metrics_adds_entity_scores_only_for_iob_tags():
    gold = [["B-PER", "I-PER", "O"], ["B-LOC"]]
    pred = [["B-PER", "I-PER", "O"], ["B-ORG"]]
    got = tagging_metrics(gold, pred)
    assert got == {"accuracy": 0.75, "entity_precision": 0.5, "entity_recall": 0.5, "entity_f1": 0.5}
    pos = tagging_metrics([["DET", "NOUN"], ["VERB"]], [["DET", "VERB"], ["VERB"]])
    assert pos == {"accuracy": pytest.approx(2 / 3)}


def test_glue_metrics_choose_by_task():
    gold, pred = [1, 0, 1, 1, 0, 0], [1, 0, 0, 1, 1, 0]
    assert set(glue_metrics("mrpc", gold, pred)) == {"accuracy", "f1"}
    assert glue_metrics("MRPC", gold, pred, positive=0)["f1"] == pytest.approx(f1_score(gold, pred, pos_label=0))
    assert glue_metrics("cola", gold, pred) == {"accuracy": 4 / 6, "mcc": pytest.approx(sk_mcc(gold, pred))}
    for task in ("sst2", "sst-2", "rte", "agnews", "sick", "not-a-task"):
        assert set(glue_metrics(task, gold, pred)) == {"accuracy", "macro_f1"}
    scores = glue_metrics("STS-B", [0.0, 2.5, 5.0, 3.0], [0.5, 2.0, 4.0, 4.5])
    assert set(scores) == {"pearson", "spearman"} and scores["spearman"] == pytest.approx(0.8)
