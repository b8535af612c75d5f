"""``transferlab finetune``: one recipe for every encoder family and every task shape.

The encoder (:mod:`transferlab.recipes.backbone`: ``awd_lstm``, ``transformer``, or a Hugging
Face model such as ``minilm-l6``) and the task shape (from the data: texts -> classification or
regression, text pairs -> the same on the family's pair framing, tagged words -> sequence
labeling) are independent: every combination runs through the same code below and the same
flags. The ULMFiT techniques (Howard & Ruder 2018) apply to any pretrained encoder through its
``layer_groups()``: discriminative learning rates (``ulmfit.discriminative``, ``ulmfit.decay``),
the configured schedule, slanted triangular by default (``ulmfit.stlr=false`` makes it constant),
and gradual unfreezing (``ulmfit.gradual_unfreeze``). For the AWD-LSTM a ``--pretrained`` LM first
goes through target-task LM fine-tuning (:mod:`transferlab.recipes.ulmfit`); Transformers are
adapted to target text with ``transferlab pretrain mlm --init ENCODER``.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch
from torch import nn

from transferlab.adapt.features import FrozenMixEncoder
from transferlab.adapt.finetune import freeze_to, param_groups, unfreeze_schedule
from transferlab.checkpoint import load_checkpoint, load_weights
from transferlab.config import from_dict, to_dict, write_json
from transferlab.data.batching import Batches
from transferlab.data.errors import DataError
from transferlab.data.examples import PairExample, TaggedSentence
from transferlab.encoders.awd_lstm import AWDLSTM, DROPOUTS, AWDLSTMConfig
from transferlab.encoders.fasttext import FastTextConfig, FastTextEncoder
from transferlab.encoders.transformer import TransformerConfig
from transferlab.eval import metrics
from transferlab.recipes import backbone as bb
from transferlab.log import log
from transferlab.pretrain.lm import load_lm
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.data.tasks import TaskDataConfig, label_ids, load_task
from transferlab.recipes.ulmfit import LMFinetuneConfig, ULMFiTConfig, finetune_lm, schedule
from transferlab.tasks.classify import (ClassifierHeadConfig, LinearHead, PoolingClassifier, TaskModel,
                                        classify_loss, predict_outputs, regression_loss)
from transferlab.tasks.tag import IGNORE_INDEX, TaggerModel, TokenTagger, position_labels, predict_tags, tag_loss
from transferlab.text.vocab import Vocab
from transferlab.train import TrainConfig, fit
from transferlab.vectors.init import init_embedding

Kind = Literal["classify", "regress", "tag"]


@dataclass(frozen=True)
class TaskConfig:
    kind: Literal["auto", "classify", "regress", "tag"] = "auto"  # auto: from the data
    pooling: Literal["auto", "concat", "first", "last", "mean"] = "auto"  # auto: the family's
    both_orders: Literal["auto", "yes", "no"] = "auto"  # GPT's similarity input; auto: causal + regression
    dropout: float = 0.1  # the linear head's and the tagger's
    pooler: bool = True  # BERT's dense + tanh before a bidirectional encoder's linear head

    def __post_init__(self):
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"task.dropout must be in [0, 1), got {self.dropout}")


@dataclass(frozen=True)
class FinetuneConfig:
    data: TaskDataConfig = field(default_factory=TaskDataConfig)
    text: TextConfig = field(default_factory=TextConfig)
    encoder: str = "awd_lstm"  # awd_lstm | fasttext | transformer | word vectors (glove-6b-50d) | a Hugging Face model
    pretrained: str = ""  # awd_lstm: an LM checkpoint; transformer: an MLM/CLM one; "" = from scratch
    # static vectors (glove-6b-50d, a `pretrain word2vec|fasttext|glove` output, a word2vec/GloVe
    # file) for the embedding of an encoder trained from scratch; its dim follows the vectors'
    vectors: str = ""
    # transformer: keep the pretrained checkpoint's tokenizer and shape but start from random
    # weights: the from-scratch control of a transfer experiment, differing only in the weights
    reinit: bool = False
    # the classifier's AWD-LSTM: its dropouts apply in both cases (the LM stage keeps the
    # checkpoint's), its sizes only from scratch (a pretrained encoder keeps its own). fastai's
    # classifier rates; its output_p is the head's input dropout (head.input_p), so 0 here.
    awd_lstm: AWDLSTMConfig = field(default_factory=lambda: AWDLSTMConfig(
        embed_p=0.05, input_p=0.4, hidden_p=0.3, weight_p=0.5, output_p=0.0))
    transformer: TransformerConfig = field(default_factory=lambda: TransformerConfig(max_len=256))
    fasttext: FastTextConfig = field(default_factory=FastTextConfig)
    subword: bb.SubwordConfig = field(default_factory=bb.SubwordConfig)
    scratch_min_freq: int = 1
    # finetune: the whole encoder trains (with the ULMFiT techniques); features: it is frozen and
    # read through ELMo's learned scalar mix of its layers, only the mix and the head train, and
    # each sequence's layers are computed once (kept up to features_cache_gb)
    adapt: Literal["finetune", "features"] = "finetune"
    features_lr: float = 1e-3  # adapt=features: the mix's and head's learning rate (train.lr is the encoder's)
    features_cache_gb: float = 4.0
    lm_finetune: LMFinetuneConfig = field(default_factory=LMFinetuneConfig)
    ulmfit: ULMFiTConfig = field(default_factory=ULMFiTConfig)
    head: ClassifierHeadConfig = field(default_factory=ClassifierHeadConfig)  # the AWD-LSTM's head
    task: TaskConfig = field(default_factory=TaskConfig)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(lr=1e-2, epochs=6, schedule="slanted_triangular"))
    out: str = "runs/finetune"


# --- what the data asks for --------------------------------------------------------------------

def task_kind(cfg: TaskConfig, train: list) -> Kind:
    """Tagged words -> tag; labels that are all numbers with more than 10 values -> regress."""
    if cfg.kind != "auto":
        return cfg.kind
    if isinstance(train[0], TaggedSentence):
        return "tag"
    values = {ex.label for ex in train}
    try:
        [float(v) for v in values]
    except ValueError:
        return "classify"
    return "regress" if len(values) > 10 else "classify"


def float_labels(examples: list, where: str) -> list[float]:
    out = []
    for i, ex in enumerate(examples):
        try:
            out.append(float(ex.label))
        except ValueError:
            raise DataError(where, i + 1, "label", f"a regression label must be a number, got {ex.label!r}") from None
    return out


def all_texts(examples: list) -> list[str]:
    if isinstance(examples[0], PairExample):
        return [t for ex in examples for t in (ex.text_a, ex.text_b)]
    if isinstance(examples[0], TaggedSentence):
        return [" ".join(ex.tokens) for ex in examples]
    return [ex.text for ex in examples]


# --- the encoder ---------------------------------------------------------------------------------

def build_backbone(cfg: FinetuneConfig, data: dict) -> bb.Backbone:
    fam = bb.family(cfg.encoder)
    wv = None
    if cfg.vectors:
        if cfg.pretrained or fam in ("hf", "static"):
            raise ValueError(f"--vectors initializes the embedding of an encoder trained from scratch; "
                             f"{cfg.pretrained or cfg.encoder} brings its own")
        from transferlab.vectors.keyed import load_vectors

        wv = load_vectors(cfg.vectors)
        log(f"{cfg.vectors}: {len(wv):,} vectors of {wv.dim} dimensions")
    if fam == "hf":
        return bb.hf_backbone(cfg.encoder, cfg.data.max_len)
    if fam == "static":  # word vectors as the encoder: frozen under --adapt=features, trained otherwise
        from transferlab.vectors.keyed import load_vectors

        return bb.static_backbone(load_vectors(cfg.encoder), cfg.text, trainable=cfg.adapt == "finetune")
    if fam == "transformer":
        tcfg = cfg.transformer if wv is None else dataclasses.replace(cfg.transformer, dim=wv.dim)
        b = bb.transformer_backbone(tcfg, cfg.subword, cfg.pretrained, all_texts(data["train"]),
                                    cfg.text.lower, cfg.data.max_len, reinit=cfg.reinit)
        if wv is not None:  # pieces that are whole words match; continuations (##ing) start random
            tok = bb.SubwordTokenizer.from_dict(b.files["tokenizer"])
            log(str(init_embedding(b.encoder.embedding, tok.pieces(), wv, skip=list(tok.ids.values()),
                                   seed=cfg.train.seed)))
        return b
    if cfg.reinit:
        raise ValueError(f"reinit=true applies to --encoder transformer, not {cfg.encoder}")
    max_len = cfg.data.max_len or None
    if cfg.pretrained:
        if fam != "awd_lstm":
            raise ValueError(f"--pretrained applies to awd_lstm and transformer, not {cfg.encoder}; "
                             f"start a fasttext classifier from vectors with --vectors")
        lm, old_vocab = load_lm(cfg.pretrained)
        lm, vocab = finetune_lm(cfg, lm, old_vocab, tokenizer(cfg.text))
        lm.encoder.set_dropouts(**{name: getattr(cfg.awd_lstm, name) for name in DROPOUTS})
        return bb.word_backbone(lm.encoder, vocab, cfg.text, max_len, pretrained=True)
    tok = tokenizer(cfg.text)
    vocab = Vocab.build((tok(t) for t in all_texts(data["train"])), min_freq=cfg.scratch_min_freq)
    dim = {} if wv is None else {"dim": wv.dim}
    if fam == "fasttext":
        encoder = FastTextEncoder(dataclasses.replace(cfg.fasttext, vocab_size=len(vocab), pad_id=vocab.pad_id, **dim))
    else:
        encoder = AWDLSTM(dataclasses.replace(cfg.awd_lstm, vocab_size=len(vocab), **dim))
    if wv is not None:
        specials = [vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id]
        log(str(init_embedding(encoder.embedding, vocab.itos, wv, skip=specials, seed=cfg.train.seed)))
    return bb.word_backbone(encoder, vocab, cfg.text, max_len, pretrained=False, fam=fam)


# --- examples -> sequences -----------------------------------------------------------------------

@dataclass
class Encoded:
    seqs: list[list[int]]
    seq_extra: dict
    labels: list  # one per example (classify, regress) or one list per example (tag, by position)
    positions: list[list[int]] | None = None  # tag: each kept word's first position
    n_words: list[int] | None = None
    n_cut: int = 0


def encode_examples(b: bb.Backbone, examples: list, kind: Kind, labels: list[str], both_orders: bool,
                    where: str) -> Encoded:
    if kind == "tag":
        index = {t: i for i, t in enumerate(labels)}
        words = [b.words(ex.tokens) for ex in examples]
        framed = [b.framing.words(pieces, first) for pieces, first in words]
        tags = [position_labels(len(f.ids), f.word_positions, [index.get(t, IGNORE_INDEX) for t in ex.tags])
                for f, ex in zip(framed, examples)]
        return Encoded([f.ids for f in framed], {"labels": (tags, IGNORE_INDEX)}, tags,
                       [f.word_positions for f in framed], [len(ex.tokens) for ex in examples],
                       sum(f.truncated for f in framed))
    y = float_labels(examples, where) if kind == "regress" else label_ids(labels, examples, where)
    extra: dict = {}
    if isinstance(examples[0], PairExample):
        a, bs = b.texts([ex.text_a for ex in examples]), b.texts([ex.text_b for ex in examples])
        framed = [b.framing.pair(x, z) for x, z in zip(a, bs)]
        if both_orders:
            swapped = [b.framing.pair(x, z, swap=True) for x, z in zip(a, bs)]
            extra["ids_swapped"] = ([f.ids for f in swapped], b.pad_id)
            extra["type_ids_swapped"] = ([f.type_ids for f in swapped], 0)
    else:
        framed = [b.framing.single(x) for x in b.texts([ex.text for ex in examples])]
    if b.framing.segments:
        extra["type_ids"] = ([f.type_ids for f in framed], 0)
    return Encoded([f.ids for f in framed], extra, y, n_cut=sum(f.truncated for f in framed))


# --- the model -----------------------------------------------------------------------------------

def build_model(cfg: FinetuneConfig, b: bb.Backbone, kind: Kind, n_out: int) -> nn.Module:
    encoder = b.encoder if cfg.adapt == "finetune" else FrozenMixEncoder(b.encoder, cfg.features_cache_gb)
    dim = encoder.dim
    if kind == "tag":
        return TaggerModel(encoder, TokenTagger(dim, n_out, cfg.task.dropout))
    pooling = cfg.task.pooling
    if b.family in ("fasttext", "static"):  # Joulin et al.: the average of the bag, one linear layer
        return TaskModel(encoder, LinearHead(dim, n_out, "mean" if pooling == "auto" else pooling,
                                               cfg.task.dropout, pooler=False))
    if b.family == "awd_lstm" and pooling in ("auto", "concat"):
        head = dataclasses.replace(cfg.head, pooling="concat")
        return TaskModel(encoder, PoolingClassifier(dim, n_out, head))
    if pooling == "auto":
        pooling = "last" if b.causal else "first"
    if pooling == "concat":
        return TaskModel(encoder, PoolingClassifier(dim, n_out, cfg.head))
    linear = LinearHead(dim, n_out, pooling, cfg.task.dropout, pooler=cfg.task.pooler and not b.causal)
    if b.pooler is not None and cfg.task.pooler and not b.causal:  # BERT's pretrained pooler
        linear.pooler[0].load_state_dict(b.pooler)
    return TaskModel(encoder, linear)


def evaluate(model: nn.Module, enc: Encoded, kind: Kind, labels: list[str], pad_id: int, gold_tags=None) -> dict:
    device = next(model.parameters()).device
    batches = Batches(enc.seqs, 64, pad_id=pad_id, shuffle=False, seq_extra=enc.seq_extra)
    if kind == "tag":
        fallback = labels.index("O") if "O" in labels else 0
        pred = predict_tags(model, batches, enc.positions, enc.n_words, fallback, device)
        return metrics.tagging_metrics(gold_tags, [[labels[t] for t in row] for row in pred])
    out = predict_outputs(model, batches, device)
    if kind == "regress":
        return metrics.regression_metrics(enc.labels, out[:, 0].tolist())
    pred = out.argmax(-1).tolist()
    result = metrics.classification_metrics(enc.labels, pred)
    if len(labels) == 2:
        positive = labels.index("1") if "1" in labels else 1
        result |= {"f1": metrics.binary_f1(enc.labels, pred, positive=positive),
                   "mcc": metrics.matthews_corrcoef(enc.labels, pred)}
    return result


def main_metric(kind: Kind, result: dict) -> str:
    if kind == "regress":
        return "spearman"
    return "entity_f1" if "entity_f1" in result else "accuracy"


# --- training ------------------------------------------------------------------------------------

def train_task(cfg: FinetuneConfig, data: dict, b: bb.Backbone) -> dict:
    kind = task_kind(cfg.task, data["train"])
    if kind == "tag":
        labels = sorted({t for ex in data["train"] for t in ex.tags})
    elif kind == "classify":
        labels = sorted({ex.label for ex in data["train"]})
    else:
        labels = []
    both = cfg.task.both_orders == "yes" or (cfg.task.both_orders == "auto" and b.causal and kind == "regress"
                                             and b.family != "awd_lstm")
    name = cfg.data.task or cfg.data.train
    sets = {split: encode_examples(b, ex, kind, labels, both, f"{name} {split}") for split, ex in data.items()}
    rule = ("words past the cut get the fallback tag" if kind == "tag" else
            "longest text first" if isinstance(data["train"][0], PairExample) else "at the end")
    for split, enc in sets.items():
        if enc.n_cut:
            log(f"{split}: {enc.n_cut:,} of {len(enc.seqs):,} sequences cut to {b.framing.max_len} tokens ({rule})")
    model = build_model(cfg, b, kind, len(labels) if labels else 1)
    groups = list(model.encoder.layer_groups()) + [model.head]  # features: the scalar mix, then the head
    u = cfg.ulmfit
    tuned = b.pretrained and cfg.adapt == "finetune"
    lr = cfg.train.lr if cfg.adapt == "finetune" else cfg.features_lr
    pgroups = param_groups(groups[:-1], lr, u.decay if (u.discriminative and tuned) else 1.0, head=groups[-1])
    unfreeze = u.gradual_unfreeze and tuned
    if cfg.adapt == "features":
        mixed = model.encoder.used
        log(f"features: the encoder is frozen; a scalar mix of its layers {mixed} (of {model.encoder.n_layers}) "
            f"and the head train")

    def on_epoch_start(epoch: int, trainer) -> None:
        n = unfreeze_schedule(epoch, len(groups), unfreeze)
        freeze_to(groups, n)
        present = {g.get("name") for g in trainer.optimizer.param_groups}
        for g in pgroups[len(pgroups) - n:]:
            if g["name"] not in present:
                trainer.add_group(g)

    train = sets["train"]
    bs = cfg.data.batch_size
    extra = {} if kind == "tag" else {"labels": train.labels}

    def batches(epoch: int) -> Batches:
        return Batches(train.seqs, bs, pad_id=b.pad_id, extra=extra, seq_extra=train.seq_extra,
                       seed=cfg.train.seed, epoch=epoch, drop_last=len(train.seqs) > bs)

    gold = {s: [list(ex.tags) for ex in data[s]] for s in data} if kind == "tag" else {}

    def score(m, split: str) -> dict:
        return evaluate(m, sets[split], kind, labels, b.pad_id, gold.get(split))

    loss = {"classify": classify_loss, "regress": regression_loss, "tag": tag_loss}[kind]
    train_cfg = schedule(cfg.train, u) if b.pretrained else cfg.train
    out = Path(cfg.out)
    start = time.perf_counter()
    result = fit(model, loss, batches, train_cfg, groups=[pgroups[-1]] if unfreeze else pgroups,
                 on_epoch_start=on_epoch_start if unfreeze else None,
                 evaluate=lambda m: {f"valid_{k}": v for k, v in score(m, "valid").items() if k != "per_type"},
                 out_dir=out, config=to_dict(cfg),
                 files={**b.files, "labels": labels,
                        "task": {"kind": kind, "both_orders": both, "pairs": isinstance(data["train"][0], PairExample)}})
    wall = time.perf_counter() - start
    test = score(model, "test")
    summary = {f"test_{k}": v for k, v in test.items()} | {
        "kind": kind, "valid": score(model, "valid"), "train_size": len(train.seqs), "labels": labels,
        "encoder": cfg.encoder, "adapt": cfg.adapt, "pretrained": b.pretrained, "wall_s": wall, "steps": result.step,
        "train_examples_per_s": result.examples_per_s, "truncated": {s: e.n_cut for s, e in sets.items()},
        "checkpoint": str(out / "last")}
    write_json(summary, out / "results.json")
    key = main_metric(kind, test)
    log(f"test {key} {test[key]:.4f}  ({wall:.0f} s, {result.examples_per_s:.1f} training examples/s)")
    return summary


def run(cfg: FinetuneConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the encoder and head are built before fit() seeds: same start per seed
    data = load_task(cfg.data)
    if not data["train"]:
        raise ValueError(f"{cfg.data.task or cfg.data.train}: no training examples")
    if bb.family(cfg.encoder) != "awd_lstm" and cfg.lm_finetune.enabled and cfg.pretrained:
        log("lm_finetune is the AWD-LSTM's stage; for a Transformer run `transferlab pretrain mlm --init ...` "
            "on the task's text and pass its checkpoint as --pretrained")
    return train_task(cfg, data, build_backbone(cfg, data))


@dataclass
class TaskPredictor:
    """A trained task model with everything needed to run it on new examples."""

    model: nn.Module
    backbone: bb.Backbone
    labels: list[str]
    kind: Kind
    both_orders: bool
    pairs: bool  # trained on text pairs
    cfg: FinetuneConfig

    def encode(self, examples: list, where: str) -> Encoded:
        return encode_examples(self.backbone, examples, self.kind, self.labels, self.both_orders, where)

    @torch.no_grad()
    def outputs(self, examples: list) -> torch.Tensor:
        """Raw outputs (N, C): logits, or the regression value in column 0."""
        enc = self._unlabeled(examples)
        return predict_outputs(self.model, Batches(enc.seqs, 64, pad_id=self.backbone.pad_id, shuffle=False,
                                                   seq_extra=enc.seq_extra))

    def _unlabeled(self, examples: list) -> Encoded:
        """Examples without labels, encoded (a placeholder label that nothing reads)."""
        filled = [dataclasses.replace(ex, label=self.labels[0] if self.labels else "0") for ex in examples]
        return encode_examples(self.backbone, filled, self.kind, self.labels, self.both_orders, "input")

    def evaluate(self, examples: list, where: str) -> dict:
        enc = self.encode(examples, where)
        gold = [list(ex.tags) for ex in examples] if self.kind == "tag" else None
        return evaluate(self.model, enc, self.kind, self.labels, self.backbone.pad_id, gold)


def load_task_model(path: str | Path) -> TaskPredictor:
    """A ``finetune`` checkpoint folder -> its model (weights loaded, eval mode) and tokenization."""
    ckpt = load_checkpoint(path)
    missing = [n for n in ("labels", "encoder", "task") if n not in ckpt.files]
    if missing:
        raise ValueError(f"{path}: not a finetune checkpoint (no {', '.join(m + '.json' for m in missing)})")
    cfg = from_dict(FinetuneConfig, ckpt.config)
    b = bb.rebuild_backbone(ckpt.files, cfg.text, cfg.data.max_len)
    labels = list(ckpt.files["labels"])
    task = ckpt.files["task"]
    model = build_model(cfg, b, task["kind"], len(labels) if labels else 1)
    load_weights(model, path)
    model.eval()
    return TaskPredictor(model, b, labels, task["kind"], bool(task["both_orders"]), bool(task.get("pairs")), cfg)
