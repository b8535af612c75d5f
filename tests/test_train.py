"""fit(): learning, gradient accumulation, clipping, schedules over groups, early stopping,
best checkpoints, and exact resume after a crash."""

import contextlib
import json
import math

import pytest
import torch
from torch import nn

from transferlab.checkpoint import load_checkpoint, load_weights
from transferlab.config import ConfigError
from transferlab.schedules import slanted_triangular
from transferlab.train import TrainConfig, fit

QUIET = dict(progress=False, log_every=0)


def make_mlp(dropout: float = 0.0, seed: int = 0) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Dropout(dropout), nn.Linear(16, 3))


def toy_data(n: int = 32, seed: int = 1) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 4, generator=g)
    return x, (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()


def batches(x, y, size: int, shuffle: bool = True):
    def data(epoch: int) -> list[dict]:
        g = torch.Generator().manual_seed(epoch)
        order = torch.randperm(len(x), generator=g) if shuffle else torch.arange(len(x))
        return [{"x": x[order[i:i + size]], "labels": y[order[i:i + size]]} for i in range(0, len(x), size)]
    return data


def ce(model, batch):
    return nn.functional.cross_entropy(model(batch["x"]), batch["labels"])


def accuracy(x, y):
    return lambda m: {"acc": (m(x).argmax(-1) == y).float().mean().item()}


def test_overfit_one_batch():
    x, y = toy_data(8)
    model = make_mlp()
    before = ce(model, {"x": x, "labels": y}).item()
    result = fit(model, ce, lambda e: [{"x": x, "labels": y}], TrainConfig(lr=1e-2, steps=150, **QUIET))
    assert result.step == 150
    assert ce(model, {"x": x, "labels": y}).item() < min(0.05, before / 10)
    assert result.examples_per_s > 0 and result.tokens_per_s is None


def test_grad_accum_equals_a_big_batch():
    x, y = toy_data(32)
    a, b = make_mlp(), make_mlp()
    cfg = dict(lr=0.5, optimizer="sgd", momentum=0.9, weight_decay=0.01, epochs=2, **QUIET)
    fit(a, ce, batches(x, y, 8), TrainConfig(**cfg))
    fit(b, ce, batches(x, y, 4), TrainConfig(grad_accum=2, **cfg))
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, rtol=0, atol=1e-6)
    assert not torch.equal(a[0].weight, make_mlp()[0].weight)


def test_clip_bounds_the_update():
    lin = nn.Linear(3, 2, bias=False)
    before = lin.weight.detach().clone()
    loss = lambda m, b: (m.weight * b["scale"]).sum()  # noqa: E731  grad = scale everywhere: norm 100*sqrt(6)
    one = lambda e: [{"scale": torch.tensor(100.0)}]  # noqa: E731
    fit(lin, loss, one, TrainConfig(lr=1.0, optimizer="sgd", weight_decay=0, clip=2.0, steps=1, **QUIET))
    assert (before - lin.weight).norm().item() == pytest.approx(2.0, rel=1e-5)
    fit(lin, loss, one, TrainConfig(lr=1.0, optimizer="sgd", weight_decay=0, steps=1, **QUIET))
    assert (before - lin.weight).norm().item() == pytest.approx(2.0 + 100 * math.sqrt(6), rel=1e-5)


def test_group_added_mid_run_follows_the_schedule(tmp_path):
    x, y = toy_data(32)
    model = make_mlp()
    bottom, top = model[0], model[3]
    bottom.requires_grad_(False)
    frozen = bottom.weight.detach().clone()
    seen = {}

    def unfreeze(epoch, trainer):
        if epoch == 1:
            seen["bottom_after_epoch0"] = bottom.weight.detach().clone()
            bottom.requires_grad_(True)
            trainer.add_group({"params": bottom.parameters(), "lr": 0.002, "name": "bottom"})

    cfg = TrainConfig(lr=1e-2, epochs=3, schedule="slanted_triangular", cut_frac=0.25, weight_decay=0.1,
                      log_every=1, progress=False)
    fit(model, ce, batches(x, y, 4), cfg, groups=[{"params": top.parameters(), "lr": 0.01, "name": "top"}],
        on_epoch_start=unfreeze, out_dir=tmp_path)
    assert torch.equal(seen["bottom_after_epoch0"], frozen)  # frozen: neither updated nor decayed
    assert not torch.equal(bottom.weight, frozen)
    lines = [json.loads(s) for s in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in lines if "loss" in r]
    assert [r["step"] for r in steps] == list(range(1, 25))
    for r in steps:  # the lr logged after step s is the one step s - 1 used
        assert r["lr"]["top"] == pytest.approx(slanted_triangular(r["step"] - 1, 24, 0.01, 0.25, 32))
        if r["step"] <= 8:
            assert "bottom" not in r["lr"]
        else:
            assert r["lr"]["bottom"] == pytest.approx(slanted_triangular(r["step"] - 1, 24, 0.002, 0.25, 32))
    assert json.loads((tmp_path / "config.json").read_text())["train"]["epochs"] == 3


def test_early_stopping_stops():
    x, y = toy_data(32)
    scores = iter([0.9, 0.5, 0.4, 0.3, 0.2, 0.1])
    result = fit(make_mlp(), ce, batches(x, y, 4), TrainConfig(epochs=5, eval_every=1, patience=2, **QUIET),
                 evaluate=lambda m: {"acc": next(scores)}, metric="acc")
    assert result.stopped_early and result.step == 3
    assert result.best == 0.9 and result.best_step == 1
    assert [h["acc"] for h in result.history] == [0.9, 0.5, 0.4]


def test_best_checkpoint_holds_the_best_metric(tmp_path):
    x, y = toy_data(32)
    model = make_mlp()
    scores, weights = iter([2.0, 0.5, 0.7, 3.0, 1.0]), {}

    def evaluate(m):
        assert not m.training and not torch.is_grad_enabled()
        weights[len(weights) + 1] = {k: v.clone() for k, v in m.state_dict().items()}
        return {"loss": next(scores), "other": 1}

    result = fit(model, ce, batches(x, y, 8), TrainConfig(steps=5, eval_every=1, **QUIET), evaluate=evaluate,
                 metric="loss", mode="min", out_dir=tmp_path, files={"labels": ["a", "b", "c"]})
    assert model.training
    assert result.best == 0.5 and result.best_step == 2 and not result.stopped_early
    best = load_checkpoint(tmp_path / "best")
    assert best.state["value"] == 0.5 and best.state["step"] == 2 and best.files["labels"] == ["a", "b", "c"]
    for k, v in weights[2].items():
        assert torch.equal(best.weights[k], v)
    fresh = make_mlp(seed=5)
    load_weights(fresh, tmp_path / "last")
    assert all(torch.equal(a, b) for a, b in zip(fresh.parameters(), model.parameters()))
    assert load_checkpoint(tmp_path / "last").state["step"] == 5


class CarryLoss:
    """A stateful loss (like truncated BPTT): the state it carries changes the gradients."""

    def __init__(self, crash_at: int | None = None):
        self.h = torch.zeros(4)
        self.calls, self.crash_at = 0, crash_at

    def __call__(self, model, batch):
        self.calls += 1
        if self.calls == self.crash_at:
            raise RuntimeError("simulated crash")
        out = model(batch["x"] + self.h)
        self.h = 0.5 * self.h + 0.1 * out.detach().mean(0).repeat(2)[:4]
        return nn.functional.cross_entropy(out, batch["labels"])

    def state_dict(self):
        return {"h": self.h, "calls": self.calls}

    def load_state_dict(self, state):
        self.h = state["h"]

    def reset(self):
        self.h = torch.zeros(4)


def _resumable_run(out, loss, save_every):
    x, y = toy_data(32)
    model = make_mlp(dropout=0.3)
    model[0].requires_grad_(False)

    def unfreeze(epoch, trainer):
        if epoch == 1:
            model[0].requires_grad_(True)
            trainer.add_group({"params": model[0].parameters(), "lr": 3e-3, "name": "bottom"})

    cfg = TrainConfig(lr=1e-2, epochs=3, grad_accum=2, clip=1.0, schedule="slanted_triangular",
                      save_every=save_every, log_every=1, progress=False, seed=3)
    result = fit(model, loss, batches(x, y, 4), cfg, groups=[{"params": model[3].parameters(), "lr": 1e-2}],
                 evaluate=accuracy(x, y), metric="acc", out_dir=out, on_epoch_start=unfreeze)
    return model, result


@pytest.mark.parametrize("save_every,crash_step,saved_step", [(3, 5, 3), (3, 7, 6), (0, 6, 4)])
def test_resume_after_a_crash_is_exact(tmp_path, save_every, crash_step, saved_step):
    """4 steps an epoch; a group is added at epoch 1; the crash comes at step `crash_step` + 1."""
    ref, ref_result = _resumable_run(tmp_path / "ref", CarryLoss(), save_every)
    out = tmp_path / "crash"
    with pytest.raises(RuntimeError, match="simulated crash"):
        _resumable_run(out, CarryLoss(crash_at=crash_step * 2 + 1), save_every)
    assert load_checkpoint(out / "last").state["step"] == saved_step
    logged = (out / "metrics.jsonl").read_text()
    model, result = _resumable_run(out, CarryLoss(), save_every)
    for a, b in zip(model.state_dict().values(), ref.state_dict().values()):
        assert torch.equal(a, b)
    assert result.step == ref_result.step == 12 and result.epoch == 3
    assert result.history == ref_result.history and result.best == ref_result.best
    # the rows up to the checkpoint kept as they were; those written after it dropped, so each step once (issue 24)
    kept = "".join(line for line in logged.splitlines(keepends=True) if json.loads(line)["step"] <= saved_step)
    assert (out / "metrics.jsonl").read_text().startswith(kept)
    steps = [(r["step"], "loss" in r) for r in map(json.loads, (out / "metrics.jsonl").read_text().splitlines())]
    assert steps == [(r["step"], "loss" in r) for r in map(json.loads, (tmp_path / "ref/metrics.jsonl").read_text()
                                                                          .splitlines())]
    ours, ref = load_checkpoint(out / "last"), load_checkpoint(tmp_path / "ref/last")
    assert torch.equal(ours.tensors["loss.h"], ref.tensors["loss.h"])


def test_stream_without_len_needs_steps_per_epoch():
    x, y = toy_data(16)

    def stream(epoch):
        yield from batches(x, y, 4)(epoch)

    with pytest.raises(ValueError, match="steps_per_epoch"):
        fit(make_mlp(), ce, stream, TrainConfig(**QUIET))
    assert fit(make_mlp(), ce, stream, TrainConfig(epochs=2, **QUIET), steps_per_epoch=3).step == 6
    result = fit(make_mlp(), ce, stream, TrainConfig(steps=10, **QUIET))  # runs epochs until 10 steps
    assert result.step == 10 and result.epoch == 2


def test_config_validation_names_the_field():
    with pytest.raises(ConfigError, match=r"train.lr must be > 0, got -1"):
        TrainConfig(lr=-1)
    with pytest.raises(ConfigError, match="train.grad_accum"):
        TrainConfig(grad_accum=0)
    with pytest.raises(ConfigError, match="train.schedule must be one of"):
        TrainConfig(schedule="step")
    with pytest.raises(ConfigError, match="train.device"):
        TrainConfig(device="gpu0")


def test_metrics_go_to_jsonl_and_tensorboard_when_installed(tmp_path, monkeypatch):
    """The TensorBoard writer is optional: a stand-in module checks what fit() sends it."""
    import sys
    import types

    scalars: list[tuple[str, float, int]] = []

    class FakeWriter:
        def __init__(self, logdir):
            self.logdir = logdir

        def add_scalar(self, tag, value, step):
            scalars.append((tag, value, step))

        def close(self):
            scalars.append(("closed", 0.0, -1))

    module = types.ModuleType("torch.utils.tensorboard")
    module.SummaryWriter = FakeWriter
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", module)
    x, y = toy_data(16)
    fit(make_mlp(), ce, batches(x, y, 4), TrainConfig(lr=1e-2, epochs=2, progress=False, log_every=2),
        evaluate=accuracy(x, y), metric="acc", out_dir=tmp_path)
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "loss" in r] == [2, 4, 6, 8]
    assert [r["step"] for r in rows if "eval/acc" in r] == [4, 8]
    tags = {tag for tag, _, _ in scalars}
    assert {"train/loss", "lr/all", "eval/acc", "closed"} <= tags
    assert [s for tag, _, s in scalars if tag == "train/loss"] == [2, 4, 6, 8]


def test_bf16_on_a_cpu_without_it_falls_back_to_fp32(monkeypatch):
    from transferlab import devices

    monkeypatch.setattr(devices, "cpu_has_bf16", lambda: False)
    devices._warn_no_bf16.cache_clear()
    with pytest.warns(UserWarning, match="runs in fp32"):
        assert devices.precision(TrainConfig(precision="bf16"), torch.device("cpu")) == "fp32"
    assert isinstance(devices.autocast(TrainConfig(precision="bf16"), torch.device("cpu"))(), contextlib.nullcontext)
    monkeypatch.setattr(devices, "cpu_has_bf16", lambda: True)
    assert devices.precision(TrainConfig(precision="bf16"), torch.device("cpu")) == "bf16"
    with pytest.raises(ConfigError, match="fp16"):
        devices.precision(TrainConfig(precision="fp16"), torch.device("cpu"))


def test_nt_trigger_is_merity_et_al_s_condition():
    from transferlab.train import nt_triggered

    assert not nt_triggered([5, 4, 3, 2, 1, 0.9, 0.8, 0.7], 5)  # still improving
    losses = [3.0, 2.0, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7]
    # index 8 (1.6) is the first loss worse than min(losses[:3]) = 1.0 with more than 5 checks before it
    assert [i for i in range(len(losses)) if nt_triggered(losses[: i + 1], 5)][0] == 8


class Worsening:
    """A metric that improves twice, then gets worse at every evaluation: averaging starts at the
    evaluation of step 4 (nt_interval=1), and from then on each evaluation sees the mean weights."""

    def __init__(self):
        self.seen = []

    def __call__(self, model):
        self.seen.append(model[0].weight.detach().clone())
        return {"loss": [3.0, 2.0, 2.5, 2.6, 2.7, 2.8][len(self.seen) - 1]}


def _nt_run(out, steps=6, crash=None):
    x, y = toy_data(16)
    model = make_mlp()
    raw = []

    def loss(m, batch):
        if crash is not None and len(raw) == crash:
            raise RuntimeError("simulated crash")
        raw.append(m[0].weight.detach().clone())  # the weights each step starts from
        return ce(m, batch)

    ev = Worsening()
    cfg = TrainConfig(lr=0.5, optimizer="sgd", steps=steps, eval_every=1, average="nt", nt_interval=1,
                      save_every=1, **QUIET)
    fit(model, loss, lambda e: [{"x": x, "labels": y}], cfg, evaluate=ev, metric="loss", mode="min", out_dir=out)
    return model, raw, ev


def test_nt_averaging_evaluates_the_mean_of_the_weights_since_the_trigger(tmp_path):
    model, raw, ev = _nt_run(tmp_path / "run")
    # raw[k] holds the weights after step k; evaluations 1-4 see raw weights. The fourth (2.6) is
    # worse than the best but the last one before it (min(3.0, 2.0)): averaging starts from the
    # weights after step 4, and evaluations 5 and 6 see the mean since then
    assert torch.equal(ev.seen[3], raw[4])
    after = raw[4:] + [model[0].weight.detach()]  # weights after steps 4, 5, 6
    assert torch.allclose(ev.seen[4], torch.stack(after[:2]).mean(0), atol=1e-6)
    assert torch.allclose(ev.seen[5], torch.stack(after).mean(0), atol=1e-6)
    events = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [e["step"] for e in events if e.get("event") == "averaging starts"] == [4]


def test_nt_averaging_resumes_exactly(tmp_path):
    ref, _, ref_ev = _nt_run(tmp_path / "ref")
    with pytest.raises(RuntimeError, match="simulated crash"):
        _nt_run(tmp_path / "crash", crash=5)
    model, _, ev = _nt_run(tmp_path / "crash")
    assert torch.equal(model[0].weight, ref[0].weight)
    assert torch.allclose(ev.seen[-1], ref_ev.seen[-1])
    assert torch.equal(load_checkpoint(tmp_path / "crash" / "last").tensors["average.0.weight"],
                       load_checkpoint(tmp_path / "ref" / "last").tensors["average.0.weight"])


def test_redirected_progress_is_plain_lines_not_a_bar(capsys):
    x, y = toy_data(8)
    fit(make_mlp(), ce, lambda e: [{"x": x, "labels": y}], TrainConfig(lr=1e-2, steps=4, log_every=2))
    err = capsys.readouterr().err  # pytest's capture is not a terminal
    assert "\r" not in err
    assert [line.split(":")[0] for line in err.splitlines()] == ["[transferlab] step 2/4 (50%)",
                                                                 "[transferlab] step 4/4 (100%)"]
