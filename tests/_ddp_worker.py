"""Run by tests/test_distributed.py under torchrun (and imported by it for the 1-process run).

A tiny MLP classifier, dropout off, a deterministic dataset in global batches of 8, AdamW, a
lower layer unfrozen at epoch 1 (so DDP is re-wrapped), 3 epochs of 4 steps. ``heads``: a shared
trunk and two task heads, each step training one of them (GenSen's sampling), 2 epochs.
"""

import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from torch import nn

from transferlab.train import TrainConfig, fit


def train(out_dir=None, threads: int = 0):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 16), nn.Tanh(), nn.Linear(16, 3))
    g = torch.Generator().manual_seed(1)
    x = torch.randn(32, 5, generator=g)
    y = (x[:, 0] > 0).long() + (x[:, 1] > 0).long()
    model[0].requires_grad_(False)

    def data(epoch):
        order = torch.randperm(32, generator=torch.Generator().manual_seed(epoch))
        return [{"x": x[order[i:i + 8]], "labels": y[order[i:i + 8]]} for i in range(0, 32, 8)]

    def loss(m, batch):
        return nn.functional.cross_entropy(m(batch["x"]), batch["labels"])

    def unfreeze(epoch, trainer):
        if epoch == 1:
            model[0].requires_grad_(True)
            trainer.add_group({"params": model[0].parameters(), "lr": 3e-3, "name": "bottom"})

    def evaluate(m):
        return {"acc": (m(x).argmax(-1) == y).float().mean().item()}

    cfg = TrainConfig(lr=1e-2, epochs=3, schedule="slanted_triangular", clip=1.0, log_every=2, progress=False,
                      threads=threads)
    result = fit(model, loss, data, cfg, groups=[{"params": list(model[2:].parameters()), "name": "top"}],
                 on_epoch_start=unfreeze, evaluate=evaluate, metric="acc", out_dir=out_dir)
    return model, result


class TwoHeads(nn.Module):
    """A shared trunk and a head per task; a batch's ``task`` picks the head (the other is unused)."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(5, 16), nn.Tanh())
        self.heads = nn.ModuleList([nn.Linear(16, 3), nn.Linear(16, 2)])

    def forward(self, batch):
        return nn.functional.cross_entropy(self.heads[batch["task"]](self.trunk(batch["x"])), batch["labels"])


def train_heads(out_dir=None, threads: int = 0):
    torch.manual_seed(0)
    model = TwoHeads()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(32, 5, generator=g)
    ys = [(x[:, 0] > 0).long() + (x[:, 1] > 0).long(), (x[:, 2] > 0).long()]

    def data(epoch):
        order = torch.randperm(32, generator=torch.Generator().manual_seed(epoch))
        tasks = [(b + epoch) % 3 % 2 for b in range(4)]  # the head each of the 4 batches trains
        return [{"x": x[order[8 * b:8 * b + 8]], "labels": ys[t][order[8 * b:8 * b + 8]], "task": t}
                for b, t in enumerate(tasks)]

    cfg = TrainConfig(lr=1e-2, epochs=2, clip=1.0, log_every=2, progress=False, threads=threads)
    result = fit(model, lambda m, batch: m(batch), data, cfg, out_dir=out_dir, find_unused_parameters=True)
    return model, result


if __name__ == "__main__":
    import torch.distributed as dist

    out = Path(sys.argv[1])
    model, result = (train_heads if sys.argv[2:] == ["heads"] else train)(out / "run", threads=1)
    rank = dist.get_rank()
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out / f"rank{rank}.safetensors"),
              metadata={"best": repr(result.best), "step": str(result.step), "history": repr(result.history)})
    dist.destroy_process_group()
