"""Embedding initialization from WordVectors: copied rows, lower-case fallback, report, scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from transferlab.vectors.init import init_embedding
from transferlab.vectors.keyed import WordVectors


def test_rows_are_copied_and_the_missing_reported():
    rng = np.random.default_rng(0)
    wv = WordVectors(["the", "cat", "sat"], rng.normal(size=(3, 6)).astype(np.float32))
    emb = nn.Embedding(6, 6, padding_idx=0)
    tokens = ["<pad>", "<unk>", "The", "cat", "zyzzyva", "sat"]
    report = init_embedding(emb, tokens, wv, skip=[0, 1])
    w = emb.weight.detach().numpy()
    np.testing.assert_allclose(w[2], wv.vectors[0])  # "The" found as "the"
    np.testing.assert_allclose(w[3], wv.vectors[1])
    np.testing.assert_allclose(w[5], wv.vectors[2])
    assert not w[0].any()  # padding stays zero
    assert (report.found, report.missing, report.examples) == (3, 1, ["zyzzyva"])
    assert "3 of 4 tokens" in str(report)
    # the random row is on the scale of the copied ones, not nn.Embedding's N(0, 1)
    assert 0.1 < np.abs(w[4]).mean() / np.abs(wv.vectors).mean() < 3


def test_a_dimension_mismatch_names_the_fix():
    wv = WordVectors(["a"], np.ones((1, 50), np.float32))
    with pytest.raises(ValueError, match="set the encoder's dim to 50"):
        init_embedding(nn.Embedding(3, 32), ["x", "y", "a"], wv)


def test_skipped_rows_keep_their_values():
    wv = WordVectors(["<unk>"], np.ones((1, 4), np.float32))
    emb = nn.Embedding(2, 4)
    before = emb.weight[1].detach().clone()
    init_embedding(emb, ["a", "<unk>"], wv, skip=[1])
    torch.testing.assert_close(emb.weight[1].detach(), before)
