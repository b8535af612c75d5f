"""Paragraph vectors, PV-DM and PV-DBOW (Le & Mikolov 2014), trained by gensim.

"Distributed Representations of Sentences and Documents": every document gets a vector
trained with the word vectors to predict the document's words (PV-DM: the document vector
joins the context window in predicting the middle word; PV-DBOW: the document vector alone
predicts words sampled from the document). A new document's vector is *inferred*: the word
and output weights stay frozen while a fresh document vector is trained on it.

gensim's Doc2Vec does the training (its C loops), from the token file of
:mod:`transferlab.vectors.corpus`; document ``i`` is the ``i``-th non-empty line of the corpus.
:class:`ParagraphVectors` keeps what inference needs and saves it without pickle:
``doc2vec.safetensors`` (word, document and output weights) and ``doc2vec.json`` (settings,
vocabulary and counts); :meth:`ParagraphVectors.load` rebuilds the gensim model from them, so
that a reloaded model infers exactly the vectors the original would.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
from safetensors.numpy import load_file, save_file

from transferlab.config import from_dict
from transferlab.vectors.corpus import TokenFile
from transferlab.vectors.keyed import WordVectors
from transferlab.vectors.word2vec import Word2VecConfig, common_args, fit_gensim


@dataclass(frozen=True)
class Doc2VecConfig(Word2VecConfig):
    mode: Literal["dbow", "dm"] = "dbow"  # PV-DBOW or PV-DM
    dbow_words: bool = False  # PV-DBOW: also train word vectors skip-gram style (slower)
    dm_mean: bool = True  # PV-DM: average (not sum) the document and context vectors
    min_count: int = 2
    epochs: int = 10
    infer_epochs: int = 0  # epochs to infer a new document's vector (0: the training epochs)

    def __post_init__(self):
        super().__post_init__()
        if self.infer_epochs < 0:
            raise ValueError(f"doc2vec.infer_epochs must be >= 0, got {self.infer_epochs}")

    def _prefix(self) -> str:
        return "doc2vec"


def gensim_args(cfg: Doc2VecConfig) -> dict:
    return common_args(cfg) | {"dm": int(cfg.mode == "dm"), "dbow_words": int(cfg.dbow_words),
                               "dm_mean": int(cfg.dm_mean)}


class ParagraphVectors:
    """A trained paragraph-vector model: document vectors, word vectors, inference of new ones."""

    def __init__(self, model, cfg: Doc2VecConfig, meta: dict | None = None):
        self.model = model  # gensim.models.Doc2Vec
        self.cfg = cfg
        self.meta = meta or {}

    @property
    def dim(self) -> int:
        return self.cfg.dim

    def doc_vectors(self) -> np.ndarray:
        """(documents, D): the trained vector of each corpus document, in corpus order."""
        return np.asarray(self.model.dv.vectors)

    def word_vectors(self) -> WordVectors:
        """The word vectors (random in PV-DBOW unless ``dbow_words``: only PV-DM trains them)."""
        return WordVectors.from_gensim(self.model.wv)

    def infer(self, words: list[str], epochs: int = 0, seed: int | None = None) -> np.ndarray:
        """A vector for a new document (a token list), deterministic for a given ``seed``."""
        if seed is not None:
            self.model.random = np.random.RandomState(seed)
        return self.model.infer_vector(words, epochs=epochs or self.cfg.infer_epochs or None)

    def infer_many(self, docs: list[list[str]], seed: int = 0) -> np.ndarray:
        self.model.random = np.random.RandomState(seed)
        return np.stack([self.model.infer_vector(d, epochs=self.cfg.infer_epochs or None) for d in docs]) \
            if docs else np.zeros((0, self.dim), np.float32)

    # --- files ---------------------------------------------------------------------------------

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        m = self.model
        tensors = {"words": np.ascontiguousarray(m.wv.vectors), "docs": np.ascontiguousarray(m.dv.vectors)}
        if m.hs:
            tensors["syn1"] = np.ascontiguousarray(m.syn1)
        if m.negative:
            tensors["syn1neg"] = np.ascontiguousarray(m.syn1neg)
        counts = [int(m.wv.get_vecattr(k, "count")) for k in m.wv.index_to_key]
        info = {"config": asdict(self.cfg), "keys": list(m.wv.index_to_key), "counts": counts,
                "corpus_count": int(m.corpus_count), "meta": self.meta}
        for name, write in (("doc2vec.safetensors", lambda p: save_file(tensors, p)),
                            ("doc2vec.json", lambda p: Path(p).write_text(json.dumps(info), encoding="utf-8"))):
            tmp = folder / f".{name}.tmp"
            write(str(tmp))
            os.replace(tmp, folder / name)
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> ParagraphVectors:
        from gensim.models import Doc2Vec

        folder = Path(folder)
        if not (folder / "doc2vec.json").is_file():
            raise FileNotFoundError(f"{folder}: no doc2vec.json; is it a `pretrain doc2vec` output?")
        info = json.loads((folder / "doc2vec.json").read_text(encoding="utf-8"))
        tensors = load_file(str(folder / "doc2vec.safetensors"))
        cfg = from_dict(Doc2VecConfig, info["config"], "doc2vec.")
        model = Doc2Vec(**gensim_args(cfg))
        keys = info["keys"]
        model.build_vocab_from_freq(dict(zip(keys, info["counts"])), corpus_count=info["corpus_count"])
        _reorder(model, keys)
        model.wv.vectors = tensors["words"]
        model.dv.vectors = tensors["docs"]
        if model.hs:
            model.syn1 = tensors["syn1"]
        if model.negative:
            model.syn1neg = tensors["syn1neg"]
        return cls(model, cfg, info.get("meta"))


def _reorder(model, keys: list[str]) -> None:
    """Put the rebuilt vocabulary in the saved order (ties in count may have come out differently)
    and recompute the sampling table and Huffman codes that depend on it."""
    wv = model.wv
    if list(wv.index_to_key) == keys:
        return
    perm = np.array([wv.key_to_index[k] for k in keys])
    wv.index_to_key = list(keys)
    wv.key_to_index = {k: i for i, k in enumerate(keys)}
    for name in wv.expandos:
        wv.expandos[name] = wv.expandos[name][perm]
    if model.hs:
        model.create_binary_tree()
    if model.negative:
        model.make_cum_table()


def train_doc2vec(tokens: TokenFile, cfg: Doc2VecConfig, progress: bool = True) -> tuple[ParagraphVectors, dict]:
    """Paragraph vectors of every document (line) of a tokenized corpus."""
    from gensim.models import Doc2Vec

    model = Doc2Vec(**gensim_args(cfg))
    stats = fit_gensim(model, tokens, f"doc2vec {cfg.mode}", progress)
    stats["documents"] = int(model.corpus_count)
    return ParagraphVectors(model, cfg, {"trainer": "doc2vec", "corpus": tokens.source, **stats}), stats
