"""Pieces every recipe shares: tokenization settings, logging, loading a language model."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from transferlab.checkpoint import load_checkpoint, load_weights
from transferlab.config import from_dict
from transferlab.text.tokenize import whitespace_tokenize, word_tokenize
from transferlab.text.vocab import Vocab


@dataclass(frozen=True)
class TextConfig:
    tokenizer: Literal["word", "whitespace"] = "word"
    lower: bool = True


def tokenizer(cfg: TextConfig) -> Callable[[str], list[str]]:
    if cfg.tokenizer == "whitespace":
        if cfg.lower:
            return lambda text: whitespace_tokenize(text.lower())
        return whitespace_tokenize
    return lambda text: word_tokenize(text, lower=cfg.lower)


def log(message: str) -> None:
    print(f"[transferlab] {message}", file=sys.stderr, flush=True)


def load_lm(path: str | Path):
    """A pretrained language model checkpoint folder -> (LanguageModel with its weights, Vocab)."""
    from transferlab.encoders.awd_lstm import AWDLSTMConfig
    from transferlab.recipes.pretrain_lm import build_lm

    ckpt = load_checkpoint(path)
    if "vocab" not in ckpt.files:
        raise ValueError(f"{path}: no vocab.json in this checkpoint; is it a language model?")
    vocab = Vocab.from_dict(ckpt.files["vocab"])
    enc_cfg = from_dict(AWDLSTMConfig, ckpt.config["awd_lstm"], "awd_lstm.")
    model = build_lm(enc_cfg, len(vocab))
    load_weights(model, path)
    return model, vocab
