"""The SentEval protocol: the batched logistic regression, its early stopping and L2 choice, the
cross-validation folds, the pair features, and the unsupervised STS scores."""

import numpy as np
import pytest
import torch
from scipy import stats

from transferlab.eval import senteval

FAST = senteval.ClassifierConfig(epoch_size=2, max_epochs=40, tenacity=2, kfold=4, batch_size=16, lr=1e-2)


def blobs(n: int, seed: int, dim: int = 6, n_classes: int = 3, spread: float = 0.3):
    """Separable classes: a Gaussian blob around each of ``n_classes`` far-apart centres."""
    rng = np.random.default_rng(seed)
    centres = np.eye(n_classes, dim) * 4.0
    y = rng.integers(0, n_classes, n)
    return (centres[y] + spread * rng.standard_normal((n, dim))).astype(np.float32), y


def test_logistic_regression_separates_separable_classes():
    train, dev, test = blobs(150, 0), blobs(40, 1), blobs(60, 2)
    result = senteval.evaluate_split(train, dev, test, FAST)
    assert result["test"] == 1.0 and result["dev"] == 1.0
    assert set(result["grid"]) == set(FAST.l2_grid) and result["l2"] in FAST.l2_grid
    assert result["pred"].shape == (60,)


def test_batched_models_match_models_trained_alone():
    """Training every weight decay at once gives what each would alone (same init, same batches)."""
    x, y = blobs(80, 3, spread=1.5)
    xd, yd = blobs(30, 4, spread=1.5)
    together = senteval.fit_linear(x, y, xd, yd, FAST, l2=[0.05, 0.0])
    alone = senteval.fit_linear(x, y, xd, yd, FAST, l2=[0.05])
    assert together.passes[0] == alone.passes[0] and together.held_out[0] == alone.held_out[0]
    assert torch.allclose(together.weight[0], alone.weight[0], atol=1e-5)
    assert not torch.allclose(together.weight[1], alone.weight[0], atol=1e-3)


def test_large_weight_decay_shrinks_the_weights():
    x, y = blobs(100, 5)
    fit = senteval.fit_linear(x, y, x, y, FAST, l2=[0.0, 1.0])
    norms = fit.weight.flatten(1).norm(dim=1)
    assert norms[1] < 0.5 * norms[0]


def test_early_stopping_keeps_the_best_held_out_weights():
    x, y = blobs(100, 6)
    rng = np.random.default_rng(0)
    y_noise = rng.integers(0, 3, 100)  # held-out labels the features cannot predict
    fit = senteval.fit_linear(x, y, x, y_noise, FAST, l2=[0.0])
    assert fit.passes[0] <= FAST.max_epochs
    kept = (fit.predict(x)[0] == y_noise).mean()
    assert kept == pytest.approx(fit.held_out[0])  # the kept weights are the ones that scored best


def test_kfold_partitions_the_examples():
    folds = senteval.kfold(23, 5, seed=1)
    tests = [t for _, t in folds]
    assert sorted(np.concatenate(tests).tolist()) == list(range(23))
    assert sorted(len(t) for t in tests) == [4, 4, 5, 5, 5]
    for train, test in folds:
        assert not set(train) & set(test) and len(train) + len(test) == 23
    assert [t.tolist() for _, t in senteval.kfold(23, 5, seed=1)] == [t.tolist() for t in tests]
    assert [t.tolist() for _, t in senteval.kfold(23, 5, seed=2)] != [t.tolist() for t in tests]
    with pytest.raises(ValueError, match="10-fold"):
        senteval.kfold(5, 10)


def test_holdout_keeps_at_least_one_on_each_side():
    kept, held = senteval.holdout(10, 0.05)
    assert len(held) == 1 and len(kept) == 9 and not set(kept) & set(held)
    kept, held = senteval.holdout(100, 0.1)
    assert len(held) == 10


def test_kfold_protocol_chooses_l2_by_cross_validation():
    train, test = blobs(120, 7), blobs(50, 8)
    result = senteval.evaluate_kfold(train, test, FAST)
    assert result["selection"] == "4-fold"
    assert result["dev"] > 0.95 and result["test"] > 0.95
    assert result["dev"] == max(result["grid"].values())


def test_pair_features_are_u_v_absdiff_product():
    u = np.array([[1.0, -2.0]])
    v = np.array([[3.0, 1.0]])
    assert senteval.pair_features(u, v).tolist() == [[1.0, -2.0, 3.0, 1.0, 2.0, 3.0, 3.0, -2.0]]


def test_pearson_of_cosines_equals_scipys():
    rng = np.random.default_rng(9)
    u, v = rng.standard_normal((50, 8)), rng.standard_normal((50, 8))
    gold = rng.uniform(0, 5, 50)
    sims = [float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b)) for a, b in zip(u, v)]
    scores = senteval.sts_scores(u, v, gold)
    assert scores["pearson"] == pytest.approx(stats.pearsonr(sims, gold)[0], abs=1e-10)
    assert scores["spearman"] == pytest.approx(stats.spearmanr(sims, gold)[0], abs=1e-10)
    assert senteval.cosine(np.zeros((1, 3)), np.ones((1, 3))).tolist() == [0.0]


def test_relatedness_targets_follow_tai_et_al():
    p = senteval.relatedness_targets([3.8, 1.0, 5.0], 1, 5)
    assert p[0].tolist() == pytest.approx([0, 0, 0.2, 0.8, 0])
    assert p[1].tolist() == [1, 0, 0, 0, 0] and p[2].tolist() == [0, 0, 0, 0, 1]
    assert (p @ np.arange(1, 6)).tolist() == pytest.approx([3.8, 1.0, 5.0])


def test_supervised_relatedness_learns_a_linear_score():
    rng = np.random.default_rng(10)

    def data(n):
        x = rng.standard_normal((n, 4)).astype(np.float32)
        return x, np.clip(2.5 + 1.2 * x[:, 0], 0, 5)

    result = senteval.evaluate_relatedness(data(200), data(50), data(80), FAST, bins=(0, 5))
    assert result["pearson"] > 0.9 and result["dev_pearson"] > 0.9


def test_config_names_the_bad_flag():
    with pytest.raises(ValueError, match="classifier.kfold"):
        senteval.ClassifierConfig(kfold=1)
    with pytest.raises(ValueError, match="classifier.l2_grid"):
        senteval.ClassifierConfig(l2_grid=())
