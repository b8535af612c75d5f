"""Paragram-phrase: word averaging trained on paraphrase pairs (Wieting et al. 2016, "Towards
Universal Paraphrastic Sentence Embeddings", ICLR 2016, sections 3 and 4.1).

The phrase vector is the average of its word vectors, ``g(x) = mean_t W[x_t]`` (a
:class:`~transferlab.encoders.fasttext.FastTextEncoder` with ``ngrams=1``: its ``hidden`` is each
word's vector, so the mean over the real positions *is* ``g``, the same mean that ``senteval``'s
pooling takes). ``W`` starts from static word vectors (the paper's Paragram-SL999; GloVe offline)
and is trained on paraphrase pairs ``(x1, x2)`` with a margin loss against the hardest negative of
the mini-batch:

    max(0, delta - cos(g(x1), g(x2)) + cos(g(x1), g(t1)))
  + max(0, delta - cos(g(x1), g(x2)) + cos(g(x2), g(t2)))  +  lambda_w * ||W - W_init||^2

where ``t1`` is the phrase of the batch (either side of any other pair) most similar to ``x1``
(the paper's "MAX" sampling), ``t2`` the one most similar to ``x2``; a phrase identical to ``x1``
or ``x2`` is never a negative. The regulariser keeps the vectors near where they started, so a
word the pairs never show keeps its static vector.

Where we differ from the paper: the hinge terms are averaged over the batch instead of summed
(``lambda_w`` is on that scale), and the optimizer is the train section's (the paper: AdaGrad).

- :class:`PairBatches`: batches of encoded pairs ``{"ids", "mask", "ids_b", "mask_b"}`` (and
  ``labels``), a pure function of (seed, epoch); also the batches of :mod:`transferlab.pretrain.nli`.
- :func:`average`, :func:`max_negatives`, :func:`paragram_loss`: the objective on phrase vectors.
- :class:`ParagramPhrase`: the encoder and its starting vectors; ``forward`` is the loss, so the
  training loop only *calls* the model (as DDP needs). :func:`paraphrase_loss` is
  ``loss(model, batch)`` for :func:`transferlab.train.fit`; :func:`phrase_vectors` embeds texts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from transferlab.config import ConfigError
from transferlab.data.batching import bucket_order, pad_batch
from transferlab.encoders.fasttext import FastTextEncoder

__all__ = ["ParagramConfig", "PairBatches", "join_sides", "average", "same_phrase", "max_negatives",
           "paragram_loss", "ParagramPhrase", "paraphrase_loss", "phrase_vectors"]


@dataclass(frozen=True)
class ParagramConfig:
    margin: float = 0.4  # the paper's delta
    lambda_w: float = 1e-4  # weight of ||W - W_init||^2 (tuned in the paper, on hinge terms summed, not averaged)

    def __post_init__(self):
        if not self.margin > 0:
            raise ConfigError(f"objective.margin must be > 0, got {self.margin}")
        if self.lambda_w < 0:
            raise ConfigError(f"objective.lambda_w must be >= 0, got {self.lambda_w}")


class PairBatches:
    """Batches ``{"ids" (B, Ta), "mask", "ids_b" (B, Tb), "mask_b"}`` (plus ``labels (B,)`` when
    given, and ``index``) of pairs of id lists, grouped by the longer side's length in chunks of
    ``bucket`` batches (:func:`transferlab.data.batching.bucket_order`; ``bucket=1``: random
    batches), shuffled by (seed, epoch), so a resumed run sees the same batches."""

    def __init__(self, a: Sequence[Sequence[int]], b: Sequence[Sequence[int]], batch_size: int, *, pad_id: int = 0,
                 labels: Sequence[int] | None = None, shuffle: bool = True, seed: int = 0, epoch: int = 0,
                 bucket: int = 50) -> None:
        if len(a) != len(b) or (labels is not None and len(labels) != len(a)):
            raise ValueError(f"PairBatches: {len(a)} first sides, {len(b)} second sides"
                             + (f", {len(labels)} labels" if labels is not None else ""))
        if not a:
            raise ValueError("PairBatches: no pairs")
        self.a, self.b, self.labels, self.batch_size, self.pad_id = a, b, labels, batch_size, pad_id
        self.shuffle, self.seed, self.epoch, self.bucket = shuffle, seed, epoch, bucket

    def __len__(self) -> int:
        return -(-len(self.a) // self.batch_size)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        lengths = [max(len(x), len(y)) for x, y in zip(self.a, self.b)]
        for index in bucket_order(lengths, self.batch_size, seed=self.seed, epoch=self.epoch, shuffle=self.shuffle,
                                  bucket=self.bucket):
            batch = pad_batch([self.a[i] for i in index], self.pad_id)
            side_b = pad_batch([self.b[i] for i in index], self.pad_id)
            batch |= {"ids_b": side_b["ids"], "mask_b": side_b["mask"], "index": torch.as_tensor(index)}
            if self.labels is not None:
                batch["labels"] = torch.as_tensor([self.labels[i] for i in index])
            yield batch


def join_sides(ids: torch.Tensor, mask: torch.Tensor, ids_b: torch.Tensor, mask_b: torch.Tensor, pad_id: int
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Both sides of a pair batch as one batch (one encoder call): (2B, max(Ta, Tb)) ids and mask,
    the first sides first."""
    T = max(ids.size(1), ids_b.size(1))
    pad = lambda x, v: F.pad(x, (0, T - x.size(1)), value=v)  # noqa: E731  (B, t) -> (B, T)
    return torch.cat([pad(ids, pad_id), pad(ids_b, pad_id)]), torch.cat([pad(mask, False), pad(mask_b, False)])


def average(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B, T, D) word vectors, (B, T) mask -> (B, D) their mean over the real words."""
    m = mask[..., None].to(hidden.dtype)  # (B, T, 1)
    return (hidden * m).sum(1) / m.sum(1).clamp(min=1.0)


def same_phrase(ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(N, T) ids and mask -> (N, N) bool: whether phrases i and j are the same word sequence."""
    words = ids.masked_fill(~mask, -1)  # (N, T); padding can never match a word
    return (words[:, None, :] == words[None, :, :]).all(-1)


def max_negatives(g1: torch.Tensor, g2: torch.Tensor, same: torch.Tensor | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The paper's MAX sampling. ``g1``, ``g2`` (B, D): the pairs' phrase vectors; the candidates
    are all 2B phrases ``cat([g1, g2])`` but the pair's own two, and any phrase ``same`` (2B, 2B)
    marks identical to one of them. Returns ``(t1, t2, has)``: for each pair the index (into the
    2B phrases) of the candidate most similar (cosine) to ``x1``, and to ``x2``, and whether it
    had a candidate at all (a batch of one pair has none)."""
    B = g1.size(0)
    phrases = F.normalize(torch.cat([g1, g2]), dim=-1)  # (2B, D)
    sims = phrases @ phrases.t()  # (2B, 2B)
    rows = torch.arange(B, device=g1.device)
    own = torch.zeros(B, 2 * B, dtype=torch.bool, device=g1.device)
    own[rows, rows] = True  # x1 itself
    own[rows, rows + B] = True  # its partner x2
    if same is not None:
        own |= same[:B] | same[B:]  # identical to x1 or to x2
    s1 = sims[:B].masked_fill(own, float("-inf"))  # (B, 2B): x1 against the candidates
    s2 = sims[B:].masked_fill(own, float("-inf"))  # (B, 2B): x2 against the candidates
    return s1.argmax(1), s2.argmax(1), ~own.all(1)


def paragram_loss(g1: torch.Tensor, g2: torch.Tensor, margin: float = 0.4, same: torch.Tensor | None = None
                  ) -> torch.Tensor:
    """The batch mean of the two hinge terms (module docstring) for pairs with phrase vectors
    ``g1``, ``g2`` (B, D), negatives by :func:`max_negatives`."""
    t1, t2, has = max_negatives(g1.detach(), g2.detach(), same)
    phrases = torch.cat([g1, g2])  # (2B, D)
    positive = F.cosine_similarity(g1, g2, dim=-1)  # (B,)
    hinge1 = F.relu(margin - positive + F.cosine_similarity(g1, phrases[t1], dim=-1)) * has  # (B,)
    hinge2 = F.relu(margin - positive + F.cosine_similarity(g2, phrases[t2], dim=-1)) * has  # (B,)
    return (hinge1 + hinge2).mean()


class ParagramPhrase(nn.Module):
    """A word-averaging encoder (a FastTextEncoder with ``ngrams=1``) and the word vectors it
    started from (``W_init``, a buffer left out of the checkpoint: a resumed run rebuilds it).
    ``forward(ids, mask, ids_b, mask_b)`` is the batch's loss (module docstring)."""

    def __init__(self, encoder: FastTextEncoder, cfg: ParagramConfig = ParagramConfig()) -> None:
        super().__init__()
        if encoder.cfg.ngrams != 1:
            raise ConfigError(f"fasttext.ngrams must be 1 for Paragram-phrase (the phrase vector is the average "
                              f"of its word vectors), got {encoder.cfg.ngrams}")
        self.encoder, self.cfg = encoder, cfg
        self.register_buffer("init_weight", encoder.embedding.weight.detach().clone(), persistent=False)

    def phrase(self, ids: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T) ids -> (B, D) the average of the words' vectors."""
        mask = ids.ne(self.encoder.cfg.pad_id) if mask is None else mask
        return average(self.encoder(ids, mask).hidden, mask)

    def regularizer(self) -> torch.Tensor:
        return self.cfg.lambda_w * (self.encoder.embedding.weight - self.init_weight).pow(2).sum()

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, ids_b: torch.Tensor, mask_b: torch.Tensor
                ) -> torch.Tensor:
        both, both_mask = join_sides(ids, mask, ids_b, mask_b, self.encoder.cfg.pad_id)  # (2B, T)
        g = self.phrase(both, both_mask)  # (2B, D)
        g1, g2 = g.chunk(2)  # (B, D) each
        loss = paragram_loss(g1, g2, self.cfg.margin, same_phrase(both, both_mask))
        return loss + self.regularizer() if self.cfg.lambda_w else loss


def paraphrase_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """``loss(model, batch)`` for :func:`transferlab.train.fit`."""
    return model(batch["ids"], batch["mask"], batch["ids_b"], batch["mask_b"])


@torch.no_grad()
def phrase_vectors(model: ParagramPhrase, seqs: Sequence[Sequence[int]], batch_size: int = 256) -> np.ndarray:
    """(N, D) float32 phrase vectors of encoded texts, in their order (eval mode)."""
    was = model.training
    model.eval()
    device = model.encoder.embedding.weight.device
    out = np.zeros((len(seqs), model.encoder.dim), dtype=np.float32)
    try:
        for start in range(0, len(seqs), batch_size):
            batch = pad_batch(seqs[start : start + batch_size], model.encoder.cfg.pad_id)  # (b, T)
            vectors = model.phrase(batch["ids"].to(device), batch["mask"].to(device))  # (b, D)
            out[start : start + len(vectors)] = vectors.float().cpu().numpy()
    finally:
        model.train(was)
    return out
