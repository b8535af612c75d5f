"""What a resumed fit() reports (issue 24): metrics.jsonl holds each step once (the rows the
interrupted call wrote after its checkpoint are dropped, its loss window restored, so the first
row after resuming averages the same steps as an uninterrupted run), and the wall time of the
earlier calls is kept for results.json."""

import json

import pytest
import torch
from torch import nn

from transferlab.train import TrainConfig, fit


class Stop(Exception):
    pass


def _run(out, stop_at: int | None):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(24, 4, generator=g), torch.randint(0, 2, (24,), generator=g)
    calls = {"n": 0}

    def loss(m, batch):
        calls["n"] += 1
        if stop_at is not None and calls["n"] == stop_at:
            raise Stop  # a crash in the middle of the run
        return nn.functional.cross_entropy(m(batch["x"]), batch["labels"])

    data = lambda epoch: [{"x": x[i:i + 4], "labels": y[i:i + 4]} for i in range(0, 24, 4)]  # noqa: E731
    cfg = TrainConfig(lr=0.1, steps=6, save_every=3, log_every=2, progress=False)
    return fit(model, loss, data, cfg, out_dir=out)


def _rows(out):
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


def test_a_resumed_run_logs_each_step_once_with_the_same_losses(tmp_path):
    whole = _run(tmp_path / "whole", None)
    with pytest.raises(Stop):
        _run(tmp_path / "pieces", 6)  # rows at steps 2 and 4 written, checkpoint at step 3
    assert [r["step"] for r in _rows(tmp_path / "pieces")] == [2, 4]
    resumed = _run(tmp_path / "pieces", None)
    rows, expected = _rows(tmp_path / "pieces"), _rows(tmp_path / "whole")
    assert [r["step"] for r in rows] == [r["step"] for r in expected] == [2, 4, 6]
    assert [r["loss"] for r in rows] == pytest.approx([r["loss"] for r in expected])
    assert whole.earlier_wall_s == 0.0 and resumed.earlier_wall_s > 0.0
