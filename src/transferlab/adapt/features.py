"""Feature extraction: a frozen encoder's layers as features, and ELMo's scalar mix over them.

Peters et al. 2018 (ELMo) and Peters, Ruder & Smith 2019 ("To Tune or Not to Tune?"): instead of
updating a pretrained encoder, run it once, frozen, and let the task model read its layers. The
task learns how much of each layer it wants through a scalar mix,
``gamma * sum_j softmax(s)_j * h_j`` (ELMo eq. 1), and only the mix and the task head train.

:func:`word_features` runs an encoder over word-tokenized sentences and returns, for every layer
(embedding output first), one vector per word: the word's first subword or the mean of its
subwords. :func:`cached_word_features` keeps them on disk, one float16 ``.npy`` per layer,
memory-mapped when read back, under a key made of the encoder's identity, the sentences and the
subword rule, so a later run on the same encoder and data (another probe, another task head)
skips the encoder entirely. A cache folder is written under a temporary name and renamed when
complete: an interrupted extraction is never mistaken for a finished one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import nn
from tqdm import tqdm

from transferlab.data.batching import pad_batch
from transferlab.encoders.elmo import ScalarMix

Subword = Literal["first", "mean"]


@dataclass
class WordFeatures:
    """Per layer, one row per word of every sentence (sentence ``i`` is rows
    ``offsets[i]:offsets[i+1]``); ``kept`` is False for words cut off by the model's maximum length
    (their rows are zero)."""

    layers: list[np.ndarray]  # (N_words, D_l) each, float16 (memory-mapped when cached)
    offsets: np.ndarray  # (S+1,) int64
    kept: np.ndarray  # (N_words,) bool

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    def sentence_means(self) -> list[np.ndarray]:
        """Per layer, the mean of each sentence's kept word vectors: (S, D_l) float32."""
        out = []
        counts = np.maximum(np.add.reduceat(self.kept.astype(np.float32), self.offsets[:-1]), 1.0)[:, None]
        for layer in self.layers:
            x = np.asarray(layer, dtype=np.float32) * self.kept[:, None]
            out.append(np.add.reduceat(x, self.offsets[:-1], axis=0) / counts)
        return out


def word_spans(first: Sequence[int], n_pieces: int, positions: Sequence[int], limit: int) -> list[tuple[int, int]]:
    """Framed (start, end) of each kept word's pieces; ``positions`` are the framed first pieces
    and ``limit`` the framed end of the (possibly truncated) pieces."""
    if not positions:
        return []
    shift = positions[0] - first[0]
    ends = list(first[1:]) + [n_pieces]
    return [(p, max(p + 1, min(shift + e, limit))) for p, e in zip(positions, ends)]


def length_batches(lengths: Sequence[int], batch_tokens: int) -> Iterator[list[int]]:
    """Indices longest first, in batches of about ``batch_tokens`` tokens (each padded to its
    first, longest row): the order a frozen encoder reads a set of texts in."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    start = 0
    while start < len(order):
        batch = order[start:start + max(1, batch_tokens // max(lengths[order[start]], 1))]
        start += len(batch)
        yield batch


@torch.no_grad()
def word_features(backbone, sentences: Sequence[Sequence[str]], subword: Subword = "first",
                  batch_tokens: int = 4096, device: str | torch.device = "cpu", progress: bool = True,
                  write=None) -> WordFeatures:
    """Every layer's word vectors of ``sentences`` (lists of words) under ``backbone``'s encoder.

    Sentences run longest first in batches of about ``batch_tokens`` tokens. ``write(layer, rows,
    values)`` receives each batch instead of the arrays being kept (the cache's memmaps: the
    result's ``layers`` is then empty).
    """
    encoder = backbone.encoder.to(device).eval()
    offsets = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sentences], out=offsets[1:])
    kept = np.zeros(int(offsets[-1]), dtype=bool)
    framed = []
    for words in sentences:
        pieces, first = backbone.words(list(words))
        f = backbone.framing.words(pieces, first)
        limit = len(f.ids) - (backbone.framing.end is not None)
        framed.append((f.ids, word_spans(first, len(pieces), f.word_positions or [], limit)))
    arrays: list[np.ndarray] = []
    bar = tqdm(total=len(sentences), desc="encoding", unit=" sentences", disable=None if progress else True,
               mininterval=1.0)
    for batch in length_batches([len(f[0]) for f in framed], batch_tokens):
        padded = pad_batch([framed[i][0] for i in batch], backbone.pad_id)
        out = encoder(padded["ids"].to(device), padded["mask"].to(device))
        rows, index, weights = spans_index(batch, framed, offsets, subword)
        kept[rows] = True
        for j, layer in enumerate(out.layers):
            flat = layer.float().reshape(-1, layer.size(-1))  # (B*T, D)
            values = (torch.zeros(len(rows), flat.size(1), device=flat.device)
                      .index_add_(0, index[0].to(flat.device), flat[index[1].to(flat.device)]
                                  * weights.to(flat.device)[:, None])).cpu().numpy()
            if write is not None:
                write(j, rows, values)
            else:
                if len(arrays) <= j:
                    arrays.append(np.zeros((len(kept), values.shape[1]), dtype=np.float16))
                arrays[j][rows] = values
        bar.update(len(batch))
    bar.close()
    return WordFeatures(arrays, offsets, kept)


def spans_index(batch: list[int], framed: list, offsets: np.ndarray, subword: Subword):
    """For one padded batch: the global word rows it fills, and (row slot, flat position, weight)
    triples that sum each word's first piece (weight 1) or all its pieces (weight 1/n)."""
    width = max(len(framed[i][0]) for i in batch)
    rows, slots, flat, weights = [], [], [], []
    for b, i in enumerate(batch):
        for w, (s, e) in enumerate(framed[i][1]):
            slot = len(rows)
            rows.append(int(offsets[i]) + w)
            span = range(s, s + 1) if subword == "first" else range(s, e)
            slots.extend([slot] * len(span))
            flat.extend(b * width + p for p in span)
            weights.extend([1.0 / len(span)] * len(span))
    return (np.array(rows, dtype=np.int64),
            (torch.tensor(slots, dtype=torch.long), torch.tensor(flat, dtype=torch.long)),
            torch.tensor(weights))


def features_key(identity: str, sentences: Sequence[Sequence[str]], subword: Subword, max_len: int | None) -> str:
    h = hashlib.sha256(f"{identity}\n{subword}\n{max_len}\n".encode())
    for words in sentences:
        h.update(("\t".join(words) + "\n").encode())
    return h.hexdigest()[:24]


def encoder_identity(spec: str) -> str:
    """A name plus, for local files, their sizes and modification times (a retrained checkpoint in
    the same folder is a different encoder)."""
    path = Path(spec).expanduser()
    if not path.exists():
        return spec
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    return spec + "".join(f"|{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)


def cached_word_features(backbone, identity: str, sentences: Sequence[Sequence[str]], cache: str | Path,
                         subword: Subword = "first", device: str | torch.device = "cpu",
                         progress: bool = True) -> tuple[WordFeatures, bool]:
    """:func:`word_features`, stored under ``cache`` (memory-mapped on reading); True when it
    came from the cache."""
    key = features_key(identity, sentences, subword, backbone.framing.max_len)
    folder = Path(cache) / key
    if (folder / "meta.json").is_file():
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        layers = [np.load(folder / f"layer{j}.npy", mmap_mode="r") for j in range(meta["n_layers"])]
        return WordFeatures(layers, np.load(folder / "offsets.npy"), np.load(folder / "kept.npy")), True
    tmp = Path(cache) / f".{key}.{os.getpid()}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    n_words = sum(len(s) for s in sentences)
    maps: list[np.ndarray] = []

    def write(j: int, rows: np.ndarray, values: np.ndarray) -> None:
        if len(maps) <= j:
            maps.append(np.lib.format.open_memmap(tmp / f"layer{j}.npy", mode="w+", dtype=np.float16,
                                                  shape=(n_words, values.shape[1])))
        maps[j][rows] = values

    try:
        done = word_features(backbone, sentences, subword, device=device, progress=progress, write=write)
        for m in maps:
            m.flush()
        np.save(tmp / "offsets.npy", done.offsets)
        np.save(tmp / "kept.npy", done.kept)
        (tmp / "meta.json").write_text(json.dumps({"n_layers": len(maps), "dims": [m.shape[1] for m in maps],
                                                   "n_words": n_words, "n_sentences": len(sentences),
                                                   "subword": subword, "identity": identity[:2000]}),
                                       encoding="utf-8")
        del maps[:]
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return cached_word_features(backbone, identity, sentences, cache, subword, device, progress)[0], False


class FrozenMixEncoder(nn.Module):
    """Feature extraction as an encoder: a frozen ``encoder`` (always in eval mode, no gradients)
    whose layers a learned :class:`ScalarMix` combines into ``hidden``.

    Only the mix trains (and the task head above it). The layers that enter the mix are ``layers``,
    or else all of the encoder's output width (all of them for a Transformer; the embedding and top
    layer of an AWD-LSTM, whose middle layers are wider). Since the encoder is frozen and deterministic, each
    sequence's layers are computed once and kept (float16, up to ``cache_gb``): later epochs and
    evaluations of a sequence already seen cost only the mix and the head.
    """

    def __init__(self, encoder: nn.Module, cache_gb: float = 4.0, layers: Sequence[int] = ()):
        super().__init__()
        self.encoder = encoder
        for p in encoder.parameters():
            p.requires_grad_(False)
        self.dim = encoder.dim
        self.takes_type_ids = getattr(encoder, "takes_type_ids", False)
        device = next(encoder.parameters()).device
        with torch.no_grad():
            probe = encoder.eval()(torch.tensor([[1, 2]], device=device),
                                   torch.ones(1, 2, dtype=torch.bool, device=device))
        self.n_layers = len(probe.layers)
        width = [j for j, layer in enumerate(probe.layers) if layer.size(-1) == self.dim]
        wrong = [j for j in layers if j not in width]
        if wrong:
            raise ValueError(f"--features_layers {list(layers)}: layer(s) {wrong} are not layers of this encoder's "
                             f"output width {self.dim}; choose from {width} (0 = the embedding layer)")
        self.used = sorted(set(layers)) or width
        self.mix = ScalarMix(len(self.used))
        self.cache_bytes = int(cache_gb * 2**30)
        self._cache: dict[bytes, torch.Tensor] = {}
        self._bytes = 0

    def train(self, mode: bool = True) -> FrozenMixEncoder:
        super().train(mode)
        self.encoder.eval()  # no dropout in a feature extractor
        return self

    def layer_groups(self) -> list[nn.Module]:
        return [self.mix]

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None,
                type_ids: torch.Tensor | None = None):
        from transferlab.encoders.base import EncoderOutput

        if mask is None:
            mask = torch.ones_like(ids, dtype=torch.bool)
        return EncoderOutput(self.mix(self.layers(ids, mask, type_ids)), [])

    def layers(self, ids: torch.Tensor, mask: torch.Tensor, type_ids: torch.Tensor | None) -> torch.Tensor:
        """(L, B, T, D) layers of a right-padded batch, from the cache where every row is in it."""
        lengths = mask.sum(1).tolist()
        keys = [ids[i, :n].cpu().numpy().tobytes() + (b"" if type_ids is None else
                                                        b"|" + type_ids[i, :n].cpu().numpy().tobytes())
                for i, n in enumerate(lengths)]
        if all(k in self._cache for k in keys):
            out = torch.zeros(len(self.used), *ids.shape, self.dim, device=ids.device)
            for i, (k, n) in enumerate(zip(keys, lengths)):
                out[:, i, :n] = self._cache[k].to(out.device, torch.float32)
            return out
        with torch.no_grad():
            args = (ids, mask, type_ids) if type_ids is not None and self.takes_type_ids else (ids, mask)
            layers = self.encoder(*args).layers
            out = torch.stack([layers[j].float() for j in self.used])  # (L,B,T,D)
        for i, (k, n) in enumerate(zip(keys, lengths)):
            if k not in self._cache and self._bytes < self.cache_bytes:
                self._cache[k] = out[:, i, :n].to(torch.float16).cpu()
                self._bytes += self._cache[k].numel() * 2
        return out
