"""``transferlab pretrain gensen``: GenSen (Subramanian et al. 2018), one bidirectional GRU sentence
encoder trained on several tasks at once, for ``transferlab senteval``, ``probe`` and
``finetune --pretrained``.

Read the three tasks' data: ordered sentences of a corpus of documents for next-sentence decoding
(``data``: :mod:`transferlab.pretrain.sentences`, as ``pretrain skipthought`` reads them), English
-> German pairs for translation (``mt``: ``l10n-en-de``, :func:`transferlab.pretrain.mt.
parallel_pairs`), NLI pairs (``nli``: SICK's entailment pairs split exactly as ``senteval``'s
sick-e task splits them, through ``pretrain nli``'s :func:`~transferlab.recipes.pretrain_nli.
nli_pairs`, so no senteval test pair is trained on). Build one word vocabulary over the English
training text of all three (the sentences, the English side, both NLI sides; its size and
threshold are ``data.max_vocab`` and ``data.min_freq``) and a byte-level BPE tokenizer on the
German training side (as ``pretrain mt``), train the encoder and the three heads
(:mod:`transferlab.pretrain.multitask`), one task per step drawn in proportion to its size raised
to ``objective.alpha``, keep the checkpoint with the best validation ``relative_loss`` (each
task's cross-entropy over a uniform guess's, averaged over the tasks), and report every task's
validation and test figures.

Where we differ from the paper (which learns from 100M+ sentence pairs): one translation pair
(En->De, not also En->Fr), no constituency parsing, SICK's ~7.9k training pairs in place of SNLI and
MultiNLI, and CPU-sized presets.

The checkpoint is a ``sentence_rnn`` encoder (config key ``sentence_rnn``, vocabulary in
``vocab.json``, weights ``encoder.*``; the heads' weights and the German tokenizer,
``mt_tokenizer.json``, are kept beside it): ``transferlab senteval OUT/best`` reads its sentence
vector (the last states of both directions), :func:`load_gensen` the whole model.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from transferlab.checkpoint import check_run_folder, has_checkpoint, load_checkpoint, load_weights
from transferlab.config import ConfigError, from_dict, to_dict, write_json
from transferlab.encoders.sentence_rnn import SentenceRNN, SentenceRNNConfig
from transferlab.log import log
from transferlab.pretrain.mt import MTDataConfig, ParallelBatches, encode_pairs, parallel_pairs
from transferlab.pretrain.multitask import (SELECT, TASKS, GenSen, GenSenConfig, NextSentenceBatches, TaskMixture,
                                            gensen_loss, gensen_scores, task_probabilities)
from transferlab.pretrain.paraphrase import PairBatches
from transferlab.pretrain.sentences import SentenceDataConfig, TripleBatches, encode_sentences
from transferlab.recipes.pretrain_nli import NLIDataConfig, nli_pairs
from transferlab.text.subword import SubwordTokenizer, train_tokenizer
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.text.vocab import Vocab
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class PretrainGenSenConfig:
    data: SentenceDataConfig = field(default_factory=SentenceDataConfig)  # next-sentence decoding's documents
    mt: MTDataConfig = field(default_factory=MTDataConfig)  # En->De pairs (max_src_vocab is not read)
    # NLI pairs; no static vectors (the word embeddings are learned), so vectors_words is 0
    nli: NLIDataConfig = field(default_factory=lambda: NLIDataConfig(vectors_words=0))
    text: TextConfig = field(default_factory=TextConfig)
    # the paper's encoder: a one-layer biGRU over 512-d word embeddings (1,500 cells per direction in
    # its first models), the sentence vector the last state of each direction
    sentence_rnn: SentenceRNNConfig = field(default_factory=lambda: SentenceRNNConfig(
        dim=512, hidden_dim=1500, bidirectional=True, pooling="last"))
    objective: GenSenConfig = field(default_factory=GenSenConfig)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(optimizer="adam", weight_decay=0.0, clip=5.0))
    out: str = "runs/gensen"
    resume: bool = False
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts

    def __post_init__(self):
        if self.sentence_rnn.towers != 1:
            raise ConfigError(f"sentence_rnn.towers must be 1 for GenSen (one encoder), got {self.sentence_rnn.towers}")
        # the sections borrowed from pretrain nli and pretrain mt have keys one joint vocabulary makes moot
        for flag, value, moot in (("nli.vectors_words", self.nli.vectors_words, 0), ("nli.min_freq",
                                  self.nli.min_freq, 1), ("mt.max_src_vocab", self.mt.max_src_vocab,
                                                          MTDataConfig.max_src_vocab)):
            if value != moot:
                raise ConfigError(f"{flag} is not read by pretrain gensen: its one word vocabulary over all tasks "
                                  f"is sized by data.max_vocab and data.min_freq (got {flag}={value})")


def load_gensen(path: str | Path) -> tuple[GenSen, Vocab, SubwordTokenizer]:
    """A ``pretrain gensen`` checkpoint -> the whole model (every head), the word vocabulary and the
    German tokenizer."""
    ckpt = load_checkpoint(path, json_only=True)
    if "vocab" not in ckpt.files or "mt_tokenizer" not in ckpt.files or "sentence_rnn" not in ckpt.config:
        raise ValueError(f"{path}: not a `transferlab pretrain gensen` checkpoint (no sentence_rnn config, "
                         f"vocab.json and mt_tokenizer.json)")
    german = SubwordTokenizer.from_dict(ckpt.files["mt_tokenizer"], f"{path}/mt_tokenizer.json")
    encoder = SentenceRNN(from_dict(SentenceRNNConfig, ckpt.config["sentence_rnn"], "sentence_rnn."))
    model = GenSen.build(encoder, from_dict(GenSenConfig, ckpt.config.get("objective", {}), "objective."),
                         german.vocab_size, german.pad_id, len(ckpt.config["labels"]))
    load_weights(model, path)
    return model, Vocab.from_dict(ckpt.files["vocab"]), german


def _german(cfg: PretrainGenSenConfig, train_pairs: list[tuple[str, str]], out: Path) -> SubwordTokenizer:
    """The German tokenizer: a resumed run's own, else trained on the training side (as pretrain mt)."""
    if cfg.resume and has_checkpoint(out / "last"):
        return SubwordTokenizer.from_dict(load_checkpoint(out / "last", json_only=True).files["mt_tokenizer"])
    return train_tokenizer((t for _, t in train_pairs), "bpe", cfg.mt.tgt_vocab_size, min_freq=2, lower=False)


def run(cfg: PretrainGenSenConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the model is built before fit() seeds: the same start per seed
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("sentence_rnn",))
    d, tok, seed = cfg.data, tokenizer(cfg.text), cfg.train.seed
    pairs, nli = parallel_pairs(cfg.mt), nli_pairs(cfg.nli)
    labels = sorted({ex.label for ex in nli["train"]})
    unknown = sorted({ex.label for exs in nli.values() for ex in exs} - set(labels))
    if len(labels) < 2 or unknown:
        raise ConfigError(f"nli.corpus={cfg.nli.corpus}: training labels {labels}; held-out labels {unknown} never "
                          f"occur in training")
    english = itertools.chain((tok(s) for s, _ in pairs["train"]),
                              (tok(t) for ex in nli["train"] for t in (ex.text_a, ex.text_b)))
    vocab, sents = encode_sentences(d, tok, extra=english)  # one vocabulary: all three tasks' English
    for split, s in sents.items():
        if not len(s.triples()):
            raise ConfigError(f"the {split} text of {d.corpus} has no document of three sentences (more text, or "
                              f"a larger data.held_out)")
    german = _german(cfg, pairs["train"], out)

    def words(texts: Iterable[str]) -> list[list[int]]:  # as senteval encodes: an empty text is <unk>
        return [vocab.encode(tok(t)) or [vocab.unk_id] for t in texts]

    mt = {split: encode_pairs(pairs[split], lambda s: vocab.encode(tok(s)), german,
                              cfg.mt.max_len if split == "train" else None) for split in pairs}
    index = {label: i for i, label in enumerate(labels)}
    pair_ids = {split: (words(ex.text_a for ex in exs), words(ex.text_b for ex in exs),
                        [index[ex.label] for ex in exs]) for split, exs in nli.items()}
    sizes = {"next": len(sents["train"].triples()), "mt": len(mt["train"].src), "nli": len(nli["train"])}
    probs = task_probabilities(sizes, cfg.objective.alpha)
    log(f"{len(vocab):,} English words, {german.vocab_size:,} German pieces; training examples (probability): "
        + ", ".join(f"{t} {n:,} ({probs[t]:.2f})" for t, n in sizes.items()))

    rnn_cfg = dataclasses.replace(cfg.sentence_rnn, vocab_size=len(vocab), pad_id=vocab.pad_id)
    model = GenSen.build(SentenceRNN(rnn_cfg), cfg.objective, german.vocab_size, german.pad_id, len(labels))
    specials = {"pad_id": vocab.pad_id, "bos_id": vocab.bos_id, "eos_id": vocab.eos_id}
    mt_specials = {"src_pad": vocab.pad_id, "tgt_pad": german.pad_id, "bos": german.ids["bos"],
                   "eos": german.ids["eos"]}

    def task_batches(task: str, split: str, epoch: int = 0):
        """A task's batches of ``split``: shuffled by (seed, epoch) for training, in order else."""
        train = split == "train"
        order = {"shuffle": train, "seed": seed, "epoch": epoch}
        if task == "next":
            size = d.batch_size if train else d.eval_batch_size
            return NextSentenceBatches(TripleBatches(sents[split], size, **specials, **order))
        if task == "mt":
            size = cfg.mt.batch_size if train else cfg.mt.eval_batch_size
            return ParallelBatches(mt[split], size, **mt_specials, **order)
        a, b, y = pair_ids[split]
        size = cfg.nli.batch_size if train else cfg.nli.eval_batch_size
        return PairBatches(a, b, size, pad_id=vocab.pad_id, labels=y, **order)

    tasks = {t: functools.partial(task_batches, t, "train") for t in TASKS}

    def batches(epoch: int) -> TaskMixture:
        return TaskMixture(tasks, sizes, cfg.objective.alpha, seed=seed, epoch=epoch)

    def scores(m: GenSen, split: str) -> dict:
        held_out = {t: task_batches(t, split) for t in TASKS}
        return {f"{split}_{k}": v for k, v in gensen_scores(m, held_out).items()}

    start = time.perf_counter()
    result = fit(model, gensen_loss, batches, cfg.train, evaluate=lambda m: scores(m, "valid"),
                 metric=f"valid_{SELECT}", mode="min", out_dir=out,
                 config=to_dict(cfg) | {"sentence_rnn": to_dict(rnn_cfg), "labels": labels},
                 files={"vocab": vocab.to_dict(), "mt_tokenizer": german.to_dict()},
                 find_unused_parameters=True)  # a step trains one task's head: under DDP the others are unused
    wall = time.perf_counter() - start
    best = load_gensen(out / "best")[0].to(next(model.parameters()).device)
    y_train, y_test = np.array(pair_ids["train"][2]), np.array(pair_ids["test"][2])
    summary = {**scores(best, "valid"), **scores(best, "test"),
               "test_nli_majority": float(np.mean(y_test == np.bincount(y_train).argmax())), "labels": labels,
               "train_examples": sizes, "task_probabilities": probs, "wall_s": wall,
               "wall_s_total": wall + result.earlier_wall_s, "steps": result.step,
               "tokens_per_s": result.tokens_per_s,  # the encoded English words (an NLI batch: its premises)
               "vocab_size": len(vocab), "mt_vocab_size": german.vocab_size,
               "n_params": sum(p.numel() for p in best.encoder.parameters()),
               "n_params_total": sum(p.numel() for p in best.parameters()), "checkpoint": str(out / "best")}
    write_json(summary, out / "results.json")
    log(f"test: next-sentence perplexity {summary['test_next_ppl']:.1f}, En->De perplexity "
        f"{summary['test_mt_ppl']:.1f}, NLI accuracy {summary['test_nli_accuracy']:.1%} (majority "
        f"{summary['test_nli_majority']:.1%}); relative loss {summary[f'test_{SELECT}']:.3f} ({wall:.0f} s)")
    return summary
