"""``transferlab pretrain lm``: language-model pretraining of an AWD-LSTM on any corpus.

Merity et al. 2017 ("Regularizing and Optimizing LSTM Language Models") as ULMFiT's first
stage: build a word vocabulary from the corpus, train next-token prediction with truncated
BPTT, keep the checkpoint with the best validation perplexity, report test perplexity.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transferlab.checkpoint import has_checkpoint
from transferlab.config import ConfigError, to_dict, write_json
from transferlab.data import catalog
from transferlab.data.lines import Stream
from transferlab.encoders.awd_lstm import AWDLSTMConfig
from transferlab.log import log
from transferlab.pretrain.lm import (LMLoss, LMStream, build_lm, encode_corpus, load_lm, perplexity,
                                    train_flops_per_token, vocab_and_stream)
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.train import TrainConfig, fit


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


@dataclass(frozen=True)
class LMObjectiveConfig:
    alpha: float = 2.0  # activation regularization (AR) on the dropped last-layer output
    beta: float = 1.0  # temporal activation regularization (TAR) on the raw last layer
    samples: int = 0  # > 0: sampled softmax with this many draws in training (0 = full softmax)

    def __post_init__(self):
        if self.samples < 0:
            raise ConfigError(f"lm.samples must be >= 0 (0 = full softmax), got {self.samples}")


@dataclass(frozen=True)
class PretrainLMConfig:
    data: LMDataConfig = field(default_factory=LMDataConfig)
    text: TextConfig = field(default_factory=TextConfig)
    encoder: str = "awd_lstm"
    awd_lstm: AWDLSTMConfig = field(default_factory=AWDLSTMConfig)
    lm: LMObjectiveConfig = field(default_factory=LMObjectiveConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    out: str = "runs/lm"
    resume: bool = False  # continue the run in `out` from its last checkpoint

    def __post_init__(self):
        if self.encoder != "awd_lstm":
            raise ValueError(f"encoder must be 'awd_lstm' for `pretrain lm`, got {self.encoder!r}")


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
    if len(ids) < 4:
        raise ConfigError(f"the {split} text of {d.corpus} has {len(ids)} tokens: pass --data.valid and "
                          f"--data.test files, or hold out more lines with --data.held_out")
    return LMStream(ids, min(d.eval_batch_size, len(ids) // 2), d.bptt, variable=False)


def run(cfg: PretrainLMConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the model is built before fit() seeds: the same start per seed
    out = Path(cfg.out)
    if has_checkpoint(out / "last") and not cfg.resume:
        raise ConfigError(f"{out} holds a run (its last checkpoint is {out / 'last'}): pass --resume to continue "
                          f"it, or choose another --out")
    tok = tokenizer(cfg.text)
    texts = lm_texts(cfg.data)
    log(f"building the vocabulary of {cfg.data.corpus} and encoding it")
    (out / "tokens").mkdir(parents=True, exist_ok=True)  # the training ids on disk: any corpus size fits
    vocab, train = vocab_and_stream(texts["train"], tok, cfg.data.min_freq, cfg.data.max_vocab,
                                    path=out / "tokens" / "train.ids")
    streams = {"train": train} | {split: encode_corpus(texts[split], vocab, tok) for split in ("valid", "test")}
    log(f"vocabulary {len(vocab):,} words; tokens: train {len(streams['train']):,}, "
        f"valid {len(streams['valid']):,}, test {len(streams['test']):,}")

    model = build_lm(cfg.awd_lstm, len(vocab))
    loss = LMLoss(alpha=cfg.lm.alpha, beta=cfg.lm.beta, samples=cfg.lm.samples)
    d = cfg.data

    def batches(epoch: int) -> LMStream:
        return LMStream(streams["train"], d.batch_size, d.bptt, seed=cfg.train.seed, epoch=epoch)

    def evaluate(m) -> dict:
        ppl = perplexity(m, eval_stream(streams["valid"], d, "valid"))
        return {"valid_ppl": ppl}

    start = time.perf_counter()
    result = fit(model, loss, batches, cfg.train, evaluate=evaluate, metric="valid_ppl", mode="min",
                 out_dir=out, config=to_dict(cfg), files={"vocab": vocab.to_dict()})
    wall = time.perf_counter() - start
    flops = train_flops_per_token(model, len(vocab), cfg.lm.samples)
    best, _ = load_lm(out / "best")
    test, valid = eval_stream(streams["test"], d, "test"), eval_stream(streams["valid"], d, "valid")
    summary = {
        "valid_ppl": perplexity(best, valid),
        "test_ppl": perplexity(best, test),
        "wall_s": wall,
        "steps": result.step,
        "tokens_per_s": result.tokens_per_s,
        # model-FLOPs utilisation against the bf16 matmul peak measured on the 2-core machine
        "train_flops_per_token": flops,
        "mfu_vs_795_gflops": (result.tokens_per_s or 0.0) * flops / 795e9,
        "vocab_size": len(vocab),
        "n_params": sum(p.numel() for p in model.parameters()),
        "checkpoint": str(out / "best"),
    }
    write_json(summary, out / "results.json")
    log(f"valid ppl {summary['valid_ppl']:.1f}  test ppl {summary['test_ppl']:.1f}  ({wall:.0f} s)")
    return summary
