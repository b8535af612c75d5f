"""Batching: token-id sequences -> padded ``ids``/``mask`` tensors, in length-sorted buckets.

Sorting examples of similar length into the same batch (fastai's ``SortishSampler``, the
Trainer's ``group_by_length``) wastes little compute on padding; shuffling the buckets keeps
the order random. Everything is a pure function of (seed, epoch), so a resumed run sees the
same batches.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch


def pad_rows(seqs: Sequence[Sequence[int]], width: int, value: int) -> torch.Tensor:
    """Lists of ints -> a (B, width) long tensor, right-padded with ``value`` (rows cut at width)."""
    out = torch.full((len(seqs), width), value, dtype=torch.long)
    for i, s in enumerate(seqs):
        n = min(len(s), width)
        out[i, :n] = torch.as_tensor(s[:n], dtype=torch.long)
    return out


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int = 0, max_len: int | None = None
              ) -> dict[str, torch.Tensor]:
    """Right-pad token-id lists into ``ids (B,T)`` and ``mask (B,T)`` (True = real token)."""
    lengths = [min(len(s), max_len or len(s)) for s in seqs]
    width = max(1, max(lengths))
    mask = torch.arange(width)[None, :] < torch.as_tensor(lengths)[:, None]
    return {"ids": pad_rows(seqs, width, pad_id), "mask": mask}


def bucket_order(lengths: Sequence[int], batch_size: int, *, seed: int = 0, epoch: int = 0,
                 shuffle: bool = True, bucket: int = 50) -> list[list[int]]:
    """Batches of example indices, grouped by length.

    With ``shuffle``: indices are shuffled, cut into chunks of ``bucket`` batches, sorted by
    length inside each chunk, batched, and the batches shuffled. Without: sorted by length
    (fastest for evaluation; callers restore the original order by index).
    """
    idx = list(range(len(lengths)))
    if not shuffle:
        idx.sort(key=lambda i: lengths[i])
        return [idx[i : i + batch_size] for i in range(0, len(idx), batch_size)]
    rng = random.Random(seed * 1_000_003 + epoch)
    rng.shuffle(idx)
    chunk = batch_size * bucket
    batches = []
    for start in range(0, len(idx), chunk):
        part = sorted(idx[start : start + chunk], key=lambda i: lengths[i])
        batches += [part[i : i + batch_size] for i in range(0, len(part), batch_size)]
    rng.shuffle(batches)
    return batches


class Batches:
    """Restartable, deterministic batches over encoded examples, with ``len()`` for progress.

    ``extra`` maps a batch key to one value per example (labels, ...), stacked as a tensor;
    ``seq_extra`` maps a key to (one sequence per example, aligned with ``seqs``, and its pad
    value): ``type_ids``, per-position ``labels``, a pair's swapped ``ids_swapped``, padded like ids.
    """

    def __init__(self, seqs: Sequence[Sequence[int]], batch_size: int, *, pad_id: int = 0,
                 extra: dict[str, Sequence] | None = None, shuffle: bool = True, seed: int = 0,
                 epoch: int = 0, max_len: int | None = None, drop_last: bool = False,
                 seq_extra: dict[str, tuple[Sequence[Sequence[int]], int]] | None = None):
        self.seqs, self.batch_size, self.pad_id = seqs, batch_size, pad_id
        self.extra, self.shuffle, self.seed, self.epoch = extra or {}, shuffle, seed, epoch
        self.seq_extra = seq_extra or {}
        self.max_len, self.drop_last = max_len, drop_last

    def order(self) -> list[list[int]]:
        lengths = [min(len(s), self.max_len or len(s)) for s in self.seqs]
        batches = bucket_order(lengths, self.batch_size, seed=self.seed, epoch=self.epoch,
                               shuffle=self.shuffle)
        if self.drop_last:
            batches = [b for b in batches if len(b) == self.batch_size]
        return batches

    def __len__(self) -> int:
        n = len(self.seqs)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        for index in self.order():
            batch = pad_batch([self.seqs[i] for i in index], self.pad_id, self.max_len)
            for key, values in self.extra.items():
                batch[key] = torch.as_tensor([values[i] for i in index])
            for key, (values, pad) in self.seq_extra.items():
                batch[key] = pad_rows([values[i] for i in index], batch["ids"].size(1), pad)
            batch["index"] = torch.as_tensor(index)
            yield batch
