"""GloVe on PTB: transferlab's ``train_glove`` against mittens 0.2's numpy ``GloVe``, in one script.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/glove_vs_mittens.py [--vocab 10000] [--epochs 25]

Corpus: PTB train (42,068 lines, whitespace tokens). Vocabulary: the words seen at least
``--min-count`` (5) times, most frequent first, cut to the top ``--vocab``; other words are
dropped before counting, as GloVe's ``cooccur.c`` does. The default ``--vocab 10000`` keeps all
9,858 such words: mittens holds about seven dense float64 V x V matrices, ~6 GB here. The counts
(window 10, symmetric, 1/d weighting) are made once, timed, and given to both.

Three runs of ``--epochs`` epochs (mittens: iterations), dim 50, x_max 100, alpha 0.75, lr 0.05,
all from the same start (``glove.c``'s uniform ``(u - 0.5) / dim``, seed 0; mittens through its
``test_mode`` ``fixed_initialization``):

- mittens: full-batch AdaGrad on the dense matrix (accumulators start at 0.1);
- ours, minibatch (our default): batches of 65,536 nonzero cells, accumulators at 1.0 (glove.c);
- ours, full batch: mittens' algorithm on the nonzero cells only (accumulators at 0.1), whose loss
  trajectory must equal mittens' (``full_batch_max_rel_loss_diff``).

Seconds per epoch: mittens' ``fit()`` wall time over its iterations (its one-off dense weight
and log matrices included), ours ``train_glove()`` wall time over its epochs (its set-up
included), so both carry their set-up. Figures: ``glove_vs_mittens_speed`` = mittens s/epoch /
ours (minibatch), ``glove_vs_mittens_speed_full_batch`` = the same for our full batch (the
like-for-like algorithm); ``final_loss_*`` = J (with mittens' 0.5) at each run's final parameters;
``{run}_{ws353,simlex,analogy}`` = the intrinsic scores of each run's W + C after the same epochs.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import RESULTS, machine  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from transferlab.data import catalog  # noqa: E402
from transferlab.vectors.cooccur import Cooccurrence, count_cooccurrences  # noqa: E402
from transferlab.vectors.glove import GloVeConfig, glove_vocab, train_glove  # noqa: E402

NAME = "glove_vs_mittens"


def ptb_cooccurrences(vocab_size: int, min_count: int, window: int) -> tuple[list[str], Cooccurrence, float]:
    """The vocabulary, the counts and the seconds the counting took (vocabulary not included)."""
    lines = list(catalog.corpus("ptb"))
    words = glove_vocab(lines, min_count, max_size=vocab_size)
    stoi = {w: i for i, w in enumerate(words)}
    start = time.perf_counter()
    ids = ([stoi[w] for w in line.split() if w in stoi] for line in lines)
    cooc = count_cooccurrences(ids, len(words), window=window, progress=False)
    return words, cooc, time.perf_counter() - start


def objective(cooc: Cooccurrence, W, C, bw, bc, x_max: float, alpha: float) -> float:
    """J = sum over nonzero cells of 0.5 f(X_ij) (w_i.c_j + b_i + b_j - log X_ij)^2, in float64."""
    r, c = cooc.rows, cooc.cols
    W, C, bw, bc = (np.asarray(a, dtype=np.float64) for a in (W, C, bw, bc))
    diff = np.einsum("nd,nd->n", W[r], C[c]) + bw.ravel()[r] + bc.ravel()[c] - np.log(cooc.values)
    f = (np.minimum(cooc.values, x_max) / x_max) ** alpha
    return float(0.5 * np.sum(f * diff**2))


def intrinsic(words: list[str], W, C) -> dict:
    """WordSim-353, SimLex-999 and analogy accuracy of the output vectors W + C (the paper's sum)."""
    from transferlab.eval.intrinsic import evaluate
    from transferlab.vectors.keyed import WordVectors

    wv = WordVectors(words, (np.asarray(W, dtype=np.float64) + np.asarray(C, dtype=np.float64)).astype(np.float32))
    r = evaluate(wv, analogy_vocab=100_000)
    return {"ws353": r["wordsim353"]["spearman"], "simlex": r["simlex999"]["spearman"],
            "analogy": r["analogies"]["accuracy"]}


def ours(cooc: Cooccurrence, cfg: GloVeConfig, init: dict, words: list[str]) -> dict:
    start = time.perf_counter()
    res = train_glove(cooc, cfg, init=init, progress=False)
    wall = time.perf_counter() - start
    return {"seconds_per_epoch": wall / cfg.epochs, "train_seconds_per_epoch": float(np.mean(res.seconds_per_epoch)),
            "wall_s": wall, "losses": res.losses,
            "final_loss": objective(cooc, res.W, res.C, res.bw, res.bc, cfg.x_max, cfg.alpha),
            "intrinsic": intrinsic(words, res.W, res.C)}


def mittens(cooc: Cooccurrence, cfg: GloVeConfig, init: dict, words: list[str]) -> dict:
    from mittens.np_mittens import GloVe

    X = cooc.to_dense()
    model = GloVe(n=cfg.dim, xmax=cfg.x_max, alpha=cfg.alpha, max_iter=cfg.epochs, learning_rate=cfg.lr,
                  display_progress=0, test_mode=True)
    start = time.perf_counter()
    model.fit(X, fixed_initialization={k: np.array(v, dtype=np.float64) for k, v in init.items()})
    wall = time.perf_counter() - start
    losses = [float(e) for e in model.errors]
    final = objective(cooc, model.W, model.C, model.bw, model.bc, cfg.x_max, cfg.alpha)
    return {"seconds_per_epoch": wall / cfg.epochs, "wall_s": wall, "losses": losses, "final_loss": final,
            "intrinsic": intrinsic(words, model.W, model.C)}


def run(vocab_size: int = 10000, epochs: int = 25, dim: int = 50, min_count: int = 5, window: int = 10,
        batch_size: int = 65536, threads: int = 2, seed: int = 0, out: str | Path | None = None) -> dict:
    """Count once, train the three runs, write the JSON record to ``out`` and return it."""
    torch.set_num_threads(threads)
    started = time.perf_counter()
    words, cooc, count_s = ptb_cooccurrences(vocab_size, min_count, window)
    V = len(words)
    base = {"dim": dim, "window": window, "min_count": min_count, "epochs": epochs, "seed": seed, "device": "cpu",
            "threads": threads}
    mini, full = GloVeConfig(batch_size=batch_size, **base), GloVeConfig(batch_size=0, adagrad_init=0.1, **base)
    gen = np.random.default_rng(seed)  # glove.c's start, shared by all three runs
    init = {k: ((gen.random(shape) - 0.5) / dim).astype(np.float32)
            for k, shape in (("W", (V, dim)), ("C", (V, dim)), ("bw", (V, 1)), ("bc", (V, 1)))}
    runs = {"ours_minibatch": ours(cooc, mini, init, words), "ours_full_batch": ours(cooc, full, init, words)}
    runs["mittens"] = mittens(cooc, full, init, words)
    m, o, f = runs["mittens"], runs["ours_minibatch"], runs["ours_full_batch"]
    rel = np.abs(np.array(f["losses"]) / np.array(m["losses"]) - 1)
    figures = {"glove_vs_mittens_speed": m["seconds_per_epoch"] / o["seconds_per_epoch"],
               "glove_vs_mittens_speed_full_batch": m["seconds_per_epoch"] / f["seconds_per_epoch"],
               "mittens_seconds_per_epoch": m["seconds_per_epoch"],
               "ours_seconds_per_epoch": o["seconds_per_epoch"],
               "ours_full_batch_seconds_per_epoch": f["seconds_per_epoch"],
               "cooccur_seconds": count_s,
               "final_loss_mittens": m["final_loss"], "final_loss_ours": o["final_loss"],
               "final_loss_ours_full_batch": f["final_loss"],
               "full_batch_max_rel_loss_diff": float(rel.max())}
    for name, r in runs.items():
        figures |= {f"{name}_{k}": v for k, v in r["intrinsic"].items()}
    record = {"benchmark": NAME, "date": dt.date.today().isoformat(), "machine": machine(), "figures": figures,
              "settings": {"corpus": "ptb train", "vocab_size": V, "vocab_cap": vocab_size, "min_count": min_count,
                           "window": window, "nnz": cooc.nnz, "dim": dim, "epochs": epochs, "batch_size": batch_size,
                           "x_max": mini.x_max, "alpha": mini.alpha, "lr": mini.lr,
                           "adagrad_init": {"ours_minibatch": mini.adagrad_init, "ours_full_batch": 0.1,
                                            "mittens": 0.1},
                           "threads": threads, "seed": seed},
              "runs": runs, "wall_s": time.perf_counter() - started}
    path = Path(out) if out is not None else RESULTS / f"{NAME}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return record


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vocab", type=int, default=10000, help="keep the top N words (PTB has 9,858 with count >= 5)")
    ap.add_argument("--epochs", type=int, default=25, help="epochs of ours, iterations of mittens")
    ap.add_argument("--dim", type=int, default=50)
    ap.add_argument("--min-count", type=int, default=5)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=65536, help="our minibatch mode's cells per step")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=str(RESULTS / f"{NAME}.json"), help="where the JSON record goes")
    args = ap.parse_args()
    record = run(args.vocab, args.epochs, args.dim, args.min_count, args.window, args.batch_size, args.threads,
                 out=args.out)
    print(json.dumps({k: record[k] for k in ("benchmark", "date", "machine", "figures", "settings")}, indent=2))
    fig, s = record["figures"], record["settings"]
    print(f"V={s['vocab_size']} nnz={s['nnz']:,}: mittens {fig['mittens_seconds_per_epoch']:.3f} s/epoch, ours "
          f"{fig['ours_seconds_per_epoch']:.3f} (speed {fig['glove_vs_mittens_speed']:.1f}x), ours full batch "
          f"{fig['ours_full_batch_seconds_per_epoch']:.3f} ({fig['glove_vs_mittens_speed_full_batch']:.1f}x); "
          f"final J mittens {fig['final_loss_mittens']:.1f}, ours {fig['final_loss_ours']:.1f}, ours full batch "
          f"{fig['final_loss_ours_full_batch']:.1f}; full-batch loss parity {fig['full_batch_max_rel_loss_diff']:.1e}")


if __name__ == "__main__":
    main()
