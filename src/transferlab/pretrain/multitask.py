"""GenSen: one sentence encoder shared by several objectives (Subramanian et al. 2018, "Learning
General Purpose Distributed Sentence Representations via Large Scale Multi-task Learning", ICLR
2018, sections 3 and 4).

The encoder is a bidirectional GRU (a :class:`~transferlab.encoders.sentence_rnn.SentenceRNN`,
``bidirectional``; the sentence vector ``h`` is the last state of each direction, GenSen's
representation; ``sentence_rnn.pooling=max`` is the option of pooling over time instead). Every
task reads ``h`` through its own head:

- ``next``: skip-thought's conditional GRU decoder (:class:`~transferlab.pretrain.skip_thought.
  ConditionalDecoder`) generating the next sentence from the encoder's word embeddings (GenSen
  decodes the next sentence only, not the previous one);
- ``mt``: English -> German translation, the same conditional GRU decoder over German pieces with
  its own embedding table; no attention, so everything the decoder knows of the source is ``h``;
- ``nli``: InferSent's classifier over ``[u, v, |u - v|, u * v]`` (:func:`~transferlab.pretrain.
  nli.pair_features`), one hidden layer, a softmax over the labels.

The paper's other tasks (En->Fr translation, constituency parsing) are left out; its NLI data are
SNLI and MultiNLI, ours SICK offline (the recipe).

Each training step is one batch of one task (the paper switches task after every parameter
update): :class:`TaskMixture` draws the task of each step with probability proportional to its
number of training examples raised to ``alpha`` (:func:`task_probabilities`; 1 = proportional, 0 =
uniform, between them small tasks are sampled more than their size says). Subramanian et al.
sampled with fixed task ratios instead; ``alpha`` is the one knob that covers both extremes.

- Batches: ``{"task": name, "ids" (B, T), "mask" (B, T), ...}``; the decoding tasks add
  ``tgt_in (B, T')`` (``<bos> w1 ..``) and ``labels (B, T')`` (``w1 .. <eos>``, ``IGNORE_INDEX`` at
  padding), ``nli`` adds ``ids_b``, ``mask_b`` and ``labels (B,)``.
- :class:`GenSen` (``forward(batch)`` is the batch's mean loss, so the training loop only calls
  the model), :func:`gensen_loss` (``loss(model, batch)``) and :func:`gensen_scores` (held-out
  figures of every task and :data:`SELECT`, their mean cross-entropy relative to a uniform guess).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

import torch
import torch.nn.functional as F
from torch import nn

from transferlab.config import ConfigError
from transferlab.encoders.sentence_rnn import SentenceRNN
from transferlab.pretrain.nli import pair_classifier, pair_features
from transferlab.pretrain.paraphrase import join_sides
from transferlab.pretrain.sentences import TripleBatches
from transferlab.pretrain.skip_thought import ConditionalDecoder

__all__ = ["TASKS", "SELECT", "GenSenConfig", "PairClassifier", "GenSen", "gensen_loss", "gensen_scores",
           "task_probabilities", "TaskMixture", "NextSentenceBatches"]

TASKS = ("next", "mt", "nli")
SELECT = "relative_loss"  # the figure that picks the best checkpoint (see gensen_scores)


@dataclass(frozen=True)
class GenSenConfig:
    alpha: float = 1.0  # a task's sampling probability ~ (its training examples) ** alpha; 0 = uniform
    decoder_dim: int = 0  # the next-sentence decoder's GRU cells; 0 = the sentence vector's size
    mt_embed_dim: int = 0  # the German piece embeddings; 0 = the encoder's word embedding size
    mt_decoder_dim: int = 0  # the translation decoder's GRU cells; 0 = the sentence vector's size
    nli_hidden_dim: int = 512  # the NLI classifier's hidden layer (InferSent's 512)
    nli_dropout: float = 0.0

    def __post_init__(self):
        if not self.alpha >= 0.0:
            raise ConfigError(f"objective.alpha must be >= 0 (1 = proportional to task size, 0 = uniform), "
                              f"got {self.alpha}")
        for name in ("decoder_dim", "mt_embed_dim", "mt_decoder_dim"):
            if getattr(self, name) < 0:
                raise ConfigError(f"objective.{name} must be >= 0 (0 = follow the encoder), got {getattr(self, name)}")
        if self.nli_hidden_dim < 1:
            raise ConfigError(f"objective.nli_hidden_dim must be >= 1, got {self.nli_hidden_dim}")
        if not 0.0 <= self.nli_dropout < 1.0:
            raise ConfigError(f"objective.nli_dropout must be in [0, 1), got {self.nli_dropout}")


class PairClassifier(nn.Module):
    """InferSent's classifier (:func:`transferlab.pretrain.nli.pair_classifier`) on two sentence
    vectors: (B, D) ``u`` and ``v`` -> (B, C) logits over ``[u, v, |u - v|, u * v]``."""

    def __init__(self, dim: int, n_classes: int, hidden_dim: int = 512, dropout: float = 0.0) -> None:
        super().__init__()
        self.classifier = pair_classifier(dim, n_classes, hidden_dim, dropout)

    def forward(self, u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.classifier(pair_features(u, v))  # (B, C)


class GenSen(nn.Module):
    """A sentence encoder and one head per task (module docstring); ``heads`` holds ``next`` and
    ``mt`` (:class:`ConditionalDecoder`) and ``nli`` (:class:`PairClassifier`)."""

    def __init__(self, encoder: SentenceRNN, next: ConditionalDecoder, mt: ConditionalDecoder,
                 nli: PairClassifier) -> None:
        super().__init__()
        self.encoder = encoder
        self.heads = nn.ModuleDict({"next": next, "mt": mt, "nli": nli})

    @classmethod
    def build(cls, encoder: SentenceRNN, cfg: GenSenConfig, mt_vocab_size: int, mt_pad_id: int, n_classes: int
              ) -> GenSen:
        """The heads at the sizes of ``cfg``; the next-sentence decoder reads the encoder's embeddings."""
        D, E, V = encoder.sentence_dim, encoder.cfg.dim, encoder.cfg.vocab_size
        german = nn.Embedding(mt_vocab_size, cfg.mt_embed_dim or E, padding_idx=mt_pad_id)
        return cls(encoder, ConditionalDecoder(encoder.embedding[0], D, cfg.decoder_dim or D, V),
                   ConditionalDecoder(german, D, cfg.mt_decoder_dim or D, mt_vocab_size),
                   PairClassifier(D, n_classes, cfg.nli_hidden_dim, cfg.nli_dropout))

    def chance_loss(self, task: str) -> float:
        """The cross-entropy of a uniform guess over the task's outputs (log of their number)."""
        head = self.heads[task]
        n = head.vocab.out_features if task != "nli" else head.classifier[-1].out_features
        return math.log(n)

    def nli_logits(self, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """(B, C) scores of the premise-hypothesis pairs, both sides through the encoder in one call."""
        both, both_mask = join_sides(batch["ids"], batch["mask"], batch["ids_b"], batch["mask_b"],
                                     self.encoder.cfg.pad_id)  # (2B, T)
        u, v = self.encoder.sentence(both, both_mask).chunk(2)  # (B, D) each
        return self.heads["nli"](u, v)

    def summed_loss(self, batch: Mapping) -> tuple[torch.Tensor, int]:
        """The batch's cross-entropy summed over what its task scores (target words or pieces, pairs),
        and their number."""
        task = batch["task"]
        if task == "nli":
            logits = self.nli_logits(batch)
            return F.cross_entropy(logits.float(), batch["labels"], reduction="sum"), len(batch["labels"])
        if task not in ("next", "mt"):
            raise ValueError(f"GenSen: a batch of task {task!r}; the tasks are {', '.join(TASKS)}")
        h = self.encoder.sentence(batch["ids"], batch["mask"])  # (B, D)
        return self.heads[task].nll(h, batch["tgt_in"], batch["labels"])

    def forward(self, batch: Mapping) -> torch.Tensor:
        total, n = self.summed_loss(batch)
        return total / max(n, 1)


def gensen_loss(model: nn.Module, batch: dict) -> torch.Tensor:
    """``loss(model, batch)`` for :func:`transferlab.train.fit`: the mean loss of the batch's task."""
    return model(batch)


@torch.no_grad()
def gensen_scores(model: GenSen, held_out: Mapping[str, Iterable[dict]]) -> dict[str, float]:
    """In eval mode, over each task's held-out batches (untagged: the key names the task):
    ``next_loss``/``next_ppl`` and ``mt_loss``/``mt_ppl`` (per target word or piece, ``<eos>``
    included), ``nli_loss``/``nli_accuracy``, and ``relative_loss``, the mean over the tasks of
    their loss divided by a uniform guess's (``log`` of the vocabulary or label count): 1 at
    chance, 0 when perfect, so no task's scale outweighs another's. It selects the best checkpoint
    (NLI accuracy alone would select for the smallest task; a plain sum of losses for the largest
    vocabulary)."""
    was = model.training
    model.eval()
    device = next(model.parameters()).device
    out: dict[str, float] = {}
    try:
        for task, batches in held_out.items():
            total, n, correct = 0.0, 0, 0
            for batch in batches:
                batch = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
                if task == "nli":
                    logits = model.nli_logits(batch)  # (B, C)
                    s, k = F.cross_entropy(logits.float(), batch["labels"], reduction="sum"), len(logits)
                    correct += int((logits.argmax(-1) == batch["labels"]).sum())
                else:
                    s, k = model.summed_loss(batch | {"task": task})
                total, n = total + float(s), n + k
            if n == 0:
                raise ValueError(f"gensen_scores: the held-out {task} batches score nothing")
            out[f"{task}_loss"] = total / n
            out[f"{task}_accuracy" if task == "nli" else f"{task}_ppl"] = \
                correct / n if task == "nli" else math.exp(total / n)
    finally:
        model.train(was)
    out[SELECT] = sum(out[f"{t}_loss"] / model.chance_loss(t) for t in held_out) / len(held_out)
    return out


# --- the task mixture --------------------------------------------------------------------------

class SizedBatches(Protocol):
    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[dict]: ...


def task_probabilities(sizes: Mapping[str, int], alpha: float) -> dict[str, float]:
    """Each task's probability ``n ** alpha / sum(m ** alpha)`` from its number of training examples."""
    if not sizes or any(n < 1 for n in sizes.values()):
        raise ValueError(f"task_probabilities: every task needs training examples, got {dict(sizes)}")
    weights = {task: float(n) ** alpha for task, n in sizes.items()}
    total = sum(weights.values())
    return {task: w / total for task, w in weights.items()}


class TaskMixture:
    """One epoch of multi-task batches: ``steps`` draws of a task (:func:`task_probabilities`), each
    step the next batch of that task tagged ``batch["task"]``.

    ``tasks`` maps a name to its batches of a given epoch (``tasks[name](e)``, deterministic per e,
    with ``len()``). Each task reads its own epochs one after another as if trained alone; the
    mixture only interleaves them. The draws of mixture epoch ``epoch`` come from a generator seeded
    by (seed, epoch), and where each task stands at its start is counted from the draws of the
    epochs before, so the batches are a pure function of (seed, epoch): a resumed
    :func:`transferlab.train.fit` sees the same ones. ``steps`` defaults to every task's batches
    together (at ``alpha=1`` about one pass over each task per epoch).
    """

    def __init__(self, tasks: Mapping[str, Callable[[int], SizedBatches]], sizes: Mapping[str, int],
                 alpha: float = 1.0, *, steps: int = 0, seed: int = 0, epoch: int = 0) -> None:
        if set(tasks) != set(sizes):
            raise ValueError(f"TaskMixture: batches for {sorted(tasks)}, sizes for {sorted(sizes)}")
        self.tasks, self.names = dict(tasks), list(tasks)
        p = task_probabilities({t: sizes[t] for t in self.names}, alpha)
        self.probs = torch.tensor([p[t] for t in self.names], dtype=torch.float64)
        self.lengths = [len(self.tasks[t](0)) for t in self.names]  # batches per epoch of each task
        if min(self.lengths) < 1:
            raise ValueError(f"TaskMixture: a task has no batches ({dict(zip(self.names, self.lengths))})")
        self.steps = steps or sum(self.lengths)
        self.seed, self.epoch = seed, epoch

    def __len__(self) -> int:
        return self.steps

    def draws(self, epoch: int) -> torch.Tensor:
        """(steps,) the task index of every step of mixture epoch ``epoch``."""
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
        return torch.multinomial(self.probs, self.steps, replacement=True, generator=g)

    def _stream(self, k: int, start: int) -> Iterator[dict]:
        """Task ``k``'s batches from its ``start``-th on (its epochs one after another)."""
        epoch, skip = divmod(start, self.lengths[k])
        while True:
            yield from itertools.islice(iter(self.tasks[self.names[k]](epoch)), skip, None)
            epoch, skip = epoch + 1, 0

    def __iter__(self) -> Iterator[dict]:
        before = [0] * len(self.names)  # batches of each task drawn in the epochs before this one
        for e in range(self.epoch):
            for k, n in enumerate(torch.bincount(self.draws(e), minlength=len(self.names)).tolist()):
                before[k] += n
        streams = [self._stream(k, before[k]) for k in range(len(self.names))]
        for k in self.draws(self.epoch).tolist():
            yield {**next(streams[k]), "task": self.names[k]}


class NextSentenceBatches:
    """Skip-thought's :class:`~transferlab.pretrain.sentences.TripleBatches` as GenSen's ``next``
    task reads them: each sentence (``ids``, ``mask``) and its next sentence as the decoder's
    ``tgt_in`` and ``labels`` (the previous sentence is not decoded)."""

    def __init__(self, triples: TripleBatches) -> None:
        self.triples = triples

    def __len__(self) -> int:
        return len(self.triples)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        for b in self.triples:
            yield {"ids": b["ids"], "mask": b["mask"], "tgt_in": b["next_ids"], "labels": b["next_labels"]}
