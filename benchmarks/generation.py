"""Generation speed with and without the key/value cache: our causal Transformer (a ``pretrain clm``
model) and a Hugging Face GPT-2 of the same shape, in one script.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/generation.py [--model runs/clm/best]
        [--new-tokens 200] [--batches 1,8] [--prompt-len 16] [--repeats 3] [--device auto] [--threads 2]

Without ``--model`` a small model is pretrained first (once; reused from ``--train-out`` after):
``pretrain clm --corpus shakespeare --preset small --transformer.max_len=256 --train.steps=STEPS``,
256 positions holding the prompt and the new tokens. The weights do not change the speed; the
shape does.

- ours: greedy continuation by :func:`transferlab.tasks.generate.continue_prompts` over
  :class:`~transferlab.tasks.generate.TransformerLM`, with the :class:`KVCache` (one new token
  read per step) and without (the whole prefix read again at every step);
- peer: ``transformers.GPT2LMHeadModel`` with random weights from a ``GPT2Config`` of our model's
  vocabulary, width, depth, heads, MLP width and positions (nothing downloaded), its own
  ``generate(do_sample=False, use_cache=True/False)``.

The same random prompts of ``--prompt-len`` tokens for both, every row continued by exactly
``--new-tokens`` tokens (no end token for ours, ``min_new_tokens`` for Hugging Face), fp32.
Tokens/s counts new tokens of the whole batch, the best of ``--repeats`` timed runs after one
warm-up. Figures, at batch 1: ``ours_cache_tokens_per_s``, ``ours_nocache_tokens_per_s``,
``cache_speedup`` (ours, cache / no cache), ``hf_cache_tokens_per_s``, ``hf_nocache_tokens_per_s``,
``hf_cache_speedup``, ``cache_ratio_vs_hf`` (ours / Hugging Face, both cached); the same with a
``_b8`` suffix (``_bN``) for each further batch size.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

import torch  # noqa: E402

from transferlab import cli  # noqa: E402
from transferlab.checkpoint import has_checkpoint  # noqa: E402
from transferlab.recipes.generate import load_generator  # noqa: E402
from transferlab.tasks.generate import LMGenerateConfig, TransformerLM, continue_prompts  # noqa: E402


def pretrained(args) -> Path:
    """``--model``, else the small model of ``--train-out``, pretrained there first if absent."""
    if args.model:
        return Path(args.model)
    out = Path(args.train_out)
    if not has_checkpoint(out / "best"):
        assert cli.main(["pretrain", "clm", "--corpus", args.corpus, "--preset", args.preset, "--out", str(out),
                         f"--transformer.max_len={args.max_len}", f"--train.steps={args.steps}",
                         "--train.progress=false", "--overwrite", *args.override]) == 0
    return out / "best"


def timed(fn, repeats: int, device: torch.device) -> float:
    """The best wall time of ``repeats`` calls, after one warm-up call."""
    fn()
    best = float("inf")
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return best


def hf_peer(ours: TransformerLM, device: torch.device):
    import transformers

    c = ours.model.encoder.cfg
    config = transformers.GPT2Config(vocab_size=c.vocab_size, n_positions=c.max_len, n_embd=c.dim, n_layer=c.n_layers,
                                     n_head=c.n_heads, n_inner=c.ffn_dim, bos_token_id=0, eos_token_id=0,
                                     pad_token_id=0)
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(config).to(device).eval()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", help="a `pretrain clm` checkpoint (default: pretrain a small one)")
    ap.add_argument("--corpus", default="shakespeare")
    ap.add_argument("--preset", default="small")
    ap.add_argument("--steps", type=int, default=200, help="pretraining steps of the model made without --model")
    ap.add_argument("--max-len", type=int, default=256, help="positions of the model made without --model")
    ap.add_argument("--train-out", default="runs/bench-generation-clm")
    ap.add_argument("--override", action="append", default=[], help="more `pretrain clm` overrides (--a.b=v)")
    ap.add_argument("--new-tokens", type=int, default=200)
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--name", default="generation", help="the results file, benchmarks/results/NAME.json")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device("cuda" if args.device == "auto" and torch.cuda.is_available() else
                          "cpu" if args.device == "auto" else args.device)
    path = pretrained(args)
    ours = load_generator(str(path), str(device)).lm
    cfg = ours.model.encoder.cfg
    if args.prompt_len + args.new_tokens > cfg.max_len:
        raise SystemExit(f"{path}: {cfg.max_len} positions, fewer than --prompt-len + --new-tokens = "
                         f"{args.prompt_len + args.new_tokens}; pretrain with a larger --max-len")
    hf = hf_peer(ours, device)
    figures, runs = {}, {}
    for batch in (int(b) for b in args.batches.split(",")):
        g = torch.Generator().manual_seed(batch)
        prompts = torch.randint(7, cfg.vocab_size, (batch, args.prompt_len), generator=g)  # past the specials
        n = batch * args.new_tokens
        row = {}
        for cache in (True, False):
            gen = LMGenerateConfig(max_new_tokens=args.new_tokens, temperature=0.0, cache=cache, batch_size=batch)
            out = []
            row[f"ours_{'cache' if cache else 'nocache'}"] = n / timed(
                lambda: out.append(continue_prompts(ours, prompts.tolist(), None, gen, device)), args.repeats, device)
            assert all(len(x) == args.new_tokens for x in out[-1])
            ids = prompts.to(device)
            with torch.no_grad():
                row[f"hf_{'cache' if cache else 'nocache'}"] = n / timed(
                    lambda: hf.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=args.new_tokens,
                                        min_new_tokens=args.new_tokens, do_sample=False, use_cache=cache),
                    args.repeats, device)
        suffix = "" if batch == 1 else f"_b{batch}"
        figures |= {f"ours_cache_tokens_per_s{suffix}": row["ours_cache"],
                    f"ours_nocache_tokens_per_s{suffix}": row["ours_nocache"],
                    f"cache_speedup{suffix}": row["ours_cache"] / row["ours_nocache"],
                    f"hf_cache_tokens_per_s{suffix}": row["hf_cache"],
                    f"hf_nocache_tokens_per_s{suffix}": row["hf_nocache"],
                    f"hf_cache_speedup{suffix}": row["hf_cache"] / row["hf_nocache"],
                    f"cache_ratio_vs_hf{suffix}": row["ours_cache"] / row["hf_cache"]}
        runs[batch] = row
        print(f"batch {batch}: ours {row['ours_cache']:,.0f} tokens/s with the cache, {row['ours_nocache']:,.0f} "
              f"without ({row['ours_cache'] / row['ours_nocache']:.2f}x); Hugging Face GPT-2 {row['hf_cache']:,.0f} "
              f"and {row['hf_nocache']:,.0f} ({row['hf_cache'] / row['hf_nocache']:.2f}x); ours/HF cached "
              f"{row['ours_cache'] / row['hf_cache']:.2f}x")
    import transformers

    write_result(args.name, figures, model=str(path), device=str(device), new_tokens=args.new_tokens,
                 prompt_len=args.prompt_len, repeats=args.repeats, transformers=transformers.__version__,
                 shape={"vocab_size": cfg.vocab_size, "dim": cfg.dim, "n_layers": cfg.n_layers,
                        "n_heads": cfg.n_heads, "ffn_dim": cfg.ffn_dim, "max_len": cfg.max_len},
                 ours_params=sum(p.numel() for p in ours.model.parameters()),
                 hf_params=sum(p.numel() for p in hf.parameters()), runs=runs)


if __name__ == "__main__":
    main()
