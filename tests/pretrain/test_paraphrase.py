"""Paragram-phrase's objective: MAX negatives, the hinge loss by hand, the average that padding
leaves alone, the regulariser towards the starting vectors, and the pair batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transferlab.adapt.sentence_features import pool
from transferlab.config import ConfigError
from transferlab.encoders.fasttext import FastTextConfig, FastTextEncoder
from transferlab.pretrain.paraphrase import (PairBatches, ParagramConfig, ParagramPhrase, average, max_negatives,
                                             paragram_loss, paraphrase_loss, phrase_vectors, same_phrase)


def _encoder(vocab_size: int = 20, dim: int = 8) -> FastTextEncoder:
    torch.manual_seed(0)
    return FastTextEncoder(FastTextConfig(vocab_size=vocab_size, dim=dim, ngrams=1))


def test_the_max_negative_is_the_most_similar_phrase_of_another_pair():
    # pair 0: x1 = e0, x2 = e0 + e1; pair 1: (e1, e2); pair 2: (-e0, e0 + 0.2 e2)
    e = torch.eye(3)
    g1 = torch.stack([e[0], e[1], -e[0]])
    g2 = torch.stack([e[0] + e[1], e[2], e[0] + 0.2 * e[2]])
    t1, t2, has = max_negatives(g1, g2)
    # indices into cat([g1, g2]) (0-2: first sides, 3-5: second sides). x1 of pair 0 is e0: its
    # closest phrase outside its pair is e0 + 0.2 e2 (pair 2's second side), not its partner
    assert t1.tolist()[0] == 5
    # x2 of pair 0 (e0 + e1): e1 (pair 1's x1, cos 0.707) beats e0 + 0.2 e2 (cos 0.693)
    assert t2.tolist()[0] == 1
    # pair 1: x1 = e1 -> closest other is e0 + e1 (pair 0's x2, index 3); x2 = e2 -> e0 + 0.2 e2 (index 5)
    assert (t1[1].item(), t2[1].item()) == (3, 5)
    assert has.all()
    # brute force: for every pair, no candidate outside the pair beats the chosen one
    P = F.normalize(torch.cat([g1, g2]), dim=-1)
    for i in range(3):
        others = [j for j in range(6) if j not in (i, i + 3)]
        assert max(float(P[i] @ P[j]) for j in others) == pytest.approx(float(P[i] @ P[t1[i]]))
        assert max(float(P[i + 3] @ P[j]) for j in others) == pytest.approx(float(P[i + 3] @ P[t2[i]]))


def test_a_phrase_identical_to_the_pair_is_never_its_negative():
    # phrases cat([x1s, x2s]): pair 0 = ("4 5", "9 10"), pair 1 = ("4 5", "6 7 8"): both x1s are one text
    ids = torch.tensor([[4, 5, 0], [4, 5, 0], [9, 10, 0], [6, 7, 8]])
    mask = ids.ne(0)
    same = same_phrase(ids, mask)
    assert same[0, 1] and same[1, 0] and not same[0, 2] and same.diagonal().all()
    assert not same_phrase(torch.tensor([[4, 5], [4, 5]]), torch.tensor([[True, True], [True, False]]))[0, 1]
    e = torch.eye(2)
    g = torch.stack([e[0], e[0], 0.6 * e[0] + 0.8 * e[1], e[1]])
    g1, g2 = g[:2], g[2:]
    assert max_negatives(g1, g2)[0][0].item() == 1  # by vectors alone, the other pair's copy of x1
    t1, _, has = max_negatives(g1, g2, same)
    assert t1[0].item() == 3 and has.all()  # the copy is left out: pair 1's x2 is the negative
    # pair 1 = pair 0 swapped: every candidate is one of the pair's own texts, so no negative term
    ids = torch.tensor([[4, 5], [6, 7], [6, 7], [4, 5]])
    same = same_phrase(ids, ids.ne(0))
    assert not max_negatives(g1, g2, same)[2].any()
    assert float(paragram_loss(g1, g2, 0.4, same)) == 0.0


def test_the_hinge_loss_equals_a_hand_computation():
    torch.manual_seed(1)
    B, D, margin = 5, 4, 0.4
    g1, g2 = torch.randn(B, D), torch.randn(B, D)
    got = paragram_loss(g1, g2, margin)
    a, b = g1.numpy().astype(np.float64), g2.numpy().astype(np.float64)
    phrases = np.concatenate([a, b])
    cos = lambda x, y: float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))  # noqa: E731
    total = 0.0
    for i in range(B):
        others = [phrases[j] for j in range(2 * B) if j not in (i, i + B)]
        n1 = max(cos(a[i], p) for p in others)
        n2 = max(cos(b[i], p) for p in others)
        pos = cos(a[i], b[i])
        total += max(0.0, margin - pos + n1) + max(0.0, margin - pos + n2)
    assert float(got) == pytest.approx(total / B, abs=1e-5)
    # partners equal and every other phrase orthogonal: margin - 1 + 0 < 0, both hinges are zero
    e = torch.eye(4)[:2]
    assert float(paragram_loss(e, e.clone(), margin)) == 0.0


def test_padding_does_not_change_the_average():
    enc = _encoder()
    model = ParagramPhrase(enc, ParagramConfig(lambda_w=0.0))
    short = torch.tensor([[3, 7, 9]])
    padded = torch.tensor([[3, 7, 9, 0, 0, 0], [5, 0, 0, 0, 0, 0]])
    want = enc.embedding.weight[[3, 7, 9]].mean(0)
    assert torch.allclose(model.phrase(short)[0], want, atol=1e-6)
    assert torch.allclose(model.phrase(padded, padded.ne(0))[0], want, atol=1e-6)
    assert torch.allclose(model.phrase(padded, padded.ne(0))[1], enc.embedding.weight[5], atol=1e-6)
    # senteval's mean pooling over the encoder's hidden states is this average exactly
    hidden = enc(padded, padded.ne(0)).hidden
    assert torch.allclose(pool(hidden, padded.ne(0), "mean"), average(hidden, padded.ne(0)), atol=1e-7)
    got = phrase_vectors(model, [[3, 7, 9], [5]], batch_size=1)
    assert np.allclose(got, model.phrase(padded, padded.ne(0)).detach().numpy(), atol=1e-6)


@torch.no_grad()
def test_the_loss_adds_the_regulariser_towards_the_starting_vectors():
    enc = _encoder()
    model = ParagramPhrase(enc, ParagramConfig(lambda_w=0.5))
    batch = {"ids": torch.tensor([[4, 5], [6, 0], [8, 9]]), "ids_b": torch.tensor([[4, 11, 5], [12, 6, 0], [9, 0, 0]])}
    batch |= {"mask": batch["ids"].ne(0), "mask_b": batch["ids_b"].ne(0)}
    start = float(paraphrase_loss(model, batch))
    g1 = model.phrase(batch["ids"], batch["mask"])
    g2 = model.phrase(batch["ids_b"], batch["mask_b"])
    # both sides go through one encoder call (padded to one width): the loss of the phrases encoded apart
    assert start == pytest.approx(float(paragram_loss(g1, g2, 0.4)), abs=1e-6)
    enc.embedding.weight[4] += 1.0  # moved by 1 in each of 8 dimensions: ||W - W_init||^2 = 8
    assert float(model.regularizer()) == pytest.approx(0.5 * 8)
    g1, g2 = model.phrase(batch["ids"], batch["mask"]), model.phrase(batch["ids_b"], batch["mask_b"])
    assert float(paraphrase_loss(model, batch)) == pytest.approx(float(paragram_loss(g1, g2, 0.4)) + 4.0, abs=1e-5)
    assert "init_weight" not in model.state_dict()  # rebuilt on resume, never saved


def test_training_pulls_partners_together():
    enc = _encoder(vocab_size=30, dim=8)
    model = ParagramPhrase(enc, ParagramConfig(lambda_w=0.0))
    a = [[4, 5], [6, 7], [8, 9], [10, 11], [12, 13], [14, 15]]
    b = [[16, 17], [18, 19], [20, 21], [22, 23], [24, 25], [26, 27]]
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for epoch in range(30):
        for batch in PairBatches(a, b, 6, seed=0, epoch=epoch):
            loss = paraphrase_loss(model, batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert losses[-1] < 0.05 < losses[0]
    u, v = phrase_vectors(model, a), phrase_vectors(model, b)
    sims = (u / np.linalg.norm(u, axis=1, keepdims=True)) @ (v / np.linalg.norm(v, axis=1, keepdims=True)).T
    assert (sims.argmax(1) == np.arange(6)).all()  # each phrase's nearest other side is its partner


def test_pair_batches_are_a_pure_function_of_seed_and_epoch():
    a = [[i + 4] * (1 + i % 3) for i in range(10)]
    b = [[i + 20] * (1 + i % 4) for i in range(10)]
    first = list(PairBatches(a, b, 4, labels=list(range(10)), seed=3, epoch=1, bucket=1))
    again = list(PairBatches(a, b, 4, labels=list(range(10)), seed=3, epoch=1, bucket=1))
    assert all(torch.equal(x[k], y[k]) for x, y in zip(first, again) for k in x)
    seen = sorted(int(i) for batch in first for i in batch["index"])
    assert seen == list(range(10)) and len(first) == len(PairBatches(a, b, 4)) == 3
    for batch in first:
        for row, i in enumerate(batch["index"].tolist()):
            assert batch["ids"][row][batch["mask"][row]].tolist() == a[i]
            assert batch["ids_b"][row][batch["mask_b"][row]].tolist() == b[i]
            assert batch["labels"][row] == i
    with pytest.raises(ValueError):
        PairBatches(a, b[:3], 4)


def test_config_errors_name_the_flag():
    with pytest.raises(ConfigError, match="objective.margin"):
        ParagramConfig(margin=0.0)
    with pytest.raises(ConfigError, match="objective.lambda_w"):
        ParagramConfig(lambda_w=-1.0)
    with pytest.raises(ConfigError, match="fasttext.ngrams"):
        ParagramPhrase(FastTextEncoder(FastTextConfig(vocab_size=10, dim=4, ngrams=2)))
