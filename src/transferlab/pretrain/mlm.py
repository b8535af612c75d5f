"""Masked language modelling with next-sentence prediction: BERT's pretraining objectives
(Devlin et al. 2019, section 3.1 and appendix A.1).

- :func:`mask_tokens`: 15% of the non-special tokens are selected for prediction; of those
  80% become ``[MASK]``, 10% a random token, 10% stay unchanged. With ``word_ids`` the
  selection is of whole words (every subword of a selected word is predicted).
- :func:`nsp_pairs`: sentence pairs from documents: half the time the true next sentence
  (label 0, "is next"), half a random sentence of another document (label 1), as in BERT.
- :class:`MaskedLM`: an encoder with BERT's MLM head (dense, GELU, layer norm, decoder tied to
  the token embedding) and NSP head (tanh pooler on the first token, then 2-way linear); it
  puts an MLM head on any encoder that has none (MiniLM) for continued pretraining.
- :func:`mlm_loss`: the objective ``loss(model, batch)``: MLM cross-entropy over the selected
  positions plus, when the batch has ``nsp_labels``, NSP cross-entropy: the two summed.

The batching of ``transferlab pretrain mlm``: :func:`token_stream` (a corpus as one stream of
pieces, also what ``pretrain clm`` reads), :func:`packed_windows` (RoBERTa's full-sentence
packing into ``[CLS] ... [SEP]`` windows), :func:`nsp_examples` (BERT's sentence pairs) and
:class:`MaskedBatches` (padded batches masked afresh each epoch, deterministically);
:func:`masked_loss` is the validation loss.
"""

from __future__ import annotations

import random
import re
from array import array
from collections.abc import Iterable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from transferlab import IGNORE_INDEX
from transferlab.data.batching import Batches
from transferlab.devices import to_device
from transferlab.encoders.backbone import subword_framing
from transferlab.encoders.transformer import bert_init
from transferlab.text.subword import SubwordTokenizer
from transferlab.train import evaluating

__all__ = ["mask_tokens", "nsp_pairs", "MaskedLM", "mlm_loss", "token_stream", "packed_windows", "nsp_examples",
           "MaskedBatches", "masked_loss"]


def mask_tokens(ids: torch.Tensor, special: torch.Tensor, mask_id: int, vocab_size: int, p: float = 0.15,
                generator: torch.Generator | None = None, word_ids: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT's corruption of ``ids (B, T)``; returns ``(inputs, labels)``, labels ``IGNORE_INDEX``
    where nothing is predicted. ``special (B, T)`` bool marks tokens never selected ([CLS],
    [SEP], padding). ``word_ids (B, T)``: the word each subword belongs to (-1 for specials)
    for whole-word masking."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"mask_tokens: p must be in (0, 1), got {p}")
    g = generator
    if word_ids is None:
        selected = (torch.rand(ids.shape, generator=g) < p) & ~special
    else:  # one draw per (sequence, word), spread to the word's subwords
        n_words = int(word_ids.max()) + 1 if word_ids.numel() else 0
        word_draw = torch.rand(ids.size(0), max(n_words, 1), generator=g) < p  # (B, W)
        selected = word_draw.gather(1, word_ids.clamp(min=0)) & (word_ids >= 0) & ~special
    labels = ids.masked_fill(~selected, IGNORE_INDEX)
    u = torch.rand(ids.shape, generator=g)
    to_mask = selected & (u < 0.8)
    to_random = selected & (u >= 0.8) & (u < 0.9)  # and u >= 0.9: left unchanged
    inputs = ids.masked_fill(to_mask, mask_id)
    random_ids = torch.randint(0, vocab_size, ids.shape, generator=g)
    inputs = torch.where(to_random, random_ids, inputs)
    return inputs, labels


def nsp_pairs(documents: Sequence[Sequence[str]], seed: int = 0) -> list[tuple[str, str, int]]:
    """``(sentence_a, sentence_b, label)`` for every sentence that has a successor in its
    document: label 0 with the true next sentence (probability 1/2), else label 1 with a random
    sentence of a different document. Needs at least two documents with sentences."""
    docs = [list(d) for d in documents if len(d) > 0]
    if len(docs) < 2:
        raise ValueError("nsp_pairs: need at least two non-empty documents (negatives come from another one)")
    rng = random.Random(seed)
    out = []
    for d, doc in enumerate(docs):
        for i in range(len(doc) - 1):
            if rng.random() < 0.5:
                out.append((doc[i], doc[i + 1], 0))
            else:
                other = rng.randrange(len(docs) - 1)
                other += other >= d  # any document but this one
                out.append((doc[i], rng.choice(docs[other]), 1))
    return out


class MaskedLM(nn.Module):
    """``encoder`` + BERT's MLM head (tied decoder) and, with ``nsp=True``, its NSP head.
    ``forward(ids, mask, type_ids) -> (mlm_logits (B, T, V), nsp_logits (B, 2) or None)``."""

    def __init__(self, encoder: nn.Module, vocab_size: int, nsp: bool = True, layer_norm_eps: float = 1e-12):
        super().__init__()
        self.encoder = encoder
        d = encoder.dim
        self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d, eps=layer_norm_eps))
        self.decoder = nn.Linear(d, vocab_size)
        nn.init.zeros_(self.decoder.bias)
        emb = encoder.embedding.weight
        if tuple(emb.shape) != (vocab_size, d):
            raise ValueError(f"MaskedLM: the encoder's embedding is {tuple(emb.shape)}, the vocabulary "
                             f"needs ({vocab_size}, {d}): tokenizer and model disagree on vocabulary size")
        self.decoder.weight = emb  # tied, as in BERT
        self.pooler = nn.Sequential(nn.Linear(d, d), nn.Tanh()) if nsp else None
        self.nsp_head = nn.Linear(d, 2) if nsp else None
        for head in (self.transform, self.pooler, self.nsp_head):  # BERT initialises its heads as its encoder
            if head is not None:
                head.apply(bert_init)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None, type_ids: torch.Tensor | None = None,
                select: torch.Tensor | None = None):
        """``select (B, T)`` bool: score only those positions, ``mlm_logits (N_selected, V)``; the
        vocabulary projection of the other 85% would be thrown away by the loss anyway."""
        out = self.encoder(ids, mask, type_ids) if type_ids is not None else self.encoder(ids, mask)
        hidden = out.hidden[select] if select is not None else out.hidden  # (N, D) or (B, T, D)
        logits = self.decoder(self.transform(hidden))  # (N, V) or (B, T, V)
        nsp = self.nsp_head(self.pooler(out.hidden[:, 0])) if self.pooler is not None else None  # (B, 2)
        return logits, nsp


def mlm_loss(model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """MLM cross-entropy over ``labels != IGNORE_INDEX``, plus NSP cross-entropy on
    ``nsp_labels`` when the batch has them (BERT sums the two)."""
    select = batch["labels"] != IGNORE_INDEX
    logits, nsp = model(batch["ids"], batch.get("mask"), batch.get("type_ids"), select=select)
    # a batch with nothing selected (possible for tiny batches) contributes zero, not nan
    loss = F.cross_entropy(logits.float(), batch["labels"][select]) if select.any() else logits.sum() * 0.0
    if "nsp_labels" in batch:
        if nsp is None:
            raise ValueError("mlm_loss: the batch has nsp_labels but the model has no NSP head (nsp=False)")
        loss = loss + F.cross_entropy(nsp.float(), batch["nsp_labels"])
    return loss


# --- batching -----------------------------------------------------------------------------------

def token_stream(lines: Iterable[str], tok: SubwordTokenizer, sep: int, chunk: int = 256) -> torch.Tensor:
    """Every line's pieces followed by ``sep``, encoded in batches, into one int64 tensor."""
    buf, batch = array("q"), []

    def flush():
        for ids in tok.encode_batch(batch):
            buf.extend(ids)
            buf.append(sep)
        batch.clear()

    for line in lines:
        batch.append(line)
        if len(batch) >= chunk:
            flush()
    flush()
    return torch.from_numpy(np.frombuffer(buf, dtype=np.int64).copy())


def packed_windows(stream: torch.Tensor, width: int, cls: int, sep: int) -> list[list[int]]:
    """``[CLS] w [SEP]`` for consecutive windows ``w`` of ``width - 2`` tokens."""
    n = width - 2
    return [[cls, *stream[i:i + n].tolist(), sep] for i in range(0, len(stream) - n // 2, n)]


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def nsp_examples(lines: Iterable[str], tok: SubwordTokenizer, max_len: int, seed: int) -> tuple[list, list, list]:
    """BERT's pair inputs: ids, type ids and NSP labels (0 = the true next sentence)."""
    docs = [[s for s in _SENTENCE_END.split(line) if s.strip()] for line in lines]
    pairs = nsp_pairs(docs, seed=seed)
    framing = subword_framing(tok, causal=False, max_len=max_len)
    a = tok.encode_batch([p[0] for p in pairs])
    b = tok.encode_batch([p[1] for p in pairs])
    encoded = [framing.pair(x, y) for x, y in zip(a, b)]
    return [e.ids for e in encoded], [e.type_ids for e in encoded], [p[2] for p in pairs]


class MaskedBatches:
    """Padded batches of sequences, masked afresh each epoch (dynamic masking), deterministic in
    (seed, epoch, batch): a resumed run sees the same corruption."""

    def __init__(self, seqs, batch_size: int, tok: SubwordTokenizer, p: float, *, seed: int, epoch: int,
                 shuffle: bool = True, type_ids=None, nsp_labels=None):
        extra = {"nsp_labels": nsp_labels} if nsp_labels is not None else None
        seq_extra = {"type_ids": (type_ids, 0)} if type_ids is not None else None
        self.batches = Batches(seqs, batch_size, pad_id=tok.pad_id, extra=extra, seq_extra=seq_extra,
                               shuffle=shuffle, seed=seed, epoch=epoch, drop_last=shuffle and len(seqs) > batch_size)
        self.tok, self.p, self.seed, self.epoch = tok, p, seed, epoch
        self.special_ids = torch.tensor(sorted(set(tok.ids.values())))

    def __len__(self) -> int:
        return len(self.batches)

    def __iter__(self):
        g = torch.Generator()
        for i, batch in enumerate(self.batches):
            g.manual_seed(self.seed * 1_000_003 + self.epoch * 10_007 + i)
            special = ~batch["mask"] | torch.isin(batch["ids"], self.special_ids)
            batch["ids"], batch["labels"] = mask_tokens(batch["ids"], special, self.tok.ids["mask"],
                                                        self.tok.vocab_size, self.p, generator=g)
            yield batch


@torch.no_grad()
def masked_loss(model, batches) -> float:
    device = next(model.parameters()).device
    total, n = 0.0, 0
    with evaluating(model):
        for batch in batches:
            total += float(mlm_loss(model, to_device(batch, device)))
            n += 1
    return total / max(n, 1)
