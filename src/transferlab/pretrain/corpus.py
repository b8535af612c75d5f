"""The text a language model pretrains on: train, valid and test lines of a catalog corpus or of
your own files (held out by a hash of the line number when you give no held-out files), the
vocabulary, and the ids: the training ids in an int32 file (:class:`transferlab.pretrain.lm.TokenFile`),
the held-out ids in memory. Shared by ``pretrain lm`` (AWD-LSTM) and ``pretrain bilm`` (ELMo).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import torch

from transferlab.config import ConfigError
from transferlab.data import catalog
from transferlab.data.lines import Stream
from transferlab.log import log
from transferlab.pretrain.lm import LMStream, TokenFile, encode_corpus, vocab_and_stream
from transferlab.text.vocab import Vocab

__all__ = ["LMDataConfig", "lm_texts", "encode_lm_corpus", "eval_stream"]


@dataclass(frozen=True)
class LMDataConfig:
    corpus: str = "ptb"  # catalog names or paths, comma-separated: "ptb,sotu,shakespeare"
    valid_split: str = "valid"
    test_split: str = "test"
    valid: str = ""  # held-out text files (or catalog names) for a corpus of your own files
    test: str = ""
    held_out: float = 0.02  # without valid/test: this fraction of a user corpus's lines, half each
    batch_size: int = 32
    bptt: int = 70
    eval_batch_size: int = 16
    min_freq: int = 1
    max_vocab: int = 60000

    def __post_init__(self):
        for name in ("batch_size", "bptt", "eval_batch_size", "min_freq", "max_vocab"):
            if getattr(self, name) < 1:
                raise ConfigError(f"data.{name} must be >= 1, got {getattr(self, name)}")
        if not 0 < self.held_out < 0.5:
            raise ConfigError(f"data.held_out must be in (0, 0.5), got {self.held_out}")


def _held_out(index: int, fraction: float) -> str:
    """The split of a user corpus's line ``index``: a hash of the index, so the same lines are
    held out on every run and machine (``fraction`` / 2 each to valid and test)."""
    h = int(hashlib.sha1(str(index).encode()).hexdigest()[:8], 16) / 16**8
    return "valid" if h < fraction / 2 else "test" if h < fraction else "train"


def lm_texts(d: LMDataConfig) -> dict[str, Iterable[str]]:
    """Train, valid and test lines of the LM corpus. A catalog corpus brings its own splits;
    ``data.valid``/``data.test`` name held-out files; otherwise (a corpus of your own files)
    ``data.held_out`` of the lines are held out, so valid and test perplexity are never measured
    on training text."""
    names = [n.strip() for n in d.corpus.split(",") if n.strip()]
    own_splits = all(catalog.is_catalog_name(n) and {d.valid_split, d.test_split} <= set(catalog.splits(n))
                     for n in names)
    if d.valid and d.test or (own_splits and not d.valid and not d.test):
        return {"train": catalog.corpus(d.corpus, "train"),
                "valid": catalog.corpus(d.valid, "train") if d.valid else catalog.corpus(d.corpus, d.valid_split),
                "test": catalog.corpus(d.test, "train") if d.test else catalog.corpus(d.corpus, d.test_split)}
    if d.valid or d.test:
        raise ConfigError("data.valid and data.test go together (or neither: data.held_out of the lines are held out)")

    def part(split: str) -> Stream:
        return Stream(lambda: (line for i, line in enumerate(catalog.corpus(d.corpus, "train"))
                               if _held_out(i, d.held_out) == split))

    log(f"{d.corpus}: holding out {d.held_out:.0%} of the lines for validation and test (data.held_out)")
    return {split: part(split) for split in ("train", "valid", "test")}


def eval_stream(ids: torch.Tensor, d: LMDataConfig, split: str) -> LMStream:
    """Fixed windows over a held-out stream, in fewer rows when the stream is short."""
    _check_held_out(len(ids), d, split)
    return LMStream(ids, min(d.eval_batch_size, len(ids) // 2), d.bptt, variable=False)


def _check_held_out(n_tokens: int, d: LMDataConfig, split: str) -> None:
    if n_tokens < 4:
        raise ConfigError(f"the {split} text of {d.corpus} has {n_tokens} tokens: pass --data.valid and "
                          f"--data.test files, or hold out more lines with --data.held_out")


def encode_lm_corpus(d: LMDataConfig, tok: Callable[[str], list[str]], out: Path
                     ) -> tuple[Vocab, dict[str, torch.Tensor | TokenFile]]:
    """The vocabulary of the training text and the ids of every split (training ids in
    ``out/tokens/train.ids``)."""
    texts = lm_texts(d)
    log(f"building the vocabulary of {d.corpus} and encoding it")
    (out / "tokens").mkdir(parents=True, exist_ok=True)
    vocab, train = vocab_and_stream(texts["train"], tok, d.min_freq, d.max_vocab, path=out / "tokens" / "train.ids")
    streams = {"train": train} | {split: encode_corpus(texts[split], vocab, tok) for split in ("valid", "test")}
    log(f"vocabulary {len(vocab):,} words; tokens: train {len(streams['train']):,}, "
        f"valid {len(streams['valid']):,}, test {len(streams['test']):,}")
    for split in ("valid", "test"):  # said before training, not after it
        _check_held_out(len(streams[split]), d, split)
    return vocab, streams
