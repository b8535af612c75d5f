"""The encoder a task model is built on, with how it reads text: one object per encoder family.

``transferlab finetune --encoder NAME`` takes the same flags whatever NAME is:

- ``awd_lstm``: ULMFiT's word-level AWD-LSTM, from a ``pretrain lm`` checkpoint (``--pretrained``,
  through target-task LM fine-tuning, :mod:`transferlab.recipes.ulmfit`) or from scratch;
- ``fasttext``: the fastText classifier's bag of word and n-gram embeddings (Joulin et al. 2017),
  word-level like the AWD-LSTM, from scratch (its embeddings from ``--vectors`` if given);
- ``transformer``: our Transformer, from a ``pretrain mlm|clm`` checkpoint (``--pretrained``) or
  from scratch with a WordPiece/BPE tokenizer trained on the task's text;
- ``cove``: CoVe, the frozen MT-LSTM of a ``pretrain mt`` checkpoint (``--pretrained``) read as
  ``[GloVe; MT-LSTM states]``, a task's words given their GloVe vectors (:func:`cove_backbone`);
- anything else: a pretrained Hugging Face model (``minilm-l6``, a folder, a hub id), through
  :func:`transferlab.encoders.hf.load_pretrained`.

A :class:`Backbone` carries the encoder, a text -> ids function, a words -> (pieces, first-piece
positions) function, the :class:`~transferlab.text.framing.Framing` of the family (BERT's
``[CLS] a [SEP] b [SEP]``, GPT's start/delimiter/extract, the LSTM's words), and the files a
checkpoint needs to rebuild all of it without the original source. What differs between
families is in their :data:`~transferlab.encoders.registry.ENCODERS` entry; a finetune
checkpoint's encoder is loaded by :func:`transferlab.tasks.loading.load_backbone`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from torch import nn

from transferlab.checkpoint import has_checkpoint, load_checkpoint, load_weights
from transferlab.config import from_dict, to_dict
from transferlab.encoders.awd_lstm import AWDLSTMConfig
from transferlab.encoders.context2vec import Context2Vec, Context2VecConfig
from transferlab.encoders.cove import CoVe, CoVeConfig
from transferlab.encoders.elmo import ELMo, ELMoConfig
from transferlab.encoders.fasttext import FastTextConfig
from transferlab.encoders.hf import hf_max_len, load_pretrained
from transferlab.encoders.registry import ENCODERS
from transferlab.encoders.static import StaticEncoder, lookup
from transferlab.encoders.taglm import TagLM, TagLMConfig
from transferlab.encoders.transformer import TransformerConfig
from transferlab.log import log
from transferlab.text.framing import Framing
from transferlab.text.subword import SubwordTokenizer, train_tokenizer
from transferlab.text.tokenize import TextConfig, tokenizer
from transferlab.text.vocab import Vocab


@dataclass(frozen=True)
class SubwordConfig:
    """The tokenizer trained for a Transformer built from scratch."""

    kind: Literal["wordpiece", "bpe"] = "wordpiece"
    vocab_size: int = 8000
    min_freq: int = 2


@dataclass
class Backbone:
    encoder: nn.Module
    family: str  # awd_lstm | fasttext | transformer | hf
    framing: Framing
    pad_id: int
    texts: Callable[[list[str]], list[list[int]]]  # texts -> ids, no specials
    words: Callable[[Sequence[str]], tuple[list[int], list[int]]]  # words -> pieces, first-piece positions
    files: dict  # tokenization and encoder description, for the checkpoint
    causal: bool = False
    pretrained: bool = False
    pooler: dict[str, torch.Tensor] | None = None
    # the pretrained LM head's own weights (``decoder.bias``; a masked LM's ``transform.*``) where the
    # encoder came with one: the target-task LM stage and an auxiliary LM loss start from it
    lm_head: dict[str, torch.Tensor] | None = None


def family(encoder: str) -> str:
    """A registry family (awd_lstm, transformer, fasttext, elmo, taglm ...) by its name; static for
    word vectors; hf for any other name (a Hugging Face model)."""
    if encoder in ENCODERS and encoder not in ("static", "hf"):
        return encoder
    return "static" if is_vectors(encoder) else "hf"


# --- word level (AWD-LSTM, fastText) ----------------------------------------------------------

def word_backbone(encoder: nn.Module, vocab: Vocab, text: TextConfig, max_len: int | None,
                  pretrained: bool, fam: str = "awd_lstm") -> Backbone:
    tok = tokenizer(text)
    norm = str.lower if text.lower else (lambda w: w)

    encode = _open_vocabulary(encoder, vocab) if hasattr(encoder, "add_words") else vocab.encode

    def texts(batch: list[str]) -> list[list[int]]:
        return [encode(tok(t)) or [vocab.unk_id] for t in batch]

    def words(ws: Sequence[str]) -> tuple[list[int], list[int]]:
        return encode([norm(w) for w in ws]), list(range(len(ws)))

    files = {"vocab": vocab.to_dict(), "encoder": {"name": fam, "config": to_dict(encoder.cfg)}, "text": to_dict(text)}
    causal = ENCODERS[fam].causal(files["encoder"], encoder)
    return Backbone(encoder, fam, Framing(delim=vocab.eos_id, max_len=max_len), vocab.pad_id,
                    texts, words, files, causal=causal, pretrained=pretrained)


def _open_vocabulary(encoder: nn.Module, vocab: Vocab) -> Callable[[Sequence[str]], list[int]]:
    """Encoding for an encoder that reads characters (ELMo): a word outside the vocabulary is
    added to the encoder's character table instead of becoming ``<unk>``."""
    extra: dict[str, int] = {}

    def encode(tokens: Sequence[str]) -> list[int]:
        new = [t for t in dict.fromkeys(tokens) if t not in vocab.stoi and t not in extra]
        extra.update(zip(new, encoder.add_words(new)))
        return [vocab.stoi.get(t, extra.get(t, vocab.unk_id)) for t in tokens]

    return encode


# --- subword level (our Transformer, Hugging Face models) --------------------------------------

def subword_framing(tok: SubwordTokenizer, causal: bool, max_len: int | None) -> Framing:
    ids = tok.ids
    if causal:
        start = ids.get("bos", ids.get("cls", ids.get("eos")))
        delim = ids.get("sep", ids.get("eos"))
        return Framing.gpt(start, delim, ids.get("eos", delim), max_len)
    missing = [r for r in ("cls", "sep") if r not in ids]
    if missing:
        raise ValueError(f"the tokenizer has no {' or '.join(missing)} token, needed for BERT-style input")
    return Framing.bert(ids["cls"], ids["sep"], max_len)


def subword_backbone(encoder: nn.Module, tok: SubwordTokenizer, fam: str, files: dict, causal: bool,
                     max_len: int | None, pretrained: bool, pooler=None, lm_head=None) -> Backbone:
    files = {"tokenizer": tok.to_dict(), **files}
    return Backbone(encoder, fam, subword_framing(tok, causal, max_len), tok.pad_id, tok.encode_batch,
                    tok.encode_words, files, causal=causal, pretrained=pretrained, pooler=pooler, lm_head=lm_head)


def limit(data_max_len: int | None, model_max_len: int | None) -> int | None:
    """The tokens kept per sequence: the data's limit within the model's (None: no limit)."""
    if data_max_len is None:
        return model_max_len
    return min(data_max_len, model_max_len) if model_max_len else data_max_len


def load_encoder_weights(encoder: nn.Module, path: str | Path) -> None:
    """The ``encoder.*`` weights of a pretraining checkpoint (its objective's heads left out)."""
    holder = nn.Module()
    holder.encoder = encoder
    missing, _ = load_weights(holder, path, strict=False)
    if missing:
        raise ValueError(f"{path}: the checkpoint lacks encoder weights {missing[:3]} ...; "
                         f"is it a checkpoint of this encoder?")


def transformer_backbone(cfg: TransformerConfig, sub: SubwordConfig, pretrained: str, train_text: Iterable[str],
                         lower: bool, data_max_len: int | None, reinit: bool = False) -> Backbone:
    if reinit and not pretrained:
        raise ValueError("reinit=true needs --pretrained: it keeps that checkpoint's tokenizer and shape")
    lm_head = None
    if pretrained:
        ckpt = load_checkpoint(pretrained)
        if "tokenizer" not in ckpt.files or "transformer" not in ckpt.config:
            raise ValueError(f"{pretrained}: not a Transformer pretraining checkpoint "
                             f"(no tokenizer.json or transformer config)")
        tok = SubwordTokenizer.from_dict(ckpt.files["tokenizer"], f"{pretrained}/tokenizer.json")
        # the checkpoint's shape with this run's dropout rates: pretraining may run without dropout
        # (Geiping & Goldstein 2022) and fine-tuning with BERT's 0.1
        cfg = dataclasses.replace(from_dict(TransformerConfig, ckpt.config["transformer"], "transformer."),
                                  dropout=cfg.dropout, attn_dropout=cfg.attn_dropout)
        encoder = ENCODERS["transformer"].module(cfg)
        if reinit:
            log(f"{pretrained}: its tokenizer and shape, random weights (reinit=true)")
        else:
            load_encoder_weights(encoder, pretrained)
            # pretrain mlm's head (BERT's transform, the tied decoder's bias) or pretrain clm's bias
            lm_head = {k: v for k, v in ckpt.weights.items() if k.startswith("transform.") or k == "decoder.bias"}
    else:
        tok = train_tokenizer(train_text, sub.kind, sub.vocab_size, sub.min_freq, lower=lower)
        log(f"trained a {sub.kind} tokenizer of {tok.vocab_size:,} pieces on the task's text")
        encoder = ENCODERS["transformer"].new(cfg, tok.vocab_size, tok.pad_id)
        cfg = encoder.cfg
    files = {"encoder": {"name": "transformer", "config": to_dict(cfg)}}
    return subword_backbone(encoder, tok, "transformer", files, cfg.causal, limit(data_max_len, cfg.max_len),
                            pretrained=bool(pretrained) and not reinit, lm_head=lm_head or None)


def hf_backbone(name: str, data_max_len: int | None) -> Backbone:
    p = load_pretrained(name)
    if p.native:
        cfg = p.encoder.cfg
        files = {"encoder": {"name": "transformer", "config": to_dict(cfg), "source": p.source}}
        model_max = cfg.max_len
    else:
        files = {"encoder": {"name": "hf", "hf_config": p.hf_config, "source": p.source}}
        model_max = hf_max_len(p.hf_config)
    log(f"{name}: {'our Transformer with its weights' if p.native else 'Hugging Face AutoModel'}, "
        f"{sum(t.numel() for t in p.encoder.parameters()):,} parameters")
    return subword_backbone(p.encoder, p.tokenizer, "hf", files, p.causal, limit(data_max_len, model_max),
                            pretrained=True, pooler=p.pooler, lm_head=p.lm_head)


def rebuild_backbone(files: dict, text: TextConfig, data_max_len: int | None) -> Backbone:
    """The backbone of a saved task model: its encoder's shape (weights loaded by the caller) and
    its tokenization."""
    data_max_len = data_max_len or None  # checkpoints written before max_len was int | None say 0
    text = recorded_text(files, text)  # the tokenization the backbone used (older checkpoints: the run's --text.*)
    spec = files["encoder"]
    fam = ENCODERS[spec["name"]]
    encoder = fam.rebuild(spec, files)
    if fam.tokens == "vectors":
        return static_backbone(None, text, encoder=encoder, vocab=Vocab.from_dict(files["vocab"]))
    if fam.tokens == "words":
        return word_backbone(encoder, Vocab.from_dict(files["vocab"]), text, data_max_len, True,
                             fam=spec["name"])
    tok = SubwordTokenizer.from_dict(files["tokenizer"])
    return subword_backbone(encoder, tok, spec["name"], {"encoder": spec}, fam.causal(spec, encoder),
                            limit(data_max_len, fam.max_len(spec, encoder)), pretrained=True)


# --- static vectors (a 0-layer encoder) -------------------------------------------------------

def static_backbone(wv, text: TextConfig, trainable: bool = False, encoder=None, vocab: Vocab | None = None
                    ) -> Backbone:
    """Word vectors behind the Encoder contract: words looked up as written, then lower-cased
    (``encoder`` and ``vocab`` instead of ``wv`` when rebuilding a saved task model)."""
    if encoder is None:
        encoder, vocab = StaticEncoder.from_vectors(wv, trainable)
    trainable = encoder.embedding.weight.requires_grad
    tok = tokenizer(text)

    def texts(batch: list[str]) -> list[list[int]]:
        return [lookup(vocab, tok(t)) or [vocab.unk_id] for t in batch]

    def words(ws: Sequence[str]) -> tuple[list[int], list[int]]:
        return lookup(vocab, ws), list(range(len(ws)))

    files = {"vocab": vocab.to_dict(), "text": to_dict(text),
             "encoder": {"name": "static", "config": {"dim": encoder.dim, "trainable": trainable}}}
    return Backbone(encoder, "static", Framing(max_len=None), vocab.pad_id, texts, words, files, pretrained=True)


def is_vectors(spec: str) -> bool:
    """Whether ``spec`` names static word vectors: a catalog vectors entry, a WordVectors or
    glove-npy folder, or a word2vec/GloVe file."""
    from transferlab.data import catalog
    from transferlab.vectors.formats import is_glove_npy

    path = Path(spec).expanduser()
    if path.is_dir():
        return (path / "vectors.safetensors").is_file() or is_glove_npy(path)
    if path.is_file():
        return path.suffix.lower() in (".txt", ".vec", ".bin")
    try:
        return catalog._entry(spec)[1].kind == "vectors"
    except Exception:  # not a catalog name: a Hugging Face model
        return False


# --- pretrained or random encoders, for analysis (probing) and feature extraction ---------------

@dataclass(frozen=True)
class ScratchConfig:
    """The sizes of an encoder probed at random initialization (``--encoder awd_lstm``)."""

    awd_lstm: AWDLSTMConfig = dataclasses.field(default_factory=lambda: AWDLSTMConfig(
        dim=400, hidden_dim=1150, n_layers=3, embed_p=0.0, input_p=0.0, hidden_p=0.0, weight_p=0.0, output_p=0.0))
    transformer: TransformerConfig = dataclasses.field(default_factory=TransformerConfig)
    subword: SubwordConfig = dataclasses.field(default_factory=SubwordConfig)
    fasttext: FastTextConfig = dataclasses.field(default_factory=FastTextConfig)


def is_hf_folder(path: Path) -> bool:
    """A saved Hugging Face model (its config.json names a ``model_type``), not our checkpoint."""
    try:
        return "model_type" in json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


def is_task_model(path: str | Path) -> bool:
    """A ``finetune`` checkpoint (a task model: its labels and task kind beside the weights)."""
    return (Path(path) / "task.json").is_file() and (Path(path) / "labels.json").is_file()


def checkpoint_family(path: str | Path) -> str | None:
    """The encoder family a pretraining checkpoint holds (awd_lstm, elmo, transformer), or None
    (for a task model too: its config names every family's settings)."""
    if is_task_model(path):
        return None
    try:
        config = json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    return next((fam for fam in ("elmo", "cove", "context2vec", *REBUILT, "awd_lstm", "transformer") if fam in config),
                None)


# families a pretraining checkpoint holds whole under their own name, rebuilt from its description
# (sentence_rnn: skip-thought, quick-thought, InferSent, GenSen; fasttext: Paragram-phrase)
REBUILT = ("sentence_rnn", "fasttext")


def load_bilm(path: str | Path) -> tuple[ELMo, Vocab, dict]:
    """The ELMo encoder of a ``pretrain bilm`` checkpoint (its softmax left out), its vocabulary
    and the run's config."""
    ckpt = load_checkpoint(path, json_only=True)
    if "vocab" not in ckpt.files or "elmo" not in ckpt.config:
        raise ValueError(f"{path}: not a `transferlab pretrain bilm` checkpoint (no elmo config and vocabulary)")
    vocab = Vocab.from_dict(ckpt.files["vocab"])
    encoder = ELMo(from_dict(ELMoConfig, ckpt.config["elmo"], "elmo."), vocab.itos)
    load_encoder_weights(encoder, path)
    return encoder, vocab, ckpt.config


def taglm_backbone(lm_path: str | Path, cfg: TagLMConfig, train_text: Iterable[str], text: TextConfig,
                   max_len: int | None, min_freq: int = 1, word_dim: int | None = None) -> Backbone:
    """TagLM (Peters et al. 2017) on the task's word vocabulary, with the frozen biLM (``pretrain
    bilm``) or CoVe MT-LSTM (``pretrain mt``) of ``lm_path`` inside (none under ``use_lm=false``:
    the baseline tagger); ``word_dim`` follows ``--vectors``."""
    fam = checkpoint_family(lm_path) if cfg.use_lm else None
    if cfg.use_lm and fam not in ("elmo", "cove"):
        raise ValueError(f"{lm_path}: TagLM needs a `transferlab pretrain bilm` (ELMo) or `pretrain mt` (CoVe) "
                         f"checkpoint")
    lm = None
    if fam == "elmo":
        lm, _, bilm_config = load_bilm(lm_path)
        text = trained_text(bilm_config, text, lm_path)  # the biLM reads the tagger's tokens: its tokenization
    elif fam == "cove":  # CoVe reads its own GloVe rows of the tagger's words; the tagger keeps its text
        lm, cove_vocab, cove_config = load_cove(lm_path)
    vocab = Vocab.build((tokenizer(text)(t) for t in train_text), min_freq=min_freq)
    lm_ids = (cove_rows(lm, cove_vocab, recorded_text(cove_config, TextConfig()).lower, vocab.itos)
              if fam == "cove" else None)
    tcfg = dataclasses.replace(cfg, vocab_size=len(vocab), pad_id=vocab.pad_id, unk_id=vocab.unk_id,
                               word_dim=word_dim or cfg.word_dim, lm=fam or cfg.lm,
                               bilm=lm.cfg if fam == "elmo" else cfg.bilm, cove=lm.cfg if fam == "cove" else cfg.cove)
    where = (f"after the first {tcfg.rnn.upper()} layer" if tcfg.lm_at == "layer1" else
             "at the input, its layers mixed by a learned scalar mix")
    what = {"elmo": "the biLM", "cove": "CoVe's MT-LSTM"}.get(fam)
    said = (f"{what} of {lm_path} ({sum(p.numel() for p in lm.parameters()):,} parameters, frozen) {where}"
            if lm is not None else "no LM embedding (the baseline tagger)")
    log(f"taglm: {said}; {len(vocab):,} task words")
    tagger = TagLM(tcfg, vocab.itos, bilm=lm)
    if lm_ids is not None:
        tagger.lm_ids.copy_(lm_ids)
    return word_backbone(tagger, vocab, text, max_len, pretrained=False, fam="taglm")


def cove_rows(cove: CoVe, vocab: Vocab, lower: bool, words: list[str]) -> torch.Tensor:
    """Each word's row of CoVe's GloVe table: the MT vocabulary's (lower-cased first where the MT
    model was), else a GloVe row :meth:`~transferlab.encoders.cove.CoVe.add_words` adds and the
    table keeps (saved with a task model's weights), else ``<unk>``'s."""
    keys = [w.lower() if lower else w for w in words]
    missing = [k for k in dict.fromkeys(keys) if k not in vocab.stoi]
    added = dict(zip(missing, cove.add_words(missing)))
    cove.keep_added()
    unk = sum(i == cove.cfg.unk_id for i in added.values())
    log(f"CoVe rows of {len(words):,} words: {len(words) - len(missing):,} in its vocabulary, "
        f"{len(missing) - unk:,} added from GloVe, {unk:,} <unk>")
    return torch.tensor([vocab.stoi[k] if k in vocab.stoi else added[k] for k in keys], dtype=torch.long)


def load_cove(path: str | Path) -> tuple[CoVe, Vocab, dict]:
    """The MT-LSTM of a ``pretrain mt`` checkpoint (its decoder left out), its English vocabulary
    and the run's config."""
    ckpt = load_checkpoint(path, json_only=True)
    if "vocab" not in ckpt.files or "cove" not in ckpt.config:
        raise ValueError(f"{path}: not a `transferlab pretrain mt` checkpoint (no cove config and vocabulary)")
    encoder = CoVe(from_dict(CoVeConfig, ckpt.config["cove"], "cove."))
    load_encoder_weights(encoder, path)
    return encoder, Vocab.from_dict(ckpt.files["vocab"]), ckpt.config


def cove_backbone(path: str | Path, text: TextConfig, max_len: int | None, trainable: bool = False) -> Backbone:
    """CoVe (McCann et al. 2017): the MT-LSTM of a ``pretrain mt`` checkpoint (its decoder left out)
    over the English vocabulary's GloVe rows, frozen unless ``trainable``; a task's word outside
    that vocabulary gets its GloVe vector (:meth:`~transferlab.encoders.cove.CoVe.add_words`)."""
    encoder, vocab, config = load_cove(path)
    text = trained_text(config, text, path)
    if not trainable:
        encoder.freeze()
    return word_backbone(encoder, vocab, text, max_len, pretrained=True, fam="cove")


def recorded_text(section: dict, text: TextConfig) -> TextConfig:
    """The ``text`` a checkpoint's config (or a task model's files) records, else ``text``."""
    return from_dict(TextConfig, section["text"], "text.") if "text" in section else text


def trained_text(config: dict, text: TextConfig, path: str | Path) -> TextConfig:
    """The tokenization a word-level pretraining checkpoint was trained on (its config's ``text``:
    ELMo's cased words, an AWD-LSTM's lower-cased ones), which its input must follow whatever the
    run's ``--text.*`` say (said in the log when they differ); ``text`` where the checkpoint
    records none."""
    own = recorded_text(config, text)
    if own != text:
        log(f"{path}: input tokenized as the encoder was pretrained ({to_dict(own)}), not as --text.* says "
            f"({to_dict(text)})")
    return own


def input_text(spec: str | Path, text: TextConfig) -> TextConfig:
    """The tokenization :func:`~transferlab.tasks.loading.load_backbone` will give ``spec``'s input,
    read without loading any weights (a feature cache's key): a pretraining checkpoint's own, else
    ``text``."""
    path = Path(spec).expanduser()
    if not (path.is_dir() and has_checkpoint(path) and not is_hf_folder(path)):
        return text
    ckpt = load_checkpoint(path, json_only=True)
    # a finetune checkpoint: the tokenization its backbone used; a pretraining one: what it trained on
    return recorded_text(ckpt.files, recorded_text(ckpt.config, text))


def pretrained_backbone(path: Path, text: TextConfig, max_len: int | None, trainable: bool = False) -> Backbone:
    """The encoder of a pretraining checkpoint: ``pretrain mlm|clm`` (our Transformer and its
    tokenizer), ``pretrain lm`` (the AWD-LSTM and its vocabulary; the LM's decoder left out),
    ``pretrain bilm`` (ELMo), ``pretrain mt`` (CoVe, frozen unless ``trainable``) or ``pretrain
    context2vec`` (its context vectors; the negative-sampling table left out)."""
    ckpt = load_checkpoint(path, json_only=True)
    text = trained_text(ckpt.config, text, path)
    if "tokenizer" in ckpt.files and "transformer" in ckpt.config:
        return transformer_backbone(TransformerConfig(), SubwordConfig(), str(path), (), text.lower, max_len)
    if "vocab" in ckpt.files and "elmo" in ckpt.config:  # pretrain bilm: ELMo without its softmax
        encoder, vocab, _ = load_bilm(path)
        return word_backbone(encoder, vocab, text, max_len, pretrained=True, fam="elmo")
    if "vocab" in ckpt.files and "cove" in ckpt.config:  # pretrain mt: CoVe's MT-LSTM without its decoder
        return cove_backbone(path, text, max_len, trainable)
    if "vocab" in ckpt.files and "context2vec" in ckpt.config:
        vocab = Vocab.from_dict(ckpt.files["vocab"])
        encoder = Context2Vec(from_dict(Context2VecConfig, ckpt.config["context2vec"], "context2vec."))
        load_encoder_weights(encoder, path)
        return word_backbone(encoder, vocab, text, max_len, pretrained=True, fam="context2vec")
    if "vocab" in ckpt.files and (fam := next((f for f in REBUILT if f in ckpt.config), None)):
        vocab = Vocab.from_dict(ckpt.files["vocab"])
        encoder = ENCODERS[fam].rebuild({"config": ckpt.config[fam]}, ckpt.files)
        load_encoder_weights(encoder, path)
        return word_backbone(encoder, vocab, text, max_len, pretrained=True, fam=fam)
    if "vocab" in ckpt.files and "awd_lstm" in ckpt.config:
        vocab = Vocab.from_dict(ckpt.files["vocab"])
        cfg = from_dict(AWDLSTMConfig, ckpt.config["awd_lstm"], "awd_lstm.")
        encoder = ENCODERS["awd_lstm"].new(cfg, len(vocab), vocab.pad_id)
        load_encoder_weights(encoder, path)
        return word_backbone(encoder, vocab, text, max_len, pretrained=True)
    raise ValueError(f"{path}: not a checkpoint transferlab can take an encoder from (pretrain lm, pretrain "
                     f"mlm|clm, finetune) nor a Hugging Face model folder")


def scratch_backbone(fam: str, text: TextConfig, scratch_text: Callable[[], Iterable[str]], scratch: ScratchConfig,
                     max_len: int | None) -> Backbone:
    if ENCODERS[fam].tokens == "pieces":  # a tokenizer trained on the text, then the encoder
        return transformer_backbone(scratch.transformer, scratch.subword, "", scratch_text(), text.lower, max_len)
    tok = tokenizer(text)
    vocab = Vocab.build(tok(t) for t in scratch_text())
    encoder = ENCODERS[fam].new(getattr(scratch, fam), len(vocab), vocab.pad_id)
    return word_backbone(encoder, vocab, text, max_len, pretrained=False, fam=fam)
