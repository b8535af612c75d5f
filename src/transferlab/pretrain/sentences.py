"""Ordered sentences of documents: the data of skip-thought (Kiros et al. 2015) and quick-thought
(Logeswaran & Lee 2018), both of which learn a sentence's vector from its neighbours.

A corpus becomes documents, each a list of sentences in their order:

- a catalog corpus of one document per file (``sotu``, ``shakespeare``): each file a document,
  its paragraphs the runs of lines between blank lines (a hard-wrapped line does not end a
  sentence, a paragraph does);
- a catalog corpus of lines (``general-en``: one paragraph per line, documents consecutive;
  ``ptb``: one sentence per line): each split file one document, each line a paragraph;
- your folder of ``.txt`` files: each file a document, paragraphs as for the catalog's documents;
- your text file: a blank line ends a document, each line is a paragraph.

Catalog corpora bring their own splits; your own text is split by document: a hash of the
document number puts ``data.held_out`` of them in valid and test (half each), the same on every
machine (:func:`transferlab.pretrain.corpus._held_out`). Paragraphs are cut into sentences by
:func:`split_sentences` (rules, no model: ``.``, ``!`` or ``?`` followed by a space and a capital,
unless the word before the period is a title, an initial or an abbreviation with inner periods),
then tokenized by the text config's tokenizer; the vocabulary is the training split's
(:func:`encode_sentences`).

:class:`TripleBatches` (skip-thought: each sentence with the one before and after it in its
document) and :class:`RunBatches` (quick-thought: runs of consecutive sentences) are pure
functions of (seed, epoch), so a resumed run sees the same batches.
"""

from __future__ import annotations

import random
import re
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from transferlab import IGNORE_INDEX
from transferlab.config import ConfigError
from transferlab.data import catalog
from transferlab.data.batching import bucket_order, pad_batch, pad_rows
from transferlab.data.readers import TextLines
from transferlab.log import log
from transferlab.pretrain.corpus import _held_out
from transferlab.text.vocab import Vocab

__all__ = ["SentenceDataConfig", "split_sentences", "document_sentences", "OrderedSentences", "encode_sentences",
           "decoder_rows", "TripleBatches", "RunBatches"]


@dataclass(frozen=True)
class SentenceDataConfig:
    corpus: str = "sotu,shakespeare"  # catalog names or paths, comma-separated
    held_out: float = 0.1  # documents of your own text held out for valid and test (half each)
    max_documents: int = 0  # per split: read at most this many documents (0 = all)
    max_sentences: int = 0  # per split: read at most this many sentences (0 = all)
    min_len: int = 1  # sentences of fewer words are dropped (Shakespeare's speaker tags "Ham.": 2 words)
    max_len: int = 50  # a longer sentence keeps its first max_len words
    min_freq: int = 1
    max_vocab: int = 20000  # the papers' 20,000 words
    batch_size: int = 128  # sentences (skip-thought: triples); quick-thought's candidates per batch
    eval_batch_size: int = 128

    def __post_init__(self):
        for name in ("min_len", "max_len", "min_freq", "max_vocab", "batch_size", "eval_batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"data.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_documents", "max_sentences"):
            if getattr(self, name) < 0:
                raise ConfigError(f"data.{name} must be >= 0 (0 = all), got {getattr(self, name)}")
        if not 0 < self.held_out < 0.5:
            raise ConfigError(f"data.held_out must be in (0, 0.5), got {self.held_out}")
        if self.min_len > self.max_len:
            raise ConfigError(f"data.min_len ({self.min_len}) must be <= data.max_len ({self.max_len})")


# --- sentence splitting --------------------------------------------------------------------------

# a run of . ! ? (and closing quotes or brackets), white space, then (after opening ones) a capital
_BOUNDARY = re.compile(r"([.!?]+)[\"'’”)\]]*\s+(?=[\"'‘“(\[]*[A-Z])")
# words whose period is not a sentence end before a capital: titles, company and name suffixes, Latin
# (not "no." or "fig.", which come before numbers, nor words such as "ill." or "sat." that end sentences)
_ABBREVIATIONS = frozenset("""mr mrs ms messrs dr prof rev gen gov sen sens rep reps col capt lt sgt adm cmdr maj
    st sr jr mt ft hon pres supt insp det inc corp co cos ltd bros plc dept univ assn vs viz cf al approx""".split())


def _abbreviation(before: str) -> bool:
    """Whether the word that ends ``before`` (its period cut off) keeps its period."""
    words = before.split()
    word = words[-1].lstrip("\"'‘“([") if words else ""
    if not word:
        return False
    if "." in word or (len(word) == 1 and word.isalpha() and word != "I"):
        return True  # U.S. e.g. p.m. and initials (J. Smith)
    return word.lower() in _ABBREVIATIONS


def split_sentences(text: str) -> list[str]:
    """A paragraph -> its sentences, by rule (see the module docstring).

    >>> split_sentences('Mr. Smith arrived at 5 p.m. on Monday. "Why?" he asked. It rained!')
    ['Mr. Smith arrived at 5 p.m. on Monday.', '"Why?" he asked.', 'It rained!']
    """
    sentences, start = [], 0
    for m in _BOUNDARY.finditer(text):
        if m.group(1) == "." and _abbreviation(text[start : m.start()]):
            continue
        sentences.append(text[start : m.end()].strip())
        start = m.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


# --- documents -----------------------------------------------------------------------------------

def _names(corpus: str) -> list[str]:
    return [corpus] if Path(corpus).exists() else [n.strip() for n in corpus.split(",") if n.strip()]


def _paragraphs(lines: Iterable[str], wrapped: bool) -> Iterator[str]:
    """Paragraphs of a document: runs of lines between blank lines (``wrapped``), else each line."""
    if not wrapped:
        yield from (line for line in lines if line)
        return
    run: list[str] = []
    for line in lines:
        if line:
            run.append(line)
        elif run:
            yield " ".join(run)
            run = []
    if run:
        yield " ".join(run)


def _text_file_documents(path: Path) -> Iterator[list[str]]:
    """A text file's documents (a blank line ends one), each a list of its lines."""
    doc: list[str] = []
    for line in TextLines(path, skip_empty=False):
        if line:
            doc.append(line)
        elif doc:
            yield doc
            doc = []
    if doc:
        yield doc


def document_sentences(corpus: str, split: str, held_out: float = 0.1) -> Iterator[tuple[tuple[int, int], str]]:
    """``((source, document), sentence)`` of every sentence of one split, in document order (the
    module docstring says what a document is). Streams: nothing is held but one paragraph."""
    for source, name in enumerate(_names(corpus)):
        if catalog.is_catalog_name(name):
            key, entry = catalog._entry(name)
            if entry.kind != "corpus" or entry.format not in ("lines", "documents"):
                raise ConfigError(f"data.corpus: {key!r} is a {entry.kind}, not a corpus of documents")
            # catalog.corpus gives the TextLines of the split's files (a corpus of documents: one per file)
            for doc, path in enumerate(catalog.corpus(name, split).paths):
                for paragraph in _paragraphs(TextLines(path, skip_empty=False), entry.format == "documents"):
                    yield from (((source, doc), s) for s in split_sentences(paragraph))
            continue
        path = Path(name).expanduser()
        if path.is_dir():
            docs: Iterable = (_paragraphs(TextLines(p, skip_empty=False), True) for p in TextLines(path).paths)
        elif path.is_file():
            docs = _text_file_documents(path)
        else:
            raise ConfigError(f"data.corpus: {name!r} is neither a catalog corpus nor a file or folder")
        for doc, paragraphs in enumerate(docs):
            if _held_out(doc, held_out) == split:
                for paragraph in paragraphs:
                    yield from (((source, doc), s) for s in split_sentences(paragraph))


# --- encoded sentences ---------------------------------------------------------------------------

@dataclass(frozen=True)
class OrderedSentences:
    """The sentences of a split in document order, as word ids."""

    ids: np.ndarray  # (N,) int64: every sentence's ids, concatenated
    offsets: np.ndarray  # (S + 1,) int64: sentence i is ids[offsets[i]:offsets[i + 1]]
    doc: np.ndarray  # (S,) int64: each sentence's document number, non-decreasing

    def __len__(self) -> int:
        return len(self.doc)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    @property
    def n_documents(self) -> int:
        return int(self.doc[-1]) + 1 if len(self.doc) else 0

    def sentence(self, i: int) -> list[int]:
        return self.ids[self.offsets[i] : self.offsets[i + 1]].tolist()

    def triples(self) -> np.ndarray:
        """(K,) the sentences with a sentence before and after them in their document (skip-thought's)."""
        i = np.arange(1, len(self) - 1)
        return i[(self.doc[i - 1] == self.doc[i]) & (self.doc[i + 1] == self.doc[i])]


def _kept(stream: Iterable[tuple[tuple[int, int], str]], tok: Callable[[str], list[str]], d: SentenceDataConfig
          ) -> Iterator[tuple[int, list[str]]]:
    """(document number, words) of the sentences kept (min_len, max_len, max_documents, max_sentences)."""
    doc, last, n = -1, None, 0
    for key, sentence in stream:
        words = tok(sentence)[: d.max_len]
        if len(words) < d.min_len:
            continue
        if key != last:
            if d.max_documents and doc + 1 >= d.max_documents:
                return
            doc, last = doc + 1, key
        yield doc, words
        n += 1
        if d.max_sentences and n >= d.max_sentences:
            return


def _pack(sentences: Iterable[tuple[int, list[int]]]) -> OrderedSentences:
    ids, lengths, docs = array("q"), array("q"), array("q")
    for doc, row in sentences:
        ids.extend(row)
        lengths.append(len(row))
        docs.append(doc)
    offsets = np.concatenate([[0], np.cumsum(np.frombuffer(lengths, dtype=np.int64))]).astype(np.int64)
    return OrderedSentences(np.frombuffer(ids, dtype=np.int64).copy(), offsets,
                            np.frombuffer(docs, dtype=np.int64).copy())


def encode_sentences(d: SentenceDataConfig, tok: Callable[[str], list[str]], extra: Iterable[list[str]] = ()
                     ) -> tuple[Vocab, dict[str, OrderedSentences]]:
    """The training split's vocabulary and every split's sentences as ids, in one pass over each
    split (the training words get provisional ids while they are counted, renumbered after).
    ``extra``: the words of more training text (another task's sentences) counted into the
    vocabulary too (GenSen's one vocabulary over all its tasks)."""
    index: dict[str, int] = {}
    counts = array("q")

    def provisional(words: list[str]) -> list[int]:
        row = [index.setdefault(w, len(index)) for w in words]
        counts.extend([0] * (len(index) - len(counts)))
        for j in row:
            counts[j] += 1
        return row

    log(f"reading the sentences of {d.corpus}")
    train = _pack((doc, provisional(words)) for doc, words in
                  _kept(document_sentences(d.corpus, "train", d.held_out), tok, d))
    if not len(train):
        raise ConfigError(f"data.corpus: {d.corpus} has no training sentence")
    for words in extra:
        provisional(words)
    vocab = Vocab.build((), d.min_freq, d.max_vocab, counts=dict(zip(index, counts)))
    renumber = np.array([vocab.stoi.get(w, vocab.unk_id) for w in index], dtype=np.int64)  # provisional -> vocab id
    splits = {"train": OrderedSentences(renumber[train.ids], train.offsets, train.doc)}
    for split in ("valid", "test"):
        splits[split] = _pack((doc, vocab.encode(words)) for doc, words in
                              _kept(document_sentences(d.corpus, split, d.held_out), tok, d))
    log(f"vocabulary {len(vocab):,} words; sentences (documents): "
        + ", ".join(f"{k} {len(s):,} ({s.n_documents:,})" for k, s in splits.items()))
    return vocab, splits


# --- batches -------------------------------------------------------------------------------------

def decoder_rows(rows: list[list[int]], bos_id: int, eos_id: int, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A decoder's teacher-forced input ``<bos> w1 .. wn`` (B, T+1), padded with ``pad_id``, and its
    targets ``w1 .. wn <eos>`` (B, T+1), ``IGNORE_INDEX`` at padding."""
    width = max(len(r) for r in rows) + 1
    inputs = pad_rows([[bos_id] + r for r in rows], width, pad_id)
    labels = pad_rows([r + [eos_id] for r in rows], width, IGNORE_INDEX)
    return inputs, labels


class TripleBatches:
    """skip-thought's batches: each sentence ``ids (B, T)``, ``mask (B, T)`` with its previous and
    next sentence as decoder inputs and targets (``prev_ids``, ``prev_labels``, ``next_ids``,
    ``next_labels``, :func:`decoder_rows`); triples of similar length together, shuffled by
    (seed, epoch)."""

    def __init__(self, sents: OrderedSentences, batch_size: int, *, pad_id: int, bos_id: int, eos_id: int,
                 shuffle: bool = True, seed: int = 0, epoch: int = 0) -> None:
        self.sents, self.centres = sents, sents.triples()
        if len(self.centres) == 0:
            raise ValueError("TripleBatches: no document has three sentences")
        self.batch_size, self.pad_id, self.bos_id, self.eos_id = batch_size, pad_id, bos_id, eos_id
        self.shuffle, self.seed, self.epoch = shuffle, seed, epoch

    def __len__(self) -> int:
        return -(-len(self.centres) // self.batch_size)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        n = self.sents.lengths
        c = self.centres
        cost = (n[c - 1] + n[c] + n[c + 1]).tolist()  # what a triple costs: its three sentences' words
        for index in bucket_order(cost, self.batch_size, seed=self.seed, epoch=self.epoch, shuffle=self.shuffle):
            centre = c[index]
            batch = pad_batch([self.sents.sentence(i) for i in centre], self.pad_id)
            for side, shift in (("prev", -1), ("next", 1)):
                rows = [self.sents.sentence(i + shift) for i in centre]
                batch[f"{side}_ids"], batch[f"{side}_labels"] = decoder_rows(rows, self.bos_id, self.eos_id,
                                                                             self.pad_id)
            yield batch


class RunBatches:
    """quick-thought's batches: runs of ``batch_size`` consecutive sentences ``ids (B, T)``,
    ``mask (B, T)`` and their document numbers ``doc (B,)`` (a neighbour in another document is
    no context). With ``shuffle`` the runs start at an offset drawn per (seed, epoch), so the runs
    differ between epochs, and come in a shuffled order; without, from the first sentence in order."""

    def __init__(self, sents: OrderedSentences, batch_size: int, *, pad_id: int, shuffle: bool = True,
                 seed: int = 0, epoch: int = 0) -> None:
        if len(sents) < 2:
            raise ValueError("RunBatches: quick-thought needs at least two sentences")
        self.sents, self.batch_size, self.pad_id = sents, batch_size, pad_id
        self.shuffle, self.seed, self.epoch = shuffle, seed, epoch

    def runs(self) -> list[range]:
        S, B = len(self.sents), self.batch_size
        rng = random.Random(self.seed * 1_000_003 + self.epoch)
        offset = rng.randrange(B) if self.shuffle else 0
        runs = ([range(0, offset)] if offset else []) + [range(s, min(s + B, S)) for s in range(offset, S, B)]
        runs = [r for r in runs if len(r) >= 2]  # a run of one sentence has no candidate
        if self.shuffle:
            rng.shuffle(runs)
        return runs

    def __len__(self) -> int:
        return len(self.runs())

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        for run in self.runs():
            batch = pad_batch([self.sents.sentence(i) for i in run], self.pad_id)
            batch["doc"] = torch.as_tensor(self.sents.doc[run.start : run.stop])
            yield batch
