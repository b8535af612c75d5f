"""``transferlab pretrain word2vec|fasttext|doc2vec|glove``: static vectors from any corpus.

The corpus (catalog names or files) is read once through transferlab's readers and tokenizer
into a token file (:mod:`transferlab.vectors.corpus`); the trainer runs on it:

- ``word2vec``, ``fasttext``: gensim (:mod:`transferlab.vectors.word2vec`);
- ``doc2vec``: gensim's paragraph vectors (:mod:`transferlab.vectors.doc2vec`), saved to
  ``OUT/doc2vec`` for inference on new documents;
- ``glove``: ours (:mod:`transferlab.vectors.cooccur`, :mod:`transferlab.vectors.glove`).

Every method writes a :class:`~transferlab.vectors.keyed.WordVectors` folder ``OUT/vectors``
(the input of ``transferlab vectors eval``, of ``--vectors`` in ``finetune``), the resolved
config and ``results.json`` with the timings and, when the ``wordvec-eval`` data is available,
the intrinsic scores.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from transferlab.config import to_dict, write_json
from transferlab.data.errors import CatalogError
from transferlab.log import log
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.vectors.corpus import TokenFile, tokenize_corpus
from transferlab.vectors.doc2vec import Doc2VecConfig, train_doc2vec
from transferlab.vectors.glove import GloVeConfig
from transferlab.vectors.keyed import RUN_VECTORS, WordVectors
from transferlab.vectors.word2vec import FastTextConfig, Word2VecConfig, train_word2vec

Method = Literal["word2vec", "fasttext", "doc2vec", "glove"]


@dataclass(frozen=True)
class VectorsDataConfig:
    corpus: str = "ptb"  # catalog names or paths, comma-separated: "ptb,sotu"
    split: str = "train"


@dataclass(frozen=True)
class PretrainVectorsConfig:
    method: Method = "word2vec"
    data: VectorsDataConfig = field(default_factory=VectorsDataConfig)
    text: TextConfig = field(default_factory=TextConfig)
    word2vec: Word2VecConfig = field(default_factory=Word2VecConfig)
    fasttext: FastTextConfig = field(default_factory=FastTextConfig)
    doc2vec: Doc2VecConfig = field(default_factory=Doc2VecConfig)
    glove: GloVeConfig = field(default_factory=GloVeConfig)
    evaluate: bool = True  # WordSim-353, SimLex-999 and the analogies after training (if available)
    analogy_vocab: int = 100_000  # analogy candidates: the most frequent words
    progress: bool = True
    out: str = "runs/vectors"


def train_glove_vectors(tokens: TokenFile, cfg: GloVeConfig, out: Path, progress: bool) -> tuple[WordVectors, dict]:
    """Our GloVe on a token file: vocabulary, co-occurrences (sharded on disk if need be), fit."""
    import numpy as np

    from transferlab.vectors.cooccur import count_cooccurrences
    from transferlab.vectors.glove import train_glove

    keys = tokens.vocabulary(cfg.min_count)
    index = {w: i for i, w in enumerate(keys)}
    start = time.perf_counter()
    ids = ([index[w] for w in sentence if w in index] for sentence in tokens)
    cooc = count_cooccurrences(ids, len(keys), window=cfg.window, memory_mb=cfg.memory_mb, tmp_dir=out,
                               progress=progress)
    count_s = time.perf_counter() - start
    log(f"glove: {len(keys):,} words, {cooc.nnz:,} nonzero co-occurrences ({count_s:.0f} s)")
    start = time.perf_counter()
    result = train_glove(cooc, cfg, progress=progress)
    train_s = time.perf_counter() - start
    stats = {"count_s": count_s, "train_s": train_s, "nnz": int(cooc.nnz), "vocab_size": len(keys),
             "corpus_words": tokens.words, "words_per_s": tokens.words * cfg.epochs / max(train_s, 1e-9),
             "final_loss": float(result.losses[-1]) if len(result.losses) else None}
    counts = np.array([tokens.counts[w] for w in keys], dtype=np.int64)
    wv = WordVectors(keys, result.vectors(), counts=counts,
                     meta={"trainer": "glove", "corpus": tokens.source, "config": asdict(cfg), **stats})
    return wv, stats


def intrinsic(wv: WordVectors, analogy_vocab: int) -> dict | None:
    from transferlab.eval.intrinsic import evaluate, report

    try:
        scores = evaluate(wv, analogy_vocab=analogy_vocab)
    except CatalogError as e:
        log(f"intrinsic evaluation skipped: {str(e).splitlines()[0]}")
        return None
    log("intrinsic evaluation:\n" + report(scores))
    return scores


def run(cfg: PretrainVectorsConfig) -> dict:
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(to_dict(cfg), out / "config.json")
    start = time.perf_counter()
    tokens = tokenize_corpus(cfg.data.corpus, tokenizer(cfg.text), cfg.data.split, folder=out, progress=cfg.progress)
    tokenize_s = time.perf_counter() - start
    log(f"{cfg.data.corpus}: {tokens.lines:,} lines, {tokens.words:,} words, {len(tokens.counts):,} distinct "
        f"({tokenize_s:.1f} s)")
    summary: dict = {"method": cfg.method, "corpus": cfg.data.corpus, "tokenize_s": tokenize_s}
    try:
        if cfg.method == "glove":
            wv, stats = train_glove_vectors(tokens, cfg.glove, out, cfg.progress)
        elif cfg.method == "doc2vec":
            pv, stats = train_doc2vec(tokens, cfg.doc2vec, cfg.progress)
            pv.save(out / "doc2vec")
            summary["doc2vec"] = str(out / "doc2vec")
            wv = pv.word_vectors()
            wv.meta = pv.meta
        else:
            wv, stats = train_word2vec(tokens, cfg.fasttext if cfg.method == "fasttext" else cfg.word2vec,
                                       cfg.progress)
    finally:
        tokens.remove()
    summary |= stats | {"wall_s": time.perf_counter() - start}
    wv.save(out / RUN_VECTORS)
    summary["vectors"] = str(out / RUN_VECTORS)
    if cfg.evaluate:
        summary["intrinsic"] = intrinsic(wv, cfg.analogy_vocab)
    write_json(summary, out / "results.json")
    log(f"{cfg.method}: {stats['vocab_size']:,} words x {wv.dim} in {summary['wall_s']:.0f} s "
        f"({stats['words_per_s']:,.0f} words/s) -> {out / 'vectors'}")
    return summary
