"""``transferlab generate``: a causal language model continues prompts.

The model is a ``pretrain clm`` checkpoint (our GPT-style Transformer, its decoder tied to the
embedding, and its byte-level BPE tokenizer; a run folder gives its ``best``) or any Hugging Face
causal LM (``AutoModelForCausalLM``: a local folder, a catalog name or a hub id). Both decode
through :func:`transferlab.tasks.generate.continue_prompts`: greedy (temperature 0), sampling
(temperature, top-k, top-p, from a seeded generator) or beam search, with the key/value cache
unless ``cache`` is false.

A ``pretrain clm`` model learned from a stream in which every line follows the end-of-line token
of the line before it, so its prompts are read after that token: a prompt starts a line. A
continuation is the text the new tokens add to the prompt's, decoded together (a byte-level piece
may complete a character of the prompt), without the end token.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

import torch

from transferlab.checkpoint import checkpoint_folder, has_checkpoint, load_checkpoint, load_weights
from transferlab.config import from_dict
from transferlab.encoders.backbone import is_hf_folder
from transferlab.encoders.hf import is_causal, model_folder
from transferlab.encoders.transformer import Transformer, TransformerConfig
from transferlab.log import log
from transferlab.pretrain.lm import LanguageModel
from transferlab.tasks.generate import CausalLM, HFCausalLM, LMGenerateConfig, TransformerLM, continue_prompts
from transferlab.text.subword import SubwordTokenizer

__all__ = ["TextGenerator", "load_generator", "run"]


@dataclass
class TextGenerator:
    """A causal LM with its tokenizer: prompts -> continuations."""

    lm: CausalLM
    tokenizer: SubwordTokenizer
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
    """A ``pretrain clm`` checkpoint (or its run folder) or a Hugging Face causal LM -> a TextGenerator."""
    dev, path = _device(device), checkpoint_folder(model)
    if not is_hf_folder(path) and has_checkpoint(path):
        return _ours(path, dev)
    return _hugging_face(model, dev)


def _ours(path: Path, device: torch.device) -> TextGenerator:
    ckpt = load_checkpoint(path, json_only=True)
    if "transformer" not in ckpt.config or "tokenizer" not in ckpt.files:
        raise ValueError(f"{path}: not a `transferlab pretrain clm` checkpoint (no transformer config and tokenizer)")
    cfg = from_dict(TransformerConfig, ckpt.config["transformer"], "transformer.")
    if ckpt.config.get("objective") != "clm" or not cfg.causal:
        raise ValueError(f"{path}: a {ckpt.config.get('objective', 'non-causal')} checkpoint reads text in both "
                         f"directions and cannot continue it; generate needs a `pretrain clm` checkpoint")
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
