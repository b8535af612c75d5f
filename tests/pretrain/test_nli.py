"""InferSent's objective: the pair features, one encoder for both sides whatever the padding, and a
classifier that overfits one batch."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transferlab.config import ConfigError
from transferlab.encoders.sentence_rnn import SentenceRNN, SentenceRNNConfig
from transferlab.pretrain.nli import InferSent, NLIConfig, nli_loss, nli_scores, pair_features
from transferlab.pretrain.paraphrase import PairBatches

from helpers import overfit


def _model(n_classes: int = 3, hidden_dim: int = 16) -> InferSent:
    torch.manual_seed(0)
    enc = SentenceRNN(SentenceRNNConfig(vocab_size=40, dim=8, hidden_dim=12, cell="lstm", bidirectional=True,
                                        pooling="max"))
    return InferSent(enc, n_classes, NLIConfig(hidden_dim=hidden_dim))


def test_features_are_u_v_abs_difference_and_product():
    u = torch.tensor([[1.0, -2.0], [0.5, 3.0]])
    v = torch.tensor([[3.0, 1.0], [0.5, -1.0]])
    want = torch.tensor([[1.0, -2.0, 3.0, 1.0, 2.0, 3.0, 3.0, -2.0],
                         [0.5, 3.0, 0.5, -1.0, 0.0, 4.0, 0.25, -3.0]])
    assert torch.equal(pair_features(u, v), want)


@torch.no_grad()
def test_both_sides_go_through_the_encoder_and_the_classifier_reads_the_features():
    model = _model().eval()
    ids = torch.tensor([[4, 5, 6, 0, 0], [7, 8, 0, 0, 0]])  # padded wider than it needs
    ids_b = torch.tensor([[9, 10], [11, 12]])
    logits = model(ids, ids.ne(0), ids_b, ids_b.ne(0))
    assert logits.shape == (2, 3)
    u = model.encoder.sentence(ids[:, :3], ids[:, :3].ne(0))  # (B, 2 * 12): the biLSTM's max-pool
    v = model.encoder.sentence(ids_b, ids_b.ne(0))
    assert u.shape == (2, 24)
    assert torch.allclose(logits, model.classifier(pair_features(u, v)), atol=1e-5)
    swapped = model(ids_b, ids_b.ne(0), ids, ids.ne(0))  # order matters: [u, v] is not symmetric
    assert not torch.allclose(logits, swapped)


def test_overfits_one_batch():
    model = _model()
    torch.manual_seed(1)
    a = [[int(t) for t in torch.randint(4, 40, (int(n),))] for n in torch.randint(2, 7, (12,))]
    b = [[int(t) for t in torch.randint(4, 40, (int(n),))] for n in torch.randint(2, 7, (12,))]
    labels = [i % 3 for i in range(12)]
    batch = next(iter(PairBatches(a, b, 12, labels=labels, shuffle=False)))
    first, last = overfit(model, lambda: nli_loss(model, batch), 150, lr=1e-2)
    assert last < 0.05 < first
    scores = nli_scores(model, [batch])
    assert scores["accuracy"] == 1.0 and scores["loss"] < 0.05
    assert model.training  # nli_scores puts the mode back


def test_scores_are_the_mean_loss_and_accuracy_over_all_batches():
    model = _model()
    a = [[4, 5], [6], [7, 8, 9], [10, 11], [12]]
    b = [[13], [14, 15], [16], [17, 18, 19], [20]]
    labels = [0, 1, 2, 1, 0]
    batches = list(PairBatches(a, b, 2, labels=labels, shuffle=False))
    got = nli_scores(model, batches)
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model(x["ids"], x["mask"], x["ids_b"], x["mask_b"]) for x in batches])
    y = torch.cat([x["labels"] for x in batches])
    assert got["loss"] == pytest.approx(float(F.cross_entropy(logits, y)), abs=1e-5)
    assert got["accuracy"] == pytest.approx(float((logits.argmax(-1) == y).float().mean()))


def test_config_errors_name_the_flag():
    with pytest.raises(ConfigError, match="objective.hidden_dim"):
        NLIConfig(hidden_dim=0)
    with pytest.raises(ConfigError, match="objective.dropout"):
        NLIConfig(dropout=1.0)
    with pytest.raises(ValueError, match="2 or more classes"):
        _model(n_classes=1)
