"""``transferlab pretrain mlm|clm``: BERT- and GPT-style pretraining of our Transformer on any corpus.

- ``mlm`` (Devlin et al. 2019): a WordPiece tokenizer trained on the corpus (or the tokenizer of
  ``--init``), the token stream packed into ``[CLS] ... [SEP]`` windows of ``max_len`` (RoBERTa's
  full-sentence packing, Liu et al. 2019, :func:`~transferlab.pretrain.mlm.packed_windows`) and
  masked afresh in every batch (15%, 80/10/10, :class:`~transferlab.pretrain.mlm.MaskedBatches`).
  With ``mlm.nsp=true`` the inputs are instead sentence pairs ``[CLS] a [SEP] b [SEP]`` from
  :func:`~transferlab.pretrain.mlm.nsp_pairs` (a corpus line is a document, split into sentences
  at ., ! and ?), and the NSP loss is added.
- ``clm`` (Radford et al. 2018): a byte-level BPE tokenizer, a causal Transformer, next-token loss
  over contiguous windows of the stream.
- ``--init ENCODER`` continues pretraining a pretrained BERT-shaped model (``minilm-l6``) on new
  text with a fresh MLM head: target-domain LM fine-tuning for Transformers.

The checkpoint keeps the tokenizer and the resolved Transformer config, which is what
``transferlab finetune --encoder transformer --pretrained DIR`` reads.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from transferlab.checkpoint import check_run_folder, has_checkpoint, load_checkpoint
from transferlab.config import from_dict, to_dict, write_json
from transferlab.data import catalog
from transferlab.encoders.backbone import SubwordConfig
from transferlab.encoders.transformer import Transformer, TransformerConfig
from transferlab.log import log
from transferlab.pretrain.lm import LanguageModel, LMLoss, LMStream, perplexity
from transferlab.pretrain.mlm import (MaskedBatches, MaskedLM, masked_loss, mlm_loss, nsp_examples, packed_windows,
                                      token_stream)
from transferlab.text.subword import SubwordTokenizer, train_tokenizer
from transferlab.train import TrainConfig, fit


@dataclass(frozen=True)
class CorpusConfig:
    corpus: str = "sotu,shakespeare"  # catalog names or paths, comma-separated
    valid_split: str = "valid"
    batch_size: int = 32
    lower: bool = True


@dataclass(frozen=True)
class MLMConfig:
    p: float = 0.15  # the share of tokens selected for prediction
    nsp: bool = False  # sentence pairs and next-sentence prediction (BERT) instead of packed windows


@dataclass(frozen=True)
class PretrainTransformerConfig:
    objective: Literal["mlm", "clm"] = "mlm"
    data: CorpusConfig = field(default_factory=CorpusConfig)
    init: str = ""  # continue from a pretrained model (minilm-l6, a folder, a hub id); mlm only
    subword: SubwordConfig = field(default_factory=lambda: SubwordConfig(vocab_size=16000))
    transformer: TransformerConfig = field(default_factory=lambda: TransformerConfig(max_len=128))
    mlm: MLMConfig = field(default_factory=MLMConfig)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(lr=5e-4, steps=1000, schedule="linear",
                                                                    warmup=0.06, beta2=0.98, clip=1.0))
    out: str = "runs/mlm"
    resume: bool = False  # continue the run in `out` from its last checkpoint (its tokenizer too)
    overwrite: bool = False  # a run already in `out` is moved aside (OUT.replaced-<time>) and a new one starts

    def __post_init__(self):
        if self.init and self.objective != "mlm":
            raise ValueError("init= continues masked-LM pretraining: use it with `pretrain mlm`")


def tokenizer_and_encoder(cfg: PretrainTransformerConfig) -> tuple[SubwordTokenizer, Transformer]:
    last = Path(cfg.out) / "last"
    if cfg.resume and has_checkpoint(last):  # the run's own tokenizer and shape; fit() restores the weights
        saved = load_checkpoint(last, json_only=True)  # (check_run_folder said from which step)
        tcfg = from_dict(TransformerConfig, saved.config["transformer"])
        return SubwordTokenizer.from_dict(saved.files["tokenizer"]), Transformer(tcfg)
    if cfg.init:
        from transferlab.encoders.hf import load_pretrained

        p = load_pretrained(cfg.init, native=True)
        log(f"continuing from {cfg.init}: {sum(t.numel() for t in p.encoder.parameters()):,} parameters")
        return p.tokenizer, p.encoder
    kind = cfg.subword.kind if cfg.objective == "mlm" else "bpe"
    log(f"training a {kind} tokenizer of {cfg.subword.vocab_size:,} pieces on {cfg.data.corpus}")
    tok = train_tokenizer(catalog.corpus(cfg.data.corpus, "train"), kind, cfg.subword.vocab_size,
                          cfg.subword.min_freq, lower=cfg.data.lower)
    causal = cfg.objective == "clm"
    enc_cfg = dataclasses.replace(cfg.transformer, vocab_size=tok.vocab_size, pad_id=tok.pad_id, causal=causal,
                                  **({"norm": "pre", "embed_norm": False, "type_vocab_size": 0} if causal else {}))
    return tok, Transformer(enc_cfg)


def run(cfg: PretrainTransformerConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the model is built before fit() seeds: the same start per seed
    out = Path(cfg.out)
    check_run_folder(out, cfg.resume, to_dict(cfg), cfg.overwrite, derived=("transformer",))
    tok, encoder = tokenizer_and_encoder(cfg)
    # windows of transformer.max_len tokens, within what the encoder's positions allow (--init)
    width, d, seed = min(cfg.transformer.max_len, encoder.cfg.max_len), cfg.data, cfg.train.seed
    corpus = {s: catalog.corpus(d.corpus, s) for s in ("train", d.valid_split)}
    if cfg.objective == "clm":
        model = LanguageModel(encoder, tok.vocab_size, tie_weights=True)
        streams = {s: token_stream(lines, tok, tok.ids.get("eos", tok.pad_id)) for s, lines in corpus.items()}
        loss, metric = LMLoss(alpha=0.0, beta=0.0), "valid_ppl"
        batches = lambda epoch: LMStream(streams["train"], d.batch_size, width, seed=seed, epoch=epoch,  # noqa: E731
                                         variable=False)
        evaluate = lambda m: {metric: perplexity(m, LMStream(streams[d.valid_split], 8, width, variable=False))}  # noqa: E731
        n_tokens = len(streams["train"])
    else:
        model = MaskedLM(encoder, tok.vocab_size, nsp=cfg.mlm.nsp)
        if cfg.mlm.nsp:
            sets = {s: nsp_examples(lines, tok, width, seed) for s, lines in corpus.items()}
            kw = {s: {"type_ids": v[1], "nsp_labels": v[2]} for s, v in sets.items()}
            seqs = {s: v[0] for s, v in sets.items()}
        else:
            cls, sep = tok.ids["cls"], tok.ids["sep"]
            seqs = {s: packed_windows(token_stream(lines, tok, sep), width, cls, sep) for s, lines in corpus.items()}
            kw = {s: {} for s in seqs}
        loss, metric = mlm_loss, "valid_mlm_loss"
        batches = lambda epoch: MaskedBatches(seqs["train"], d.batch_size, tok, cfg.mlm.p, seed=seed,  # noqa: E731
                                              epoch=epoch, **kw["train"])
        evaluate = lambda m: {metric: masked_loss(m, MaskedBatches(  # noqa: E731
            seqs[d.valid_split], 64, tok, cfg.mlm.p, seed=seed, epoch=0, shuffle=False, **kw[d.valid_split]))}
        n_tokens = sum(len(s) for s in seqs["train"])
    log(f"{cfg.objective}: {n_tokens:,} training tokens, {sum(p.numel() for p in model.parameters()):,} parameters")
    start = time.perf_counter()
    result = fit(model, loss, batches, cfg.train, evaluate=evaluate, metric=metric, mode="min", out_dir=out,
                 config=to_dict(cfg) | {"transformer": to_dict(encoder.cfg)}, files={"tokenizer": tok.to_dict()})
    wall = time.perf_counter() - start
    summary = {metric: result.best, "wall_s": wall, "wall_s_total": wall + result.earlier_wall_s,
               "steps": result.step, "train_tokens": n_tokens,
               "tokens_per_s": result.tokens_per_s, "vocab_size": tok.vocab_size,
               "checkpoint": str(out / "best")}
    if cfg.objective == "mlm":
        summary["valid_mlm_ppl"] = math.exp(result.best) if result.best is not None else None
    # model FLOPs of a training token (Kaplan et al. 2020: 6 per non-embedding weight plus attention
    # over the window; the MLM head scores only the selected tokens) and the utilisation of the
    # 795 GFLOP/s bf16 matmul peak measured on the 2-core machine
    e = encoder.cfg
    weights = sum(p.numel() for n, p in encoder.named_parameters()
                  if p.dim() >= 2 and "embedding" not in n and "position" not in n)
    head = (cfg.mlm.p if cfg.objective == "mlm" else 1.0) * tok.vocab_size * e.dim
    summary["train_flops_per_token"] = 6.0 * (weights + head + e.n_layers * width * e.dim)
    summary["mfu_vs_795_gflops"] = (result.tokens_per_s or 0.0) * summary["train_flops_per_token"] / 795e9
    write_json(summary, out / "results.json")
    log(f"best {metric} {result.best:.3f} ({wall:.0f} s)")
    return summary
