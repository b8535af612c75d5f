"""``transferlab pretrain bilm``: ELMo's biLM (Peters et al. 2018) on any corpus.

Build a word vocabulary from the corpus (the characters of every word feed the character CNN, so
the vocabulary only decides which words the shared softmax predicts), train the forward and
backward LMs on contiguous windows with the sum of both directions' log-likelihoods, keep the
checkpoint with the best validation perplexity (the geometric mean of the two directions'),
report both directions' test perplexity.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transferlab.checkpoint import check_run_folder
from transferlab.config import check_at_least, to_dict, write_json
from transferlab.encoders.elmo import ELMo, ELMoConfig
from transferlab.log import log
from transferlab.pretrain.bilm import BiLM, BiLMLoss, bilm_perplexity
from transferlab.pretrain.corpus import LMDataConfig, encode_lm_corpus, eval_stream
from transferlab.pretrain.lm import LMStream
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class BiLMObjectiveConfig:
    samples: int = 0  # > 0: sampled softmax with this many draws in training (0 = full softmax)

    def __post_init__(self):
        check_at_least(self, "bilm", 0, ("samples",), "0 = full softmax")


@dataclass(frozen=True)
class PretrainBiLMConfig:
    data: LMDataConfig = field(default_factory=lambda: LMDataConfig(bptt=20))
    text: TextConfig = field(default_factory=lambda: TextConfig(lower=False))  # characters keep their case
    elmo: ELMoConfig = field(default_factory=ELMoConfig)
    bilm: BiLMObjectiveConfig = field(default_factory=BiLMObjectiveConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    out: str = "runs/bilm"
    resume: bool = False
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts


def run(cfg: PretrainBiLMConfig) -> dict:
    torch.manual_seed(cfg.train.seed)
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("elmo",))
    vocab, streams = encode_lm_corpus(cfg.data, tokenizer(cfg.text), out)
    elmo_cfg = dataclasses.replace(cfg.elmo, vocab_size=len(vocab), pad_id=vocab.pad_id)
    model = BiLM(ELMo(elmo_cfg, vocab.itos), len(vocab))
    d = cfg.data

    def batches(epoch: int) -> LMStream:
        return LMStream(streams["train"], d.batch_size, d.bptt, seed=cfg.train.seed, epoch=epoch, variable=False)

    def perplexities(m, split: str) -> dict:
        fwd, bwd = bilm_perplexity(m, eval_stream(streams[split], d, split))
        return {f"{split}_ppl": math.sqrt(fwd * bwd), f"{split}_forward_ppl": fwd, f"{split}_backward_ppl": bwd}

    start = time.perf_counter()
    result = fit(model, BiLMLoss(cfg.bilm.samples), batches, cfg.train, evaluate=lambda m: perplexities(m, "valid"),
                 metric="valid_ppl", mode="min", out_dir=out,
                 config=to_dict(cfg) | {"elmo": to_dict(elmo_cfg)}, files={"vocab": vocab.to_dict()})
    wall = time.perf_counter() - start
    best = load_bilm(out / "best")
    summary = {**perplexities(best, "valid"), **perplexities(best, "test"), "wall_s": wall,
               "wall_s_total": wall + result.earlier_wall_s, "steps": result.step,
               "tokens_per_s": result.tokens_per_s, "vocab_size": len(vocab),
               "n_params": sum(p.numel() for p in model.encoder.parameters()), "checkpoint": str(out / "best")}
    write_json(summary, out / "results.json")
    log(f"valid ppl {summary['valid_ppl']:.1f} (forward {summary['valid_forward_ppl']:.1f}, backward "
        f"{summary['valid_backward_ppl']:.1f}), test ppl {summary['test_ppl']:.1f} ({wall:.0f} s)")
    return summary


def load_bilm(path: str | Path) -> BiLM:
    """A ``pretrain bilm`` checkpoint folder -> the BiLM with its weights."""
    from transferlab.checkpoint import load_checkpoint, load_weights
    from transferlab.config import from_dict
    from transferlab.text.vocab import Vocab

    ckpt = load_checkpoint(path, json_only=True)
    vocab = Vocab.from_dict(ckpt.files["vocab"])
    model = BiLM(ELMo(from_dict(ELMoConfig, ckpt.config["elmo"], "elmo."), vocab.itos), len(vocab))
    load_weights(model, path)
    return model
