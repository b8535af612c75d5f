"""``transferlab pretrain sa``: Dai and Le's (2015) sequence autoencoder (SA-LSTM) on any corpus.

Build a word vocabulary from the corpus, read it as sentences (each line, cut into pieces of at
most ``data.bptt`` words; the presets: 64), train an AWD-LSTM to read each sentence and then
reconstruct it from its final state with the same weights
(:mod:`transferlab.pretrain.seq_autoencoder`), keep the checkpoint with the best validation
reconstruction perplexity, and report held-out reconstruction perplexity and per-word accuracy.

The checkpoint is laid out as a ``pretrain lm`` one (the AWD-LSTM as ``encoder.*``, its tied
decoder, the ``awd_lstm`` config with the vocabulary size, the vocabulary), so ``finetune
--encoder awd_lstm --pretrained OUT/best`` starts a classifier from it: the paper's SA-LSTM.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import torch

from transferlab.checkpoint import check_run_folder
from transferlab.config import ConfigError, check_at_least, to_dict, write_json
from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig
from transferlab.log import log
from transferlab.pretrain.context2vec import SentenceBatches, sentence_spans
from transferlab.pretrain.corpus import LMDataConfig, encode_lm_corpus
from transferlab.pretrain.lm import LanguageModel, load_lm
from transferlab.pretrain.seq_autoencoder import SABatches, reconstruction_scores, seq_autoencoder_loss
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class SAObjectiveConfig:
    samples: int = 0  # > 0: sampled softmax with this many draws in training (0 = full softmax)

    def __post_init__(self):
        check_at_least(self, "sa", 0, ("samples",), "0 = full softmax")


@dataclass(frozen=True)
class PretrainSAConfig:
    # data.bptt is the longest sentence read whole: a longer line is cut into pieces of that many words;
    # the model reads 2 * bptt + 1 tokens for the longest (the sentence, <eos>, the sentence again)
    data: LMDataConfig = field(default_factory=LMDataConfig)
    text: TextConfig = field(default_factory=TextConfig)
    awd_lstm: AWDLSTMConfig = field(default_factory=AWDLSTMConfig)
    sa: SAObjectiveConfig = field(default_factory=SAObjectiveConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    out: str = "runs/sa"
    resume: bool = False  # continue the run in `out` from its last checkpoint
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts


def run(cfg: PretrainSAConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the model is built before fit() seeds: the same start per seed
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("awd_lstm",))
    vocab, streams = encode_lm_corpus(cfg.data, tokenizer(cfg.text), out)
    enc_cfg = dataclasses.replace(cfg.awd_lstm, vocab_size=len(vocab), pad_id=vocab.pad_id)
    model = LanguageModel(AWDLSTM(enc_cfg), len(vocab), tie_weights=True)
    d = cfg.data
    spans = {split: sentence_spans(ids, vocab.eos_id, d.bptt) for split, ids in streams.items()}
    for split in ("valid", "test"):
        if len(spans[split]) == 0:
            raise ConfigError(f"the {split} text of {d.corpus} has no sentence: pass --data.valid and --data.test "
                              f"files, or hold out more lines with --data.held_out")
    log(f"sentences: train {len(spans['train']):,}, valid {len(spans['valid']):,}, test {len(spans['test']):,}")

    def batches(epoch: int) -> SABatches:
        sentences = SentenceBatches(streams["train"], spans["train"], d.batch_size, pad_id=vocab.pad_id,
                                    seed=cfg.train.seed, epoch=epoch)
        return SABatches(sentences, vocab.eos_id)

    def scores(m: LanguageModel, split: str) -> dict:
        held_out = SentenceBatches(streams[split], spans[split], d.eval_batch_size, pad_id=vocab.pad_id, shuffle=False)
        return {f"{split}_{k}": v for k, v in reconstruction_scores(m, SABatches(held_out, vocab.eos_id)).items()}

    start = time.perf_counter()
    # tokens_per_s counts what the LSTM reads: both copies of each sentence
    result = fit(model, partial(seq_autoencoder_loss, samples=cfg.sa.samples), batches, cfg.train,
                 evaluate=lambda m: scores(m, "valid"), metric="valid_ppl", mode="min", out_dir=out,
                 config=to_dict(cfg) | {"awd_lstm": to_dict(enc_cfg)}, files={"vocab": vocab.to_dict()})
    wall = time.perf_counter() - start
    best, _ = load_lm(out / "best")
    summary = {**scores(best, "valid"), **scores(best, "test"), "wall_s": wall,
               "wall_s_total": wall + result.earlier_wall_s, "steps": result.step,
               "tokens_per_s": result.tokens_per_s, "vocab_size": len(vocab),
               "n_params": sum(p.numel() for p in model.parameters()), "checkpoint": str(out / "best")}
    write_json(summary, out / "results.json")
    log(f"reconstruction: valid ppl {summary['valid_ppl']:.2f} (accuracy {summary['valid_accuracy']:.1%}), "
        f"test ppl {summary['test_ppl']:.2f} (accuracy {summary['test_accuracy']:.1%}) ({wall:.0f} s)")
    return summary
