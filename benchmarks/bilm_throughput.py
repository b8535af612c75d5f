"""ELMo's biLM training speed against a plain ``nn.LSTM`` stack of the same size, in one script.

    .venv/bin/python benchmarks/bilm_throughput.py [--preset small] [--steps 30] [--threads 2]

Both models train on the same random windows (batch and window length of the preset, a 40,000
word vocabulary) with Adam under bf16 autocast, the preset's sampled softmax (8,192 draws) over
the same output layer:

- ours: :class:`transferlab.pretrain.bilm.BiLM` over :class:`transferlab.encoders.elmo.ELMo`
  (character CNN, highways, projection; per direction ``n_layers`` LSTMs with projections and
  residual connections; padded sequences reversed for the backward LM);
- plain: the same character token layer (another ELMo's ``tokens``), then per direction one
  ``nn.LSTM(num_layers=n_layers, proj_size=dim)`` (PyTorch's fused stack, no residuals), the
  backward one over the flipped window: the same LSTM cells and projections, so the ratio is
  what our biLSTM (separate layers, residual connections, padding-aware reversal) costs;
- words: the plain stack over a word embedding instead of characters, for the share of the step
  the character layer takes (``words_tokens_per_s``).

Figures: ``ours_tokens_per_s``, ``plain_tokens_per_s`` (tokens of the windows per second of
training steps, the best of three timed blocks of ``--steps`` after 3 warm-up steps) and
``throughput_ratio`` (ours / plain; target >= 0.9), ``words_tokens_per_s``, with the parameter counts.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402

from transferlab.config import load_config  # noqa: E402
from transferlab.encoders.elmo import ELMo  # noqa: E402
from transferlab.pretrain.bilm import BiLM, BiLMLoss  # noqa: E402
from transferlab.pretrain.lm import sampled_cross_entropy  # noqa: E402
from transferlab.recipes.pretrain_bilm import PretrainBiLMConfig  # noqa: E402

VOCAB = 40_000


class PlainBiLM(nn.Module):
    """A token layer (ELMo's characters, or word embeddings), a forward and a backward ``nn.LSTM``
    stack, one shared sampled softmax."""

    def __init__(self, dim: int, hidden_dim: int, n_layers: int, samples: int, chars: ELMo | None = None) -> None:
        super().__init__()
        self.chars = chars
        self.embedding = nn.Embedding(VOCAB, dim) if chars is None else None
        self.fwd = nn.LSTM(dim, hidden_dim, num_layers=n_layers, proj_size=dim, batch_first=True)
        self.bwd = nn.LSTM(dim, hidden_dim, num_layers=n_layers, proj_size=dim, batch_first=True)
        self.decoder = nn.Linear(dim, VOCAB)
        self.samples = samples

    def loss(self, seq: torch.Tensor) -> torch.Tensor:
        x = self.embedding(seq) if self.chars is None else self.chars.tokens(seq)  # (B, T+1, dim)
        f, _ = self.fwd(x)
        b, _ = self.bwd(x.flip(1))
        b = b.flip(1)
        w, bias = self.decoder.weight, self.decoder.bias
        lf = sampled_cross_entropy(f[:, :-1].reshape(-1, f.size(-1)), w, bias, seq[:, 1:].reshape(-1), self.samples)
        lb = sampled_cross_entropy(b[:, 1:].reshape(-1, b.size(-1)), w, bias, seq[:, :-1].reshape(-1), self.samples)
        return 0.5 * (lf + lb)


def tokens_per_s(step, batches: list[torch.Tensor], steps: int) -> float:
    for seq in batches[:3]:  # warm-up
        step(seq)
    best = float("inf")
    for block in range(3):
        start = time.perf_counter()
        for i in range(steps):
            step(batches[(block * steps + i) % len(batches)])
        best = min(best, time.perf_counter() - start)
    return steps * batches[0][:, 1:].numel() / best


def trainer(model: nn.Module, loss_fn):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(seq: torch.Tensor) -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = loss_fn(seq)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--preset", default="small")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    cfg = load_config(PretrainBiLMConfig, args.preset, [], kind="bilm")
    e, d = cfg.elmo, cfg.data
    words = ["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(VOCAB - 4)]
    torch.manual_seed(0)
    batches = [torch.randint(4, VOCAB, (d.batch_size, d.bptt + 1)) for _ in range(8)]
    elmo = ELMo(dataclasses.replace(e, vocab_size=VOCAB, dropout=0.0), words)
    ours = BiLM(elmo, VOCAB).train()
    bilm_loss = BiLMLoss(cfg.bilm.samples)
    chars = ELMo(dataclasses.replace(e, vocab_size=VOCAB, dropout=0.0), words)
    plain = PlainBiLM(e.dim, e.hidden_dim, e.n_layers, cfg.bilm.samples, chars=chars).train()
    plain_words = PlainBiLM(e.dim, e.hidden_dim, e.n_layers, cfg.bilm.samples).train()
    ours_tps = tokens_per_s(trainer(ours, lambda s: bilm_loss(ours, {"ids": s})), batches, args.steps)
    plain_tps = tokens_per_s(trainer(plain, plain.loss), batches, args.steps)
    words_tps = tokens_per_s(trainer(plain_words, plain_words.loss), batches, args.steps)
    figures = {"ours_tokens_per_s": ours_tps, "plain_tokens_per_s": plain_tps, "throughput_ratio": ours_tps / plain_tps,
               "words_tokens_per_s": words_tps, "ours_params": sum(p.numel() for p in ours.parameters()),
               "plain_params": sum(p.numel() for p in plain.parameters()) - sum(
                   p.numel() for n, p in chars.named_parameters() if "lstms" in n)}
    print(f"biLM ({args.preset}) {ours_tps:,.0f} tokens/s, the same characters under a plain nn.LSTM stack "
          f"{plain_tps:,.0f} tokens/s: {figures['throughput_ratio']:.2f}x; the plain stack over word embeddings "
          f"{words_tps:,.0f} tokens/s")
    write_result("bilm_throughput", figures, preset=args.preset, batch=d.batch_size, bptt=d.bptt,
                 samples=cfg.bilm.samples, steps=args.steps)


if __name__ == "__main__":
    main()
