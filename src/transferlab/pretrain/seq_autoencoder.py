"""The sequence autoencoder of Dai and Le (2015), "Semi-supervised Sequence Learning" (NeurIPS):
an LSTM reads a sentence, then reconstructs it word by word from the state it ended in, with the
same weights (the paper shares the encoder's and the decoder's), and the trained LSTM initializes
a classifier (SA-LSTM; the paper's other pretraining, LM-LSTM, is ``pretrain lm``).

Sharing the weights makes the autoencoder a language model over the sentence written twice: for a
sentence ``x_1 .. x_n``, the model reads ``x_1 .. x_n <eos> x_1 .. x_n`` from a zero state and is
scored on predicting ``x_1 .. x_n <eos>`` from the second half only (teacher-forced):

    position   0    ..  n-1     n      n+1  ..  2n
    ids        x_1  ..  x_n     <eos>  x_1  ..  x_n
    labels     -    ..  -       x_1    x_2  ..  <eos>      (- = IGNORE_INDEX)

so reading the first copy is the encoder, and everything it passes to the reconstruction goes
through the LSTM's state at ``<eos>``. Here the LSTM is our AWD-LSTM and the softmax the tied
decoder of :class:`~transferlab.pretrain.lm.LanguageModel`, so a checkpoint is laid out exactly as
a ``pretrain lm`` one (``encoder.*``, ``decoder.*``, the ``awd_lstm`` config, the vocabulary) and
``finetune --encoder awd_lstm --pretrained`` takes it unchanged.

- :func:`autoencoder_batch`: a batch of sentences ``{"ids", "mask"} (B, T)`` -> the doubled
  ``{"ids", "mask", "labels"} (B, 2T + 1)``.
- :class:`SABatches`: :class:`~transferlab.pretrain.context2vec.SentenceBatches` (the corpus's
  sentences of at most ``max_len`` words, bucketed by length), each batch doubled.
- :func:`seq_autoencoder_loss`: ``loss(model, batch)``; no state is carried between batches.
- :func:`reconstruction_scores`: held-out reconstruction perplexity and per-word accuracy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

from transferlab import IGNORE_INDEX
from transferlab.pretrain.context2vec import SentenceBatches
from transferlab.pretrain.lm import LanguageModel
from transferlab.train import evaluating

__all__ = ["autoencoder_batch", "SABatches", "seq_autoencoder_loss", "reconstruction_scores"]

_CHUNK_ELEMENTS = 1 << 24  # held-out logits computed 16M entries (64 MB in fp32) at a time


def autoencoder_batch(batch: dict[str, torch.Tensor], eos_id: int, pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded sentences ``ids (B, T)``, ``mask (B, T)`` -> each written twice (see the module
    docstring): ``ids (B, 2T + 1)``, ``mask`` (True on the ``2n + 1`` real positions of a sentence
    of ``n`` words) and ``labels``: the second copy and its ``<eos>``, IGNORE_INDEX elsewhere."""
    ids, mask = batch["ids"], batch["mask"]
    B, T = ids.shape
    n = mask.sum(1, keepdim=True)  # (B, 1) words per sentence
    # one sentence and its end, then padding: ext[b, k] = x_k (k < n), <eos> (k = n), <pad> (k > n)
    ext = torch.cat([ids.masked_fill(~mask, pad_id), ids.new_full((B, 2), pad_id)], dim=1)  # (B, T + 2)
    ext.scatter_(1, n, eos_id)
    j = torch.arange(2 * T + 2, device=ids.device)[None, :]  # (1, 2T + 2) positions of [x; <eos>; x; <eos>]
    source = torch.where(j <= n, j, j - n - 1).clamp(max=T + 1)  # (B, 2T + 2) index into ext; past 2n+1: <pad>
    doubled = ext.gather(1, source)  # (B, 2T + 2): x_1..x_n <eos> x_1..x_n <eos> <pad>..
    pos = j[:, :-1]  # (1, 2T + 1)
    real = pos < 2 * n + 1  # (B, 2T + 1)
    counted = real & (pos >= n)  # the inputs <eos>, x_1 .. x_n: their next tokens are the reconstruction
    return {
        "ids": doubled[:, :-1].masked_fill(~real, pad_id),  # (B, 2T + 1)
        "mask": real,
        "labels": doubled[:, 1:].masked_fill(~counted, IGNORE_INDEX),  # (B, 2T + 1)
    }


class SABatches:
    """The batches of a :class:`SentenceBatches`, each sentence doubled by :func:`autoencoder_batch`
    (a pure function of the sentences' (seed, epoch), so a resumed run sees the same batches)."""

    def __init__(self, sentences: SentenceBatches, eos_id: int) -> None:
        self.sentences, self.eos_id = sentences, eos_id

    def __len__(self) -> int:
        return len(self.sentences)

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        for batch in self.sentences:
            yield autoencoder_batch(batch, self.eos_id, self.sentences.pad_id)


def seq_autoencoder_loss(model: nn.Module, batch: dict[str, torch.Tensor], samples: int = 0) -> torch.Tensor:
    """``loss(model, batch)`` for :func:`transferlab.train.fit`: the mean cross-entropy of the
    reconstruction (``labels != IGNORE_INDEX``), every sentence from a zero state. ``samples`` > 0
    trains with a sampled softmax of that many draws (as ``pretrain lm`` can); a model that is not a
    :class:`LanguageModel` (a DDP wrapper) gets the full softmax through its logits."""
    ids, labels, mask = batch["ids"], batch["labels"], batch.get("mask")
    if isinstance(model, LanguageModel):  # fused decoder: the (B, T, V) logits are never materialized
        loss, _ = model.next_token_loss(ids, labels, mask, state=None, samples=samples)
        return loss
    logits, _ = model(ids, mask)  # (B, T, V)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), labels.reshape(-1),  # (B*T, V), (B*T,)
                           ignore_index=IGNORE_INDEX)


@torch.no_grad()
def reconstruction_scores(model: LanguageModel, batches: Iterable[dict[str, torch.Tensor]]) -> dict[str, float]:
    """In eval mode, over every reconstructed token of ``batches`` (doubled, as :class:`SABatches`
    gives them; the words and each sentence's closing ``<eos>``): ``ppl``, the exp of the mean
    cross-entropy, and ``accuracy``, how often the most probable word is the right one (teacher
    forced: each prediction sees the true words before it)."""
    device = model.decoder.weight.device
    nll, correct, count = 0.0, 0, 0
    with evaluating(model):
        for batch in batches:
            ids, labels = batch["ids"].to(device), batch["labels"].to(device)
            hidden = model.encoder(ids, batch["mask"].to(device)).hidden  # (B, T, D)
            keep = labels != IGNORE_INDEX
            hidden, labels = hidden[keep], labels[keep]  # (N, D), (N,): the reconstruction only
            rows = max(1, _CHUNK_ELEMENTS // model.decoder.out_features)
            for s in range(0, labels.numel(), rows):
                logits = model.decoder(hidden[s : s + rows]).float()  # (n, V)
                nll += F.cross_entropy(logits, labels[s : s + rows], reduction="sum").item()
                correct += int((logits.argmax(-1) == labels[s : s + rows]).sum())
            count += labels.numel()
    if count == 0:
        raise ValueError("reconstruction_scores: the batches have no sentence")
    return {"ppl": math.exp(nll / count), "accuracy": correct / count}
