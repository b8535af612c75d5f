"""``transferlab pretrain lm``: language-model pretraining of an AWD-LSTM on any corpus.

Merity et al. 2017 ("Regularizing and Optimizing LSTM Language Models") as ULMFiT's first
stage: build a word vocabulary from the corpus, train next-token prediction with truncated
BPTT, keep the checkpoint with the best validation perplexity, report test perplexity.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transferlab.checkpoint import check_run_folder
from transferlab.config import check_at_least, to_dict, write_json
from transferlab.encoders.awd_lstm import AWDLSTMConfig
from transferlab.log import log
from transferlab.pretrain.corpus import LMDataConfig, encode_lm_corpus, eval_stream
from transferlab.pretrain.lm import LMLoss, LMStream, build_lm, load_lm, perplexity, train_flops_per_token
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class LMObjectiveConfig:
    alpha: float = 2.0  # activation regularization (AR) on the dropped last-layer output
    beta: float = 1.0  # temporal activation regularization (TAR) on the raw last layer
    samples: int = 0  # > 0: sampled softmax with this many draws in training (0 = full softmax)

    def __post_init__(self):
        check_at_least(self, "lm", 0, ("samples",), "0 = full softmax")


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
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts

    def __post_init__(self):
        if self.encoder != "awd_lstm":
            raise ValueError(f"encoder must be 'awd_lstm' for `pretrain lm`, got {self.encoder!r}")


def reuse_or_run(cfg: PretrainLMConfig, what: str = "language model", note: str = "") -> Path:
    """The ``best`` checkpoint of the run in ``cfg.out``: reused when that run finished (its
    ``results.json`` is there), else trained now (``note`` logged first)."""
    out = Path(cfg.out)
    if (out / "results.json").exists():
        log(f"reusing the {what} in {out}")
    else:
        if note:
            log(note)
        run(cfg)
    return out / "best"


def run(cfg: PretrainLMConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the model is built before fit() seeds: the same start per seed
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite)
    vocab, streams = encode_lm_corpus(cfg.data, tokenizer(cfg.text), out)
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
        "wall_s": wall,  # this call; wall_s_total: every call of a resumed run
        "wall_s_total": wall + result.earlier_wall_s,
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
