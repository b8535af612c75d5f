"""Loading what training left: a ``finetune`` checkpoint as a predictor, and any encoder by name.

:func:`load_task_model` rebuilds a task model from its checkpoint folder alone (the encoder's
shape and tokenization from its files, the head from its config) for ``transferlab evaluate``
and ``predict``. :func:`load_backbone` takes every kind of encoder a user can name, for probing
and feature extraction: static vectors, a pretraining or ``finetune`` checkpoint, an encoder
family at random initialization, or a Hugging Face model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from transferlab.adapt.adapters import AdaptersConfig, check_base
from transferlab.adapt.aux_lm import attach_aux_lm
from transferlab.checkpoint import checkpoint_folder, has_checkpoint, load_checkpoint, load_weights
from transferlab.config import from_dict
from transferlab.data.batching import Batches
from transferlab.data.examples import ParsedSentence, TaggedSentence
from transferlab.encoders import backbone as bb
from transferlab.encoders.registry import buildable
from transferlab.tasks.classify import ClassifierHeadConfig, predict_outputs
from transferlab.tasks.model import Encoded, Kind, TaskConfig, build_model, encode_examples, evaluate
from transferlab.tasks.qa import evaluate_predictor
from transferlab.tasks.parse import ParserConfig, predict_trees
from transferlab.tasks.tag import predict_tags
from transferlab.text.tokenize import TextConfig


@dataclass
class TaskPredictor:
    """A trained task model with everything needed to run it on new examples."""

    model: nn.Module
    backbone: bb.Backbone
    labels: list[str]
    kind: Kind
    both_orders: bool
    pairs: bool  # trained on text pairs
    config: dict  # the resolved config it was trained with
    batch_size: int = 64  # sequences per batch when scoring and predicting (data.eval_batch_size)
    task: dict = field(default_factory=dict)  # the checkpoint's task.json (a QA model's null_threshold)

    def encode(self, examples: list, where: str) -> Encoded:
        return encode_examples(self.backbone, examples, self.kind, self.labels, self.both_orders, where)

    @torch.no_grad()
    def outputs(self, examples: list) -> torch.Tensor:
        """Raw outputs (N, C): logits, or the regression value in column 0."""
        enc = self._unlabeled(examples)
        return predict_outputs(self.model, Batches(enc.seqs, self.batch_size, pad_id=self.backbone.pad_id,
                                                   shuffle=False, seq_extra=enc.seq_extra))

    @torch.no_grad()
    def tags(self, sentences: list[list[str]]) -> list[list[str]]:
        """A tagger's tags for each word of each sentence (words past the model's length get the
        fallback tag, ``O`` where there is one)."""
        enc = self._unlabeled([TaggedSentence(tuple(words), ("",) * len(words)) for words in sentences])
        fallback = self.labels.index("O") if "O" in self.labels else 0
        batches = Batches(enc.seqs, self.batch_size, pad_id=self.backbone.pad_id, shuffle=False,
                          seq_extra=enc.seq_extra)
        pred = predict_tags(self.model, batches, enc.positions, enc.n_words, fallback)
        return [[self.labels[t] for t in row] for row in pred]

    @torch.no_grad()
    def trees(self, sentences: list[list[str]]) -> list[tuple[list[int], list[str]]]:
        """A parser's tree for each sentence of words: CoNLL-U heads (0 = root) and relations
        (words past the model's length are attached to the word before, relation ``dep``)."""
        n = [len(words) for words in sentences]
        enc = self.encode([ParsedSentence(tuple(w), ("_",) * k, ("_",) * k, ("_",) * k, (0,) * k, (self.labels[0],) * k)
                           for w, k in zip(sentences, n)], "input")  # placeholder trees that nothing reads
        fallback = self.labels.index("dep") if "dep" in self.labels else 0
        batches = Batches(enc.seqs, self.batch_size, pad_id=self.backbone.pad_id, shuffle=False,
                          seq_extra={k: v for k, v in enc.seq_extra.items() if k == "word_index"})
        pred = predict_trees(self.model, batches, n, fallback, next(self.model.parameters()).device)
        return [(heads, [self.labels[r] for r in rels]) for heads, rels in pred]

    def _unlabeled(self, examples: list) -> Encoded:
        """Examples without labels, encoded (a placeholder label that nothing reads)."""
        if self.kind == "tag":  # placeholder tags, one per word
            filled = [dataclasses.replace(ex, tags=(self.labels[0],) * len(ex.tokens)) for ex in examples]
        else:
            filled = [dataclasses.replace(ex, label=self.labels[0] if self.labels else "0") for ex in examples]
        return encode_examples(self.backbone, filled, self.kind, self.labels, self.both_orders, "input")

    def evaluate(self, examples: list, where: str) -> dict:
        if self.kind == "qa":  # SQuAD EM/F1 over windows (transferlab.tasks.qa)
            return evaluate_predictor(self, examples)
        enc = self.encode(examples, where)
        gold = [list(ex.tags) for ex in examples] if self.kind == "tag" else examples if self.kind == "parse" else None
        return evaluate(self.model, enc, self.kind, self.labels, self.backbone.pad_id, gold, self.batch_size)


def load_task_model(path: str | Path) -> TaskPredictor:
    """A ``finetune`` checkpoint folder -> its model (weights loaded, eval mode) and tokenization.

    A model of ``--adapt=adapters`` keeps only its adapters, layer norms and head: its base model
    is loaded again by name and must have the weights it was trained on (their sha256)."""
    ckpt = load_checkpoint(path, json_only=True)
    missing = [n for n in ("labels", "encoder", "task") if n not in ckpt.files]
    if missing:
        raise ValueError(f"{path}: not a finetune checkpoint (no {', '.join(m + '.json' for m in missing)})")
    c = ckpt.config
    text = from_dict(TextConfig, c.get("text", {}), "text.")
    b = bb.rebuild_backbone(ckpt.files, text, c.get("data", {}).get("max_len"))
    labels = list(ckpt.files["labels"])
    task = ckpt.files["task"]
    task_cfg = from_dict(TaskConfig, c.get("task", {}), "task.")
    head = from_dict(ClassifierHeadConfig, c.get("head", {}), "head.")
    adapt = c.get("adapt", "finetune")
    if adapt == "adapters":  # the frozen base, by name (the checkpoint holds none of its weights)
        if "adapters" not in ckpt.files:
            raise ValueError(f"{path}: an --adapt=adapters checkpoint without adapters.json (its base model's name)")
        base = load_backbone(ckpt.files["adapters"]["base"], text, max_len=c.get("data", {}).get("max_len") or None)
        b.encoder = base.encoder
    model = build_model(b, task["kind"], len(labels) if labels else 1, task_cfg, head, adapt,
                        c.get("features_cache_gb", 4.0), c.get("features_layers", ()),
                        parser=from_dict(ParserConfig, c.get("parser", {}), "parser."),
                        adapters=from_dict(AdaptersConfig, c.get("adapters", {}), "adapters."))
    if adapt == "adapters":
        check_base(model.encoder, ckpt.files["adapters"], str(path))
        b.encoder = model.encoder  # the adapted encoder (what probing a finetune checkpoint reads)
    if c.get("aux_lm"):  # the LM head trained beside the task head: loaded with it, never run by a predictor
        attach_aux_lm(model, b)
    load_weights(model, path)
    model.eval()
    return TaskPredictor(model, b, labels, task["kind"], bool(task["both_orders"]), bool(task.get("pairs")), c,
                         int(c.get("data", {}).get("eval_batch_size", 64)), task)


def load_backbone(spec: str, text: TextConfig, scratch_text: Callable[[], Iterable[str]] | None = None,
                  scratch: bb.ScratchConfig = bb.ScratchConfig(), max_len: int | None = None,
                  seed: int = 0) -> bb.Backbone:
    """The backbone ``spec`` names, whatever produced it:

    - static vectors (``glove-6b-50d``, a ``pretrain word2vec|fasttext|glove`` output, a file);
    - a checkpoint folder: ``pretrain lm`` (AWD-LSTM), ``pretrain mlm|clm`` (our Transformer), or
      ``finetune`` (its adapted encoder);
    - a family name (``awd_lstm``, ``transformer``, ``fasttext``): that encoder at random
      initialization, its vocabulary or tokenizer built from ``scratch_text()`` (the control of
      a probing or transfer experiment);
    - anything else: a Hugging Face model (``minilm-l6``, a folder, a hub id).
    """
    if bb.is_vectors(spec):
        from transferlab.vectors.keyed import load_vectors

        return bb.static_backbone(load_vectors(spec), text)
    path = checkpoint_folder(Path(spec).expanduser())  # a run folder: its best
    if path.is_dir() and has_checkpoint(path) and not bb.is_hf_folder(path):
        if bb.is_task_model(path):  # a finetune checkpoint: its adapted encoder
            return load_task_model(path).backbone
        return bb.pretrained_backbone(path, text, max_len)
    if spec in buildable():
        if scratch_text is None:
            raise ValueError(f"--encoder {spec} at random initialization needs text to build its vocabulary from")
        torch.manual_seed(seed)
        return bb.scratch_backbone(spec, text, scratch_text, scratch, max_len)
    return bb.hf_backbone(spec, max_len)
