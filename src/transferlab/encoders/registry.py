"""The encoder registry: every encoder family transferlab builds, in one plain dict.

``ENCODERS[name]`` is a :class:`Family`: the module and config classes of the architecture, how
text becomes its ids (``words`` from a :class:`~transferlab.text.vocab.Vocab`, subword
``pieces`` from a :class:`~transferlab.text.subword.SubwordTokenizer`, or the words of static
``vectors``), how to build it at random initialization, how to rebuild it from the description a
checkpoint keeps (``files["encoder"]``), whether it reads left to right, the longest input it
takes, and the pooling a classifier head uses on it by default. Its layer groups (for
discriminative learning rates and gradual unfreezing) are the encoder's own ``layer_groups()``.

A new model family is one file in ``encoders/`` and one entry here. ``static`` and ``hf`` are
families of loaded encoders only (word vectors, a Hugging Face ``AutoModel``): they have no
``new``, and no ``--encoder`` name of their own (their ``--encoder`` is what they load).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from transferlab.config import from_dict
from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig
from transferlab.encoders.context2vec import Context2Vec, Context2VecConfig
from transferlab.encoders.cove import CoVe, CoVeConfig
from transferlab.encoders.elmo import ELMo, ELMoConfig
from transferlab.encoders.fasttext import FastTextConfig, FastTextEncoder
from transferlab.encoders.hf import HFEncoder, hf_max_len, is_causal
from transferlab.encoders.sentence_rnn import SentenceRNN, SentenceRNNConfig
from transferlab.encoders.static import StaticEncoder
from transferlab.encoders.taglm import TagLM, TagLMConfig
from transferlab.encoders.transformer import Transformer, TransformerConfig

__all__ = ["ENCODERS", "Family", "buildable"]


@dataclass(frozen=True)
class Family:
    tokens: Literal["words", "pieces", "vectors"]
    rebuild: Callable[[dict, dict], nn.Module]  # (encoder description, checkpoint files) -> that shape, untrained
    causal: Callable[[dict, nn.Module], bool]  # (description, encoder) -> reads left to right
    max_len: Callable[[dict, nn.Module], int | None]  # the model's input limit; None = none
    # a classifier's pooling under task.pooling=auto: concat (ULMFiT's head), mean (fastText's
    # average), framing (the position the input framing puts the summary in: first or last)
    pooling: Literal["concat", "mean", "framing"]
    module: type[nn.Module] | None = None
    config: type | None = None
    new: Callable[[Any, int, int], nn.Module] | None = None  # (config, vocab_size, pad_id) -> at random init
    # a family that exists only pretrained: the command whose checkpoint `finetune --pretrained` takes
    pretrained_by: str | None = None


def _rebuild(module: type[nn.Module], config: type, name: str) -> Callable[[dict, dict], nn.Module]:
    return lambda spec, files: module(from_dict(config, spec["config"], f"{name}."))


def _rebuild_static(spec: dict, files: dict) -> nn.Module:
    c = spec["config"]
    return StaticEncoder(torch.zeros(len(files["vocab"]["itos"]), c["dim"]), trainable=c["trainable"])


def _rebuild_hf(spec: dict, files: dict) -> nn.Module:
    from transformers import AutoConfig, AutoModel

    config = dict(spec["hf_config"])
    return HFEncoder(AutoModel.from_config(AutoConfig.for_model(config.pop("model_type"), **config)))


ENCODERS: dict[str, Family] = {
    "awd_lstm": Family(
        "words", _rebuild(AWDLSTM, AWDLSTMConfig, "awd_lstm"), causal=lambda spec, enc: True,
        max_len=lambda spec, enc: None, pooling="concat", module=AWDLSTM, config=AWDLSTMConfig,
        new=lambda cfg, n, pad: AWDLSTM(dataclasses.replace(cfg, vocab_size=n, pad_id=pad))),
    "fasttext": Family(
        "words", _rebuild(FastTextEncoder, FastTextConfig, "fasttext"), causal=lambda spec, enc: False,
        max_len=lambda spec, enc: None, pooling="mean", module=FastTextEncoder, config=FastTextConfig,
        new=lambda cfg, n, pad: FastTextEncoder(dataclasses.replace(cfg, vocab_size=n, pad_id=pad))),
    "transformer": Family(
        "pieces", _rebuild(Transformer, TransformerConfig, "transformer"), causal=lambda spec, enc: enc.cfg.causal,
        max_len=lambda spec, enc: enc.cfg.max_len, pooling="framing", module=Transformer, config=TransformerConfig,
        new=lambda cfg, n, pad: Transformer(dataclasses.replace(cfg, vocab_size=n, pad_id=pad))),
    "elmo": Family(  # pretrained by `pretrain bilm`; its character table is rebuilt from the vocabulary
        "words", lambda spec, files: ELMo(from_dict(ELMoConfig, spec["config"], "elmo."), files["vocab"]["itos"]),
        causal=lambda spec, enc: False, max_len=lambda spec, enc: None, pooling="concat", module=ELMo,
        config=ELMoConfig, pretrained_by="pretrain bilm"),
    "taglm": Family(  # finetune --encoder taglm --pretrained BILM: a tagger with the frozen biLM inside
        "words", lambda spec, files: TagLM(from_dict(TagLMConfig, spec["config"], "taglm."), files["vocab"]["itos"]),
        causal=lambda spec, enc: False, max_len=lambda spec, enc: None, pooling="concat", module=TagLM,
        config=TagLMConfig),
    "cove": Family(  # pretrained by `pretrain mt` (its MT-LSTM; the decoder left out); GloVe rows saved with it
        "words", lambda spec, files: CoVe(from_dict(CoVeConfig, spec["config"], "cove.")),
        causal=lambda spec, enc: False, max_len=lambda spec, enc: None, pooling="concat", module=CoVe,
        config=CoVeConfig, pretrained_by="pretrain mt"),
    "context2vec": Family(  # pretrained by `pretrain context2vec`: each word's context vector (the word left out)
        "words", _rebuild(Context2Vec, Context2VecConfig, "context2vec"), causal=lambda spec, enc: False,
        max_len=lambda spec, enc: None, pooling="mean", module=Context2Vec, config=Context2VecConfig,
        pretrained_by="pretrain context2vec"),
    "sentence_rnn": Family(  # skip-thought, quick-thought, InferSent, GenSen: the objective makes the difference
        "words", _rebuild(SentenceRNN, SentenceRNNConfig, "sentence_rnn"), causal=lambda spec, enc: False,
        max_len=lambda spec, enc: None, pooling="concat", module=SentenceRNN, config=SentenceRNNConfig,
        new=lambda cfg, n, pad: SentenceRNN(dataclasses.replace(cfg, vocab_size=n, pad_id=pad))),
    "static": Family(
        "vectors", _rebuild_static, causal=lambda spec, enc: False, max_len=lambda spec, enc: None, pooling="mean",
        module=StaticEncoder),
    "hf": Family(
        "pieces", _rebuild_hf, causal=lambda spec, enc: is_causal(spec["hf_config"]),
        max_len=lambda spec, enc: hf_max_len(spec["hf_config"]), pooling="framing", module=HFEncoder),
}


def buildable() -> list[str]:
    """The families an ``--encoder`` name builds at random initialization (awd_lstm, fasttext, transformer)."""
    return [name for name, fam in ENCODERS.items() if fam.new is not None]
