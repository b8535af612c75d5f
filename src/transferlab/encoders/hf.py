"""Any Hugging Face encoder behind the Encoder contract, with its tokenizer.

``load_pretrained("minilm-l6")`` (a catalog name), a local model folder, or a hub id (fetched
with ``huggingface_hub`` for users who are online) -> a :class:`Pretrained`: the encoder, its
:class:`~transferlab.text.subword.SubwordTokenizer` and where it came from.

Two ways in, one contract:

- **native**: BERT- and GPT-2-shaped checkpoints load into our own
  :class:`~transferlab.encoders.transformer.Transformer` by weight name (parity-tested against
  ``BertModel`` and ``GPT2LMHeadModel``): fused attention, our layer groups, no transformers
  import at run time.
- **wrapped**: any other architecture runs as :class:`HFEncoder` around ``AutoModel``: ``layers``
  are its ``hidden_states`` (embedding output, then each block), ``hidden`` the last of them;
  ``layer_groups()`` are the parameters before the block list (embeddings), each block, and the
  block list's successors (a final norm, a pooler) folded into the top block's group.

Word-level tasks align words to subwords through the tokenizer's ``encode_words`` (first piece
of each word), the same for both ways. A tokenizer whose ids reach past the model's embedding
rows is refused, with both sizes.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from transferlab.encoders.base import EncoderOutput
from transferlab.encoders.transformer import Transformer, TransformerConfig, bert_state_dict, gpt2_state_dict
from transferlab.text.subword import SubwordTokenizer

__all__ = ["HFEncoder", "Pretrained", "bert_mlm_head", "hf_max_len", "is_causal", "load_pretrained", "model_folder",
           "read_hf_weights"]

NATIVE = {"bert": bert_state_dict, "gpt2": gpt2_state_dict}


@dataclass
class Pretrained:
    encoder: nn.Module
    tokenizer: SubwordTokenizer
    source: str  # the name or path it was loaded from
    native: bool  # loaded into our Transformer (else an HFEncoder)
    hf_config: dict = field(default_factory=dict)
    pooler: dict[str, torch.Tensor] | None = None  # BERT's pooler (dense + tanh on [CLS]), if shipped
    # BERT's MLM head (transform.*, decoder.bias, as MaskedLM names them), if shipped
    lm_head: dict[str, torch.Tensor] | None = None

    @property
    def causal(self) -> bool:
        return is_causal(self.hf_config)


def is_causal(config: dict) -> bool:
    """Whether a Hugging Face ``config.json`` describes a left-to-right (GPT-style) model."""
    heads = config.get("architectures") or []
    return bool(config.get("is_decoder")) or config.get("model_type") == "gpt2" or \
        any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in heads)


def hf_max_len(config: dict) -> int:
    """The longest input a Hugging Face ``config.json`` allows (512 where it says nothing)."""
    return int(config.get("max_position_embeddings") or config.get("n_positions") or 512)


class HFEncoder(nn.Module):
    """A Hugging Face ``AutoModel`` as an Encoder: ``forward(ids, mask, type_ids) -> EncoderOutput``."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model
        self.dim = model.config.hidden_size
        self.takes_type_ids = "token_type_ids" in inspect.signature(model.forward).parameters

    @property
    def embedding(self) -> nn.Embedding:
        """The token embedding, named as ours are (an LM head's decoder is tied to it)."""
        return self.model.get_input_embeddings()

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None,
                type_ids: torch.Tensor | None = None) -> EncoderOutput:
        kwargs = {"attention_mask": mask.long() if mask is not None else None, "output_hidden_states": True}
        if self.takes_type_ids and type_ids is not None:
            kwargs["token_type_ids"] = type_ids
        out = self.model(input_ids=ids, **kwargs)
        layers = list(out.hidden_states)
        return EncoderOutput(hidden=out.last_hidden_state, layers=layers)

    def _blocks(self) -> nn.ModuleList:
        n = self.model.config.num_hidden_layers
        lists = [m for m in self.model.modules() if isinstance(m, nn.ModuleList) and len(m) == n]
        if not lists:
            raise ValueError(f"{type(self.model).__name__}: no list of {n} blocks found for layer_groups()")
        return lists[0]

    def layer_groups(self) -> list[nn.Module]:
        """Parameters before the blocks (embeddings), each block, the rest with the top block."""
        blocks = self._blocks()
        where = {id(p): i + 1 for i, block in enumerate(blocks) for p in block.parameters()}
        groups: list[list[nn.Parameter]] = [[] for _ in range(len(blocks) + 1)]
        past_blocks = False
        for p in self.model.parameters():  # in definition order: embeddings, blocks, then the rest
            past_blocks = past_blocks or id(p) in where
            groups[where.get(id(p), len(blocks) if past_blocks else 0)].append(p)
        return [nn.ParameterList(g) for g in groups]


def model_folder(name_or_path: str) -> Path:
    """A catalog name, a local folder or a hub id -> a local folder holding config.json."""
    from transferlab.data import catalog

    path = Path(name_or_path)
    if path.is_dir():
        return path
    try:
        return Path(catalog.resolve(name_or_path))
    except KeyError:
        pass
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise FileNotFoundError(f"{name_or_path!r} is not a folder or a catalog name, and huggingface_hub "
                                f"is not installed to fetch it as a hub id (pip install 'transferlab[hf]')") from None
    return Path(snapshot_download(name_or_path, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model"]))


def read_hf_weights(folder: Path) -> dict[str, torch.Tensor]:
    """The model's weights: safetensors, else a ``.bin`` read with ``weights_only`` (never unpickled)."""
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors"))
    if files:
        return {k: v for f in files for k, v in load_file(str(f)).items()}
    bins = sorted(folder.glob("pytorch_model*.bin"))
    if bins:
        return {k: v for f in bins for k, v in torch.load(f, map_location="cpu", weights_only=True).items()}
    raise FileNotFoundError(f"{folder}: no model.safetensors or pytorch_model.bin")


def check_vocab(tokenizer: SubwordTokenizer, rows: int, where: str) -> None:
    if tokenizer.vocab_size > rows:
        raise ValueError(f"{where}: the tokenizer has {tokenizer.vocab_size:,} tokens but the model's embedding "
                         f"has {rows:,} rows; they do not belong together")


def load_pretrained(name_or_path: str, native: bool | None = None) -> Pretrained:
    """The encoder and tokenizer of a pretrained model; ``native=None`` uses ours where we can."""
    folder = model_folder(name_or_path)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    tokenizer = SubwordTokenizer.load(folder)
    kind = config.get("model_type")
    if native is None:
        native = kind in NATIVE
    if native:
        if kind not in NATIVE:
            raise ValueError(f"{name_or_path}: model_type {kind!r} has no native loader ({', '.join(NATIVE)})")
        cfg = TransformerConfig.from_hf(config)
        check_vocab(tokenizer, cfg.vocab_size, str(name_or_path))
        encoder = Transformer(cfg)
        weights = read_hf_weights(folder)
        encoder.load_state_dict(NATIVE[kind](weights, cfg.n_layers))
        pooler = {k.rsplit(".", 1)[-1]: v for k, v in weights.items()
                  if k.removeprefix("bert.").startswith("pooler.dense.")} or None
        lm_head = bert_mlm_head(weights)
    else:
        from transformers import AutoModel

        encoder = HFEncoder(AutoModel.from_pretrained(folder))
        pooler = lm_head = None
        check_vocab(tokenizer, encoder.model.get_input_embeddings().num_embeddings, str(name_or_path))
    return Pretrained(encoder, tokenizer, str(name_or_path), native, config, pooler, lm_head)


def bert_mlm_head(weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor] | None:
    """A ``BertForMaskedLM`` / ``BertForPreTraining`` checkpoint's MLM head under MaskedLM's names
    (its decoder weight is the tied embedding); None when the checkpoint has none (MiniLM)."""
    names = {"transform.dense.weight": "transform.0.weight", "transform.dense.bias": "transform.0.bias",
             "transform.LayerNorm.weight": "transform.2.weight", "transform.LayerNorm.bias": "transform.2.bias",
             "bias": "decoder.bias"}
    head = {ours: weights[f"cls.predictions.{theirs}"] for theirs, ours in names.items()
            if f"cls.predictions.{theirs}" in weights}
    return head or None
