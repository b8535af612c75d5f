"""fit() under torchrun with 2 CPU processes (gloo) equals a 1-process run on the same global batch."""

import ast
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import torch
from safetensors import safe_open

from transferlab.checkpoint import load_checkpoint

WORKER = Path(__file__).with_name("_ddp_worker.py")


def _worker_module():
    spec = importlib.util.spec_from_file_location("_ddp_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(path):
    with safe_open(str(path), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}, f.metadata()


def _torchrun(tmp_path, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           str(WORKER), str(tmp_path), *args]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_two_processes_match_one(tmp_path):
    _torchrun(tmp_path)

    model, result = _worker_module().train()
    (w0, meta0), (w1, meta1) = _read(tmp_path / "rank0.safetensors"), _read(tmp_path / "rank1.safetensors")
    assert meta0 == meta1  # identical results on every rank
    assert meta0["step"] == "12" == str(result.step)
    assert ast.literal_eval(meta0["history"]) == result.history and ast.literal_eval(meta0["best"]) == result.best
    for name, ref in model.state_dict().items():
        assert torch.equal(w0[name], w1[name]), name
        torch.testing.assert_close(w0[name], ref, rtol=0, atol=1e-6)
    assert not torch.equal(ref, torch.zeros_like(ref))
    # only rank 0 wrote logs and checkpoints, once
    run = tmp_path / "run"
    assert load_checkpoint(run / "last").state["step"] == 12
    lines = (run / "metrics.jsonl").read_text().splitlines()
    assert sum('"loss"' in line for line in lines) == 6  # log_every=2 over 12 steps


def test_a_head_unused_in_a_step_trains_under_ddp(tmp_path):
    """GenSen's case: each step trains one task's head, the other's parameters get no gradient.
    With ``find_unused_parameters=True`` two processes still equal one (DDP stops without it)."""
    _torchrun(tmp_path, "heads")
    model, result = _worker_module().train_heads()
    w0, meta0 = _read(tmp_path / "rank0.safetensors")
    assert meta0["step"] == str(result.step) == "8"
    for name, ref in model.state_dict().items():
        torch.testing.assert_close(w0[name], ref, rtol=0, atol=1e-6)
