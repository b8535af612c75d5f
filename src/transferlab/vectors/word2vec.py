"""word2vec (CBOW, skip-gram) and fastText subword vectors, trained by gensim.

Mikolov et al. 2013 ("Efficient Estimation of Word Representations in Vector Space";
"Distributed Representations of Words and Phrases and their Compositionality"): continuous
bag-of-words or skip-gram, with negative sampling or hierarchical softmax, frequent-word
subsampling. Bojanowski et al. 2017 ("Enriching Word Vectors with Subword Information"): a word
is the sum of its vector and its character n-gram vectors (hashed into buckets), so unseen
words get vectors too.

gensim is the engine: it is the field's standard and its C loops are fast. transferlab gives it
a corpus tokenized once from its own readers (:mod:`transferlab.vectors.corpus`), in gensim's
``corpus_file`` mode, exposes the settings as a config, shows a progress bar over epochs, and
returns a :class:`~transferlab.vectors.keyed.WordVectors` (with the n-gram buckets for fastText).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import Literal

from tqdm import tqdm

from transferlab.config import check_at_least
from transferlab.vectors.corpus import TokenFile
from transferlab.vectors.keyed import WordVectors


@dataclass(frozen=True)
class Word2VecConfig:
    arch: Literal["skipgram", "cbow"] = "skipgram"
    loss: Literal["negative", "hierarchical"] = "negative"  # negative sampling or hierarchical softmax
    dim: int = 100
    window: int = 5
    min_count: int = 5
    max_vocab: int = 0  # keep at most this many words (0: no limit)
    negative: int = 5  # noise words per positive (loss=negative)
    sample: float = 1e-3  # subsampling threshold of frequent words (0: off)
    epochs: int = 5
    lr: float = 0.025  # gensim's alpha, decayed linearly to min_lr
    min_lr: float = 1e-4
    cbow_mean: bool = True  # CBOW averages (not sums) the context vectors
    workers: int = 2  # gensim's C worker threads (0: one per CPU core)
    seed: int = 1

    def __post_init__(self):
        check_at_least(self, self._prefix(), 1, ("dim", "window", "min_count", "epochs", "negative"))
        check_at_least(self, self._prefix(), 0, ("max_vocab", "workers"))
        if not 0 < self.lr or not 0 <= self.min_lr <= self.lr:
            raise ValueError(f"{self._prefix()}.lr must be > 0 and min_lr in [0, lr], got {self.lr}, {self.min_lr}")
        if self.sample < 0:
            raise ValueError(f"{self._prefix()}.sample must be >= 0, got {self.sample}")

    def _prefix(self) -> str:
        return "word2vec"


@dataclass(frozen=True)
class FastTextConfig(Word2VecConfig):
    min_n: int = 3  # shortest character n-gram (of "<word>", with boundary marks)
    max_n: int = 6  # longest; max_n < min_n turns subwords off
    bucket: int = 2_000_000  # hash buckets for the n-grams

    def __post_init__(self):
        super().__post_init__()
        if self.min_n < 1 or self.bucket < 1:
            raise ValueError(f"fasttext.min_n and fasttext.bucket must be >= 1, got {self.min_n}, {self.bucket}")

    def _prefix(self) -> str:
        return "fasttext"


def workers(n: int) -> int:
    return n or os.cpu_count() or 1


def common_args(cfg: Word2VecConfig) -> dict:
    """gensim keyword arguments shared by Word2Vec, FastText and Doc2Vec."""
    hs = cfg.loss == "hierarchical"
    return dict(vector_size=cfg.dim, window=cfg.window, min_count=cfg.min_count,
                max_final_vocab=cfg.max_vocab or None, sample=cfg.sample, hs=int(hs),
                negative=0 if hs else cfg.negative, alpha=cfg.lr, min_alpha=cfg.min_lr,
                epochs=cfg.epochs, workers=workers(cfg.workers), seed=cfg.seed)


class EpochBar:
    """A gensim callback that advances a progress bar at the end of each epoch."""

    def __init__(self, epochs: int, desc: str, enabled: bool):
        from gensim.models.callbacks import CallbackAny2Vec

        class _Callback(CallbackAny2Vec):
            def on_epoch_end(_self, model):
                self.bar.update()

        self.callback = _Callback()
        self.bar = tqdm(total=epochs, desc=desc, unit=" epoch", disable=None if enabled else True)

    def close(self) -> None:
        self.bar.close()


def fit_gensim(model, tokens: TokenFile, desc: str, progress: bool) -> dict:
    """The vocabulary from the token file's counts, then ``train`` on the file; timings and counts.

    The counts were taken while the file was written, so gensim's own scan of the corpus (a
    pass in Python, 0.3 s on PTB) is skipped: ``build_vocab_from_freq`` keeps the same words in
    the same order (most frequent first, ties by first sight, as gensim's scan sorts them).
    Paragraph vectors get one integer tag per line, which is what ``corpus_file`` mode assigns.
    """
    from gensim.models import Doc2Vec

    tokens.vocabulary(model.min_count)  # a cut-off that keeps nothing is an error, not an empty model
    start = time.perf_counter()
    if isinstance(model, Doc2Vec):
        model.dv.index_to_key = list(range(tokens.lines))
    model.build_vocab_from_freq(dict(tokens.counts), corpus_count=tokens.lines)
    model.corpus_total_words = tokens.words
    vocab_s = time.perf_counter() - start
    bar = EpochBar(model.epochs, desc, progress)
    start = time.perf_counter()
    try:
        model.train(corpus_file=str(tokens.path), total_examples=model.corpus_count,
                    total_words=model.corpus_total_words, epochs=model.epochs, callbacks=[bar.callback])
    finally:
        bar.close()
    train_s = time.perf_counter() - start
    return {"vocab_s": vocab_s, "train_s": train_s, "corpus_words": tokens.words, "vocab_size": len(model.wv),
            "words_per_s": tokens.words * model.epochs / max(train_s, 1e-9)}


def train_word2vec(tokens: TokenFile, cfg: Word2VecConfig, progress: bool = True) -> tuple[WordVectors, dict]:
    """word2vec (or fastText, for a :class:`FastTextConfig`) vectors of a tokenized corpus."""
    from gensim.models import FastText, Word2Vec

    args = common_args(cfg) | {"sg": int(cfg.arch == "skipgram"), "cbow_mean": int(cfg.cbow_mean)}
    if isinstance(cfg, FastTextConfig):
        model = FastText(min_n=cfg.min_n, max_n=cfg.max_n, bucket=cfg.bucket, **args)
        kind = "fasttext"
    else:
        model = Word2Vec(**args)
        kind = "word2vec"
    stats = fit_gensim(model, tokens, f"{kind} {cfg.arch}", progress)
    wv = WordVectors.from_gensim(model.wv, copy=False)  # the model goes away: no second copy
    wv.meta = {"trainer": kind, "corpus": tokens.source, "config": asdict(cfg), **stats}
    return wv, stats
