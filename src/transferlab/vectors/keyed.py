"""WordVectors: static word vectors as keys plus a matrix, apart from whatever trained them.

This is gensim's ``KeyedVectors`` split (Řehůřek & Sojka 2010): a trainer (word2vec, Mikolov et
al. 2013; fastText, Bojanowski et al. 2017; GloVe, Pennington et al. 2014) produces a
:class:`WordVectors`, and everything downstream (features, intrinsic evaluation, embedding
initialisation) reads only this. Queries follow gensim's semantics and give its results:
``most_similar`` is 3CosAdd (the word2vec ``word-analogy`` tool), ``most_similar_cosmul`` is
3CosMul (Levy & Goldberg 2014, eq. 4, cosines shifted to [0, 1]). fastText vectors keep their
character n-gram buckets as :class:`Subwords`, so an unseen word gets the mean of its n-gram
vectors exactly as gensim's ``FastTextKeyedVectors.get_vector`` computes it.

A saved WordVectors is a folder: ``vectors.safetensors`` (tensors ``vectors``, and ``counts``
and ``ngrams`` when present) and ``vocab.json`` (keys, dim, subword n-gram sizes, free-form
provenance ``meta``). Nothing is ever pickled. File formats live in :mod:`.formats`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path

import numpy as np

from transferlab.data.errors import DataError
from transferlab.data.lines import iter_lines
from transferlab.vectors import formats

VECTORS_FILE, VOCAB_FILE = "vectors.safetensors", "vocab.json"
RUN_VECTORS = "vectors"  # where a `pretrain word2vec|fasttext|glove` run folder keeps its vectors
FORMAT_NAME, FORMAT_VERSION = "transferlab.WordVectors", 1


@dataclass
class Subwords:
    """fastText character n-gram buckets (Bojanowski et al. 2017): ``vectors`` is (bucket, D).

    N-grams of ``<word>`` of ``min_n`` to ``max_n`` UTF-8 bytes are hashed into buckets with
    gensim's own ``ft_ngram_hashes`` (the Facebook reference hash), so vectors agree with gensim.
    """

    min_n: int
    max_n: int
    vectors: np.ndarray

    def __post_init__(self) -> None:
        self.vectors = np.ascontiguousarray(self.vectors, dtype=np.float32)
        if self.vectors.ndim != 2 or not len(self.vectors):
            raise ValueError(f"Subwords.vectors must be a non-empty (bucket, D) matrix, not shape {self.vectors.shape}")
        if not 1 <= self.min_n <= self.max_n:
            raise ValueError(f"Subwords needs 1 <= min_n <= max_n, not min_n={self.min_n}, max_n={self.max_n}")

    def hashes(self, word: str) -> list[int]:
        from gensim.models.fasttext import ft_ngram_hashes

        return ft_ngram_hashes(word, self.min_n, self.max_n, len(self.vectors))

    def vector(self, word: str, norm: bool = False) -> np.ndarray:
        """The n-gram mean of ``word`` (unit length if ``norm``); zeros if it has no n-grams."""
        hashes = self.hashes(word)
        out = np.zeros(self.vectors.shape[1], dtype=np.float32)
        if not hashes:
            return out
        for h in hashes:  # gensim's loop and order, so the float32 sum is bit-identical
            out += self.vectors[h]
        return out / np.linalg.norm(out) if norm else out / len(hashes)


def _as_list(value) -> list:
    """A word, a vector, a matrix of vectors or a list of them -> a list (gensim's _ensure_list)."""
    if value is None:
        return []
    if isinstance(value, str) or (isinstance(value, np.ndarray) and value.ndim == 1):
        return [value]
    return list(value)  # a list, a tuple, or the rows of a (K, D) matrix


class WordVectors:
    """Keys and their (N, D) float32 vectors, with optional counts, subwords and provenance."""

    def __init__(self, keys: list[str], vectors: np.ndarray, counts: np.ndarray | None = None,
                 subwords: Subwords | None = None, meta: dict | None = None) -> None:
        self.keys = list(keys)
        self.key_to_index = {k: i for i, k in enumerate(self.keys)}
        if len(self.key_to_index) != len(self.keys):
            seen = set()
            dup = next(k for k in self.keys if k in seen or seen.add(k))
            raise ValueError(f"WordVectors keys must be unique; {dup!r} appears more than once")
        self.vectors = vectors
        if counts is not None:
            counts = np.asarray(counts, dtype=np.int64)
            if counts.shape != (len(self.keys),):
                raise ValueError(f"counts has shape {counts.shape}; expected ({len(self.keys)},)")
        self.counts = counts
        if subwords is not None and subwords.vectors.shape[1] != self.dim:
            raise ValueError(f"subword vectors have dim {subwords.vectors.shape[1]}, word vectors {self.dim}")
        self.subwords = subwords
        self.meta = dict(meta or {})

    # -- the matrix and its cached unit rows --------------------------------------------------------

    @property
    def vectors(self) -> np.ndarray:
        return self._vectors

    @vectors.setter
    def vectors(self, value: np.ndarray) -> None:
        value = np.asarray(value, dtype=np.float32)
        if value.ndim != 2 or value.shape[0] != len(self.keys):
            raise ValueError(f"vectors must be ({len(self.keys)}, D) for {len(self.keys)} keys, not {value.shape}")
        self._vectors, self._unit = value, None  # new vectors: the unit rows are recomputed on demand

    @property
    def dim(self) -> int:
        return self._vectors.shape[1]

    def unit_vectors(self) -> np.ndarray:
        """L2-normalised rows (N, D), computed once and cached; zero rows stay zero."""
        if self._unit is None:
            norms = np.linalg.norm(self._vectors, axis=1, keepdims=True)  # (N, 1)
            self._unit = self._vectors / np.where(norms > 0, norms, 1).astype(np.float32)
        return self._unit

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, word: object) -> bool:
        return word in self.key_to_index

    def __getitem__(self, word: str) -> np.ndarray:
        i = self.key_to_index.get(word)
        if i is not None:
            row = self._vectors[i]
            row.flags.writeable = False  # a view: writes would silently stale the cached unit rows
            return row
        if self.subwords is not None:
            return self.subwords.vector(word)
        raise KeyError(f"word {word!r} is not among the {len(self)} words, and these vectors have no "
                       "subword n-grams to build one from")

    def get_index(self, word: str, default: int | None = None) -> int | None:
        """The row of ``word``, or ``default`` (None) if it is unknown, like ``dict.get``.

        gensim's ``get_index`` raises a KeyError instead when no default is given; here callers
        test for None (``vectors/init.py`` does), and ``wv.key_to_index[word]`` raises.
        """
        return self.key_to_index.get(word, default)

    def __repr__(self) -> str:
        extra = f", subwords {self.subwords.min_n}-{self.subwords.max_n}" if self.subwords else ""
        return f"WordVectors({len(self)} words, dim {self.dim}{extra})"

    # -- similarity queries --------------------------------------------------------------------------

    def _unit_of(self, word: str) -> np.ndarray:
        i = self.key_to_index.get(word)
        if i is not None:
            return self.unit_vectors()[i]
        if self.subwords is not None:
            return self.subwords.vector(word, norm=True)
        return self[word]  # raises the KeyError naming the word

    def _top(self, scores: np.ndarray, topn: int | None, exclude: set[int]):
        """gensim's selection: the ``topn + len(exclude)`` best, inputs dropped, then ``topn``."""
        if topn is None:
            return scores
        k = min(topn + len(exclude), scores.size)
        best = np.argpartition(-scores, k - 1)[:k] if k < scores.size else np.arange(scores.size)
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(self.keys[i], float(scores[i])) for i in best if i not in exclude][:topn]

    def most_similar(self, positive=(), negative=(), topn: int | None = 10,
                     restrict_vocab: int | None = None) -> list[tuple[str, float]]:
        """3CosAdd: the words nearest (by cosine) to the mean of the unit positive vectors minus
        the negative ones, input words excluded, as gensim's ``KeyedVectors.most_similar``.

        Items are words, vectors (used as given, not normalised, as in gensim), or ``(item,
        weight)`` pairs. ``restrict_vocab`` searches only the first that many rows; ``topn=None``
        returns the scores of every searched row.
        """
        if isinstance(topn, Integral) and topn < 1:
            return []
        items = [(x, 1.0) for x in _as_list(positive)] + [(x, -1.0) for x in _as_list(negative)]
        items = [(x[0], float(x[1])) if isinstance(x, tuple) else (x, w) for x, w in items]
        if not items:
            raise ValueError("most_similar needs at least one positive or negative word or vector")
        mean, total, exclude = np.zeros(self.dim, dtype=np.float32), 0.0, set()
        for item, weight in items:
            if isinstance(item, np.ndarray):
                mean += weight * item
            else:
                mean += weight * self._unit_of(item)
                if item in self.key_to_index:
                    exclude.add(self.key_to_index[item])
            total += abs(weight)
        mean /= total
        norm = np.linalg.norm(mean)
        mean = mean / norm if norm > 0 else mean
        limit = restrict_vocab or len(self)
        scores = self.unit_vectors()[:limit] @ mean  # (R,)
        return self._top(scores, topn, exclude)

    def most_similar_cosmul(self, positive=(), negative=(), topn: int | None = 10,
                            restrict_vocab: int | None = None) -> list[tuple[str, float]]:
        """3CosMul (Levy & Goldberg 2014, eq. 4): the product of the positive cosines over the
        product of the negative ones (+1e-6), each shifted to [0, 1], as gensim's
        ``most_similar_cosmul``: words are unit-normalised, vectors used as given.

        Unlike gensim, which ignores it here, ``restrict_vocab`` does restrict the search.
        """
        if isinstance(topn, Integral) and topn < 1:
            return []
        positive, negative = _as_list(positive), _as_list(negative)
        if not positive:
            raise ValueError("most_similar_cosmul needs at least one positive word or vector")
        exclude = {self.key_to_index[w] for w in positive + negative
                   if not isinstance(w, np.ndarray) and w in self.key_to_index}
        unit = self.unit_vectors()[: restrict_vocab or len(self)]

        def shifted(terms: list) -> list[np.ndarray]:
            return [(1 + unit @ (t if isinstance(t, np.ndarray) else self._unit_of(t))) / 2 for t in terms]

        scores = np.prod(shifted(positive), axis=0) / (np.prod(shifted(negative), axis=0) + 0.000001)
        return self._top(np.asarray(scores, dtype=np.float32), topn, exclude)

    def neighbors(self, word_or_vector: str | np.ndarray, topn: int | None = 10,
                  restrict_vocab: int | None = None) -> list[tuple[str, float]]:
        """Cosine nearest neighbours of a word (itself excluded) or of a vector (gensim's
        ``similar_by_word`` / ``similar_by_vector``)."""
        if isinstance(word_or_vector, np.ndarray) and word_or_vector.ndim != 1:
            raise ValueError(f"neighbors takes one word or one (D,) vector, not shape {word_or_vector.shape}")
        return self.most_similar([word_or_vector], topn=topn, restrict_vocab=restrict_vocab)

    # -- the native folder ---------------------------------------------------------------------------

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Write ``vectors.safetensors`` and ``vocab.json`` into ``folder``, atomically: both are
        written into a temporary sibling folder that then replaces ``folder``."""
        folder = Path(folder)
        vocab = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "dim": self.dim, "keys": self.keys,
                 "subwords": None if self.subwords is None else
                 {"min_n": self.subwords.min_n, "max_n": self.subwords.max_n},
                 "meta": self.meta}
        try:
            text = json.dumps(vocab, ensure_ascii=False)
        except TypeError as e:
            raise ValueError(f"WordVectors.meta must be JSON-serialisable ({e})") from None
        tensors = {"vectors": np.ascontiguousarray(self._vectors)}
        if self.counts is not None:
            tensors["counts"] = self.counts
        if self.subwords is not None:
            tensors["ngrams"] = self.subwords.vectors
        formats.write_folder(folder, {VECTORS_FILE: tensors, VOCAB_FILE: text + "\n"})

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> WordVectors:
        """Read a folder written by :meth:`save` (or its ``.old`` backup after a crash mid-swap)."""
        folder = Path(folder)
        if not folder.is_dir() and folder.with_name(f".{folder.name}.old").is_dir():
            folder = folder.with_name(f".{folder.name}.old")
        vocab_path, tensor_path = folder / VOCAB_FILE, folder / VECTORS_FILE
        vocab = formats.read_vocab(vocab_path)
        tensors = formats.read_tensors(tensor_path)
        if "vectors" not in tensors:
            raise DataError(tensor_path, None, "vectors", "no tensor 'vectors'")
        vectors = tensors["vectors"]
        if vectors.dtype != np.float32 or vectors.shape != (len(vocab["keys"]), vocab["dim"]):
            raise DataError(tensor_path, None, "vectors",
                            f"{vectors.dtype} {vectors.shape} does not match vocab.json's "
                            f"{len(vocab['keys'])} keys of dim {vocab['dim']} (float32)")
        sub = vocab.get("subwords")
        if (sub is None) != ("ngrams" not in tensors):
            raise DataError(tensor_path, None, "ngrams", "tensor 'ngrams' and vocab.json 'subwords' must come together")
        subwords = None if sub is None else Subwords(int(sub["min_n"]), int(sub["max_n"]), tensors["ngrams"])
        return cls(vocab["keys"], vectors, tensors.get("counts"), subwords, vocab.get("meta") or {})

    # -- foreign formats -----------------------------------------------------------------------------

    def save_word2vec(self, path: str | os.PathLike[str], binary: bool = False) -> None:
        """The word2vec C text (``binary=False``) or binary format; subwords are not kept."""
        formats.write_word2vec(path, self.keys, self._vectors, binary=binary)

    @classmethod
    def load_word2vec(cls, path: str | os.PathLike[str], binary: bool | None = None,
                      limit: int | None = None) -> WordVectors:
        """A word2vec C text or binary file (``binary=None`` tells them apart); the first ``limit``."""
        keys, vectors = formats.read_word2vec(path, binary=binary, limit=limit)
        return cls(keys, vectors, meta={"source": str(path), "format": "word2vec"})

    @classmethod
    def load_glove(cls, path: str | os.PathLike[str], limit: int | None = None) -> WordVectors:
        """GloVe's text format: ``word v1 ... vD`` per line, no header."""
        keys, vectors = formats.read_glove(path, limit=limit)
        return cls(keys, vectors, meta={"source": str(path), "format": "glove"})

    @classmethod
    def from_gensim(cls, kv, copy: bool = True) -> WordVectors:
        """From a gensim ``KeyedVectors`` (or a model's ``.wv``); a ``FastTextKeyedVectors``
        keeps its n-gram buckets as :class:`Subwords`. Arrays are copied unless ``copy=False``
        (for a model about to be discarded: fastText's buckets are 800 MB by default)."""
        array = np.array if copy else np.asarray
        counts = kv.expandos.get("count") if hasattr(kv, "expandos") else None
        if counts is not None and (counts.dtype == object or len(counts) != len(kv.index_to_key)):
            counts = None
        subwords = None
        if getattr(kv, "bucket", 0) and getattr(kv, "vectors_ngrams", None) is not None:
            subwords = Subwords(int(kv.min_n), int(kv.max_n), array(kv.vectors_ngrams, dtype=np.float32))
        return cls([str(k) for k in kv.index_to_key], array(kv.vectors, dtype=np.float32),
                   None if counts is None else np.array(counts, dtype=np.int64), subwords,
                   meta={"source": "gensim", "class": type(kv).__name__})

    def to_gensim(self):
        """A gensim ``KeyedVectors`` (``FastTextKeyedVectors`` with subwords) of copies of the arrays."""
        from gensim.models import KeyedVectors
        from gensim.models.fasttext import FastTextKeyedVectors

        if self.subwords is None:
            kv = KeyedVectors(self.dim, count=0)
        else:
            kv = FastTextKeyedVectors(self.dim, self.subwords.min_n, self.subwords.max_n, len(self.subwords.vectors))
            kv.vectors_ngrams = self.subwords.vectors.copy()
        kv.index_to_key = list(self.keys)
        kv.key_to_index = dict(self.key_to_index)
        kv.vectors = np.array(self._vectors, dtype=np.float32)
        if self.subwords is not None:
            kv.vectors_vocab = kv.vectors.copy()  # word-token vectors are not kept; only for training
            kv.recalc_char_ngram_buckets()
        if self.counts is not None:
            kv.allocate_vecattrs(["count"], [np.int64])
            kv.expandos["count"][:] = self.counts
        return kv


def load_vectors(name_or_path: str | os.PathLike[str], limit: int | None = None) -> WordVectors:
    """Word vectors from a catalog name (``glove-6b-50d``), a saved WordVectors folder, a
    glove-npy folder, a ``.txt``/``.vec`` file (word2vec text if its first line is ``N D``,
    else GloVe text) or a ``.bin`` file (word2vec binary); the first ``limit`` words."""
    path = Path(os.fspath(name_or_path)).expanduser()
    if not path.exists():
        text = os.fspath(name_or_path)
        if "/" in text or os.sep in text or path.suffix.lower() in (".txt", ".vec", ".bin", ".npy"):
            raise DataError(path, None, None, "no such file or folder")
        from transferlab.data import catalog

        key, entry = catalog._entry(text)
        if entry.kind != "vectors":
            raise DataError(None, None, None, f"catalog entry {key!r} is a {entry.kind}, not word vectors")
        path = catalog.resolve(key)
    if path.is_dir():
        return _load_folder(path, limit)
    suffix = path.suffix.lower()
    if suffix == ".bin":
        return WordVectors.load_word2vec(path, binary=True, limit=limit)
    if suffix in (".txt", ".vec"):
        lines = iter_lines(path)
        first = next(lines, (1, ""))[1]
        lines.close()
        if formats.looks_like_header(first):
            return WordVectors.load_word2vec(path, binary=None, limit=limit)
        return WordVectors.load_glove(path, limit=limit)
    raise DataError(path, None, None, "unknown vectors format: expected a .txt/.vec (word2vec or GloVe text) "
                                      "or .bin (word2vec binary) file, or a folder")


def _load_folder(folder: Path, limit: int | None) -> WordVectors:
    if not (folder / VOCAB_FILE).is_file() and (folder / RUN_VECTORS / VOCAB_FILE).is_file():
        folder = folder / RUN_VECTORS  # a pretraining run folder: its vectors
    if (folder / VOCAB_FILE).is_file() or (folder / VECTORS_FILE).is_file():
        wv = WordVectors.load(folder)
        return wv if limit is None or limit >= len(wv) else _head(wv, limit)
    if formats.is_glove_npy(folder):
        keys, vectors = formats.read_glove_npy(folder, limit=limit)
        return WordVectors(keys, vectors, meta={"source": str(folder), "format": "glove-npy"})
    formats.refuse_gensim_pickles(folder)
    raise DataError(folder, None, None, "holds no word vectors: expected vocab.json + vectors.safetensors "
                                        "(WordVectors.save) or *_emb.npy + *_index.parquet (glove-npy)")


def _head(wv: WordVectors, n: int) -> WordVectors:
    counts = None if wv.counts is None else wv.counts[:n].copy()
    return WordVectors(wv.keys[:n], wv.vectors[:n].copy(), counts, wv.subwords, wv.meta)
