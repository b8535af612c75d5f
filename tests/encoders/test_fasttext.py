"""The fastText classifier's encoder: bag of words and hashed n-grams, padding-blind, learns."""

from __future__ import annotations

import torch

from transferlab.encoders.fasttext import FastTextConfig, FastTextEncoder, ngram_buckets
from transferlab.tasks.classify import LinearHead, TaskModel, classify_loss

from helpers import overfit


def test_ngram_hash_is_fasttexts_and_skips_padding():
    ids = torch.tensor([[5, 7, 9, 0]])
    mask = ids != 0
    h, valid = ngram_buckets(ids, mask, 2, 1000)
    assert h.tolist()[0][:2] == [(5 * 116049371 + 7) % 1000, (7 * 116049371 + 9) % 1000]
    assert valid.tolist() == [[True, True, False]]
    h3, valid3 = ngram_buckets(ids, mask, 3, 1000)
    assert h3[0, 0].item() == ((5 * 116049371 + 7) % 1000 * 116049371 + 9) % 1000
    assert valid3.tolist() == [[True, False]]


def test_padding_does_not_change_the_mean():
    enc = FastTextEncoder(FastTextConfig(vocab_size=20, dim=8, ngrams=3, buckets=97))
    head = LinearHead(8, 2, "mean", 0.0, pooler=False)
    model = TaskModel(enc, head).eval()
    a = torch.tensor([[3, 4, 5]])
    b = torch.tensor([[3, 4, 5, 0, 0]])
    out_a = model({"ids": a, "mask": a != 0})
    out_b = model({"ids": b, "mask": b != 0})
    torch.testing.assert_close(out_a, out_b)


def test_bigrams_tell_apart_what_words_cannot():
    """'not good' vs 'good not'-style order is invisible to a bag of words, visible to bigrams."""
    torch.manual_seed(0)
    ids = torch.tensor([[1, 2], [2, 1]] * 8)
    labels = torch.tensor([0, 1] * 8)
    batch = {"ids": ids, "mask": torch.ones_like(ids, dtype=torch.bool), "labels": labels}
    for ngrams, learnable in ((1, False), (2, True)):
        model = TaskModel(FastTextEncoder(FastTextConfig(vocab_size=4, dim=8, ngrams=ngrams, buckets=101, pad_id=0)),
                          LinearHead(8, 2, "mean", 0.0, pooler=False))
        overfit(model, lambda: classify_loss(model, batch), 150, lr=0.05)
        acc = (model(batch).argmax(-1) == labels).float().mean().item()
        assert (acc == 1.0) == learnable, (ngrams, acc)


def test_layer_groups_are_the_two_tables():
    enc = FastTextEncoder(FastTextConfig(vocab_size=10, dim=4, buckets=11))
    assert enc.layer_groups() == [enc.embedding, enc.ngram_embedding]
    words_only = FastTextEncoder(FastTextConfig(vocab_size=10, dim=4, ngrams=1))
    assert words_only.layer_groups() == [words_only.embedding] and words_only.ngram_embedding is None
