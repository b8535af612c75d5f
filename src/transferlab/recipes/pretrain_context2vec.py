"""``transferlab pretrain context2vec``: context2vec (Melamud et al. 2016) on any corpus, and its
vectors for ``transferlab vectors neighbors``.

Build a word vocabulary from the corpus, read it as sentences (each line, cut into pieces of at
most ``data.bptt`` words; the paper drops sentences over 64 words), train the biLSTM context
encoder and the target-word embeddings with negative sampling (every word of every sentence a
target), keep the checkpoint with the best validation loss, report held-out loss and how often
the true word is the top-1 / top-10 filler of its context. The checkpoint keeps the vocabulary,
so :func:`load_context2vec` gives the target-word vectors (a ``WordVectors``: ``vectors
neighbors|analogy|eval|convert`` work on them) and the context vector of a ``[]`` slot.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from transferlab.checkpoint import check_run_folder, load_checkpoint
from transferlab.config import ConfigError, from_dict, to_dict, write_json
from transferlab.encoders.backbone import load_encoder_weights
from transferlab.encoders.context2vec import Context2Vec, Context2VecConfig
from transferlab.log import log
from transferlab.pretrain.context2vec import (NegativeSampling, SentenceBatches, context2vec_loss, context2vec_scores,
                                              noise_distribution, sentence_spans, unigram_counts)
from transferlab.pretrain.corpus import LMDataConfig, encode_lm_corpus
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.text.vocab import SPECIALS, Vocab
from transferlab.train import TrainConfig, fit
from transferlab.vectors.keyed import WordVectors

SLOT = "[]"


@dataclass(frozen=True)
class NegativeSamplingConfig:
    samples: int = 10  # noise words per target (the paper's 10)
    power: float = 0.75  # the noise distribution is unigram ** power (word2vec's 0.75)
    rank_targets: int = 20000  # held-out targets ranked against every word for top1/top10 (0 = none)

    def __post_init__(self):
        if self.samples < 1:
            raise ConfigError(f"objective.samples must be >= 1, got {self.samples}")
        if not 0.0 <= self.power <= 1.0:
            raise ConfigError(f"objective.power must be in [0, 1], got {self.power}")
        if self.rank_targets < 0:
            raise ConfigError(f"objective.rank_targets must be >= 0, got {self.rank_targets}")


@dataclass(frozen=True)
class PretrainContext2VecConfig:
    # data.bptt is the longest sentence read whole: a longer line is cut into pieces of that many words
    # (the presets: 64, the paper's cut)
    data: LMDataConfig = field(default_factory=LMDataConfig)
    text: TextConfig = field(default_factory=TextConfig)
    context2vec: Context2VecConfig = field(default_factory=Context2VecConfig)
    objective: NegativeSamplingConfig = field(default_factory=NegativeSamplingConfig)
    train: TrainConfig = field(default_factory=TrainConfig)  # the presets train with Adam, as the paper does
    out: str = "runs/context2vec"
    resume: bool = False
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts


def run(cfg: PretrainContext2VecConfig) -> dict:
    torch.manual_seed(cfg.train.seed)
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("context2vec",))
    vocab, streams = encode_lm_corpus(cfg.data, tokenizer(cfg.text), out)
    c2v_cfg = dataclasses.replace(cfg.context2vec, vocab_size=len(vocab), pad_id=vocab.pad_id, bos_id=vocab.bos_id,
                                  eos_id=vocab.eos_id)
    noise = noise_distribution(unigram_counts(streams["train"], len(vocab)), cfg.objective.power,
                               exclude=(vocab.pad_id, vocab.bos_id, vocab.eos_id))
    model = NegativeSampling(Context2Vec(c2v_cfg), noise, cfg.objective.samples)
    d = cfg.data
    spans = {split: sentence_spans(ids, vocab.eos_id, d.bptt) for split, ids in streams.items()}
    for split in ("valid", "test"):
        if len(spans[split]) == 0:
            raise ConfigError(f"the {split} text of {d.corpus} has no sentence: pass --data.valid and --data.test "
                              f"files, or hold out more lines with --data.held_out")
    log(f"sentences: train {len(spans['train']):,}, valid {len(spans['valid']):,}, test {len(spans['test']):,}")

    def batches(epoch: int) -> SentenceBatches:
        return SentenceBatches(streams["train"], spans["train"], d.batch_size, pad_id=vocab.pad_id,
                               seed=cfg.train.seed, epoch=epoch)

    def scores(m: NegativeSampling, split: str) -> dict:
        held_out = SentenceBatches(streams[split], spans[split], d.eval_batch_size, pad_id=vocab.pad_id, shuffle=False)
        return {f"{split}_{k}": v for k, v in context2vec_scores(m, held_out, cfg.objective.rank_targets).items()}

    start = time.perf_counter()
    result = fit(model, context2vec_loss, batches, cfg.train, evaluate=lambda m: scores(m, "valid"),
                 metric="valid_loss", mode="min", out_dir=out,
                 config=to_dict(cfg) | {"context2vec": to_dict(c2v_cfg)}, files={"vocab": vocab.to_dict()})
    wall = time.perf_counter() - start
    best = NegativeSampling(load_context2vec(out / "best").encoder, noise, cfg.objective.samples)
    summary = {**scores(best, "valid"), **scores(best, "test"), "wall_s": wall,
               "wall_s_total": wall + result.earlier_wall_s, "steps": result.step,
               "tokens_per_s": result.tokens_per_s, "vocab_size": len(vocab),
               "n_params": sum(p.numel() for p in model.encoder.parameters()), "checkpoint": str(out / "best")}
    write_json(summary, out / "results.json")
    log(f"valid loss {summary['valid_loss']:.3f} (top-1 filler {summary['valid_top1']:.1%}, top-10 "
        f"{summary['valid_top10']:.1%}), test loss {summary['test_loss']:.3f} ({wall:.0f} s)")
    return summary


@dataclass
class Context2VecVectors:
    """A trained context2vec: its encoder, vocabulary and tokenizer. ``words`` are the target-word
    vectors (specials left out); ``context(text)`` is the context vector of the ``[]`` slot."""

    encoder: Context2Vec
    vocab: Vocab
    tokenize: Callable[[str], list[str]]

    @cached_property
    def words(self) -> WordVectors:
        weight = self.encoder.target_embedding.weight.detach().float().cpu().numpy()  # (V, dim)
        n = len(SPECIALS)  # the specials come first
        return WordVectors(self.vocab.itos[n:], weight[n:], meta={"source": "context2vec target embeddings"})

    @torch.no_grad()
    def context(self, text: str) -> np.ndarray:
        """``"I drank a [] of tea"`` -> the (dim,) context vector of the slot."""
        left, slot, right = text.partition(SLOT)
        if not slot or SLOT in right:
            raise ValueError(f"a context needs exactly one {SLOT} slot, as in 'I drank a {SLOT} of tea': got {text!r}")
        before, after = self.vocab.encode(self.tokenize(left)), self.vocab.encode(self.tokenize(right))
        ids = torch.tensor([before + [self.vocab.unk_id] + after])  # (1, T); the slot's id is never read
        self.encoder.eval()
        return self.encoder.context(ids)[0, len(before)].float().numpy()


def is_context2vec(path: str | Path) -> bool:
    """Whether ``path`` is a ``pretrain context2vec`` checkpoint folder."""
    try:
        return "context2vec" in json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return False


def load_context2vec(path: str | Path) -> Context2VecVectors:
    """A ``pretrain context2vec`` checkpoint folder -> its encoder (weights loaded), vocabulary and tokenizer."""
    ckpt = load_checkpoint(path, json_only=True)
    if "vocab" not in ckpt.files or "context2vec" not in ckpt.config:
        raise ValueError(f"{path}: not a `transferlab pretrain context2vec` checkpoint (no context2vec config and "
                         f"vocabulary)")
    encoder = Context2Vec(from_dict(Context2VecConfig, ckpt.config["context2vec"], "context2vec."))
    load_encoder_weights(encoder, path)
    text = from_dict(TextConfig, ckpt.config.get("text", {}), "text.")
    return Context2VecVectors(encoder.eval(), Vocab.from_dict(ckpt.files["vocab"]), tokenizer(text))
