"""An auxiliary language-model loss while fine-tuning: the task loss plus lambda times an LM loss
on the task's own input text.

Radford et al. 2018 (GPT), section 3.2: fine-tuning optimizes ``L3(C) = L2(C) + lambda * L1(C)``,
the task's loss plus the language-modelling loss on the same inputs, with ``lambda = 0.5``; it
helped on the larger datasets and sped up convergence. Chronopoulou, Baziotis & Potamianos 2019
("An Embarrassingly Simple Approach for Transfer Learning from Pretrained Language Models") do
the same for an LSTM language model fine-tuned as a classifier.

- :class:`LMHead`: a decoder tied to the encoder's input embedding (Press & Wolf 2017), with its
  own bias; for a bidirectional encoder BERT's transform (dense, GELU, layer norm) before it.
- :func:`attach_aux_lm`: puts one on a task model as ``model.aux_lm`` (so it is saved with the
  task model; a predictor loads it but never runs it), starting from the pretrained model's own
  head when the encoder came with one (:attr:`~transferlab.encoders.backbone.Backbone.lm_head`).
- :func:`with_aux_lm`: the fine-tuning loss ``task_loss(model, batch) + lam * lm_loss``, and the
  batches it needs. A causal encoder (the AWD-LSTM, GPT) scores each next token of ``ids``; a
  bidirectional one (BERT, MiniLM) the 15% of the pieces that BERT's corruption picks (80%
  ``[MASK]``, 10% a random piece, 10% unchanged: :func:`~transferlab.pretrain.mlm.mask_tokens`),
  in a second pass over the corrupted copy ``lm_ids``; the copy is drawn per batch from a
  generator seeded by (seed, epoch, batch), so a resumed run corrupts the same pieces.

The LM pass calls the plain module (``model.encoder``, ``model.aux_lm``): under DDP its
gradients are still averaged, by the same per-parameter hooks as the task pass's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from transferlab import IGNORE_INDEX
from transferlab.checkpoint import unwrap
from transferlab.encoders.backbone import Backbone
from transferlab.encoders.transformer import bert_init
from transferlab.pretrain.lm import linear_cross_entropy
from transferlab.pretrain.mlm import mask_tokens
from transferlab.text.subword import SubwordTokenizer

__all__ = ["LMHead", "attach_aux_lm", "head_group", "with_aux_lm", "MaskedCopies", "next_token_loss",
           "masked_token_loss", "FAMILIES"]

# the families an auxiliary LM loss applies to: a left-to-right LSTM and the Transformers
FAMILIES = ("awd_lstm", "transformer", "hf")


def input_embedding(encoder: nn.Module) -> nn.Embedding:
    """The token embedding of ``encoder``, or of the encoder it wraps (adapters)."""
    module = encoder
    while not isinstance(getattr(module, "embedding", None), nn.Embedding):
        module = getattr(module, "base", None) or getattr(module, "encoder", None)
        if module is None:
            raise ValueError(f"{type(encoder).__name__} has no token embedding to tie an LM decoder to")
    return module.embedding


class LMHead(nn.Module):
    """Hidden states ``(N, D)`` -> the LM loss over the vocabulary: ``[transform ->] decoder``.

    The decoder's weight is the encoder's input embedding, read at call time and not registered
    here (the checkpoint keeps it once, under the encoder; under gradual unfreezing it trains
    with the embedding's group, not the head's); the head owns the bias and, for a masked LM,
    BERT's transform, with MaskedLM's names (``transform.0`` dense, ``transform.2`` norm)."""

    def __init__(self, embedding: nn.Embedding, masked: bool, layer_norm_eps: float = 1e-12):
        super().__init__()
        d, vocab = embedding.embedding_dim, embedding.num_embeddings
        self._tied = (embedding,)  # a tuple: not a registered submodule
        self.transform = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.LayerNorm(d, eps=layer_norm_eps)) \
            if masked else None
        if self.transform is not None:
            self.transform.apply(bert_init)  # as BERT initialises its MLM head
        self.bias = nn.Parameter(torch.zeros(vocab))

    def load_pretrained(self, weights: dict[str, torch.Tensor]) -> list[str]:
        """The pretrained head's own weights (``transform.*``, ``decoder.bias``, as a ``pretrain
        mlm|clm|lm`` checkpoint names them); returns the names taken."""
        mine = self.state_dict()
        own = {"decoder.bias": "bias"} | {k: k for k in mine if k.startswith("transform.")}
        taken = {own[k]: v for k, v in weights.items() if k in own and v.shape == mine[own[k]].shape}
        self.load_state_dict(taken, strict=False)
        return sorted(taken)

    def loss(self, hidden: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """Mean cross-entropy of ``hidden (N, D)`` against ``labels (N,)`` (``IGNORE_INDEX`` skipped),
        the (N, V) logits never held whole; 0 when no label counts."""
        x = self.transform(hidden) if self.transform is not None else hidden
        return linear_cross_entropy(x, self._tied[0].weight, self.bias, labels)


def _encode(encoder: nn.Module, ids: torch.Tensor, mask: torch.Tensor, type_ids: torch.Tensor | None):
    if type_ids is not None and getattr(encoder, "takes_type_ids", False):
        return encoder(ids, mask, type_ids)
    return encoder(ids, mask)


def next_token_loss(encoder: nn.Module, head: LMHead, batch: dict) -> torch.Tensor:
    """GPT's L1 on the batch's own ``ids``: position t predicts the piece at t + 1 (padding unscored)."""
    ids, mask = batch["ids"], batch["mask"]
    hidden = _encode(encoder, ids, mask, batch.get("type_ids")).hidden[:, :-1]  # (B, T-1, D)
    labels = ids[:, 1:].masked_fill(~mask[:, 1:], IGNORE_INDEX)  # (B, T-1)
    return head.loss(hidden.reshape(-1, hidden.size(-1)), labels.reshape(-1))  # (B*(T-1), D)


def masked_token_loss(encoder: nn.Module, head: LMHead, batch: dict) -> torch.Tensor:
    """BERT's MLM loss on the corrupted copy ``lm_ids`` of the batch: the selected pieces only."""
    select = batch["lm_labels"] != IGNORE_INDEX  # (B, T)
    hidden = _encode(encoder, batch["lm_ids"], batch["mask"], batch.get("type_ids")).hidden
    return head.loss(hidden[select], batch["lm_labels"][select])  # (N, D), (N,)


def _layer_norm_eps(encoder: nn.Module) -> float:
    """The encoder's layer-norm epsilon (ours: ``cfg``; a Hugging Face model's: ``model.config``)."""
    cfg = getattr(encoder, "cfg", None) or getattr(getattr(encoder, "model", None), "config", None)
    return float(getattr(cfg, "layer_norm_eps", 1e-12))


def attach_aux_lm(model: nn.Module, b: Backbone) -> LMHead:
    """A new :class:`LMHead` on ``model`` (a task model with an ``encoder``) as ``model.aux_lm``:
    a masked LM's for a bidirectional encoder, a next-token decoder for a causal one; the
    pretrained model's own head weights where ``b`` carries them (``b.lm_head``)."""
    if b.family not in FAMILIES:
        raise ValueError(f"--aux_lm adds a language-model loss on the task's text: it applies to "
                         f"{', '.join(FAMILIES[:2])} and Hugging Face encoders, not {b.family}")
    embedding = input_embedding(model.encoder)
    head = LMHead(embedding, masked=not b.causal, layer_norm_eps=_layer_norm_eps(b.encoder))
    head.to(embedding.weight.device)
    if b.lm_head:
        head.load_pretrained(b.lm_head)
    model.aux_lm = head
    return head


def head_group(model: nn.Module) -> nn.Module:
    """The top layer group of a fine-tuning run: the task head, with the auxiliary LM head's own
    weights beside it when there is one (its tied decoder weight stays the embedding's)."""
    aux = getattr(model, "aux_lm", None)
    return model.head if aux is None else nn.ModuleList([model.head, aux])


class MaskedCopies:
    """An epoch's batches, each given ``lm_ids`` and ``lm_labels (B, T)``: BERT's corruption of its
    ``ids`` (special tokens and padding never selected), deterministic in (seed, epoch, batch)."""

    def __init__(self, batches: Iterable[dict], tok: SubwordTokenizer, seed: int, epoch: int, p: float = 0.15):
        if "mask" not in tok.ids:
            raise ValueError("--aux_lm on a bidirectional encoder masks pieces, but its tokenizer has no mask token")
        self.batches, self.tok, self.seed, self.epoch, self.p = batches, tok, seed, epoch, p
        self.special_ids = torch.tensor(sorted(set(tok.ids.values())))

    def __len__(self) -> int:
        return len(self.batches)  # type: ignore[arg-type]

    def __iter__(self):
        g = torch.Generator()
        for i, batch in enumerate(self.batches):
            g.manual_seed(self.seed * 1_000_003 + self.epoch * 10_007 + i)  # MaskedBatches' seeding
            special = ~batch["mask"] | torch.isin(batch["ids"], self.special_ids)
            batch["lm_ids"], batch["lm_labels"] = mask_tokens(batch["ids"], special, self.tok.ids["mask"],
                                                              self.tok.vocab_size, self.p, generator=g)
            yield batch


def with_aux_lm(task_loss: Callable, batches: Callable[[int], Iterable[dict]], b: Backbone, lam: float,
                seed: int) -> tuple[Callable, Callable[[int], Iterable[dict]]]:
    """``(loss, batches)`` for ``fit``: ``task_loss + lam * LM loss`` on each batch's own text (the
    model must carry :func:`attach_aux_lm`'s head), and the batches with their masked copies
    where the encoder is bidirectional."""
    masked = not b.causal
    lm_loss = masked_token_loss if masked else next_token_loss

    def loss(model: nn.Module, batch: dict) -> torch.Tensor:
        task = task_loss(model, batch)
        plain = unwrap(model)
        return task + lam * lm_loss(plain.encoder, plain.aux_lm, batch)

    if not masked:
        return loss, batches
    tok = SubwordTokenizer.from_dict(b.files["tokenizer"])
    return loss, lambda epoch: MaskedCopies(batches(epoch), tok, seed, epoch)
