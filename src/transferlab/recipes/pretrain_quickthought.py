"""``transferlab pretrain quickthought``: quick-thought vectors (Logeswaran & Lee 2018) on any
corpus of documents, for ``transferlab senteval`` and ``finetune --pretrained``.

Read the corpus as documents of ordered sentences (:mod:`transferlab.pretrain.sentences`), build
the training split's vocabulary, and train two GRU encoders ``f`` and ``g`` to pick each
sentence's neighbours out of a batch of consecutive sentences
(:mod:`transferlab.pretrain.quick_thought`); keep the checkpoint with the best validation loss;
report held-out loss and how often the true next sentence is picked among ``data.eval_batch_size``
candidates. The sentence vector is ``[f(s); g(s)]``.

The checkpoint's ``sentence_rnn`` config section and ``vocab`` file are what
:func:`transferlab.encoders.backbone.pretrained_backbone` rebuilds the encoder from (its
``encoder.*`` weights are the whole model).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from transferlab.checkpoint import check_run_folder
from transferlab.config import ConfigError, to_dict, write_json
from transferlab.encoders.backbone import load_encoder_weights
from transferlab.encoders.sentence_rnn import SentenceRNN, SentenceRNNConfig
from transferlab.log import log
from transferlab.pretrain.quick_thought import QuickThought, quick_thought_loss, quick_thought_scores
from transferlab.pretrain.sentences import RunBatches, SentenceDataConfig, encode_sentences
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class PretrainQuickThoughtConfig:
    # the paper: batches of 400 consecutive sentences (every other sentence of the batch a candidate)
    data: SentenceDataConfig = field(default_factory=lambda: SentenceDataConfig(batch_size=400, eval_batch_size=400))
    text: TextConfig = field(default_factory=TextConfig)
    # the paper's uni-QT: 300-d words, two GRUs (f and g) of 1,200 cells, their last states
    sentence_rnn: SentenceRNNConfig = field(default_factory=lambda: SentenceRNNConfig(dim=300, hidden_dim=1200,
                                                                                      towers=2))
    # the paper: Adam at 5e-4 (the clipping is ours)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(optimizer="adam", lr=5e-4, weight_decay=0.0,
                                                                   clip=10.0))
    out: str = "runs/quickthought"
    resume: bool = False
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts

    def __post_init__(self):
        if self.sentence_rnn.towers != 2:
            raise ConfigError(f"sentence_rnn.towers must be 2 for quick-thought (the encoders f and g), got "
                              f"{self.sentence_rnn.towers}")


def run(cfg: PretrainQuickThoughtConfig) -> dict:
    torch.manual_seed(cfg.train.seed)
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("sentence_rnn",))
    d = cfg.data
    vocab, sents = encode_sentences(d, tokenizer(cfg.text))
    for split, s in sents.items():
        if len(s) < 2 or not (s.doc[1:] == s.doc[:-1]).any():
            raise ConfigError(f"the {split} text of {d.corpus} has no two consecutive sentences of one document: "
                              f"quick-thought picks a sentence's neighbours (more text, or a larger data.held_out)")
    rnn_cfg = dataclasses.replace(cfg.sentence_rnn, vocab_size=len(vocab), pad_id=vocab.pad_id)
    model = QuickThought(SentenceRNN(rnn_cfg))

    def batches(epoch: int) -> RunBatches:
        return RunBatches(sents["train"], d.batch_size, pad_id=vocab.pad_id, seed=cfg.train.seed, epoch=epoch)

    def scores(m: QuickThought, split: str) -> dict:
        held_out = RunBatches(sents[split], d.eval_batch_size, pad_id=vocab.pad_id, shuffle=False)
        return {f"{split}_{k}": v for k, v in quick_thought_scores(m, held_out).items()}

    start = time.perf_counter()
    result = fit(model, quick_thought_loss, batches, cfg.train, evaluate=lambda m: scores(m, "valid"),
                 metric="valid_loss", mode="min", out_dir=out,
                 config=to_dict(cfg) | {"sentence_rnn": to_dict(rnn_cfg)}, files={"vocab": vocab.to_dict()})
    wall = time.perf_counter() - start
    best = QuickThought(SentenceRNN(rnn_cfg))
    load_encoder_weights(best.encoder, out / "best")
    best.to(next(model.parameters()).device)
    summary = {**scores(best, "valid"), **scores(best, "test"), "candidates": d.eval_batch_size, "wall_s": wall,
               "wall_s_total": wall + result.earlier_wall_s, "steps": result.step,
               "tokens_per_s": result.tokens_per_s, "vocab_size": len(vocab), "train_sentences": len(sents["train"]),
               "n_params": sum(p.numel() for p in best.encoder.parameters()), "checkpoint": str(out / "best")}
    write_json(summary, out / "results.json")
    log(f"valid loss {summary['valid_loss']:.3f} (next sentence picked {summary['valid_next_acc']:.1%} among "
        f"{d.eval_batch_size} candidates), test loss {summary['test_loss']:.3f}, next {summary['test_next_acc']:.1%} "
        f"({wall:.0f} s)")
    return summary
