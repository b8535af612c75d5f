"""quick-thought's loss: the true contexts are a sentence's neighbours in its document, the diagonal
is never a candidate, the multi-label loss against a hand computation, and one batch overfitted
until every next sentence is picked."""

from __future__ import annotations

import math

import pytest
import torch

from transferlab.encoders.sentence_rnn import SentenceRNN, SentenceRNNConfig
from transferlab.pretrain.quick_thought import QuickThought, context_targets, quick_thought_loss, quick_thought_scores

from helpers import overfit

V = 40


def _model(seed: int = 0) -> QuickThought:
    torch.manual_seed(seed)
    return QuickThought(SentenceRNN(SentenceRNNConfig(vocab_size=V, dim=16, hidden_dim=24, towers=2)))


def _batch(doc: list[int], seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, 6, (len(doc),), generator=g)
    ids = torch.zeros(len(doc), int(lengths.max()), dtype=torch.long)
    for i, n in enumerate(lengths.tolist()):
        ids[i, :n] = torch.randint(4, V, (n,), generator=g)
    return {"ids": ids, "mask": ids.ne(0), "doc": torch.tensor(doc)}


def test_context_targets_are_the_neighbours_in_the_same_document():
    t = context_targets(torch.tensor([0, 0, 0, 1, 1, 2]))
    pairs = {tuple(p) for p in t.nonzero().tolist()}
    assert pairs == {(0, 1), (1, 0), (1, 2), (2, 1), (3, 4), (4, 3)}  # 2|3 and 4|5 straddle documents; 5 has none
    assert not t.diagonal().any()


def test_loss_by_hand_against_the_neighbours_with_the_diagonal_left_out():
    model, batch = _model(), _batch([0, 0, 0, 0, 1, 1, 2])
    loss = quick_thought_loss(model, batch)
    with torch.no_grad():
        f, g = model.encoder.tower_sentences(batch["ids"], batch["mask"])
        B = f.size(0)
        rows = []
        for i in range(B):
            contexts = [j for j in (i - 1, i + 1) if 0 <= j < B and batch["doc"][j] == batch["doc"][i]]
            if not contexts:
                continue  # sentence 6 is alone in its document: no loss
            scores = {j: float(f[i] @ g[j]) for j in range(B) if j != i}  # every other sentence, never itself
            log_z = math.log(sum(math.exp(s) for s in scores.values()))
            rows.append(-sum(scores[c] - log_z for c in contexts) / len(contexts))
    assert len(rows) == 6
    assert loss.item() == pytest.approx(sum(rows) / len(rows), rel=1e-5)
    S = model.scores(batch["ids"], batch["mask"])
    assert torch.isinf(S.diagonal()).all() and torch.isfinite(S.fill_diagonal_(0)).all()


def test_a_batch_with_no_context_has_zero_loss_not_nan():
    model = _model()
    assert quick_thought_loss(model, _batch([0, 1, 2])).item() == 0.0


def test_overfits_one_batch_until_every_next_sentence_is_picked():
    model, batch = _model(), _batch([0] * 8 + [1] * 4, seed=1)
    before = quick_thought_scores(model, [batch])
    overfit(model, lambda: quick_thought_loss(model, batch), 60, lr=3e-2)
    after = quick_thought_scores(model, [batch])
    assert before["next_acc"] < 1.0 and after["next_acc"] == 1.0 and after["context_acc"] == 1.0
    # two true contexts share the probability: a loss near log 2 for inner sentences, near 0 at a document's ends
    assert after["loss"] < before["loss"] and after["loss"] < math.log(2) + 0.1
    assert model.training


def test_needs_two_towers():
    with pytest.raises(ValueError, match="towers must be 2"):
        QuickThought(SentenceRNN(SentenceRNNConfig(vocab_size=V, dim=8, hidden_dim=8)))
