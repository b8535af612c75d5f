"""AWD-LSTM language model: training tokens/s of ours vs fastai's, in one process.

Run with the fastai benchmark environment (``benchmarks/setup_fastai_env.sh``)::

    /work/venvs/fastai/bin/python benchmarks/awd_lstm_lm.py            # 3 warm-up + 30 timed steps
    /work/venvs/fastai/bin/python benchmarks/awd_lstm_lm.py --steps 10 --profile 3

Fairness: both models are driven by the SAME plain PyTorch loop (zero_grad, forward,
cross-entropy on the logits, backward, Adam step) on the SAME batches (PTB train, words split
on whitespace plus one ``<eos>`` a line, the 10k-word vocabulary, batch 32, fixed BPTT 70, so
token counts are equal); only the model differs. Same sizes (emb 400, hidden 1152 or 575,
3 layers; the last LSTM layer outputs emb, as in fastai), same dropouts (fastai's
``awd_lstm_lm_config``), tied decoder, same torch thread count. fastai's Learner, callbacks
and data loaders are not used (so no AR/TAR regularisation, no data-loader workers). The timed
steps are interleaved in chunks (peer, ours, peer, ours, ...) with the order alternating per
chunk to avoid warm-cache bias; each model keeps its own optimizer and recurrent state.

Writes ``benchmarks/results/awd_lstm_lm.json``.
"""

from __future__ import annotations

import argparse
import collections
import datetime as _dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("TRANSFERLAB_DATA", REPO.parent / "shared"))
OUT = REPO / "benchmarks" / "results" / "awd_lstm_lm.json"

# fastai's awd_lstm_lm_config dropouts (fastai.text.models.awdlstm.awd_lstm_lm_config).
DROPS = dict(output_p=0.1, hidden_p=0.15, input_p=0.25, embed_p=0.02, weight_p=0.2)
EMB = 400
N_LAYERS = 3
PAD_ID = 0


# ----------------------------------------------------------------------------- data
def load_ptb(path: Path) -> tuple[torch.Tensor, list[str]]:
    """Word-level PTB: whitespace split plus ``<eos>`` a line; vocab by frequency, pad at 0."""
    lines = path.read_text(encoding="utf-8").splitlines()
    words: list[str] = []
    for line in lines:
        words.extend(line.split())
        words.append("<eos>")
    counts = collections.Counter(words)
    itos = ["<pad>"] + sorted(counts, key=lambda w: (-counts[w], w))
    stoi = {w: i for i, w in enumerate(itos)}
    ids = torch.tensor([stoi[w] for w in words], dtype=torch.long)
    return ids, itos


def batchify(ids: torch.Tensor, bs: int) -> torch.Tensor:
    n = ids.numel() // bs
    return ids[: n * bs].view(bs, n).contiguous()  # bs parallel streams, as fastai's LMDataLoader


def get_batch(streams: torch.Tensor, i: int, bptt: int) -> tuple[torch.Tensor, torch.Tensor]:
    n_windows = (streams.size(1) - 1) // bptt
    s = (i % n_windows) * bptt
    return streams[:, s : s + bptt], streams[:, s + 1 : s + 1 + bptt]


# ----------------------------------------------------------------------------- models
class Runner:
    """One model + its optimizer + its recurrent state, stepped by the shared loop."""

    name: str
    model: nn.Module

    def __init__(self, lr: float) -> None:
        self.opt = torch.optim.Adam(self.model.parameters(), lr=lr)
        self.model.train()
        self.losses: list[float] = []

    def logits(self, x: torch.Tensor) -> torch.Tensor:  # (B, T, V)
        raise NotImplementedError

    def step(self, x: torch.Tensor, y: torch.Tensor) -> float:
        self.opt.zero_grad(set_to_none=True)
        out = self.logits(x)
        loss = F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))
        loss.backward()
        self.opt.step()
        v = loss.item()
        self.losses.append(v)
        return v

    def n_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())  # tied weights counted once


class FastaiRunner(Runner):
    def __init__(self, vocab: int, hidden: int, lr: float) -> None:
        from fastai.text.all import AWD_LSTM, awd_lstm_lm_config, get_language_model

        cfg = dict(awd_lstm_lm_config)
        assert all(cfg[k] == v for k, v in DROPS.items()), cfg
        cfg.update(emb_sz=EMB, n_hid=hidden, n_layers=N_LAYERS, pad_token=PAD_ID, tie_weights=True)
        self.model = get_language_model(AWD_LSTM, vocab, config=cfg)
        self.model.reset()
        self.name = "fastai AWD_LSTM"
        super().__init__(lr)

    def logits(self, x):
        return self.model(x)[0]  # AWD_LSTM keeps (and detaches) its hidden state itself


def _detach(state):
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    if isinstance(state, (list, tuple)):
        return type(state)(_detach(s) for s in state)
    if isinstance(state, dict):
        return {k: _detach(v) for k, v in state.items()}
    return state


class OursRunner(Runner):
    def __init__(self, vocab: int, hidden: int, lr: float) -> None:
        from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig
        from transferlab.pretrain.lm import LanguageModel

        cfg = AWDLSTMConfig(
            vocab_size=vocab, dim=EMB, hidden_dim=hidden, n_layers=N_LAYERS, pad_id=PAD_ID, **DROPS
        )
        self.model = LanguageModel(AWDLSTM(cfg), vocab, tie_weights=True)
        self.state = None
        self.name = "transferlab AWDLSTM"
        super().__init__(lr)

    def logits(self, x):
        logits, enc_out = self.model(x, state=self.state)
        self.state = _detach(enc_out.state)  # truncated BPTT, as fastai's to_detach
        return logits


class TorchLSTMRunner(Runner):
    """Reference floor: plain nn.LSTM stack of the same sizes, tied decoder, no dropout at all."""

    def __init__(self, vocab: int, hidden: int, lr: float) -> None:
        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = nn.Embedding(vocab, EMB, padding_idx=PAD_ID)
                dims = [EMB] + [hidden] * (N_LAYERS - 1) + [EMB]
                self.rnns = nn.ModuleList(
                    nn.LSTM(dims[i], dims[i + 1], batch_first=True) for i in range(N_LAYERS)
                )
                self.dec = nn.Linear(EMB, vocab)
                self.dec.weight = self.emb.weight

            def forward(self, x, state):
                h = self.emb(x)
                new = []
                for i, rnn in enumerate(self.rnns):
                    h, s = rnn(h, None if state is None else state[i])
                    new.append(s)
                return self.dec(h), new

        self.model = M()
        self.state = None
        self.name = "torch nn.LSTM (no dropout)"
        super().__init__(lr)

    def logits(self, x):
        out, st = self.model(x, self.state)
        self.state = _detach(st)
        return out


# ----------------------------------------------------------------------------- measurement
def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {cpu}, torch {torch.__version__} ({torch.get_num_threads()} threads)"


def run_config(runners: list[Runner], streams, args) -> dict[str, float]:
    """Warm up each runner, then interleave timed chunks; returns tokens/s per runner name."""
    step_i = {r.name: 0 for r in runners}
    secs = {r.name: 0.0 for r in runners}
    done = {r.name: 0 for r in runners}

    def go(r: Runner, n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            x, y = get_batch(streams, step_i[r.name], args.bptt)
            r.step(x, y)
            step_i[r.name] += 1
        return time.perf_counter() - t0

    for r in runners:
        go(r, args.warmup)
    chunk = 0
    while any(done[r.name] < args.steps for r in runners):
        order = runners if chunk % 2 == 0 else runners[::-1]
        for r in order:
            n = min(args.chunk, args.steps - done[r.name])
            if n > 0:
                secs[r.name] += go(r, n)
                done[r.name] += n
        chunk += 1
    tokens = args.bs * args.bptt * args.steps
    return {r.name: tokens / secs[r.name] for r in runners} | {
        f"{r.name} s/step": secs[r.name] / args.steps for r in runners
    }


def profile(runners: list[Runner], streams, args, hidden: int) -> None:
    from torch.profiler import ProfilerActivity, profile as tprofile

    for r in runners:
        x, y = get_batch(streams, 0, args.bptt)
        r.step(x, y)
        with tprofile(activities=[ProfilerActivity.CPU]) as prof:
            for i in range(args.profile):
                x, y = get_batch(streams, i + 1, args.bptt)
                r.step(x, y)
        print(f"\n=== profile: {r.name}, hidden {hidden}, {args.profile} steps (self CPU time) ===")
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.profile_rows))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=30, help="timed training steps per model and config")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--chunk", type=int, default=5, help="timed steps per interleaved chunk")
    ap.add_argument("--bs", type=int, default=32)
    ap.add_argument("--bptt", type=int, default=70)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--hidden", type=int, nargs="+", default=[1152, 575])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--baseline", action="store_true", help="also time a plain nn.LSTM stack (no dropout)")
    ap.add_argument("--peer-only", action="store_true", help="fastai only (ours not importable yet)")
    ap.add_argument("--profile", type=int, default=0, help="after timing, profile N steps of each model")
    ap.add_argument("--profile-rows", type=int, default=25)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    import fastai

    ids, itos = load_ptb(DATA / "corpora" / "ptb" / "train.txt")
    vocab = len(itos)
    streams = batchify(ids, args.bs)
    print(f"PTB train: {ids.numel():,} tokens, vocab {vocab:,} (10k words + <pad>), "
          f"batch {args.bs} x BPTT {args.bptt}, {args.warmup} warm-up + {args.steps} timed steps, "
          f"Adam lr {args.lr}")
    print(f"machine: {machine()}; fastai {fastai.__version__}")
    print("loop: the same plain PyTorch loop and batches for every model; only the model differs")

    load_start = os.getloadavg()[0]
    results: dict[int, dict[str, float]] = {}
    for hidden in args.hidden:
        torch.manual_seed(args.seed)
        runners: list[Runner] = [FastaiRunner(vocab, hidden, args.lr)]
        if not args.peer_only:
            torch.manual_seed(args.seed)
            runners.append(OursRunner(vocab, hidden, args.lr))
        if args.baseline:
            torch.manual_seed(args.seed)
            runners.append(TorchLSTMRunner(vocab, hidden, args.lr))
        for r in runners:
            print(f"  {EMB}/{hidden}/{N_LAYERS} {r.name}: {r.n_params() / 1e6:.2f}M params")
        t0 = time.perf_counter()
        res = run_config(runners, streams, args)
        res["wall_s"] = time.perf_counter() - t0
        for r in runners:
            res[f"{r.name} final loss"] = r.losses[-1]
            assert all(map(lambda v: v == v, r.losses)), f"{r.name}: NaN loss"
        results[hidden] = res
        if args.profile:
            profile(runners, streams, args, hidden)
        del runners

    names = ["fastai AWD_LSTM", "transferlab AWDLSTM", "torch nn.LSTM (no dropout)"]
    print(f"\n1-min load average at start / end: {load_start:.2f} / {os.getloadavg()[0]:.2f} "
          f"(above ~0.5 at start, other work shared the {os.cpu_count()} cores)")
    print(f"\n{'config':<12} {'model':<28} {'tokens/s':>10} {'s/step':>8} {'loss':>7}")
    for hidden, res in results.items():
        for n in names:
            if n in res:
                print(f"{EMB}/{hidden}/{N_LAYERS:<6} {n:<28} {res[n]:>10,.0f} "
                      f"{res[n + ' s/step']:>8.3f} {res[n + ' final loss']:>7.3f}")
        if "transferlab AWDLSTM" in res:
            print(f"{EMB}/{hidden}/{N_LAYERS:<6} {'ratio ours/peer':<28} "
                  f"{res['transferlab AWDLSTM'] / res['fastai AWD_LSTM']:>10.3f}")

    def fig(h: int, name: str):
        return round(results[h][name], 1) if h in results and name in results[h] else None

    def ratio(h: int):
        o, p = fig(h, "transferlab AWDLSTM"), fig(h, "fastai AWD_LSTM")
        return round(o / p, 3) if o and p else None

    doc = {
        "benchmark": "awd_lstm_lm",
        "date": _dt.date.today().isoformat(),
        "machine": machine(),
        "figures": {
            "tokens_per_s_ratio": ratio(1152),
            "tokens_per_s_ratio_575": ratio(575),
            "peer": f"fastai {fastai.__version__}",
            "ours_tokens_per_s": fig(1152, "transferlab AWDLSTM"),
            "peer_tokens_per_s": fig(1152, "fastai AWD_LSTM"),
            "ours_tokens_per_s_575": fig(575, "transferlab AWDLSTM"),
            "peer_tokens_per_s_575": fig(575, "fastai AWD_LSTM"),
        },
        "setup": {
            "data": "PTB train, whitespace words + <eos>/line, 10k vocab",
            "batch": args.bs, "bptt": args.bptt, "warmup_steps": args.warmup,
            "timed_steps": args.steps, "optimizer": f"Adam lr {args.lr}", "threads": args.threads,
            "load_avg_1min": [round(load_start, 2), round(os.getloadavg()[0], 2)],
            "dropouts": DROPS, "loop": "same plain PyTorch loop and batches for both; only the model differs",
        },
    }
    if args.baseline:
        doc["figures"]["torch_lstm_tokens_per_s"] = fig(1152, "torch nn.LSTM (no dropout)")
        doc["figures"]["torch_lstm_tokens_per_s_575"] = fig(575, "torch nn.LSTM (no dropout)")
    print(json.dumps(doc, indent=2))
    if not args.no_write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
