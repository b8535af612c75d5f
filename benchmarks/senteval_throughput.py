"""Sentence-vector throughput: ``transferlab senteval``'s feature extraction against
sentence-transformers' ``encode``, the same MiniLM in one script.

    TRANSFERLAB_DATA=../shared .venv/bin/python benchmarks/senteval_throughput.py [--texts 8000] [--repeats 3]

Both encode the same texts (the first ``--texts`` distinct SST-2 training sentences and STS-B
training sentences, shuffled with seed 0, so lengths are mixed) with all-MiniLM-L6-v2 and mean
pooling over the attention mask, on 2 threads, fp32, no gradient:

- ours: :func:`transferlab.adapt.sentence_features.sentence_embeddings` (longest-first batches of
  about 8,192 tokens, each distinct text once);
- sentence-transformers: ``SentenceTransformer(folder).encode(texts, batch_size=32)`` (its default
  batch size; it also sorts by length), whose pipeline ends with L2 normalisation.

Each side runs ``--repeats`` times after one warm-up pass on 256 texts; the figure is the best
time. The vectors are checked to agree (cosine of ours, normalised, with theirs) before any time
counts. Figures: ``ours_texts_per_s``, ``st_texts_per_s``, ``throughput_ratio`` (ours / theirs;
target >= 1.0), ``min_cosine``.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import write_result  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from transferlab.adapt.sentence_features import sentence_embeddings  # noqa: E402
from transferlab.data import catalog  # noqa: E402
from transferlab.tasks.loading import load_backbone  # noqa: E402
from transferlab.text.tokenize import TextConfig  # noqa: E402


def texts(n: int) -> list[str]:
    pool = [ex.text for ex in catalog.load_examples("sst2", "train")]
    pool += [t for ex in catalog.load_examples("stsb", "train") for t in (ex.text_a, ex.text_b)]
    unique = list(dict.fromkeys(pool))
    random.Random(0).shuffle(unique)
    return unique[:n]


def best_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="minilm-l6", help="a catalog name or a sentence-transformers folder")
    ap.add_argument("--texts", type=int, default=8000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from sentence_transformers import SentenceTransformer

    folder = catalog.resolve(args.model) if not Path(args.model).is_dir() else Path(args.model)
    data = texts(args.texts)
    backbone = load_backbone(args.model, TextConfig())
    st = SentenceTransformer(str(folder), device="cpu")

    def ours(batch):
        return sentence_embeddings(backbone, batch, "mean")

    def theirs(batch):
        return st.encode(batch, batch_size=32, convert_to_numpy=True, show_progress_bar=False)

    ours(data[:256]), theirs(data[:256])  # warm-up
    a, b = ours(data), theirs(data)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    min_cos = float((a * b).sum(1).min())
    print(f"vectors agree: min cosine {min_cos:.6f} over {len(data):,} texts")
    if min_cos < 0.999:
        raise SystemExit("the two pipelines disagree: the timing would compare different computations")
    t_ours = best_time(lambda: ours(data), args.repeats)
    t_st = best_time(lambda: theirs(data), args.repeats)
    figures = {"ours_texts_per_s": len(data) / t_ours, "st_texts_per_s": len(data) / t_st,
               "throughput_ratio": t_st / t_ours, "min_cosine": min_cos}
    print(f"ours {figures['ours_texts_per_s']:.0f} texts/s, sentence-transformers {figures['st_texts_per_s']:.0f} "
          f"texts/s: ratio {figures['throughput_ratio']:.2f}x")
    import sentence_transformers

    write_result("senteval_throughput", figures, texts=len(data), repeats=args.repeats, model=args.model,
                 sentence_transformers=sentence_transformers.__version__)


if __name__ == "__main__":
    main()
