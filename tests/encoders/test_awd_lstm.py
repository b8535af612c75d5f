"""Tests for transferlab.encoders.awd_lstm: parity with nn.LSTM and the five dropouts."""

from __future__ import annotations

import dataclasses
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig, detach_state, locked_dropout
from transferlab.encoders.base import EncoderOutput
from transferlab.encoders.registry import ENCODERS

NO_DROPOUT = dict(embed_p=0.0, input_p=0.0, hidden_p=0.0, weight_p=0.0, output_p=0.0)


def tiny(**kw) -> AWDLSTM:
    torch.manual_seed(0)
    base = dict(vocab_size=99, dim=32, hidden_dim=48, n_layers=2)
    return AWDLSTM(AWDLSTMConfig(**{**base, **kw}))


def reference_stack(model: AWDLSTM) -> nn.ModuleList:
    """Plain nn.LSTMs holding copies of the model's weights."""
    refs = nn.ModuleList()
    for rnn in model.rnns:
        ref = nn.LSTM(rnn.input_size, rnn.hidden_size, batch_first=True)
        with torch.no_grad():
            ref.weight_ih_l0.copy_(rnn.weight_ih_l0)
            ref.weight_hh_l0.copy_(rnn.weight_hh_l0_raw)
            ref.bias_ih_l0.copy_(rnn.bias_ih_l0)
            ref.bias_hh_l0.copy_(rnn.bias_hh_l0)
        refs.append(ref)
    return refs


@pytest.mark.parametrize("mode", ["eval", "train_p0"])
def test_parity_with_nn_lstm_across_two_windows(mode):
    model = tiny(**NO_DROPOUT) if mode == "train_p0" else tiny()
    model.train(mode == "train_p0")
    refs = reference_stack(model)
    ids = torch.randint(0, 99, (3, 20))
    state, ref_state = None, [None] * len(refs)
    for window in (ids[:, :11], ids[:, 11:]):  # the state carries over from window 1 to 2
        out = model(window, state=state)
        x = F.embedding(window, model.embedding.weight)
        assert torch.equal(out.layers[0], x)
        for i, ref in enumerate(refs):
            x, ref_state[i] = ref(x, ref_state[i])
            assert (out.layers[i + 1] - x).abs().max() < 1e-5
            h, c = out.state[i]
            assert (h - ref_state[i][0]).abs().max() < 1e-5
            assert (c - ref_state[i][1]).abs().max() < 1e-5
        assert (out.hidden - x).abs().max() < 1e-5
        state = detach_state(out.state)


def test_shapes_with_padding_mask():
    model = tiny().train()
    ids = torch.randint(4, 99, (4, 9))
    ids[1, 5:] = 0  # right padding with pad_id
    mask = ids != 0
    out = model(ids, mask)
    assert isinstance(out, EncoderOutput)
    assert out.hidden.shape == (4, 9, model.dim) and model.dim == 32
    assert [t.shape for t in out.layers] == [(4, 9, 32), (4, 9, 48), (4, 9, 32)]
    assert [tuple(h.shape) for h, _ in out.state] == [(1, 4, 48), (1, 4, 32)]
    assert torch.isfinite(out.hidden).all()
    assert torch.equal(model.embedding.weight[0], torch.zeros(32))  # the pad row starts at zero


def test_weight_drop_changes_output_and_trains_the_raw_weight():
    model = tiny(**{**NO_DROPOUT, "weight_p": 0.5})
    names = {n for n, _ in model.named_parameters()}
    assert "rnns.0.weight_hh_l0_raw" in names and "rnns.0.weight_hh_l0" not in names
    ids = torch.randint(0, 99, (2, 12))
    model.eval()
    clean = model(ids).hidden
    model.train()
    a, b = model(ids).hidden, model(ids).hidden
    assert not torch.allclose(a, clean) and not torch.allclose(a, b)
    model.zero_grad()
    model(ids).hidden.sum().backward()
    grad = model.rnns[0].weight_hh_l0_raw.grad
    assert grad is not None and grad.abs().sum() > 0
    # one DropConnect mask for the whole window: about half the raw weights get no gradient
    zero_frac = (grad == 0).float().mean().item()
    assert 0.4 < zero_frac < 0.6


def test_locked_dropout_mask_is_constant_over_time():
    x = torch.ones(8, 30, 16)
    y = locked_dropout(x, 0.5, training=True)
    assert torch.equal(y, y[:, :1].expand_as(y))  # every step has the step-0 mask
    assert set(y.unique().tolist()) == {0.0, 2.0}  # scaled by 1 / (1 - p)
    assert not torch.equal(y[0], y[1])  # one mask per sequence
    assert locked_dropout(x, 0.5, training=False) is x
    # through the model: output_p zeroes the same units of `hidden` at every step
    model = tiny(**{**NO_DROPOUT, "output_p": 0.5}).train()
    out = model(torch.randint(0, 99, (4, 15)))
    dropped = out.hidden == 0
    assert dropped.any() and torch.equal(dropped, dropped[:, :1].expand_as(dropped))


def test_embedding_dropout_zeroes_whole_words():
    model = tiny(**{**NO_DROPOUT, "embed_p": 0.5}).train()
    ids = torch.randint(4, 24, (6, 40))  # 20 words, each repeated many times
    emb = model(ids).layers[0]
    zero = (emb == 0).all(-1)  # (B, T): a dropped word is a zero row
    for w in ids.unique():
        where = zero[ids == w]
        assert where.all() or not where.any(), f"word {int(w)} dropped only sometimes"
    kept = ~zero
    scaled = model.embedding.weight[ids] / 0.5
    assert torch.allclose(emb[kept], scaled[kept])
    assert 0 < zero.float().mean() < 1


def test_layer_groups_bottom_to_top():
    model = tiny(n_layers=3)
    groups = model.layer_groups()
    assert len(groups) == 4
    assert groups[0] is model.embedding and list(groups[1:]) == list(model.rnns)
    assert [g.hidden_size for g in groups[1:]] == [48, 48, 32]
    n_grouped = sum(p.numel() for g in groups for p in g.parameters())
    assert n_grouped == sum(p.numel() for p in model.parameters())


def test_no_warnings_in_training():
    model = tiny().train()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            model(torch.randint(0, 99, (2, 7))).hidden.sum().backward()


def test_config_validation_names_the_field():
    with pytest.raises(ValueError, match="input_p"):
        AWDLSTMConfig(vocab_size=10, input_p=1.0)
    with pytest.raises(ValueError, match="hidden_dim"):
        AWDLSTMConfig(vocab_size=10, hidden_dim=0)
    with pytest.raises(ValueError, match="pad_id"):
        AWDLSTMConfig(vocab_size=10, pad_id=10)
    with pytest.raises(ValueError, match="vocab_size"):
        AWDLSTM(AWDLSTMConfig())
    cfg = AWDLSTMConfig(vocab_size=10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.dim = 3  # type: ignore[misc]


def test_registry_and_detach_state():
    assert ENCODERS["awd_lstm"].module is AWDLSTM and ENCODERS["awd_lstm"].config is AWDLSTMConfig
    model = tiny()
    state = model(torch.randint(0, 99, (2, 5))).state
    assert state[0][0].requires_grad
    cut = detach_state(state)
    assert isinstance(cut, list) and isinstance(cut[0], tuple)
    assert not any(t.requires_grad for hc in cut for t in hc)
    assert detach_state(None) is None
