"""Schedules against the papers' formulas and hand-computed values."""

import math

import pytest

from transferlab.schedules import SCHEDULES, constant, cosine, linear_warmup_decay, slanted_triangular


def stlr_paper(t, T, max_lr, cut_frac, ratio):
    """Howard & Ruder 2018, eq. (3), written out independently."""
    cut = math.floor(T * cut_frac)
    p = t / cut if t < cut else 1 - (t - cut) / (cut * (1 / cut_frac - 1))
    return max_lr * (1 + p * (ratio - 1)) / ratio


@pytest.mark.parametrize("T,cut_frac,ratio", [(100, 0.1, 32), (1000, 0.2, 10), (37, 0.3, 32)])
def test_slanted_triangular_is_eq_3(T, cut_frac, ratio):
    for t in [0, 1, T // 20, int(T * cut_frac), T // 2, T - 2, T - 1]:
        assert slanted_triangular(t, T, 0.01, cut_frac, ratio) == pytest.approx(stlr_paper(t, T, 0.01, cut_frac, ratio))


def test_slanted_triangular_by_hand():
    assert slanted_triangular(0, 100, 0.01) == pytest.approx(0.01 / 32)
    assert slanted_triangular(5, 100, 0.01) == pytest.approx(0.01 * 16.5 / 32)  # p = 0.5
    assert slanted_triangular(10, 100, 0.01) == pytest.approx(0.01)  # the peak at cut
    assert slanted_triangular(55, 100, 0.01) == pytest.approx(0.01 * 16.5 / 32)  # p = 1 - 45/90
    assert slanted_triangular(99, 100, 0.01) == pytest.approx(0.01 * (1 + 31 / 90) / 32)  # ~ max_lr / ratio
    assert slanted_triangular(100, 100, 0.01) == pytest.approx(0.01 / 32)
    assert slanted_triangular(500, 100, 0.01) == pytest.approx(0.01 / 32)  # never below max_lr / ratio
    assert slanted_triangular(0, 5, 0.01) == pytest.approx(0.01)  # too short to warm up: no division by 0


def test_linear_warmup_decay_matches_hugging_face():
    # get_linear_schedule_with_warmup(num_warmup_steps=10, num_training_steps=100)
    expect = {0: 0.0, 5: 0.5, 10: 1.0, 55: 0.5, 91: 0.1, 100: 0.0, 120: 0.0}
    for step, factor in expect.items():
        assert linear_warmup_decay(step, 100, 2.0, warmup=10) == pytest.approx(2.0 * factor)
        assert linear_warmup_decay(step, 100, 2.0, warmup=0.1) == pytest.approx(2.0 * factor)
    assert linear_warmup_decay(0, 100, 2.0) == 2.0


def test_cosine():
    expect = {0: 0.0, 5: 0.5, 10: 1.0, 55: 0.5, 100: 0.0, 150: 0.0}
    for step, factor in expect.items():
        assert cosine(step, 100, 3.0, warmup=10) == pytest.approx(3.0 * factor, abs=1e-12)
    assert cosine(25, 100, 1.0) == pytest.approx(0.5 * (1 + math.cos(math.pi / 4)))


def test_registry():
    assert set(SCHEDULES) == {"constant", "slanted_triangular", "linear", "cosine"}
    assert SCHEDULES["constant"] is constant and constant(7, 10, 0.3) == 0.3
