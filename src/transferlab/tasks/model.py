"""A task model on any backbone: what the data asks for, examples -> sequences, the model, its scores.

The task's shape comes from the data (:func:`task_kind`): texts -> classification or regression,
text pairs -> the same on the family's pair framing, tagged words -> sequence labeling, dependency
trees (``task.kind=parse``) -> Dozat & Manning's biaffine parser (:mod:`transferlab.tasks.parse`). The head
follows the encoder family (its :data:`~transferlab.encoders.registry.ENCODERS` entry's
``pooling``): ULMFiT's concat-pooling classifier on the AWD-LSTM, fastText's average and one
linear layer on bags of words and vectors, BERT's ``[CLS]`` or GPT's extract position on a
Transformer. ``transferlab finetune`` (:mod:`transferlab.recipes.finetune`) trains it;
:mod:`transferlab.tasks.loading` reloads it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from torch import nn

from transferlab.adapt.adapters import AdapterEncoder, AdaptersConfig
from transferlab.adapt.features import FrozenMixEncoder
from transferlab.data.batching import Batches
from transferlab.data.errors import DataError
from transferlab.data.examples import PairExample, ParsedSentence, QAExample, TaggedSentence
from transferlab.data.tasks import label_ids
from transferlab.encoders.backbone import Backbone
from transferlab.encoders.registry import ENCODERS
from transferlab.eval import metrics
from transferlab.eval.parsing import attachment_scores
from transferlab.tasks.classify import ClassifierHeadConfig, LinearHead, PoolingClassifier, TaskModel, predict_outputs
from transferlab.tasks.parse import BiaffineParser, ParserConfig, ParserModel, encode_trees, predict_trees
from transferlab.tasks.qa import SpanHead
from transferlab.tasks.tag import IGNORE_INDEX, TokenTagger, position_labels, predict_tags

Kind = Literal["classify", "regress", "tag", "qa", "parse"]
Adapt = Literal["finetune", "features", "adapters"]


@dataclass(frozen=True)
class TaskConfig:
    kind: Literal["auto", "classify", "regress", "tag", "parse"] = "auto"  # auto: from the data; parse: CoNLL-U trees
    # auto: the family's; finetune --adapt=features on a Transformer sets mean (its FEATURES_POOLING)
    pooling: Literal["auto", "concat", "first", "last", "mean"] = "auto"
    both_orders: Literal["auto", "yes", "no"] = "auto"  # GPT's similarity input; auto: causal + regression
    dropout: float = 0.1  # the linear head's and the tagger's
    pooler: bool = True  # BERT's dense + tanh before a bidirectional encoder's linear head

    def __post_init__(self):
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"task.dropout must be in [0, 1), got {self.dropout}")


# --- what the data asks for --------------------------------------------------------------------

def task_kind(cfg: TaskConfig, train: list) -> Kind:
    """Tagged words -> tag; labels that are all numbers with more than 10 values -> regress."""
    if isinstance(train[0], QAExample):  # questions with contexts: extractive QA (transferlab.tasks.qa)
        return "qa"
    if cfg.kind != "auto":
        return cfg.kind
    if isinstance(train[0], TaggedSentence):
        return "tag"
    if isinstance(train[0], ParsedSentence):
        return "parse"
    values = {ex.label for ex in train}
    try:
        [float(v) for v in values]
    except ValueError:
        return "classify"
    return "regress" if len(values) > 10 else "classify"


def label_set(kind: Kind, train: list) -> list[str]:
    """The labels a model of ``kind`` predicts, in sorted order (none for regression)."""
    if kind == "tag":
        return sorted({t for ex in train for t in ex.tags})
    if kind == "parse":  # the dependency relations
        return sorted({r for ex in train for r in ex.deprels})
    if kind == "classify":
        return sorted({ex.label for ex in train})
    return []


def both_orders(cfg: TaskConfig, b: Backbone, kind: Kind) -> bool:
    """GPT's similarity input, both orders of a pair summed: by default for a causal subword model
    on regression (not the AWD-LSTM, whose pairs are its words with an end-of-sentence between)."""
    if cfg.both_orders != "auto":
        return cfg.both_orders == "yes"
    return b.causal and kind == "regress" and ENCODERS[b.family].tokens == "pieces"


def float_labels(examples: list, where: str) -> list[float]:
    out = []
    for i, ex in enumerate(examples):
        try:
            out.append(float(ex.label))
        except ValueError:
            raise DataError(where, i + 1, "label", f"a regression label must be a number, got {ex.label!r}") from None
    return out


# --- examples -> sequences -----------------------------------------------------------------------

@dataclass
class Encoded:
    seqs: list[list[int]]
    seq_extra: dict
    labels: list  # one per example (classify, regress) or one list per example (tag, by position)
    positions: list[list[int]] | None = None  # tag: each kept word's first position
    n_words: list[int] | None = None
    n_cut: int = 0


def encode_examples(b: Backbone, examples: list, kind: Kind, labels: list[str], both_orders: bool,
                    where: str) -> Encoded:
    if kind == "parse":  # transferlab.tasks.parse: word positions, heads and relations
        seqs, extra, positions, n_cut = encode_trees(b, examples, labels)
        return Encoded(seqs, extra, [], positions, [len(ex.tokens) for ex in examples], n_cut)
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

def build_model(b: Backbone, kind: Kind, n_out: int, task: TaskConfig, head: ClassifierHeadConfig,
                adapt: Adapt = "finetune", cache_gb: float = 4.0, mix_layers: Sequence[int] = (),
                parser: ParserConfig = ParserConfig(), adapters: AdaptersConfig = AdaptersConfig()) -> nn.Module:
    """``TaskModel(encoder, head)``; under ``adapt="features"`` the encoder is frozen and read
    through a learned scalar mix of its layers (``mix_layers``, or all of its output width; each
    sequence's layers kept, up to ``cache_gb``); under ``adapt="adapters"`` it is frozen with
    Houlsby's adapters in every layer (:mod:`transferlab.adapt.adapters`)."""
    if adapt == "adapters" and not b.pretrained:
        raise ValueError("--adapt=adapters trains small modules inside a frozen pretrained Transformer; this "
                         "encoder is at random initialization (give --pretrained, or a Hugging Face model)")
    encoder = (b.encoder if adapt == "finetune" else AdapterEncoder(b.encoder, adapters) if adapt == "adapters"
               else FrozenMixEncoder(b.encoder, cache_gb, mix_layers))
    dim = encoder.dim
    if kind == "tag":
        return TaskModel(encoder, TokenTagger(dim, n_out, task.dropout))
    if kind == "parse":  # Dozat & Manning's biaffine parser, n_out relations
        return ParserModel(encoder, BiaffineParser(dim, n_out, parser))
    if kind == "qa":  # BERT's start/end span head (n_out is 2 by construction)
        return TaskModel(encoder, SpanHead(dim))
    pooling, default = task.pooling, ENCODERS[b.family].pooling
    if default == "mean":  # Joulin et al.: the average of the bag, one linear layer
        return TaskModel(encoder, LinearHead(dim, n_out, "mean" if pooling == "auto" else pooling,
                                               task.dropout, pooler=False))
    if default == "concat" and pooling in ("auto", "concat"):
        return TaskModel(encoder, PoolingClassifier(dim, n_out, dataclasses.replace(head, pooling="concat")))
    if pooling == "auto":
        pooling = "last" if b.causal else "first"
    if pooling == "concat":
        return TaskModel(encoder, PoolingClassifier(dim, n_out, head))
    linear = LinearHead(dim, n_out, pooling, task.dropout, pooler=task.pooler and not b.causal)
    if b.pooler is not None and task.pooler and not b.causal:  # BERT's pretrained pooler
        linear.pooler[0].load_state_dict(b.pooler)
    return TaskModel(encoder, linear)


# --- scores --------------------------------------------------------------------------------------

def evaluate(model: nn.Module, enc: Encoded, kind: Kind, labels: list[str], pad_id: int, gold_tags=None,
             batch_size: int = 64) -> dict:
    device = next(model.parameters()).device
    batches = Batches(enc.seqs, batch_size, pad_id=pad_id, shuffle=False, seq_extra=enc.seq_extra)
    if kind == "tag":
        fallback = labels.index("O") if "O" in labels else 0
        pred = predict_tags(model, batches, enc.positions, enc.n_words, fallback, device)
        return metrics.tagging_metrics(gold_tags, [[labels[t] for t in row] for row in pred])
    if kind == "parse":  # gold_tags: the gold sentences (ParsedSentence)
        fallback = labels.index("dep") if "dep" in labels else 0
        trees = predict_trees(model, batches, enc.n_words, fallback, device)
        return attachment_scores(gold_tags, [h for h, _ in trees], [[labels[r] for r in rels] for _, rels in trees])
    out = predict_outputs(model, batches, device)
    if kind == "regress":
        return metrics.regression_metrics(enc.labels, out[:, 0].tolist())
    pred = out.argmax(-1).tolist()
    result = metrics.classification_metrics(enc.labels, pred)
    if len(labels) == 2:
        positive = labels.index("1") if "1" in labels else 1
        result |= {"f1": metrics.binary_f1(enc.labels, pred, positive=positive),
                   "mcc": metrics.matthews_corrcoef(enc.labels, pred), "positive": labels[positive]}
    return result


def main_metric(kind: Kind, result: dict) -> str:
    if kind == "parse":
        return "las"
    if kind == "qa":
        return "f1"
    if kind == "regress":
        return "spearman"
    return "entity_f1" if "entity_f1" in result else "accuracy"
