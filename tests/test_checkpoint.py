"""Checkpoint folders: round trips, tied weights, clear errors, atomic saves, no pickle."""

import json
import os
import pickle
import random

import numpy as np
import pytest
import torch
from torch import nn

from transferlab import checkpoint as ck
from transferlab.checkpoint import CheckpointError, load_checkpoint, load_weights, save_checkpoint


class Tied(nn.Module):
    """An LM-shaped model whose decoder shares the embedding matrix."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(11, 6)
        self.rnn = nn.LSTM(6, 6, batch_first=True)
        self.decoder = nn.Linear(6, 11)
        self.decoder.weight = self.embed.weight

    def forward(self, ids):
        return self.decoder(self.rnn(self.embed(ids))[0])


def trained(seed=0):
    torch.manual_seed(seed)
    model = Tied()
    opt = torch.optim.AdamW([{"params": model.rnn.parameters(), "name": "rnn", "max_lr": 0.1},
                             {"params": [model.embed.weight, model.decoder.bias], "name": "top"}], lr=1e-2)
    for _ in range(2):
        opt.zero_grad()
        model(torch.randint(0, 11, (2, 5))).sum().backward()
        opt.step()
    return model, opt


def save(path, model, opt=None, **kw):
    return save_checkpoint(path, model, config={"dim": 6, "name": "tied"}, files={"vocab": {"itos": ["a", "é"]}},
                           optimizer=opt, state={"step": 2, "best": None}, **kw)


def test_round_trip(tmp_path):
    model, opt = trained()
    path = save(tmp_path / "ck", model, opt, tensors={"hidden": torch.ones(2, 3)})
    assert sorted(p.name for p in path.iterdir()) == ["config.json", "extra_state.safetensors", "model.safetensors",
                                                      "optimizer.safetensors", "state.json", "vocab.json"]
    c = load_checkpoint(path)
    assert c.config == {"dim": 6, "name": "tied"} and c.files == {"vocab": {"itos": ["a", "é"]}}
    assert c.state == {"step": 2, "best": None}
    assert torch.equal(c.tensors["hidden"], torch.ones(2, 3))
    for k, v in model.state_dict().items():
        assert torch.equal(c.weights[k], v), k
    fresh, fresh_opt = trained(seed=1)
    fresh.load_state_dict(c.weights)
    fresh_opt.load_state_dict(c.optimizer_state)
    a, b = opt.state_dict(), fresh_opt.state_dict()
    assert a["param_groups"] == b["param_groups"]
    for i in a["state"]:
        for key in a["state"][i]:
            assert torch.equal(a["state"][i][key], b["state"][i][key])
    x = torch.randint(0, 11, (2, 5))  # both continue identically
    for m, o in ((model, opt), (fresh, fresh_opt)):
        o.zero_grad()
        m(x).sum().backward()
        o.step()
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), fresh.parameters()))


def test_json_only_reads_no_tensor_file(tmp_path):
    model, opt = trained()
    path = save(tmp_path / "ck", model, opt)
    (path / "model.safetensors").write_bytes(b"not read")  # json_only never opens it
    c = load_checkpoint(path, json_only=True)
    assert c.config == {"dim": 6, "name": "tied"} and c.files == {"vocab": {"itos": ["a", "é"]}}
    assert c.weights == {} and c.optimizer_state is None and c.path == path
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_checkpoint(path)


def test_tied_weights_stay_tied(tmp_path):
    model, _ = trained()
    save(tmp_path / "ck", model)
    fresh = Tied()
    load_weights(fresh, tmp_path / "ck")
    assert fresh.decoder.weight is fresh.embed.weight
    assert torch.equal(fresh.embed.weight, model.embed.weight)
    assert load_checkpoint(tmp_path / "ck").optimizer_state is None


def test_errors_name_the_file(tmp_path):
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "nothing")
    model, _ = trained()
    path = save(tmp_path / "ck", model)
    (path / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="config.json is not valid JSON"):
        load_checkpoint(path)
    (path / "config.json").unlink()
    with pytest.raises(CheckpointError, match="config.json is missing"):
        load_checkpoint(path)
    path = save(tmp_path / "ck", model)
    data = (path / "model.safetensors").read_bytes()
    (path / "model.safetensors").write_bytes(data[: len(data) // 2])
    with pytest.raises(CheckpointError, match="model.safetensors is corrupt or truncated"):
        load_checkpoint(path)
    with pytest.raises(CheckpointError, match="model.safetensors"):
        load_weights(Tied(), path)
    (path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="model.safetensors is missing"):
        load_checkpoint(path)


def test_reserved_and_bad_names(tmp_path):
    model, _ = trained()
    with pytest.raises(ValueError, match="reserved"):
        save_checkpoint(tmp_path / "a", model, config={}, files={"state": {}})
    with pytest.raises(ValueError, match="plain name"):
        save_checkpoint(tmp_path / "a", model, config={}, files={"../x": {}})


def test_a_crash_while_writing_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    old, _ = trained(seed=0)
    new, new_opt = trained(seed=1)
    path = save(tmp_path / "ck", old)
    real = ck._write_json

    def crash_on_state(p, obj):
        if p.name == "state.json":
            raise OSError("disk full")
        real(p, obj)

    monkeypatch.setattr(ck, "_write_json", crash_on_state)
    with pytest.raises(OSError, match="disk full"):
        save(path, new, new_opt)
    monkeypatch.undo()
    c = load_checkpoint(path)
    assert torch.equal(c.weights["embed.weight"], old.embed.weight) and c.optimizer_state is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # the temporary folder is gone


def test_a_crash_between_the_renames_keeps_a_complete_checkpoint(tmp_path, monkeypatch):
    old, _ = trained(seed=0)
    new, _ = trained(seed=1)
    path = save(tmp_path / "ck", old)
    real, calls = os.replace, []

    def crash_second(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError("power cut")
        real(src, dst)

    monkeypatch.setattr(ck.os, "replace", crash_second)
    with pytest.raises(OSError, match="power cut"):
        save(path, new)
    monkeypatch.undo()
    assert not path.exists() and ck.has_checkpoint(path)
    assert torch.equal(load_checkpoint(path).weights["embed.weight"], old.embed.weight)
    save(path, new)  # the next save recovers and swaps normally
    assert torch.equal(load_checkpoint(path).weights["embed.weight"], new.embed.weight)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


def test_rng_state_round_trips_through_json():
    random.seed(1), np.random.seed(1), torch.manual_seed(1)
    random.random(), np.random.rand(), torch.rand(1), np.random.randn()
    state = json.loads(json.dumps(ck.rng_state()))
    first = (random.random(), np.random.randn(), torch.rand(3))
    ck.set_rng_state(state)
    second = (random.random(), np.random.randn(), torch.rand(3))
    assert first[:2] == second[:2] and torch.equal(first[2], second[2])


def test_pack_state_keeps_structure():
    state = {"hidden": [(torch.ones(2), torch.zeros(3))], "n": 3, "none": None}
    skeleton, tensors = ck.pack_state(state, "loss")
    back = ck.unpack_state(json.loads(json.dumps(skeleton)), tensors)
    assert isinstance(back["hidden"][0], tuple) and back["n"] == 3 and back["none"] is None
    assert torch.equal(back["hidden"][0][1], torch.zeros(3))


def test_loading_never_unpickles(tmp_path, monkeypatch):
    model, opt = trained()
    path = save(tmp_path / "ck", model, opt)

    def refuse(*a, **k):
        raise AssertionError("unpickling attempted")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    monkeypatch.setattr(torch, "load", refuse)
    load_checkpoint(path)
    load_weights(Tied(), path)
