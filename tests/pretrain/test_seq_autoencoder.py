"""Tests for transferlab.pretrain.seq_autoencoder: the doubled batch, a loss that counts only the
reconstruction, its value against F.cross_entropy, and an autoencoder that learns to reconstruct."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transferlab import IGNORE_INDEX
from transferlab.data.batching import pad_batch
from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig
from transferlab.pretrain.context2vec import SentenceBatches, sentence_spans
from transferlab.pretrain.lm import LanguageModel
from transferlab.pretrain.seq_autoencoder import (SABatches, autoencoder_batch, reconstruction_scores,
                                                  seq_autoencoder_loss)

V, PAD, EOS = 99, 0, 3
NO_DROPOUT = dict(embed_p=0.0, input_p=0.0, hidden_p=0.0, weight_p=0.0, output_p=0.0)


def tiny_sa(dim: int = 32, hidden_dim: int = 32, **dropouts) -> LanguageModel:
    torch.manual_seed(0)
    cfg = AWDLSTMConfig(vocab_size=V, dim=dim, hidden_dim=hidden_dim, n_layers=2, **dropouts)
    return LanguageModel(AWDLSTM(cfg), V, tie_weights=True)


def sentences(*rows: list[int]) -> dict[str, torch.Tensor]:
    return autoencoder_batch(pad_batch(rows, PAD), EOS, PAD)


def test_each_sentence_is_read_then_predicted_again():
    b = sentences([5, 6, 7], [8], [9, 10])
    _ = IGNORE_INDEX
    assert b["ids"].tolist() == [[5, 6, 7, EOS, 5, 6, 7], [8, EOS, 8, PAD, PAD, PAD, PAD],
                                 [9, 10, EOS, 9, 10, PAD, PAD]]
    assert b["labels"].tolist() == [[_, _, _, 5, 6, 7, EOS], [_, 8, EOS, _, _, _, _], [_, _, 9, 10, EOS, _, _]]
    assert b["mask"].sum(1).tolist() == [7, 3, 5]  # 2n + 1 real positions


def test_sa_batches_double_the_sentence_batches_of_a_stream():
    stream = torch.tensor([5, 6, EOS, 7, 8, 9, EOS, 10, EOS, 11, 12, 13, 14, 15, EOS])
    spans = sentence_spans(stream, EOS, max_len=4)  # the last line is cut into 4 + 1 words
    plain = SentenceBatches(stream, spans, 2, pad_id=PAD, seed=1)
    doubled = SABatches(plain, EOS)
    assert len(doubled) == len(plain) == 3
    for p, d in zip(plain, doubled):
        n = p["mask"].sum(1)
        assert d["ids"].shape == (p["ids"].size(0), 2 * p["ids"].size(1) + 1)
        assert torch.equal(d["mask"].sum(1), 2 * n + 1) and torch.equal((d["labels"] != IGNORE_INDEX).sum(1), n + 1)
    again = [b["ids"] for b in SABatches(SentenceBatches(stream, spans, 2, pad_id=PAD, seed=1), EOS)]
    assert all(torch.equal(a, b["ids"]) for a, b in zip(again, doubled))  # a pure function of (seed, epoch)


def test_the_loss_is_cross_entropy_over_the_second_copy_only():
    """The reference by hand: F.cross_entropy of the logits at the positions n .. 2n of each row
    (inputs <eos>, x_1 .. x_n; targets x_1 .. x_n, <eos>), nothing else."""
    model = tiny_sa().eval()
    rows = [[5, 6, 7, 8], [9, 10], [11, 12, 13]]
    b = sentences(*rows)
    logits, _ = model(b["ids"])  # (B, T, V)
    picked, targets = [], []
    for i, x in enumerate(rows):
        n = len(x)
        picked.append(logits[i, n : 2 * n + 1])  # (n + 1, V)
        targets.append(torch.tensor(x + [EOS]))
    reference = F.cross_entropy(torch.cat(picked), torch.cat(targets))
    assert seq_autoencoder_loss(model, b).item() == pytest.approx(reference.item(), rel=1e-5)
    # counting the first copy too (the plain LM over the doubled text) would give another value
    real = b["mask"]
    lm_labels = torch.cat([b["ids"][:, 1:], torch.full((3, 1), EOS)], 1).masked_fill(~real, IGNORE_INDEX)
    as_lm = F.cross_entropy(logits.reshape(-1, V), lm_labels.reshape(-1), ignore_index=IGNORE_INDEX)
    assert abs(as_lm.item() - reference.item()) > 1e-3

    class Wrapped(nn.Module):  # not a LanguageModel (as a DDP wrapper is): the logits route
        def __init__(self, lm):
            super().__init__()
            self.lm = lm

        def forward(self, ids, mask=None, state=None):
            return self.lm(ids, mask, state)

    assert seq_autoencoder_loss(Wrapped(model), b).item() == pytest.approx(reference.item(), rel=1e-5)


def test_padding_and_first_copy_targets_do_not_count_but_reconstruction_targets_do():
    """Changing what stands at a position changes the loss exactly where it should: a padding id
    never (the LSTM reads left to right and padding comes last); a label of the reconstruction
    always; and the first copy's words through what the encoder read."""
    model = tiny_sa().eval()
    b = sentences([5, 6, 7, 8], [9, 10])
    base = seq_autoencoder_loss(model, b).item()
    padded = dict(b, ids=b["ids"].masked_fill(~b["mask"], 42))
    assert seq_autoencoder_loss(model, padded).item() == pytest.approx(base, abs=1e-6)
    for p in range(b["ids"].size(1)):
        changed = b["labels"].clone()
        if changed[0, p] == IGNORE_INDEX:  # the first copy's next words: not targets of the loss
            assert p < 4
            continue
        changed[0, p] = 50 + p
        assert seq_autoencoder_loss(model, dict(b, labels=changed)).item() != pytest.approx(base, abs=1e-4)
    assert (b["labels"][0] != IGNORE_INDEX).tolist() == [False] * 4 + [True] * 5
    first_copy = b["ids"].clone()
    first_copy[0, 1] = 60  # a word read by the encoder, the reconstruction's targets unchanged
    # (at random weights a word read 7 steps back moves the loss by ~1e-5: far above float noise)
    assert seq_autoencoder_loss(model, dict(b, ids=first_copy)).item() != pytest.approx(base, abs=1e-6)


def test_sampled_softmax_applies_in_training_only():
    model = tiny_sa(**NO_DROPOUT).eval()
    b = sentences([5, 6, 7], [8, 9])
    full = seq_autoencoder_loss(model, b).item()
    assert seq_autoencoder_loss(model, b, samples=8).item() == pytest.approx(full)
    model.train()
    torch.manual_seed(1)
    assert seq_autoencoder_loss(model, b, samples=8).item() != pytest.approx(full)


def test_reconstruction_scores_by_hand():
    model = tiny_sa().eval()
    b = sentences([5, 6, 7, 8], [9, 10])
    scores = reconstruction_scores(model, [b])
    logits, _ = model(b["ids"])
    keep = b["labels"] != IGNORE_INDEX
    assert scores["ppl"] == pytest.approx(math.exp(seq_autoencoder_loss(model, b).item()), rel=1e-5)
    assert scores["accuracy"] == pytest.approx((logits[keep].argmax(-1) == b["labels"][keep]).float().mean().item())
    with pytest.raises(ValueError, match="no sentence"):
        reconstruction_scores(model, [])


def test_overfits_one_batch_to_perfect_reconstruction():
    """Six random sentences of 4 to 9 words: after training on them, every word of each is
    reconstructed from the state the LSTM ended the sentence in. (The loss sits at the words'
    unigram entropy for a hundred steps or two before the state starts to carry the sentence:
    100% came at steps 200 to 550 over five initializations.)"""
    rng = np.random.default_rng(0)
    rows = [rng.integers(4, V, size=n).tolist() for n in (4, 5, 6, 7, 8, 9)]
    b = sentences(*rows)
    model = tiny_sa(dim=64, hidden_dim=64, **NO_DROPOUT).train()
    assert reconstruction_scores(model, [b])["accuracy"] < 0.1
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(1, 801):
        loss = seq_autoencoder_loss(model, b)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0 and reconstruction_scores(model, [b])["accuracy"] == 1.0:
            break
    scores = reconstruction_scores(model, [b])
    assert scores["accuracy"] == 1.0 and scores["ppl"] < 2.0, (step, scores)
