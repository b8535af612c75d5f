"""skip-thought's loss: the conditional GRU against a hand-written step of the paper's equations,
both decoders' cross-entropy over real target words only, and one batch overfitted."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transferlab import IGNORE_INDEX
from transferlab.encoders.sentence_rnn import SentenceRNN, SentenceRNNConfig
from transferlab.pretrain.sentences import decoder_rows
from transferlab.pretrain.skip_thought import SkipThought, SkipThoughtConfig, skip_thought_loss, skip_thought_perplexity

from helpers import overfit

V, PAD, BOS, EOS = 30, 0, 2, 3


def _model(seed: int = 0, decoder_dim: int = 0) -> SkipThought:
    torch.manual_seed(seed)
    return SkipThought(SentenceRNN(SentenceRNNConfig(vocab_size=V, dim=8, hidden_dim=12)),
                       SkipThoughtConfig(decoder_dim=decoder_dim))


def _batch(seed: int = 0, B: int = 4) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)

    def rows() -> list[list[int]]:
        return [torch.randint(4, V, (int(n),), generator=g).tolist() for n in torch.randint(2, 7, (B,), generator=g)]

    middle = rows()
    width = max(map(len, middle))
    ids = torch.tensor([r + [PAD] * (width - len(r)) for r in middle])
    batch = {"ids": ids, "mask": ids.ne(PAD)}
    for side in ("prev", "next"):
        batch[f"{side}_ids"], batch[f"{side}_labels"] = decoder_rows(rows(), BOS, EOS, PAD)
    return batch


def _hand_decoder_nll(model: SkipThought, side: str, h: torch.Tensor, inputs: torch.Tensor, labels: torch.Tensor):
    """The paper's conditional GRU step by step (C_r h, C_z h, C h in the gates; PyTorch's reset
    placement), the first state tanh(W_0 h), then the vocabulary matrix and a plain cross-entropy."""
    gru, H = model.decoders[side].gru, model.decoders[side].gru.hidden_size
    W, U, bw, bu = gru.weight_ih_l0, gru.weight_hh_l0, gru.bias_ih_l0, gru.bias_hh_l0
    E = model.encoder.cfg.dim
    Wx, C = W[:, :E], W[:, E:]  # the word and the sentence-vector parts of the input matrix
    state = torch.tanh(model.decoders[side].init_state(h))  # (B, H)
    logits = []
    for t in range(inputs.size(1)):
        x = model.encoder.embedding[0](inputs[:, t])  # (B, E)
        gi, gh = x @ Wx.t() + h @ C.t() + bw, state @ U.t() + bu  # (B, 3H)
        r = torch.sigmoid(gi[:, :H] + gh[:, :H])
        z = torch.sigmoid(gi[:, H:2 * H] + gh[:, H:2 * H])
        n = torch.tanh(gi[:, 2 * H:] + r * gh[:, 2 * H:])
        state = (1 - z) * n + z * state
        logits.append(model.vocab(state))
    logits = torch.stack(logits, 1)  # (B, T, V)
    return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1), ignore_index=IGNORE_INDEX)


@pytest.mark.parametrize("decoder_dim", [0, 10])
def test_loss_is_both_decoders_cross_entropy_by_hand(decoder_dim):
    model, batch = _model(decoder_dim=decoder_dim), _batch()
    loss = skip_thought_loss(model, batch)
    with torch.no_grad():
        h = model.encoder.sentence(batch["ids"], batch["mask"])
        expected = sum(_hand_decoder_nll(model, side, h, batch[f"{side}_ids"], batch[f"{side}_labels"])
                       for side in ("prev", "next"))
    assert torch.allclose(loss, expected, atol=1e-5)
    # the same as scoring every position and letting cross_entropy ignore the padding
    full = sum(F.cross_entropy(model.logits(side, h, batch[f"{side}_ids"]).flatten(0, 1),
                               batch[f"{side}_labels"].flatten(), ignore_index=IGNORE_INDEX)
               for side in ("prev", "next"))
    assert torch.allclose(loss, full, atol=1e-5)


def test_loss_ignores_padding():
    model, batch = _model(), _batch()
    loss = skip_thought_loss(model, batch)
    wider = {}
    for key, value in batch.items():  # three more columns of padding everywhere, garbage ids under it
        fill = False if key == "mask" else IGNORE_INDEX if key.endswith("labels") else PAD
        wider[key] = torch.cat([value, torch.full((value.size(0), 3), fill, dtype=value.dtype)], 1)
    for key, labels in (("ids", ~wider["mask"]), ("prev_ids", wider["prev_labels"].eq(IGNORE_INDEX)),
                        ("next_ids", wider["next_labels"].eq(IGNORE_INDEX))):
        garbage = torch.randint(4, V, wider[key].shape)
        wider[key] = torch.where(labels, garbage, wider[key])
    assert torch.allclose(skip_thought_loss(model, wider), loss, atol=1e-6)


def test_decoders_share_the_encoders_embeddings_and_one_vocabulary_matrix():
    model = _model()
    loss = skip_thought_loss(model, _batch())
    loss.backward()
    assert model.encoder.embedding[0].weight.grad.abs().sum() > 0
    assert model.decoders["prev"].gru.weight_ih_l0 is not model.decoders["next"].gru.weight_ih_l0
    assert model.decoders["prev"].vocab is model.decoders["next"].vocab is model.vocab
    names = {n for n, _ in model.named_parameters()}
    assert "vocab.weight" in names and not any(n.startswith("decoders.prev.vocab") for n in names)


def test_overfits_one_batch():
    model, batch = _model(), _batch(B=3)
    first, _ = overfit(model, lambda: skip_thought_loss(model, batch), 80, lr=5e-2)
    assert first > 2 * math.log(V) - 1.5
    scores = skip_thought_perplexity(model, [batch])
    assert scores["ppl"] < 1.1 and scores["prev_ppl"] < 1.1 and scores["next_ppl"] < 1.1
    assert model.training  # perplexity evaluates in eval mode and restores the mode
