"""context2vec's objective: negative sampling between each word's sentential context and the word
(Melamud et al. 2016, section 3), word2vec's objective (Mikolov et al. 2013, "Distributed
Representations of Words and Phrases and their Compositionality") with the biLSTM context vector
in place of a window word's vector.

For the context vector ``c`` of target ``t`` and ``K`` noise words ``n_k`` drawn from the
unigram distribution raised to the power 0.75 (word2vec's), the loss of the target is

    -log sigmoid(c . e(t)) - sum_k log sigmoid(-c . e(n_k))

with ``e`` the target-word embeddings, averaged over every real position of the batch: each word
of every sentence is a target once, all from one pass of the encoder.

- :func:`unigram_counts`, :func:`noise_distribution`: the noise (``<pad>``, ``<bos>`` and
  ``<eos>`` are never drawn; ``<unk>`` is a word like any other).
- :func:`sentence_spans`, :class:`SentenceBatches`: the corpus stream (lines ending in ``<eos>``,
  :mod:`transferlab.pretrain.corpus`) read as sentences of at most ``max_len`` words in
  length-bucketed batches ``{"ids", "mask"}``, a pure function of (seed, epoch).
- :class:`NegativeSampling`: the encoder plus its noise distribution; ``forward(ids, mask)`` is
  the loss, so the training loop only *calls* the model (as DDP needs).
- :func:`context2vec_loss` (``loss(model, batch)``) and :func:`context2vec_scores`: held-out loss
  (with fixed noise draws) and how often the target is the top-1 / top-10 filler of its context
  among all words.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from transferlab.data.batching import bucket_order, pad_batch
from transferlab.encoders.context2vec import Context2Vec
from transferlab.pretrain.lm import TokenFile

__all__ = ["unigram_counts", "noise_distribution", "sentence_spans", "SentenceBatches", "NegativeSampling",
           "context2vec_loss", "context2vec_scores"]

_CHUNK = 1 << 22  # token ids read from a TokenFile at a time


def _array(ids: torch.Tensor | TokenFile) -> np.ndarray:
    """The ids as a numpy array: a read-only memory map of a :class:`TokenFile` (nothing is loaded)."""
    if isinstance(ids, TokenFile):
        return np.memmap(ids.path, dtype="<i4", mode="r") if len(ids) else np.zeros(0, np.int32)
    return ids.numpy()


def unigram_counts(ids: torch.Tensor | TokenFile, vocab_size: int) -> torch.Tensor:
    """How often each id occurs in the stream: ``(vocab_size,)`` int64, read a chunk at a time."""
    arr, counts = _array(ids), np.zeros(vocab_size, dtype=np.int64)
    for start in range(0, len(arr), _CHUNK):
        counts += np.bincount(arr[start : start + _CHUNK], minlength=vocab_size)[:vocab_size]
    return torch.from_numpy(counts)


def noise_distribution(counts: torch.Tensor, power: float = 0.75, exclude: Sequence[int] = ()) -> torch.Tensor:
    """``counts ** power``, normalized, with the ``exclude`` ids at zero (word2vec's noise at 0.75)."""
    weights = counts.double().clamp(min=0) ** power
    weights[list(exclude)] = 0.0
    if weights.sum() <= 0:
        raise ValueError("noise_distribution: no word has a count above zero")
    return (weights / weights.sum()).float()


def sentence_spans(ids: torch.Tensor | TokenFile, eos_id: int, max_len: int) -> np.ndarray:
    """``(S, 2)`` (start, length) of every sentence of the stream: the ids between ``<eos>`` ids
    (a last line without one too), a line longer than ``max_len`` cut into pieces of
    ``max_len``, empty lines dropped."""
    arr = _array(ids)
    ends = np.concatenate([np.flatnonzero(arr[s : s + _CHUNK] == eos_id) + s for s in range(0, len(arr), _CHUNK)]
                          + [np.zeros(0, np.int64)]).astype(np.int64)
    if len(arr) and (not len(ends) or ends[-1] != len(arr) - 1):
        ends = np.append(ends, len(arr))  # a last line with no <eos>
    if not len(ends):
        return np.zeros((0, 2), dtype=np.int64)
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    lengths = ends - starts
    starts, lengths = starts[lengths > 0], lengths[lengths > 0]
    pieces = -(-lengths // max_len)  # (S,) pieces of each line
    first = np.repeat(np.cumsum(pieces) - pieces, pieces)  # index of its line's first piece, per piece
    piece_start = np.repeat(starts, pieces) + max_len * (np.arange(pieces.sum()) - first)
    piece_len = np.minimum(max_len, np.repeat(starts + lengths, pieces) - piece_start)
    return np.stack([piece_start, piece_len], axis=1).reshape(-1, 2)


class SentenceBatches:
    """Batches ``{"ids" (B, T), "mask" (B, T)}`` of the sentences ``spans`` of a stream, bucketed
    by length (:func:`transferlab.data.batching.bucket_order`); shuffled by (seed, epoch), so a
    resumed run sees the same batches."""

    def __init__(self, ids: torch.Tensor | TokenFile, spans: np.ndarray, batch_size: int, *, pad_id: int = 0,
                 shuffle: bool = True, seed: int = 0, epoch: int = 0) -> None:
        if len(spans) == 0:
            raise ValueError("SentenceBatches: the stream has no sentence")
        self.arr, self.spans, self.batch_size, self.pad_id = _array(ids), spans, batch_size, pad_id
        self.shuffle, self.seed, self.epoch = shuffle, seed, epoch

    def __len__(self) -> int:
        return -(-len(self.spans) // self.batch_size)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        lengths = self.spans[:, 1].tolist()
        for index in bucket_order(lengths, self.batch_size, seed=self.seed, epoch=self.epoch, shuffle=self.shuffle):
            rows = [self.arr[s : s + n].tolist() for s, n in self.spans[index]]
            yield pad_batch(rows, self.pad_id)


class NegativeSampling(nn.Module):
    """A :class:`Context2Vec` and its noise distribution (a buffer: it travels with the weights).
    ``forward(ids, mask)`` is the batch's mean negative-sampling loss (see the module docstring)."""

    def __init__(self, encoder: Context2Vec, noise: torch.Tensor, samples: int = 10) -> None:
        super().__init__()
        if samples < 1:
            raise ValueError(f"NegativeSampling: samples must be >= 1, got {samples}")
        if noise.shape != (encoder.cfg.vocab_size,):
            raise ValueError(f"NegativeSampling: noise has shape {tuple(noise.shape)}, the encoder's vocabulary "
                             f"{encoder.cfg.vocab_size} words")
        self.encoder, self.samples = encoder, samples
        self.register_buffer("noise", noise.float())

    def loss(self, contexts: torch.Tensor, targets: torch.Tensor, generator: torch.Generator | None = None
             ) -> torch.Tensor:
        """Mean loss of ``contexts (N, dim)`` against ``targets (N,)``, ``samples`` noise words each."""
        N, K = targets.numel(), self.samples
        noise = torch.multinomial(self.noise, N * K, replacement=True, generator=generator).view(N, K)
        emb = self.encoder.target_embedding
        c = contexts.float()
        positive = (c * emb(targets).float()).sum(-1)  # (N,)
        negative = torch.bmm(emb(noise).float(), c[:, :, None]).squeeze(-1)  # (N, K, dim) @ (N, dim, 1) -> (N, K)
        return -(F.logsigmoid(positive) + F.logsigmoid(-negative).sum(-1)).mean()

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        if mask is None:
            mask = torch.ones_like(ids, dtype=torch.bool)
        contexts = self.encoder.context(ids, mask)[mask]  # (N, dim): every real position is a target
        return self.loss(contexts, ids[mask])


def context2vec_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """``loss(model, batch)`` for :func:`transferlab.train.fit`."""
    return model(batch["ids"], batch.get("mask"))


@torch.no_grad()
def context2vec_scores(model: NegativeSampling, batches: Iterable[dict[str, torch.Tensor]], rank_targets: int = 20000,
                       seed: int = 0) -> dict[str, float]:
    """In eval mode: the mean loss over every target of ``batches`` (noise drawn from a generator
    seeded with ``seed``, the same draws at every evaluation), and over the first ``rank_targets``
    targets how often the target scores highest (``top1``) or among the ten highest (``top10``)
    of all words by ``context . e(word)`` (``<pad>``, ``<bos>``, ``<eos>``: never)."""
    was = model.training
    model.eval()
    device = model.noise.device
    gen = torch.Generator(device=device).manual_seed(seed)
    never = model.noise == 0  # (V,) the excluded specials
    loss_sum, n, hits1, hits10, ranked = 0.0, 0, 0, 0, 0
    try:
        for batch in batches:
            ids, mask = batch["ids"].to(device), batch["mask"].to(device)
            contexts, targets = model.encoder.context(ids, mask)[mask], ids[mask]  # (N, dim), (N,)
            loss_sum += float(model.loss(contexts, targets, gen)) * targets.numel()
            n += targets.numel()
            if ranked < rank_targets:
                c, t = contexts[: rank_targets - ranked].float(), targets[: rank_targets - ranked]
                scores = c @ model.encoder.target_embedding.weight.float().t()  # (N, V)
                scores[:, never] = float("-inf")
                rank = (scores > scores.gather(1, t[:, None])).sum(1)  # (N,) words scoring above the target
                hits1, hits10, ranked = hits1 + int((rank == 0).sum()), hits10 + int((rank < 10).sum()), ranked + len(t)
    finally:
        model.train(was)
    if n == 0:
        raise ValueError("context2vec_scores: no batches")
    return {"loss": loss_sum / n, "top1": hits1 / ranked, "top10": hits10 / ranked}
