import random

from sklearn.metrics import accuracy_score, f1_score

from transferlab.eval.metrics import accuracy, macro_f1


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
