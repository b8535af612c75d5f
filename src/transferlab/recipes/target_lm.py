"""Target-task LM fine-tuning for Transformers: ULMFiT's second stage (Howard & Ruder 2018) for our
Transformer and Hugging Face models, before the classifier stage.

ULMFiT fine-tunes its pretrained AWD-LSTM language model on the target task's own text, labels
unused (:func:`transferlab.recipes.ulmfit.finetune_lm`). Here the same stage continues a
Transformer's own pretraining objective on that text, as Sun et al. 2019 ("How to Fine-Tune BERT
for Text Classification?", within-task further pretraining) and Gururangan et al. 2020
(task-adaptive pretraining) do for BERT and RoBERTa:

- a bidirectional encoder: BERT's masked LM (:mod:`transferlab.pretrain.mlm`), the text packed
  into ``[CLS] ... [SEP]`` windows of the classifier's length and 15% of the pieces corrupted
  afresh each epoch (80% ``[MASK]``, 10% random, 10% kept), as ``pretrain mlm`` trains;
- a causal one: next-token LM over contiguous windows of the text (:mod:`transferlab.pretrain.lm`),
  as ``pretrain clm`` trains;

with the pretrained model's own LM head where it shipped one (a ``pretrain mlm|clm`` checkpoint,
a BERT with ``cls.predictions``), else a new one tied to the input embedding (MiniLM). The
stage's length, rate and schedule are ``lm_finetune.train`` (``--lm_finetune.train.steps=N``;
the family defaults set continued pretraining's rate), its text the task's training texts (or
``lm_finetune.text``), its held-out loss read on the task's validation texts where there are
some. The stage's folder (``lm_finetune.out``, else ``<out>/lm``) is reused when complete;
``stage.json`` records what it depends on (:func:`~transferlab.recipes.ulmfit.stage_identity`,
plus the sha256 of the encoder's weights and tokenizer it started from), so a folder that holds
the stage of another encoder, text or setting is refused, not reused.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from pathlib import Path

import torch
from torch import nn

from transferlab.adapt.finetune import param_groups
from transferlab.checkpoint import load_weights
from transferlab.config import write_json
from transferlab.data import catalog
from transferlab.data.tasks import TaskDataConfig, task_texts
from transferlab.encoders.backbone import Backbone
from transferlab.log import log
from transferlab.pretrain.lm import LanguageModel, LMLoss, LMStream, perplexity
from transferlab.pretrain.mlm import MaskedBatches, MaskedLM, masked_loss, mlm_loss, packed_windows, token_stream
from transferlab.recipes.ulmfit import (LMFinetuneConfig, ULMFiTConfig, lm_valid_text, check_stage, schedule,
                                        stage_identity)
from transferlab.text.subword import SubwordTokenizer
from transferlab.train import fit

__all__ = ["finetune_encoder_lm", "lm_model", "starting_point"]

MLM_P = 0.15  # BERT's share of pieces selected for prediction


def starting_point(b: Backbone) -> str:
    """The sha256 of the encoder's weights (names, shapes, bytes) and of its tokenizer: which encoder
    the stage starts from, pretrained or at a seeded random initialization alike."""
    h = hashlib.sha256(json.dumps(b.files["tokenizer"], sort_keys=True).encode())
    for name, t in sorted(b.encoder.state_dict().items()):
        t = t.detach().cpu().contiguous().reshape(-1)
        h.update(f"{name}:{t.dtype}:{t.numel()}".encode())
        h.update(t.view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def lm_model(b: Backbone) -> MaskedLM | LanguageModel:
    """The encoder of ``b`` with an LM head: BERT's MLM head (bidirectional) or a tied decoder
    (causal), its own weights from ``b.lm_head`` where the pretrained model shipped one."""
    vocab = b.encoder.embedding.num_embeddings
    if b.causal:
        model: MaskedLM | LanguageModel = LanguageModel(b.encoder, vocab, tie_weights=True)
    else:
        eps = getattr(getattr(b.encoder, "cfg", None), "layer_norm_eps", 1e-12)
        model = MaskedLM(b.encoder, vocab, nsp=False, layer_norm_eps=eps)
    if b.lm_head:
        own = model.state_dict()
        model.load_state_dict({k: v for k, v in b.lm_head.items() if k in own and v.shape == own[k].shape},
                              strict=False)
    return model


def _head(model: nn.Module) -> nn.Module:
    """The LM head's modules (the decoder's weight is the embedding's: it stays in that group)."""
    return nn.ModuleList([m for name, m in model.named_children() if name != "encoder"])


def _objective(tok: SubwordTokenizer, lines: list[str], valid: list[str] | None, c: LMFinetuneConfig,
               width: int, causal: bool):
    """``(loss, batches(epoch), evaluate, metric, tokens)`` of ``pretrain clm`` or ``pretrain mlm``."""
    seed = c.train.seed
    if causal:
        stream = token_stream(lines, tok, tok.ids.get("eos", tok.pad_id))
        held = token_stream(valid, tok, tok.ids.get("eos", tok.pad_id)) if valid else None
        batches = lambda epoch: LMStream(stream, c.batch_size, width, seed=seed, epoch=epoch,  # noqa: E731
                                         variable=False)
        evaluate = (lambda m: {"valid_ppl": perplexity(m, LMStream(held, c.eval_batch_size, width,  # noqa: E731
                                                                    variable=False))}) if held is not None else None
        return LMLoss(), batches, evaluate, "valid_ppl", len(stream)
    cls, sep = tok.ids["cls"], tok.ids["sep"]
    seqs = packed_windows(token_stream(lines, tok, sep), width, cls, sep)
    if not seqs:
        raise ValueError(f"lm_finetune: the task's text makes no window of {width} pieces to train a masked LM on")
    held = packed_windows(token_stream(valid, tok, sep), width, cls, sep) if valid else None
    batches = lambda epoch: MaskedBatches(seqs, c.batch_size, tok, MLM_P, seed=seed, epoch=epoch)  # noqa: E731
    evaluate = (lambda m: {"valid_mlm_loss": masked_loss(m, MaskedBatches(  # noqa: E731
        held, c.batch_size, tok, MLM_P, seed=seed, epoch=0, shuffle=False))}) if held else None
    return mlm_loss, batches, evaluate, "valid_mlm_loss", sum(len(s) for s in seqs)


def _adapted(b: Backbone, model: nn.Module, out: Path) -> Backbone:
    """``b`` with the stage's weights loaded (its best checkpoint, else its last) and its LM head kept."""
    load_weights(model, out / "best" if (out / "best").exists() else out / "last")
    head = {k: v.detach().clone() for k, v in model.state_dict().items()
            if not k.startswith("encoder.") and k != "decoder.weight"}
    return dataclasses.replace(b, lm_head=head)


def finetune_encoder_lm(b: Backbone, c: LMFinetuneConfig, u: ULMFiTConfig, data: TaskDataConfig, out: Path,
                        config: dict) -> Backbone:
    """Continue ``b``'s encoder's LM objective on the task's text (or ``c.text``) into ``out``, or
    reuse ``out`` when it holds this stage complete; ``b`` with its encoder adapted (in place) and
    the stage's LM head (for ``--aux_lm``). ``config`` (the whole run's) is saved with the stage."""
    check_stage(out, stage_identity(config) | {"encoder": starting_point(b)})
    model = lm_model(b)
    kind = "causal LM" if b.causal else "masked LM"
    if (out / "results.json").exists():
        log(f"reusing the target-task {kind} fine-tuning in {out}")
        return _adapted(b, model, out)
    tok = SubwordTokenizer.from_dict(b.files["tokenizer"])
    lines = list(catalog.corpus(c.text, "train") if c.text else task_texts(data, "train", data.train))
    width = b.framing.max_len or 128
    loss, batches, evaluate, metric, tokens = _objective(tok, lines, lm_valid_text(c, data), c, width, b.causal)
    log(f"target-task {kind} fine-tuning: {tokens:,} pieces of the task's text in windows of {width}")
    pgroups = param_groups(list(b.encoder.layer_groups()), c.train.lr, u.decay if u.discriminative else 1.0,
                           head=_head(model))
    start = time.perf_counter()
    result = fit(model, loss, batches, schedule(c.train, u), groups=pgroups, evaluate=evaluate,
                 metric=metric if evaluate else None, mode="min", out_dir=out, config=config,
                 files={"tokenizer": tok.to_dict()})
    write_json({"objective": kind, "wall_s": time.perf_counter() - start, "steps": result.step, "tokens": tokens,
                metric: result.best}, out / "results.json")
    return _adapted(b, model, out)
