"""CoVe's pretraining objective: English -> German translation (McCann et al. 2017, section 3).

Parallel pairs (a catalog translation corpus such as ``l10n-en-de``, with its own train, valid
and test splits, or TSV files of your own) become source word ids and target piece ids:

- English: the text config's words (lower-cased by default, as GloVe 6B is), in a vocabulary of
  the training side's words that have a GloVe vector, most frequent first (:func:`source_vocab`);
  any other word is ``<unk>``, a zero vector, as in the paper.
- German: byte-level BPE pieces of a tokenizer trained on the training side
  (:func:`transferlab.text.subword.train_tokenizer`), with ``[BOS]`` before and ``[EOS]`` after.

Training pairs with more than ``max_len`` source words or target pieces are left out (a cut
target would teach the decoder to stop mid-sentence); held-out pairs are all kept.
:class:`ParallelBatches` batches pairs of similar length, deterministically per (seed, epoch);
:class:`MTLoss` is the teacher-forced cross-entropy over the target pieces, ``loss(model,
batch)`` for :func:`transferlab.train.fit`; :func:`mt_perplexity` its per-piece perplexity.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from transferlab import IGNORE_INDEX
from transferlab.config import ConfigError
from transferlab.data import catalog
from transferlab.data.batching import bucket_order, pad_batch, pad_rows
from transferlab.text.subword import SubwordTokenizer
from transferlab.text.vocab import SPECIALS, Vocab

__all__ = ["MTDataConfig", "Parallel", "parallel_pairs", "source_vocab", "encode_pairs", "ParallelBatches",
           "MTLoss", "mt_perplexity"]


@dataclass(frozen=True)
class MTDataConfig:
    corpus: str = "l10n-en-de"  # a catalog translation corpus, or a TSV file of pairs (with valid and test)
    valid: str = ""  # with a file as the corpus: the held-out TSV files of pairs
    test: str = ""
    src_col: str = "en"  # a file's columns
    tgt_col: str = "de"
    train_size: int = 0  # the first N training pairs (0 = all)
    eval_size: int = 0  # the first N valid and test pairs (0 = all)
    max_len: int = 80  # training pairs with more source words or target pieces are left out
    max_src_vocab: int = 100_000  # English words with a GloVe row, most frequent first
    tgt_vocab_size: int = 8000  # German byte-level BPE pieces, the 7 specials and 256 bytes included
    batch_size: int = 64
    eval_batch_size: int = 64

    def __post_init__(self):
        for name in ("max_len", "max_src_vocab", "tgt_vocab_size", "batch_size", "eval_batch_size"):
            if getattr(self, name) < 1:
                raise ConfigError(f"data.{name} must be >= 1, got {getattr(self, name)}")
        if self.train_size < 0 or self.eval_size < 0:
            raise ConfigError("data.train_size and data.eval_size must be >= 0 (0 = all)")
        if bool(self.valid) != bool(self.test):
            raise ConfigError("data.valid and data.test go together: the held-out files of a corpus file")


def parallel_pairs(d: MTDataConfig) -> dict[str, list[tuple[str, str]]]:
    """(source, target) text pairs of the train, valid and test splits."""
    if catalog.is_catalog_name(d.corpus):
        if d.valid:
            raise ConfigError(f"{d.corpus} brings its own valid and test splits: data.valid and data.test are "
                              f"for a corpus file of your own")
        sources = {split: (d.corpus, split) for split in ("train", "valid", "test")}
    else:
        if not d.valid:
            raise ConfigError(f"data.corpus={d.corpus!r} is a file: name its held-out files too, "
                              f"--data.valid=... --data.test=...")
        sources = {"train": (d.corpus, "train"), "valid": (d.valid, "train"), "test": (d.test, "train")}
    out = {}
    for split, (name, part) in sources.items():
        cols = {} if catalog.is_catalog_name(name) else {"a_col": d.src_col, "b_col": d.tgt_col,
                                                         "label_optional": True}
        limit = d.train_size if split == "train" else d.eval_size
        pairs = []
        for ex in catalog.load_examples(name, part, **cols):
            if limit and len(pairs) >= limit:
                break
            pairs.append((ex.text_a, ex.text_b))
        if not pairs:
            raise ConfigError(f"the {split} split of {name} holds no pairs")
        out[split] = pairs
    return out


def source_vocab(token_lists: Iterable[list[str]], has_vector: Callable[[str], bool], max_size: int) -> Vocab:
    """The English words that have a GloVe vector, most frequent first (ties: first seen)."""
    counts = Counter()
    for tokens in token_lists:
        counts.update(tokens)
    words = [w for w, _ in sorted(counts.items(), key=lambda wc: -wc[1]) if w not in SPECIALS and has_vector(w)]
    return Vocab(list(SPECIALS) + words[:max_size], max_size=max_size)


@dataclass
class Parallel:
    """Encoded pairs: source word ids and target piece ids (no specials), aligned."""

    src: list[list[int]]
    tgt: list[list[int]]
    dropped: int = 0  # training pairs left out as too long or empty


def encode_pairs(pairs: Sequence[tuple[str, str]], src_ids: Callable[[str], list[int]], tok: SubwordTokenizer,
                 max_len: int | None = None) -> Parallel:
    """Ids of every pair; with ``max_len`` (training), pairs too long or with an empty side are left out."""
    src = [src_ids(s) for s, _ in pairs]
    tgt = tok.encode_batch([t for _, t in pairs])
    if max_len is None:
        return Parallel(src, tgt)
    keep = [i for i in range(len(pairs)) if 0 < len(src[i]) <= max_len and 0 < len(tgt[i]) <= max_len]
    return Parallel([src[i] for i in keep], [tgt[i] for i in keep], len(pairs) - len(keep))


class ParallelBatches:
    """Restartable, deterministic batches of pairs of similar length, with ``len()``.

    Keys: ``ids (B, S)`` and ``mask (B, S)`` (source), ``tgt_in (B, T)`` (``[BOS]`` + pieces, the
    decoder's input), ``labels (B, T)`` (pieces + ``[EOS]``, ``IGNORE_INDEX`` at padding), ``index (B,)``
    (each pair's position in ``data``).
    """

    def __init__(self, data: Parallel, batch_size: int, *, src_pad: int, tgt_pad: int, bos: int, eos: int,
                 shuffle: bool = True, seed: int = 0, epoch: int = 0) -> None:
        self.data, self.batch_size, self.shuffle, self.seed, self.epoch = data, batch_size, shuffle, seed, epoch
        self.src_pad, self.tgt_pad, self.bos, self.eos = src_pad, tgt_pad, bos, eos

    def __len__(self) -> int:
        return -(-len(self.data.src) // self.batch_size)

    def __iter__(self):
        lengths = [max(len(s), len(t)) for s, t in zip(self.data.src, self.data.tgt)]
        for index in bucket_order(lengths, self.batch_size, seed=self.seed, epoch=self.epoch, shuffle=self.shuffle):
            batch = pad_batch([self.data.src[i] or [self.src_pad] for i in index], self.src_pad)
            tgt = [self.data.tgt[i] for i in index]
            width = max(len(t) for t in tgt) + 1
            batch["tgt_in"] = pad_rows([[self.bos] + t for t in tgt], width, self.tgt_pad)
            batch["labels"] = pad_rows([t + [self.eos] for t in tgt], width, IGNORE_INDEX)
            batch["index"] = torch.as_tensor(index)
            yield batch


def target_nll(model, batch: dict[str, torch.Tensor], reduction: str = "mean") -> torch.Tensor:
    """The cross-entropy of every target piece and ``[EOS]`` given the source (teacher forcing)."""
    logits = model(batch["ids"], batch["mask"], batch["tgt_in"])  # (B, T, V)
    return F.cross_entropy(logits.flatten(0, 1).float(), batch["labels"].flatten(), ignore_index=IGNORE_INDEX,
                           reduction=reduction)


class MTLoss:
    """``loss(model, batch)``: the mean of :func:`target_nll`."""

    def __call__(self, model, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return target_nll(model, batch)


@torch.no_grad()
def mt_perplexity(model, batches: Iterable[dict[str, torch.Tensor]]) -> float:
    """exp(mean cross-entropy per target piece) over the batches, in eval mode."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    total, count = 0.0, 0
    try:
        for batch in batches:
            batch = {k: v.to(device) for k, v in batch.items()}
            total += float(target_nll(model, batch, reduction="sum"))
            count += int((batch["labels"] != IGNORE_INDEX).sum())
    finally:
        model.train(was)
    if count == 0:
        raise ValueError("mt_perplexity: no target pieces")
    return math.exp(total / count)
