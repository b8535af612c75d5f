"""``transferlab pretrain lm``: language-model pretraining of an AWD-LSTM on any corpus.

Merity et al. 2017 ("Regularizing and Optimizing LSTM Language Models") as ULMFiT's first
stage: build a word vocabulary from the corpus, train next-token prediction with truncated
BPTT, keep the checkpoint with the best validation perplexity, report test perplexity.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transferlab.config import to_dict, write_json
from transferlab.data import catalog
from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig
from transferlab.pretrain.lm import LanguageModel, LMLoss, LMStream, encode_corpus, perplexity
from transferlab.recipes.common import TextConfig, load_lm, log, tokenizer
from transferlab.text.vocab import Vocab
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class LMDataConfig:
    corpus: str = "ptb"  # catalog names or paths, comma-separated: "ptb,sotu,shakespeare"
    valid_split: str = "valid"
    test_split: str = "test"
    batch_size: int = 32
    bptt: int = 70
    eval_batch_size: int = 16
    min_freq: int = 1
    max_vocab: int = 60000

    def __post_init__(self):
        for name in ("batch_size", "bptt", "eval_batch_size", "min_freq", "max_vocab"):
            if getattr(self, name) < 1:
                raise ValueError(f"data.{name} must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True)
class LMObjectiveConfig:
    alpha: float = 2.0  # activation regularization (AR) on the dropped last-layer output
    beta: float = 1.0  # temporal activation regularization (TAR) on the raw last layer


@dataclass(frozen=True)
class PretrainLMConfig:
    data: LMDataConfig = field(default_factory=LMDataConfig)
    text: TextConfig = field(default_factory=TextConfig)
    encoder: str = "awd_lstm"
    awd_lstm: AWDLSTMConfig = field(default_factory=AWDLSTMConfig)
    lm: LMObjectiveConfig = field(default_factory=LMObjectiveConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    out: str = "runs/lm"

    def __post_init__(self):
        if self.encoder != "awd_lstm":
            raise ValueError(f"encoder must be 'awd_lstm' for `pretrain lm`, got {self.encoder!r}")


def build_lm(cfg: AWDLSTMConfig, vocab_size: int) -> LanguageModel:
    encoder = AWDLSTM(dataclasses.replace(cfg, vocab_size=vocab_size))
    return LanguageModel(encoder, vocab_size, tie_weights=True)


def run(cfg: PretrainLMConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the model is built before fit() seeds: the same start per seed
    out = Path(cfg.out)
    tok = tokenizer(cfg.text)
    log(f"building the vocabulary of {cfg.data.corpus}")
    vocab = Vocab.build((tok(line) for line in catalog.corpus(cfg.data.corpus, "train")),
                        min_freq=cfg.data.min_freq, max_size=cfg.data.max_vocab)
    streams = {split: encode_corpus(catalog.corpus(cfg.data.corpus, split), vocab, tok)
               for split in ("train", cfg.data.valid_split, cfg.data.test_split)}
    log(f"vocabulary {len(vocab):,} words; train {len(streams['train']):,} tokens")

    model = build_lm(cfg.awd_lstm, len(vocab))
    loss = LMLoss(alpha=cfg.lm.alpha, beta=cfg.lm.beta)
    d = cfg.data

    def batches(epoch: int) -> LMStream:
        return LMStream(streams["train"], d.batch_size, d.bptt, seed=cfg.train.seed, epoch=epoch)

    def evaluate(m) -> dict:
        ppl = perplexity(m, LMStream(streams[d.valid_split], d.eval_batch_size, d.bptt, variable=False))
        return {"valid_ppl": ppl}

    start = time.perf_counter()
    result = fit(model, loss, batches, cfg.train, evaluate=evaluate, metric="valid_ppl", mode="min",
                 out_dir=out, config=to_dict(cfg), files={"vocab": vocab.to_dict()})
    wall = time.perf_counter() - start
    best, _ = load_lm(out / "best")
    test = LMStream(streams[d.test_split], d.eval_batch_size, d.bptt, variable=False)
    valid = LMStream(streams[d.valid_split], d.eval_batch_size, d.bptt, variable=False)
    summary = {
        "valid_ppl": perplexity(best, valid),
        "test_ppl": perplexity(best, test),
        "wall_s": wall,
        "steps": result.step,
        "tokens_per_s": result.tokens_per_s,
        "vocab_size": len(vocab),
        "n_params": sum(p.numel() for p in model.parameters()),
        "checkpoint": str(out / "best"),
    }
    write_json(summary, out / "results.json")
    log(f"valid ppl {summary['valid_ppl']:.1f}  test ppl {summary['test_ppl']:.1f}  ({wall:.0f} s)")
    return summary
