"""``transferlab generate``: a causal language model continues prompts.

The model is a ``pretrain clm`` checkpoint (our GPT-style Transformer, its decoder tied to the
embedding, and its byte-level BPE tokenizer), a ``pretrain lm`` checkpoint (the AWD-LSTM and its
word vocabulary, as fastai's ``LMLearner.predict`` generates from ULMFiT's LM; a ULMFiT target-task
LM stage too), a run folder of either (its ``best``), or any Hugging Face causal LM
(``AutoModelForCausalLM``: a local folder, a catalog name or a hub id). All decode through
:func:`transferlab.tasks.generate.continue_prompts`: greedy (temperature 0), sampling (temperature,
top-k, top-p, from a seeded generator) or beam search, with the cache (keys and values, or the
LSTM's state) unless ``cache`` is false.

Our LMs learned from a stream in which every line follows the end-of-line token of the line before
it, so their prompts are read after that token: a prompt starts a line. A continuation is the text
the new tokens add to the prompt's, decoded together (a byte-level piece may complete a character
of the prompt; words are joined by :func:`~transferlab.text.tokenize.detokenize`), without the end
token. A word-level LM reads the prompt as it read its corpus (lower-cased if it was), and a word
outside its vocabulary as ``<unk>``, which it never generates (fastai's ``no_unk``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import torch

from transferlab.checkpoint import checkpoint_folder, has_checkpoint, load_checkpoint, load_weights
from transferlab.config import from_dict
from transferlab.encoders.backbone import checkpoint_family, is_hf_folder, is_task_model
from transferlab.encoders.hf import is_causal, model_folder
from transferlab.encoders.transformer import Transformer, TransformerConfig
from transferlab.log import log
from transferlab.pretrain.lm import LanguageModel, lm_text, load_lm
from transferlab.tasks.generate import (CausalLM, HFCausalLM, LMGenerateConfig, RecurrentLM, TransformerLM,
                                        continue_prompts)
from transferlab.text.subword import SubwordTokenizer
from transferlab.text.tokenize import detokenize, tokenizer
from transferlab.text.vocab import BOS, EOS, PAD, Vocab

__all__ = ["TextGenerator", "load_generator", "run"]


@dataclass
class WordTokenizer:
    """A word-level LM's tokenizer and vocabulary, with the two methods a TextGenerator uses."""

    vocab: Vocab
    tokenize: Callable[[str], list[str]]

    def encode(self, text: str) -> list[int]:
        return self.vocab.encode(self.tokenize(text))

    def decode(self, ids: Sequence[int]) -> str:
        return detokenize([w for w in self.vocab.decode(ids) if w not in (PAD, BOS, EOS)])


@dataclass
class TextGenerator:
    """A causal LM with its tokenizer: prompts -> continuations."""

    lm: CausalLM
    tokenizer: SubwordTokenizer | WordTokenizer
    prefix: list[int]  # read before every prompt (ours: the end of a line before it)
    start: list[int]  # an empty prompt's tokens when there is no prefix (the model's start token)
    eos: int | None  # generation stops at it (None: after max_new_tokens)
    device: torch.device
    source: str

    def prompt_ids(self, text: str) -> list[int]:
        return (self.prefix + self.tokenizer.encode(text)) or list(self.start)

    def continue_texts(self, texts: Sequence[str], cfg: LMGenerateConfig = LMGenerateConfig()) -> list[str]:
        prompts = [self.prompt_ids(t) for t in texts]
        if any(not p for p in prompts):
            raise ValueError(f"{self.source}: an empty prompt, and the model has no start token to begin it with")
        new = continue_prompts(self.lm, prompts, self.eos, cfg, self.device)
        return [self.continuation(p, n) for p, n in zip(prompts, new)]

    def continuation(self, prompt: list[int], new: list[int]) -> str:
        """The text ``new`` adds after ``prompt`` (decoded together, then the prompt's text cut off)."""
        head, whole = self.tokenizer.decode(prompt), self.tokenizer.decode(prompt + new)
        return whole[len(head):] if whole.startswith(head) else self.tokenizer.decode(new)


def _device(device: str) -> torch.device:
    return torch.device("cuda" if device == "auto" and torch.cuda.is_available() else
                        "cpu" if device == "auto" else device)


def load_generator(model: str, device: str = "auto") -> TextGenerator:
    """A ``pretrain clm`` or ``pretrain lm`` checkpoint (or its run folder) or a Hugging Face
    causal LM -> a TextGenerator."""
    dev, path = _device(device), checkpoint_folder(model)
    if is_hf_folder(path) or not has_checkpoint(path):
        return _hugging_face(model, dev)
    if is_task_model(path):
        raise ValueError(f"{path}: a fine-tuned task model (a classifier, tagger, ...), not a language model; "
                         f"generate takes a `pretrain clm` or `pretrain lm` checkpoint")
    family = checkpoint_family(path)
    if family == "awd_lstm":
        return _awd_lstm(path, dev)
    if family not in (None, "transformer"):
        raise ValueError(f"{path}: a {family} checkpoint, not a left-to-right language model; generate takes a "
                         f"`pretrain clm` or `pretrain lm` checkpoint, or a Hugging Face causal LM")
    return _transformer(path, dev)


def _awd_lstm(path: Path, device: torch.device) -> TextGenerator:
    model, vocab = load_lm(path)
    text = lm_text(path)
    log(f"{path}: our AWD-LSTM language model, {sum(p.numel() for p in model.parameters()):,} parameters, "
        f"{len(vocab):,} words")
    eos = vocab.eos_id  # what `pretrain lm` put after every line
    lm = RecurrentLM(model.to(device).eval(), never=[vocab.unk_id])  # fastai's no_unk: a word, not "<unk>"
    return TextGenerator(lm, WordTokenizer(vocab, tokenizer(text)), [eos], [eos], eos, device, str(path))


def _transformer(path: Path, device: torch.device) -> TextGenerator:
    ckpt = load_checkpoint(path, json_only=True)
    if "transformer" not in ckpt.config or "tokenizer" not in ckpt.files:
        raise ValueError(f"{path}: not a `transferlab pretrain clm` or `pretrain lm` checkpoint (no transformer "
                         f"config and tokenizer, no AWD-LSTM)")
    cfg = from_dict(TransformerConfig, ckpt.config["transformer"], "transformer.")
    if ckpt.config.get("objective") != "clm" or not cfg.causal:
        raise ValueError(f"{path}: a {ckpt.config.get('objective', 'non-causal')} checkpoint reads text in both "
                         f"directions and cannot continue it; generate needs a `pretrain clm` or `pretrain lm` "
                         f"checkpoint")
    tok = SubwordTokenizer.from_dict(ckpt.files["tokenizer"], f"{path}/tokenizer.json")
    model = LanguageModel(Transformer(cfg), cfg.vocab_size, tie_weights=True)
    load_weights(model, path)
    eos = tok.ids.get("eos", tok.pad_id)  # what `pretrain clm` put after every line
    log(f"{path}: our causal Transformer, {sum(p.numel() for p in model.parameters()):,} parameters, "
        f"{cfg.max_len} positions")
    return TextGenerator(TransformerLM(model.to(device).eval()), tok, [eos], [eos], eos, device, str(path))


def _hugging_face(name: str, device: torch.device) -> TextGenerator:
    folder = model_folder(name)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if not is_causal(config):
        raise ValueError(f"{name}: model_type {config.get('model_type')!r} is not a causal (left-to-right) LM; "
                         f"generate takes a `pretrain clm` checkpoint or a GPT-style model")
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder).to(device).eval()
    tok = SubwordTokenizer.load(folder)
    eos = tok.ids.get("eos", model.config.eos_token_id)
    eos = eos[0] if isinstance(eos, list) and eos else eos if isinstance(eos, int) else None
    bos = tok.ids.get("bos", eos)
    log(f"{name}: Hugging Face {type(model).__name__}, {sum(p.numel() for p in model.parameters()):,} parameters")
    return TextGenerator(HFCausalLM(model), tok, [], [bos] if bos is not None else [], eos, device, name)


def run(model: str, texts: Sequence[str], cfg: LMGenerateConfig, out: TextIO, as_json: bool = False,
        device: str = "auto") -> list[str]:
    """Write a continuation per prompt: one line each (its line breaks as spaces), or with
    ``as_json`` a JSON line ``{"prompt", "continuation"}`` each; return the continuations."""
    if not texts:
        raise ValueError("generate: no prompt given (as arguments, --file, or standard input)")
    continuations = load_generator(model, device).continue_texts(texts, cfg)
    for text, cont in zip(texts, continuations):
        line = json.dumps({"prompt": text, "continuation": cont}, ensure_ascii=False) if as_json else \
            " ".join(cont.splitlines())
        out.write(line + "\n")
    out.flush()
    return continuations
