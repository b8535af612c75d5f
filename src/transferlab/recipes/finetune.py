"""``transferlab finetune``: one recipe for every encoder family and every task shape.

The encoder (:mod:`transferlab.encoders.backbone`: ``awd_lstm``, ``transformer``, or a Hugging
Face model such as ``minilm-l6``) and the task shape (from the data: texts -> classification or
regression, text pairs -> the same on the family's pair framing, tagged words -> sequence
labeling; :mod:`transferlab.tasks.model`) are independent: every combination runs through the
same code below and the same flags. The ULMFiT techniques (Howard & Ruder 2018) apply to any
pretrained encoder through its
``layer_groups()``: discriminative learning rates (``ulmfit.discriminative``, ``ulmfit.decay``),
the configured schedule, slanted triangular by default (``ulmfit.stlr=false`` makes it constant),
and gradual unfreezing (``ulmfit.gradual_unfreeze``), or instead Felbo et al.'s chain-thaw
(``ulmfit.chain_thaw``: the head, each group from the bottom, then all). ``--adapt=adapters``
freezes a Transformer and trains Houlsby et al.'s adapters in its layers, its layer norms and the
head (:mod:`transferlab.adapt.adapters`). For the AWD-LSTM a ``--pretrained`` LM first
goes through target-task LM fine-tuning (:mod:`transferlab.recipes.ulmfit`); our Transformer and
Hugging Face models go through the same stage, masked or causal LM on the task's text, with
``--lm_finetune.enabled=true`` (off by default for them; :mod:`transferlab.recipes.target_lm`).
``--aux_lm=0.5`` adds GPT's auxiliary LM loss to the task loss (:mod:`transferlab.adapt.aux_lm`).
Under ``--adapt=features`` a Transformer's sentence-level head reads the mean over the pieces of
its scalar-mixed layers by default (:data:`FEATURES_POOLING`; ``--task.pooling=first`` for [CLS]).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from transferlab.adapt.adapters import AdaptersConfig, check_base, parameter_share
from transferlab.adapt.aux_lm import attach_aux_lm, head_group, with_aux_lm
from transferlab.adapt.finetune import (chain_thaw_schedule, chain_thaw_stages, freeze_to, param_groups, thaw,
                                        unfreeze_schedule)
from transferlab.checkpoint import check_run_folder, checkpoint_folder, has_checkpoint, load_checkpoint
from transferlab.config import (PRESET_DIR, apply_overrides, from_dict, merge, preset_table, read_toml, to_dict,
                                write_json)
from transferlab.data.batching import Batches
from transferlab.data.examples import PairExample
from transferlab.data.tasks import TaskDataConfig, all_texts, check_labels, load_task
from transferlab.encoders import backbone as bb
from transferlab.encoders.awd_lstm import DROPOUTS, AWDLSTMConfig
from transferlab.encoders.fasttext import FastTextConfig
from transferlab.encoders.registry import ENCODERS, buildable
from transferlab.encoders.taglm import TagLMConfig
from transferlab.encoders.transformer import TransformerConfig
from transferlab.log import log
from transferlab.pretrain.lm import load_lm
from transferlab.recipes.target_lm import finetune_encoder_lm
from transferlab.recipes.ulmfit import LMFinetuneConfig, ULMFiTConfig, finetune_lm, schedule
from transferlab.tasks.classify import ClassifierHeadConfig, classify_loss, regression_loss
from transferlab.tasks.model import (
    Encoded,
    Kind,
    TaskConfig,
    both_orders,
    build_model,
    encode_examples,
    evaluate,
    label_set,
    main_metric,
    task_kind,
)
from transferlab.tasks.parse import ParserConfig, parse_loss
from transferlab.recipes.qa import encode_qa_splits
from transferlab.tasks.qa import QAConfig, is_version2, qa_loss, qa_scores, window_batches
from transferlab.tasks.tag import tag_loss
from transferlab.text.subword import SubwordTokenizer
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.text.vocab import Vocab
from transferlab.train import TrainConfig, fit
from transferlab.vectors.init import init_embedding


@dataclass(frozen=True)
class FinetuneConfig:
    data: TaskDataConfig = field(default_factory=TaskDataConfig)
    text: TextConfig = field(default_factory=TextConfig)
    encoder: str = "awd_lstm"  # awd_lstm | fasttext | transformer | word vectors (glove-6b-50d) | a Hugging Face model
    pretrained: str = ""  # awd_lstm: an LM checkpoint; transformer: an MLM/CLM one; a task model (STILTs); "" = scratch
    # static vectors (glove-6b-50d, a `pretrain word2vec|fasttext|glove` output, a word2vec/GloVe
    # file) for the embedding of an encoder trained from scratch; its dim follows the vectors'
    vectors: str = ""
    # transformer: keep the pretrained checkpoint's tokenizer and shape but start from random
    # weights: the from-scratch control of a transfer experiment, differing only in the weights
    reinit: bool = False
    # the classifier's AWD-LSTM: its dropouts apply in both cases (the LM stage keeps the
    # checkpoint's), its sizes only from scratch (a pretrained encoder keeps its own). fastai's
    # classifier rates; its output_p is the head's input dropout (head.input_p), so 0 here.
    awd_lstm: AWDLSTMConfig = field(default_factory=lambda: AWDLSTMConfig(
        embed_p=0.05, input_p=0.4, hidden_p=0.3, weight_p=0.5, output_p=0.0))
    # the Transformer's: its dropout rates apply in both cases, its shape only from scratch (a
    # pretrained one keeps its own)
    transformer: TransformerConfig = field(default_factory=lambda: TransformerConfig(max_len=256))
    fasttext: FastTextConfig = field(default_factory=FastTextConfig)
    taglm: TagLMConfig = field(default_factory=TagLMConfig)  # --encoder taglm --pretrained BILM (a tagger)
    subword: bb.SubwordConfig = field(default_factory=bb.SubwordConfig)
    scratch_min_freq: int = 1
    cove_trainable: bool = False  # --encoder cove: fine-tune the MT-LSTM too (the paper keeps it frozen)
    # finetune: the whole encoder trains (with the ULMFiT techniques); features: it is frozen and
    # read through ELMo's learned scalar mix of its layers, only the mix and the head train (at
    # train.lr, FEATURES_DEFAULTS unless set), each sequence's layers computed once (up to features_cache_gb);
    # adapters: it is frozen with Houlsby's bottleneck adapters in every layer, and only they, its
    # layer norms and the head train (at ADAPTERS_DEFAULTS' train.lr unless set); the checkpoint
    # keeps only those, with the base model's name and weights hash
    adapt: Literal["finetune", "features", "adapters"] = "finetune"
    adapters: AdaptersConfig = field(default_factory=AdaptersConfig)
    features_cache_gb: float = 4.0
    # the layers the mix reads (0 = the embedding layer), e.g. [0] for CoVe's GloVe part alone; [] = all
    # of the output width
    features_layers: tuple[int, ...] = ()
    lm_finetune: LMFinetuneConfig = field(default_factory=LMFinetuneConfig)
    ulmfit: ULMFiTConfig = field(default_factory=ULMFiTConfig)
    # GPT's auxiliary LM loss (Radford et al. 2018: lambda = 0.5): the task loss plus aux_lm times a
    # language-model loss on the batch's own text (next-token, or BERT's masked LM on a
    # bidirectional encoder: transferlab.adapt.aux_lm); 0 = none
    aux_lm: float = 0.0
    head: ClassifierHeadConfig = field(default_factory=ClassifierHeadConfig)  # the AWD-LSTM's head
    task: TaskConfig = field(default_factory=TaskConfig)
    parser: ParserConfig = field(default_factory=ParserConfig)  # task.kind=parse: the biaffine parser (ud-ewt)
    qa: QAConfig = field(default_factory=QAConfig)  # extractive QA's windows and decoding (squad-v1.1 ...)
    train: TrainConfig = field(default_factory=lambda: TrainConfig(lr=1e-2, epochs=6, schedule="slanted_triangular"))
    out: str = "runs/finetune"
    # `out` holding a finetune run: the same config resumes it; another is refused (the keys named)
    # unless overwrite, which moves the old run aside (OUT.replaced-<time>) and starts over
    overwrite: bool = False

    def __post_init__(self):
        if self.aux_lm < 0:
            raise ValueError(f"aux_lm is the weight of the auxiliary LM loss and must be >= 0, got {self.aux_lm}")
        if self.aux_lm and self.adapt == "features":
            raise ValueError("aux_lm trains the encoder through a language-model loss; under --adapt=features the "
                             "encoder is frozen: use --adapt=finetune (or adapters), or aux_lm=0")


# under --adapt=features only the scalar mix and the head train: a head's rate, not a fine-tuning one
FEATURES_DEFAULTS = {"train": {"lr": 1e-3}}
# and a frozen Transformer's sentence vector is the mean over its pieces of the mixed layers, read
# by one linear layer: [CLS] (and BERT's pooler on it) becomes a summary only by fine-tuning, and
# a pooler on the frozen [CLS] of minilm-l6 plateaued at 76% on SST-2 (issue 22). Sentence-level
# heads read it (token heads ignore it); --task.pooling=first keeps [CLS]
FEATURES_POOLING = {"task": {"pooling": "mean", "pooler": False}}
# under --adapt=adapters new modules train from a near-identity start: Houlsby et al.'s range (1e-4 .. 3e-3)
ADAPTERS_DEFAULTS = {"train": {"lr": 1e-3}}


def load_finetune_config(preset: str | None = None, overrides: list[str] = (),
                         config_file: str | Path | None = None) -> FinetuneConfig:
    """The one resolution of a finetune config (the CLI, ``curve`` and the benchmarks call it),
    each layer over the one before: the dataclass defaults; the encoder family's
    (``configs/defaults_<family>.toml``); the preset; under ``adapt=features`` the features
    learning rate (:data:`FEATURES_DEFAULTS`, and on a Transformer mean pooling,
    :data:`FEATURES_POOLING`); the ``--config`` file; the ``--a.b=value`` overrides.
    The encoder and adapt mode are read from the user's layers first, since they pick the others."""
    preset_data = preset_table(preset, "finetune")
    file_data = read_toml(config_file) if config_file else {}
    chosen = apply_overrides(merge(preset_data, file_data), list(overrides))
    picked = checkpoint_picks(chosen)
    fam = bb.family(str({**chosen, **picked}.get("encoder", "awd_lstm")))
    defaults = PRESET_DIR / f"defaults_{fam}.toml"
    data = merge(read_toml(defaults) if defaults.exists() else {}, preset_data)
    if chosen.get("adapt") == "features":
        data = merge(data, FEATURES_DEFAULTS)
        if fam in ("transformer", "hf"):
            data = merge(data, FEATURES_POOLING)
    if chosen.get("adapt") == "adapters":
        data = merge(data, ADAPTERS_DEFAULTS)
    return from_dict(FinetuneConfig, {**apply_overrides(merge(data, file_data), list(overrides)), **picked})


def checkpoint_picks(chosen: dict) -> dict:
    """What a pretraining checkpoint decides in the user's choices: ``--encoder CKPT`` (a folder of
    ours, as ``probe`` and ``senteval`` take it) means ``--pretrained CKPT`` with the family it
    holds; ``--pretrained CKPT`` without ``--encoder`` fine-tunes a Transformer checkpoint as a
    Transformer, with that family's defaults (the default family, the AWD-LSTM, cannot read it)."""
    encoder, pretrained = chosen.get("encoder"), chosen.get("pretrained")
    if encoder is not None and not pretrained:  # --encoder CKPT: a checkpoint of ours is --pretrained CKPT
        folder, held = _ours(str(encoder))
        return {"encoder": held, "pretrained": str(folder)} if held else {}
    if not pretrained:
        return {}
    folder, held = _ours(str(pretrained))  # a run folder: its best
    takes = held == "transformer" or bb.is_task_model(folder)  # the encoder (and defaults) the checkpoint holds
    return {"pretrained": str(folder)} | ({"encoder": held} if encoder is None and held and takes else {})


def _ours(path: str) -> tuple[Path, str | None]:
    """The checkpoint folder ``path`` names (a run folder: its best) and the family it holds if it
    is a transferlab checkpoint, else None; for a task model the encoder its run fine-tuned
    (``minilm-l6``, ``transformer``, ``awd_lstm`` ...), whose family's defaults then apply."""
    folder = checkpoint_folder(Path(path).expanduser())
    if has_checkpoint(folder) and not bb.is_hf_folder(folder):
        if bb.is_task_model(folder):
            return folder, _fine_tuned(load_checkpoint(folder, json_only=True).config)
        return folder, bb.checkpoint_family(folder)
    return folder, None


def _fine_tuned(task_config: dict) -> str:
    """The encoder a task model's run fine-tuned, from its resolved config (the default family's
    when a config predates the key)."""
    return str(task_config.get("encoder") or "awd_lstm")


# --- the encoder ---------------------------------------------------------------------------------

def build_backbone(cfg: FinetuneConfig, data: dict) -> bb.Backbone:
    """The encoder the recipe fine-tunes: a pretrained model, word vectors, or a family from scratch
    (its embedding from ``--vectors`` if given)."""
    fam = bb.family(cfg.encoder)
    if cfg.pretrained and bb.is_task_model(cfg.pretrained):
        return _task_model_backbone(cfg)
    if fam == "taglm":
        return _taglm_backbone(cfg, data)
    held = bb.checkpoint_family(cfg.pretrained) if cfg.pretrained else None
    only = next((f for f in (fam, held) if f in ENCODERS and ENCODERS[f].pretrained_by), None)
    if only is not None:  # a family that exists only pretrained: ELMo, CoVe, context2vec
        if not cfg.pretrained:
            raise ValueError(f"--encoder {fam} needs --pretrained: a `transferlab {ENCODERS[fam].pretrained_by}` "
                             f"checkpoint")
        return bb.pretrained_backbone(Path(cfg.pretrained), cfg.text, cfg.data.max_len, trainable=cfg.cove_trainable)
    if held in bb.REBUILT:  # a sentence encoder (skip-thought, InferSent, Paragram-phrase): the checkpoint decides
        if fam != held:
            log(f"--pretrained {cfg.pretrained} holds a {held} encoder: fine-tuning that (not --encoder {fam})")
        return bb.pretrained_backbone(Path(cfg.pretrained), cfg.text, cfg.data.max_len)
    wv = _vectors(cfg, fam)
    if fam not in buildable():  # a model that is loaded, never built: a Hugging Face model, word vectors
        return _loaded_backbone(cfg, fam)
    if ENCODERS[fam].tokens == "pieces":  # a tokenizer (the checkpoint's or trained on the task), then the model
        return _transformer_backbone(cfg, data, wv)
    if cfg.reinit:
        raise ValueError(f"reinit=true applies to --encoder transformer, not {cfg.encoder}")
    if cfg.pretrained:
        return _ulmfit_backbone(cfg, fam)
    return _word_backbone(cfg, data, fam, wv)


def _task_model_backbone(cfg: FinetuneConfig) -> bb.Backbone:
    """Intermediate-task training (STILTs, Phang et al. 2018): the encoder a ``finetune`` run
    adapted to one task (``--pretrained TASK_MODEL``) starts another; its head stays behind and the
    new task gets a fresh one. The encoder keeps the tokenizer or vocabulary it was trained with."""
    from transferlab.tasks.loading import load_task_model

    p = load_task_model(cfg.pretrained)
    c = p.config
    adapt, held = c.get("adapt", "finetune"), _fine_tuned(c)
    if adapt != "finetune":
        raise ValueError(f"{cfg.pretrained} was trained with --adapt={adapt}, which leaves its encoder as pretraining "
                         f"left it: start from that encoder ({held}) instead; a task model is a starting point when "
                         f"its encoder was fine-tuned (--adapt=finetune)")
    if cfg.reinit:
        raise ValueError(f"reinit=true discards the weights of --pretrained {cfg.pretrained}: leave one of them out")
    if bb.family(cfg.encoder) != bb.family(held):
        raise ValueError(f"{cfg.pretrained} holds a fine-tuned {held} encoder, not --encoder {cfg.encoder}: leave "
                         f"--encoder out (or name {held})")
    was = c.get("data", {}).get("task") or c.get("data", {}).get("train") or "its data"
    log(f"starting from the encoder of {cfg.pretrained} (a {p.kind} model of {held} on {was}); its head stays "
        f"behind, the new task gets a fresh one (intermediate-task training)")
    if p.backbone.family == "awd_lstm" and cfg.lm_finetune.enabled:
        log("no target-task LM stage: a task model keeps no language-model head")
    return p.backbone


def _taglm_backbone(cfg: FinetuneConfig, data: dict) -> bb.Backbone:
    """TagLM: a tagger of its own on the task's words, the frozen biLM (or CoVe MT-LSTM) of
    ``--pretrained`` inside."""
    if cfg.taglm.use_lm and (not cfg.pretrained or bb.checkpoint_family(cfg.pretrained) not in ("elmo", "cove")):
        raise ValueError("--encoder taglm needs --pretrained: a `transferlab pretrain bilm` checkpoint (ELMo), or "
                         "a `pretrain mt` one (CoVe), or --taglm.use_lm=false for the baseline tagger without one")
    if not cfg.taglm.use_lm and cfg.pretrained:
        raise ValueError("--taglm.use_lm=false is the tagger without a biLM: leave --pretrained out")
    wv = None
    if cfg.vectors:
        from transferlab.vectors.keyed import load_vectors

        wv = load_vectors(cfg.vectors)
    b = bb.taglm_backbone(cfg.pretrained, cfg.taglm, all_texts(data["train"]), cfg.text, cfg.data.max_len,
                          cfg.scratch_min_freq, wv.dim if wv is not None else None)
    if wv is not None:
        vocab = Vocab.from_dict(b.files["vocab"])
        specials = [vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id]
        log(str(init_embedding(b.encoder.embedding, vocab.itos, wv, skip=specials, seed=cfg.train.seed)))
    return b


def _loaded_backbone(cfg: FinetuneConfig, fam: str) -> bb.Backbone:
    if fam == "static":  # word vectors as the encoder: frozen under --adapt=features, trained otherwise
        from transferlab.vectors.keyed import load_vectors

        return bb.static_backbone(load_vectors(cfg.encoder), cfg.text, trainable=cfg.adapt == "finetune")
    return bb.hf_backbone(cfg.encoder, cfg.data.max_len)


def _vectors(cfg: FinetuneConfig, fam: str):
    """The ``--vectors`` an encoder trained from scratch starts its embedding from, or None."""
    if not cfg.vectors:
        return None
    if cfg.pretrained or fam not in buildable():
        raise ValueError(f"--vectors initializes the embedding of an encoder trained from scratch; "
                         f"{cfg.pretrained or cfg.encoder} brings its own")
    from transferlab.vectors.keyed import load_vectors

    wv = load_vectors(cfg.vectors)
    log(f"{cfg.vectors}: {len(wv):,} vectors of {wv.dim} dimensions")
    return wv


def _transformer_backbone(cfg: FinetuneConfig, data: dict, wv) -> bb.Backbone:
    tcfg = cfg.transformer if wv is None else dataclasses.replace(cfg.transformer, dim=wv.dim)
    b = bb.transformer_backbone(tcfg, cfg.subword, cfg.pretrained, all_texts(data["train"]),
                                cfg.text.lower, cfg.data.max_len, reinit=cfg.reinit)
    if wv is not None:  # pieces that are whole words match; continuations (##ing) start random
        tok = SubwordTokenizer.from_dict(b.files["tokenizer"])
        log(str(init_embedding(b.encoder.embedding, tok.pieces(), wv, skip=list(tok.ids.values()),
                               seed=cfg.train.seed)))
    return b


def _ulmfit_backbone(cfg: FinetuneConfig, fam: str) -> bb.Backbone:
    """ULMFiT's stages 1 and 2: the pretrained LM, fine-tuned on the target task's text."""
    if fam != "awd_lstm":
        raise ValueError(f"--pretrained applies to awd_lstm and transformer, not {cfg.encoder}; "
                         f"start a fasttext classifier from vectors with --vectors")
    lm, old_vocab = load_lm(cfg.pretrained)
    text = bb.trained_text(load_checkpoint(cfg.pretrained, json_only=True).config, cfg.text, cfg.pretrained)
    lm, vocab = finetune_lm(lm, old_vocab, tokenizer(text), cfg.lm_finetune, cfg.ulmfit, cfg.data,
                            Path(cfg.lm_finetune.out or Path(cfg.out) / "lm"), to_dict(cfg))
    lm.encoder.set_dropouts(**{name: getattr(cfg.awd_lstm, name) for name in DROPOUTS})
    b = bb.word_backbone(lm.encoder, vocab, text, cfg.data.max_len, pretrained=True)
    return dataclasses.replace(b, lm_head={"decoder.bias": lm.decoder.bias.detach()})  # kept for --aux_lm


def _word_backbone(cfg: FinetuneConfig, data: dict, fam: str, wv) -> bb.Backbone:
    """A word-level family from scratch on the task's vocabulary (awd_lstm, fasttext)."""
    tok = tokenizer(cfg.text)
    vocab = Vocab.build((tok(t) for t in all_texts(data["train"])), min_freq=cfg.scratch_min_freq)
    enc_cfg = getattr(cfg, fam) if wv is None else dataclasses.replace(getattr(cfg, fam), dim=wv.dim)
    encoder = ENCODERS[fam].new(enc_cfg, len(vocab), vocab.pad_id)
    if wv is not None:
        specials = [vocab.pad_id, vocab.unk_id, vocab.bos_id, vocab.eos_id]
        log(str(init_embedding(encoder.embedding, vocab.itos, wv, skip=specials, seed=cfg.train.seed)))
    return bb.word_backbone(encoder, vocab, cfg.text, cfg.data.max_len, pretrained=False, fam=fam)


# --- training ------------------------------------------------------------------------------------

def encode_splits(cfg: FinetuneConfig, data: dict, b: bb.Backbone, kind: Kind, labels: list[str],
                  both: bool) -> dict[str, Encoded]:
    """Every split framed for the backbone; how many sequences were cut is logged."""
    name = cfg.data.train or cfg.data.task
    if kind == "classify":
        check_labels(cfg.data, labels, data)
    sets = {split: encode_examples(b, ex, kind, labels, both, f"{name} {split}") for split, ex in data.items()}
    rule = ("words past the cut get the fallback tag" if kind == "tag" else
            "words past the cut hang from the word before them" if kind == "parse" else
            "longest text first" if isinstance(data["train"][0], PairExample) else "at the end")
    for split, enc in sets.items():
        if enc.n_cut:
            log(f"{split}: {enc.n_cut:,} of {len(enc.seqs):,} sequences cut to {b.framing.max_len} tokens ({rule})")
    return sets


def optimizer_groups(cfg: FinetuneConfig, model, b: bb.Backbone) -> tuple[list, list[dict], bool]:
    """The layer groups (the encoder's, bottom to top, then the head), their optimizer groups with
    discriminative learning rates, and whether gradual unfreezing applies (ULMFiT, section 3.2)."""
    # features: the scalar mix, then the head; --aux_lm: its LM head trains beside the task head
    groups = list(model.encoder.layer_groups()) + [head_group(model)]
    u = cfg.ulmfit
    tuned = b.pretrained and cfg.adapt == "finetune"
    pgroups = param_groups(groups[:-1], cfg.train.lr, u.decay if (u.discriminative and tuned) else 1.0, head=groups[-1])
    if cfg.adapt == "features":
        mixed = model.encoder.used
        log(f"features: the encoder is frozen; a scalar mix of its layers {mixed} (of {model.encoder.n_layers}) "
            f"and the head train")
    if cfg.adapt == "adapters":
        share = parameter_share(model, pgroups)
        log(f"adapters: the encoder is frozen; adapters of size {cfg.adapters.size}, its layer norms and the head "
            f"train: {share['trainable_params']:,} of {share['total_params']:,} parameters "
            f"({100 * share['trainable_share']:.2f}%)")
    return groups, pgroups, u.gradual_unfreeze and tuned


def gradual_unfreezing(groups: list, pgroups: list[dict]):
    """``on_epoch_start`` for ULMFiT's gradual unfreezing: at epoch e the top e+1 layer groups
    train, each group's optimizer entry added when it first thaws (section 3.2)."""
    def on_epoch_start(epoch: int, trainer) -> None:
        n = unfreeze_schedule(epoch, len(groups), True)
        freeze_to(groups, n)
        present = {g.get("name") for g in trainer.optimizer.param_groups}
        for g in pgroups[len(pgroups) - n:]:
            if g["name"] not in present:
                trainer.add_group(g)
    return on_epoch_start


def chain_thawing(groups: list, pgroups: list[dict], epochs_per_stage: int):
    """``on_epoch_start`` for Felbo et al.'s chain-thaw: the groups :func:`chain_thaw_schedule`
    names for the epoch train, the others are frozen; each group's optimizer entry is added when
    it first thaws."""
    def on_epoch_start(epoch: int, trainer) -> None:
        which = chain_thaw_schedule(epoch, len(groups), epochs_per_stage)
        thaw(groups, which)
        present = {g.get("name") for g in trainer.optimizer.param_groups}
        for i in which:
            if pgroups[i]["name"] not in present:
                trainer.add_group(pgroups[i])
    return on_epoch_start


def thawing(cfg: FinetuneConfig, b: bb.Backbone, groups: list, pgroups: list[dict], unfreeze: bool):
    """The optimizer groups ``fit`` starts with, its ``on_epoch_start`` and its train config: ULMFiT's
    gradual unfreezing, Felbo et al.'s chain-thaw (``ulmfit.chain_thaw``, whose stages set the
    epochs) or neither (every group from the start)."""
    train = schedule(cfg.train, cfg.ulmfit) if b.pretrained else cfg.train
    u = cfg.ulmfit
    if not u.chain_thaw:
        return ([pgroups[-1]], gradual_unfreezing(groups, pgroups), train) if unfreeze else (pgroups, None, train)
    if not b.pretrained or cfg.adapt != "finetune":
        raise ValueError(f"ulmfit.chain_thaw fine-tunes a pretrained encoder group by group; it does not apply to "
                         f"{'--adapt=' + cfg.adapt if cfg.adapt != 'finetune' else 'an encoder trained from scratch'}")
    if cfg.train.steps:
        raise ValueError("ulmfit.chain_thaw sets the run's length from its stages (ulmfit.chain_thaw_epochs each): "
                         "leave train.steps at 0")
    stages = chain_thaw_stages(len(groups))
    epochs = stages * u.chain_thaw_epochs
    log(f"chain-thaw: {stages} stages (the head, each of {len(groups) - 1} layer groups from the bottom, then all) "
        f"of {u.chain_thaw_epochs} epoch(s): {epochs} epochs")
    return [pgroups[-1]], chain_thawing(groups, pgroups, u.chain_thaw_epochs), dataclasses.replace(train, epochs=epochs)


def adapter_files(cfg: FinetuneConfig, model, b: bb.Backbone) -> dict:
    """Under ``--adapt=adapters`` the checkpoint's ``adapters.json``: the base model's name (a
    path made absolute) and weights hash; a run resumed on a base that changed is refused."""
    if cfg.adapt != "adapters":
        return {}
    base = cfg.pretrained or b.files["encoder"].get("source") or cfg.encoder
    if Path(base).expanduser().exists():
        base = str(Path(base).expanduser().resolve())
    last = Path(cfg.out) / "last"
    if has_checkpoint(last) and "adapters" in (held := load_checkpoint(last, json_only=True).files):
        check_base(model.encoder, held["adapters"], str(last))
    return {"adapters": model.encoder.describe(base)}


def train_task(cfg: FinetuneConfig, data: dict, b: bb.Backbone) -> dict:
    kind = task_kind(cfg.task, data["train"])
    if kind == "qa":  # questions with contexts: windows and a span head
        return train_qa(cfg, data, b)
    labels = label_set(kind, data["train"])
    both = both_orders(cfg.task, b, kind)
    sets = encode_splits(cfg, data, b, kind, labels, both)
    model = build_model(b, kind, len(labels) if labels else 1, cfg.task, cfg.head, cfg.adapt, cfg.features_cache_gb,
                        cfg.features_layers, parser=cfg.parser, adapters=cfg.adapters)
    train, bs = sets["train"], cfg.data.batch_size
    extra = {} if kind in ("tag", "parse") else {"labels": train.labels}

    def batches(epoch: int) -> Batches:
        return Batches(train.seqs, bs, pad_id=b.pad_id, extra=extra, seq_extra=train.seq_extra,
                       seed=cfg.train.seed, epoch=epoch, drop_last=len(train.seqs) > bs)

    gold = {s: [list(ex.tags) for ex in data[s]] for s in data} if kind == "tag" else data if kind == "parse" else {}

    def score(m, split: str) -> dict:
        return evaluate(m, sets[split], kind, labels, b.pad_id, gold.get(split), cfg.data.eval_batch_size)

    loss = {"classify": classify_loss, "regress": regression_loss, "tag": tag_loss, "parse": parse_loss}[kind]
    task = {"kind": kind, "both_orders": both, "pairs": isinstance(data["train"][0], PairExample)}
    return fit_and_report(cfg, b, model, loss, batches, score, labels, task,
                          {"train_size": len(train.seqs), "truncated": {s: e.n_cut for s, e in sets.items()}})


def train_qa(cfg: FinetuneConfig, data: dict, b: bb.Backbone) -> dict:
    """Fine-tune a span head and its encoder on QA examples; the test split's EM and F1."""
    sets = encode_qa_splits(cfg.qa, data, b)
    version2 = is_version2(data["train"])
    model = build_model(b, "qa", 2, cfg.task, cfg.head, cfg.adapt, cfg.features_cache_gb, cfg.features_layers,
                        adapters=cfg.adapters)
    train, bs, segments = sets["train"], cfg.data.batch_size, b.framing.segments
    task = {"kind": "qa", "both_orders": False, "pairs": True, "version2": version2, "null_threshold": 0.0}

    def batches(epoch: int):
        return window_batches(train, bs, b.pad_id, segments, seed=cfg.train.seed, epoch=epoch,
                              drop_last=len(train.seqs) > bs)

    def score(m, split: str) -> dict:
        """EM and F1; on valid a v2.0 model's null threshold is tuned (and kept in ``task``)."""
        tune = version2 and split == "valid"
        result = qa_scores(m, data[split], sets[split], cfg.qa, b.pad_id, segments, version2,
                           None if tune else task["null_threshold"], cfg.data.eval_batch_size)
        if tune:
            task["null_threshold"] = result["null_threshold"]
        return result

    def keep_threshold() -> None:
        """The last weights' threshold (tuned by the final valid score) into the checkpoint, whatever
        the last save saw."""
        write_json(task, Path(cfg.out) / "last" / "task.json")
        if version2:
            log(f"no-answer threshold {task['null_threshold']:.3f} (tuned on valid), stored in the checkpoint")

    return fit_and_report(cfg, b, model, qa_loss, batches, score, [], task,
                          {"version2": version2, "train_size": len(data["train"]), "train_windows": len(train.seqs)},
                          after_valid=keep_threshold)


def fit_and_report(cfg: FinetuneConfig, b: bb.Backbone, model, loss, batches, score, labels: list, task: dict,
                   sizes: dict, after_valid=None) -> dict:
    """What every task kind shares once its model, batches and scorer exist: GPT's auxiliary LM
    loss (``--aux_lm``), the optimizer groups and unfreezing schedule, ``fit()`` with the valid
    score each epoch, then the summary and the test score in ``results.json``."""
    if cfg.aux_lm:  # the task loss + aux_lm * the LM loss on each batch's own text, from an LM head beside the task's
        attach_aux_lm(model, b)
        loss, batches = with_aux_lm(loss, batches, b, cfg.aux_lm, cfg.train.seed)
    groups, pgroups, unfreeze = optimizer_groups(cfg, model, b)
    fit_groups, on_epoch_start, train_cfg = thawing(cfg, b, groups, pgroups, unfreeze)
    start = time.perf_counter()
    result = fit(model, loss, batches, train_cfg, groups=fit_groups, on_epoch_start=on_epoch_start,
                 evaluate=lambda m: {f"valid_{k}": v for k, v in score(m, "valid").items()
                                     if k not in ("per_type", "positive")},
                 out_dir=cfg.out, config=to_dict(cfg),
                 files={**b.files, "labels": labels, "task": task, **adapter_files(cfg, model, b)})
    valid = score(model, "valid")
    if after_valid:
        after_valid()
    wall = time.perf_counter() - start
    summary = {"kind": task["kind"], "valid": valid, **sizes, "labels": labels,
               "encoder": cfg.encoder if b.family == bb.family(cfg.encoder) else b.family,  # the checkpoint's
               "adapt": cfg.adapt, "pretrained": b.pretrained, **parameter_share(model, pgroups),
               "wall_s": wall, "steps": result.step, "wall_s_total": wall + result.earlier_wall_s,
               "train_examples_per_s": result.examples_per_s, "checkpoint": str(Path(cfg.out) / "last")}
    return report(Path(cfg.out), score(model, "test"), summary, result)


def report(out: Path, test: dict, summary: dict, result) -> dict:
    """The test figures beside the run's summary in ``out/results.json``, and the log lines."""
    summary = {f"test_{k}": v for k, v in test.items()} | summary
    write_json(summary, out / "results.json")
    key = main_metric(summary["kind"], test)
    valid_key = f"valid_{key}"
    scores = [(h["epoch"] + 1, h[valid_key]) for h in result.history if valid_key in h]
    if scores:
        epoch, best = max(scores, key=lambda s: s[1])
        log(f"best {valid_key} {best:.4f} after epoch {epoch} of {len(scores)}; the model kept is the last "
            f"({scores[-1][1]:.4f})")
    positive = f" (F1 {test['f1']:.4f} of the positive class {test['positive']!r})" if "positive" in test else ""
    log(f"test {key} {test[key]:.4f}{positive}  ({summary['wall_s']:.0f} s, "
        f"{result.examples_per_s:.1f} training examples/s)")
    log(f"model written to {out / 'last'}; figures in {out / 'results.json'}")
    return summary


def run(cfg: FinetuneConfig) -> dict:
    torch.manual_seed(cfg.train.seed)  # the encoder and head are built before fit() seeds: same start per seed
    check_run_folder(cfg.out, True, to_dict(cfg), cfg.overwrite)  # never another run's weights under this config
    data = load_task(cfg.data, parsed=cfg.task.kind == "parse")  # a parser reads CoNLL-U as trees
    if not data["train"]:
        raise ValueError(f"{cfg.data.train or cfg.data.task}: no training examples")
    b = build_backbone(cfg, data)
    if cfg.adapt == "adapters" and cfg.lm_finetune.enabled and b.family in ("transformer", "hf"):
        raise ValueError("--adapt=adapters keeps only the adapters and reloads the frozen base by name; the "
                         "target-task LM stage would change that base: set lm_finetune.enabled=false")
    if cfg.lm_finetune.enabled and b.family in ("transformer", "hf"):  # ULMFiT's stage 2 for a Transformer
        with torch.random.fork_rng(devices=[]):  # the head starts alike whether the stage trains or is reused
            b = finetune_encoder_lm(b, cfg.lm_finetune, cfg.ulmfit, cfg.data,
                                    Path(cfg.lm_finetune.out or Path(cfg.out) / "lm"), to_dict(cfg))
    return train_task(cfg, data, b)
