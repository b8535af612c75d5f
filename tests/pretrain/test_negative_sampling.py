"""context2vec's objective: word2vec's noise distribution, the negative-sampling loss against its
formula, one batch overfit until every target is its context's top filler, and the sentences of a
corpus stream read whole, cut or skipped, from memory or from a token file alike."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from transferlab.encoders.context2vec import Context2Vec, Context2VecConfig
from transferlab.pretrain.context2vec import (NegativeSampling, SentenceBatches, context2vec_loss, context2vec_scores,
                                              noise_distribution, sentence_spans, unigram_counts)
from transferlab.pretrain.lm import TokenFile

from helpers import overfit

V = 24
CFG = Context2VecConfig(vocab_size=V, word_dim=8, hidden_dim=16, mlp_dim=32, dim=16)
SPECIAL = (0, 2, 3)  # <pad>, <bos>, <eos>: never noise


def _model(samples: int = 5) -> NegativeSampling:
    torch.manual_seed(0)
    counts = torch.arange(V) + 1
    return NegativeSampling(Context2Vec(CFG), noise_distribution(counts, 0.75, SPECIAL), samples)


def test_noise_is_the_unigram_distribution_to_the_power_three_quarters():
    counts = torch.tensor([50, 7, 30, 40, 100, 10, 1, 0])
    noise = noise_distribution(counts, 0.75, exclude=SPECIAL)
    want = counts.double() ** 0.75
    want[list(SPECIAL)] = 0
    assert torch.allclose(noise.double(), want / want.sum(), atol=1e-6) and noise[7] == 0
    draws = torch.multinomial(noise, 200_000, replacement=True, generator=torch.Generator().manual_seed(0))
    freq = torch.bincount(draws, minlength=8).double() / 200_000
    assert (freq[list(SPECIAL)] == 0).all() and torch.allclose(freq, noise.double(), atol=0.01)


def test_loss_is_the_negative_sampling_formula():
    model = _model(samples=3).eval()
    contexts, targets = torch.randn(6, CFG.dim), torch.tensor([4, 5, 6, 7, 8, 9])
    got = model.loss(contexts, targets, torch.Generator().manual_seed(1))
    noise = torch.multinomial(model.noise, 18, replacement=True, generator=torch.Generator().manual_seed(1))
    e = model.encoder.target_embedding.weight
    want = 0.0
    for n in range(6):
        want -= F.logsigmoid(contexts[n] @ e[targets[n]])
        want -= sum(F.logsigmoid(-(contexts[n] @ e[k])) for k in noise[3 * n : 3 * n + 3])
    assert torch.allclose(got, want / 6, atol=1e-5)


def test_one_batch_is_learned_until_each_target_is_its_contexts_top_filler():
    model = _model().train()
    g = torch.Generator().manual_seed(3)
    batch = {"ids": torch.randint(4, V, (4, 7), generator=g), "mask": torch.ones(4, 7, dtype=torch.bool)}
    batch["mask"][2, 5:] = False  # a shorter sentence: its padding is no target
    before = context2vec_scores(model, [batch])
    overfit(model, lambda: context2vec_loss(model, batch), 150, lr=1e-2)
    after = context2vec_scores(model, [batch])
    assert model.training  # scoring put it back in training mode
    # the loss keeps a floor (a sentence's own words are drawn as noise too), the ranking does not
    assert before["loss"] > 3.0 and after["loss"] < before["loss"] / 3 and before["top1"] < 0.3 and after["top1"] == 1.0


def test_held_out_scores_draw_the_same_noise_every_time():
    model = _model()
    batch = {"ids": torch.randint(4, V, (3, 5)), "mask": torch.ones(3, 5, dtype=torch.bool)}
    assert context2vec_scores(model, [batch]) == context2vec_scores(model, [batch])


def test_sentence_spans_cut_long_lines_and_skip_empty_ones():
    eos = 3
    ids = torch.tensor([10, 11, eos, eos, 12, 13, 14, 15, 16, eos, 17])  # the last line has no <eos>
    spans = sentence_spans(ids, eos, max_len=3)
    assert spans.tolist() == [[0, 2], [4, 3], [7, 2], [10, 1]]
    assert sentence_spans(torch.tensor([eos, eos]), eos, 3).shape == (0, 2)
    assert sentence_spans(torch.zeros(0, dtype=torch.long), eos, 3).shape == (0, 2)


def test_sentence_batches_from_a_token_file_equal_those_from_memory(tmp_path):
    rng = np.random.default_rng(0)
    stream = np.concatenate([np.append(rng.integers(4, V, n), 3) for n in rng.integers(1, 12, 40)])
    (tmp_path / "train.ids").write_bytes(stream.astype("<i4").tobytes())
    tokens, ids = TokenFile(tmp_path / "train.ids"), torch.from_numpy(stream)
    spans = sentence_spans(tokens, 3, 8)
    assert np.array_equal(spans, sentence_spans(ids, 3, 8))
    assert torch.equal(unigram_counts(tokens, V), torch.bincount(ids, minlength=V))
    a = list(SentenceBatches(tokens, spans, 6, seed=1, epoch=2))
    b = list(SentenceBatches(ids, spans, 6, seed=1, epoch=2))
    assert len(a) == len(SentenceBatches(ids, spans, 6)) and all(torch.equal(x["ids"], y["ids"]) for x, y in zip(a, b))
    # every sentence once, every real token a target once
    assert sum(int(x["mask"].sum()) for x in a) == int(spans[:, 1].sum()) == int((ids != 3).sum())
    other = list(SentenceBatches(ids, spans, 6, seed=1, epoch=3))
    assert any(not torch.equal(x["ids"], y["ids"]) for x, y in zip(a, other))
