"""The Transformer encoder (Vaswani et al. 2017) in the two shapes transfer learning uses:

- bidirectional, post-layer-norm: BERT (Devlin et al. 2019), ``causal=False, norm="post"``;
- causal, pre-layer-norm with a final norm: GPT-2 (Radford et al. 2019), ``causal=True,
  norm="pre"``. GPT (Radford et al. 2018) is causal and post-norm.

One file, top to bottom: embeddings (token + learned position + segment type), blocks of
multi-head self-attention (PyTorch's fused ``scaled_dot_product_attention``) and a GELU MLP,
each wrapped in a residual connection with layer norm before (pre) or after (post) it.

``forward(ids, mask, type_ids) -> EncoderOutput``: ``hidden (B, T, dim)`` is the top layer (after
the final norm in pre-norm models), ``layers`` the embedding output followed by every block's
output, ``layer_groups()`` the embeddings, then each block, bottom to top.

Generation reads one token at a time: ``forward(ids, cache=KVCache())`` keeps every block's keys
and values (:class:`KVCache`, Hugging Face's ``past_key_values``), and a later ``forward(next_ids,
cache=cache)`` appends to it, the new tokens at positions ``len(cache)`` onwards attending to the
cached ones: each token is computed once instead of the whole prefix again at every step. Without
a cache nothing changes (the same operations, bit for bit).

Weights load from Hugging Face checkpoints by name mapping, with no pickle:
:func:`bert_state_dict` (BertModel: MiniLM, BERT) and :func:`gpt2_state_dict` (GPT2Model /
GPT2LMHeadModel); ``TransformerConfig.from_hf(config_dict)`` reads their ``config.json``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from transferlab.encoders.base import EncoderOutput

__all__ = ["TransformerConfig", "Transformer", "Block", "KVCache", "bert_state_dict", "gpt2_state_dict"]


@dataclass(frozen=True)
class TransformerConfig:
    vocab_size: int = 0  # 0 = unset: the recipe fills it in from the tokenizer
    dim: int = 256
    n_layers: int = 4
    n_heads: int = 4
    ffn_dim: int = 1024
    max_len: int = 512  # learned positions
    type_vocab_size: int = 2  # segment (token type) embeddings; 0 = none (GPT)
    causal: bool = False
    norm: Literal["post", "pre"] = "post"
    embed_norm: bool = True  # layer norm on the embedding sum (BERT); GPT-2 has none
    activation: Literal["gelu", "gelu_tanh"] = "gelu"  # gelu_tanh is GPT-2's "gelu_new"
    dropout: float = 0.1
    attn_dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    pad_id: int = 0

    def __post_init__(self) -> None:
        for name in ("dim", "n_layers", "n_heads", "ffn_dim", "max_len"):
            if getattr(self, name) < 1:
                raise ValueError(f"TransformerConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.dim % self.n_heads:
            raise ValueError(f"TransformerConfig.dim={self.dim} is not divisible by n_heads={self.n_heads}")
        for name in ("dropout", "attn_dropout"):
            if not 0.0 <= getattr(self, name) < 1.0:
                raise ValueError(f"TransformerConfig.{name} is a dropout rate in [0, 1), got {getattr(self, name)}")
        if self.vocab_size < 0 or self.type_vocab_size < 0:
            raise ValueError("TransformerConfig.vocab_size and type_vocab_size must be >= 0")
        if self.norm not in ("post", "pre"):
            raise ValueError(f"TransformerConfig.norm must be 'post' or 'pre', got {self.norm!r}")

    @classmethod
    def from_hf(cls, config: dict, **overrides) -> "TransformerConfig":
        """From a Hugging Face ``config.json`` of a BERT or GPT-2 model."""
        kind = config.get("model_type")
        if kind == "bert":
            act = config.get("hidden_act", "gelu")
            if act not in ("gelu", "gelu_new"):
                raise ValueError(f"BERT config: hidden_act {act!r} is not supported (gelu, gelu_new)")
            values = dict(vocab_size=config["vocab_size"], dim=config["hidden_size"],
                          n_layers=config["num_hidden_layers"], n_heads=config["num_attention_heads"],
                          ffn_dim=config["intermediate_size"], max_len=config["max_position_embeddings"],
                          type_vocab_size=config.get("type_vocab_size", 2), causal=False, norm="post",
                          embed_norm=True, activation="gelu" if act == "gelu" else "gelu_tanh",
                          dropout=config.get("hidden_dropout_prob", 0.1),
                          attn_dropout=config.get("attention_probs_dropout_prob", 0.1),
                          layer_norm_eps=config.get("layer_norm_eps", 1e-12), pad_id=config.get("pad_token_id") or 0)
        elif kind == "gpt2":
            dim = config["n_embd"]
            values = dict(vocab_size=config["vocab_size"], dim=dim, n_layers=config["n_layer"],
                          n_heads=config["n_head"], ffn_dim=config.get("n_inner") or 4 * dim,
                          max_len=config["n_positions"], type_vocab_size=0, causal=True, norm="pre",
                          embed_norm=False, activation="gelu_tanh", dropout=config.get("resid_pdrop", 0.1),
                          attn_dropout=config.get("attn_pdrop", 0.1),
                          layer_norm_eps=config.get("layer_norm_epsilon", 1e-5), pad_id=0)
        else:
            raise ValueError(f"TransformerConfig.from_hf: model_type {kind!r} is not bert or gpt2")
        return cls(**{**values, **overrides})


class KVCache:
    """Every block's keys and values over the positions read so far, each (B, H, S, dim / n_heads);
    ``Transformer.forward(ids, cache=cache)`` appends the new positions' to it (in place)."""

    def __init__(self) -> None:
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []

    def __len__(self) -> int:
        """S, the positions cached (0 before the first forward)."""
        return self.keys[0].size(2) if self.keys else 0

    def update(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append block ``layer``'s keys and values of new positions (B, H, T, d/h); all of its
        keys and values come back (B, H, S + T, d/h)."""
        if layer == len(self.keys):
            self.keys.append(k)
            self.values.append(v)
        else:
            self.keys[layer] = torch.cat([self.keys[layer], k], dim=2)
            self.values[layer] = torch.cat([self.values[layer], v], dim=2)
        return self.keys[layer], self.values[layer]

    def reorder(self, index: torch.Tensor) -> "KVCache":
        """A cache of the rows ``index`` (beam search: the hypotheses kept, in their new order)."""
        out = KVCache()
        out.keys = [k.index_select(0, index) for k in self.keys]
        out.values = [v.index_select(0, index) for v in self.values]
        return out


class Block(nn.Module):
    """Self-attention then an MLP, each a residual branch with layer norm before or after it."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.qkv = nn.Linear(cfg.dim, 3 * cfg.dim)  # queries, keys and values in one matmul
        self.proj = nn.Linear(cfg.dim, cfg.dim)
        self.norm1 = nn.LayerNorm(cfg.dim, eps=cfg.layer_norm_eps)
        self.fc1 = nn.Linear(cfg.dim, cfg.ffn_dim)
        self.fc2 = nn.Linear(cfg.ffn_dim, cfg.dim)
        self.norm2 = nn.LayerNorm(cfg.dim, eps=cfg.layer_norm_eps)
        self.drop = nn.Dropout(cfg.dropout)

    def attention(self, x: torch.Tensor, bias: torch.Tensor | None, cache: KVCache | None = None,
                  layer: int = 0) -> torch.Tensor:
        b, t, d = x.shape
        h = self.cfg.n_heads
        q, k, v = self.qkv(x).view(b, t, 3, h, d // h).permute(2, 0, 3, 1, 4)  # each (B, H, T, d/h)
        if cache is not None:
            k, v = cache.update(layer, k, v)  # (B, H, S, d/h): the cached positions, then these T
        p = self.cfg.attn_dropout if self.training else 0.0
        # the causal mask is folded into ``bias`` when there is padding too (SDPA takes one of them);
        # one query after cached keys sees them all (SDPA's is_causal would align it with the first)
        causal = self.cfg.causal and bias is None and k.size(2) == t
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=p, is_causal=causal)
        return self.proj(out.transpose(1, 2).reshape(b, t, d))  # (B, T, D)

    def mlp(self, x: torch.Tensor) -> torch.Tensor:
        approximate = "tanh" if self.cfg.activation == "gelu_tanh" else "none"
        return self.fc2(F.gelu(self.fc1(x), approximate=approximate))

    def forward(self, x: torch.Tensor, bias: torch.Tensor | None, cache: KVCache | None = None,
                layer: int = 0) -> torch.Tensor:
        if self.cfg.norm == "pre":
            x = x + self.drop(self.attention(self.norm1(x), bias, cache, layer))
            return x + self.drop(self.mlp(self.norm2(x)))
        x = self.norm1(x + self.drop(self.attention(x, bias, cache, layer)))
        return self.norm2(x + self.drop(self.mlp(x)))


def bert_init(module: nn.Module) -> None:
    """BERT's and GPT's initialisation, for ``module.apply``: linear and embedding weights from
    N(0, 0.02), linear biases zero (layer norms keep PyTorch's ones and zeros)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


class Transformer(nn.Module):
    """``forward(ids, mask, type_ids) -> EncoderOutput`` (see the module docstring)."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        if cfg.vocab_size < 1:
            raise ValueError("TransformerConfig.vocab_size must be set (>= 1) to build a Transformer")
        self.cfg = cfg
        self.dim = cfg.dim
        self.takes_type_ids = cfg.type_vocab_size > 0
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.dim)  # named as AWD-LSTM's, for weight tying
        self.position = nn.Embedding(cfg.max_len, cfg.dim)
        self.type_embedding = nn.Embedding(cfg.type_vocab_size, cfg.dim) if cfg.type_vocab_size else None
        self.embed_norm = nn.LayerNorm(cfg.dim, eps=cfg.layer_norm_eps) if cfg.embed_norm else None
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.final_norm = nn.LayerNorm(cfg.dim, eps=cfg.layer_norm_eps) if cfg.norm == "pre" else None
        self.apply(bert_init)

    def layer_groups(self) -> list[nn.Module]:
        """The embeddings (token, position, type, their norm), then each block; the final norm of
        a pre-norm model goes with the top block."""
        embed = nn.ModuleList(m for m in (self.embedding, self.position, self.type_embedding, self.embed_norm)
                              if m is not None)
        blocks: list[nn.Module] = list(self.blocks)
        if self.final_norm is not None:
            blocks[-1] = nn.ModuleList([self.blocks[-1], self.final_norm])
        return [embed, *blocks]

    def embed(self, ids: torch.Tensor, type_ids: torch.Tensor | None = None, start: int = 0) -> torch.Tensor:
        t = ids.size(1)  # the tokens take positions start .. start + t - 1 (start: those cached before them)
        if start + t > self.cfg.max_len:
            raise ValueError(f"Transformer: sequence length {start + t} > max_len {self.cfg.max_len}; truncate the "
                             f"batch first (the tokenizing recipes do, and count what they cut)")
        x = self.embedding(ids) + self.position(torch.arange(start, start + t, device=ids.device))  # (B, T, D)
        if self.type_embedding is not None:
            x = x + self.type_embedding(type_ids if type_ids is not None else torch.zeros_like(ids))
        if self.embed_norm is not None:
            x = self.embed_norm(x)
        return self.drop(x)

    def attention_bias(self, mask: torch.Tensor | None, t: int, dtype: torch.dtype,
                       past: int = 0) -> torch.Tensor | None:
        """An additive (B, 1, T, past + T) bias over the ``past`` cached keys and the T new ones:
        -inf-like where a key is padding (or in the future, when causal); None when nothing is
        masked out but the causality SDPA's is_causal handles (no cached keys, or one query)."""
        if mask is None or (bool(mask.all()) and not (self.cfg.causal and past and t > 1)):
            return None
        keep = mask[:, None, None, :]  # (B, 1, 1, past + T): which keys are real tokens
        if self.cfg.causal:  # query i (position past + i) sees keys up to past + i
            keep = keep & torch.ones(t, past + t, dtype=torch.bool, device=mask.device).tril(past)
        bias = torch.zeros(keep.shape, dtype=dtype, device=mask.device)
        return bias.masked_fill(~keep, torch.finfo(dtype).min)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None,
                type_ids: torch.Tensor | None = None, cache: KVCache | None = None) -> EncoderOutput:
        # ids (B, T) long; mask (B, T) bool, True = real token ((B, len(cache) + T) with a cache);
        # type_ids (B, T) segment ids; cache: appended to in place and returned as the output's state
        past, t = (len(cache) if cache is not None else 0), ids.size(1)
        if mask is not None and mask.size(1) != past + t:
            raise ValueError(f"Transformer: mask of {mask.size(1)} positions for {past} cached and {t} new ones")
        if mask is None and past and t > 1:  # several queries after cached keys: the causal mask is explicit
            mask = torch.ones(ids.size(0), past + t, dtype=torch.bool, device=ids.device)
        x = self.embed(ids, type_ids, start=past)
        layers = [x]
        bias = self.attention_bias(mask, t, x.dtype, past)
        for i, block in enumerate(self.blocks):
            x = block(x, bias, cache, i)
            layers.append(x)
        hidden = self.final_norm(x) if self.final_norm is not None else x
        return EncoderOutput(hidden=hidden, layers=layers, state=cache)


# --- Hugging Face weights, by name -------------------------------------------------------------

def bert_state_dict(hf: dict[str, torch.Tensor], n_layers: int) -> dict[str, torch.Tensor]:
    """A Hugging Face ``BertModel`` state dict (keys with or without ``bert.``) -> ours.
    The pooler and any task head are dropped; q, k, v are concatenated into ``qkv``."""
    sd = {k.removeprefix("bert."): v for k, v in hf.items()}
    out = {"embedding.weight": sd["embeddings.word_embeddings.weight"],
           "position.weight": sd["embeddings.position_embeddings.weight"],
           "type_embedding.weight": sd["embeddings.token_type_embeddings.weight"],
           "embed_norm.weight": sd["embeddings.LayerNorm.weight"],
           "embed_norm.bias": sd["embeddings.LayerNorm.bias"]}
    for i in range(n_layers):
        p, q = f"encoder.layer.{i}.", f"blocks.{i}."
        for kind in ("weight", "bias"):
            out[q + f"qkv.{kind}"] = torch.cat([sd[p + f"attention.self.{n}.{kind}"]
                                                for n in ("query", "key", "value")])
            out[q + f"proj.{kind}"] = sd[p + f"attention.output.dense.{kind}"]
            out[q + f"norm1.{kind}"] = sd[p + f"attention.output.LayerNorm.{kind}"]
            out[q + f"fc1.{kind}"] = sd[p + f"intermediate.dense.{kind}"]
            out[q + f"fc2.{kind}"] = sd[p + f"output.dense.{kind}"]
            out[q + f"norm2.{kind}"] = sd[p + f"output.LayerNorm.{kind}"]
    return out


def gpt2_state_dict(hf: dict[str, torch.Tensor], n_layers: int) -> dict[str, torch.Tensor]:
    """A Hugging Face ``GPT2Model``/``GPT2LMHeadModel`` state dict -> ours. GPT-2's ``Conv1D``
    stores weights as (in, out): they are transposed to ``nn.Linear``'s (out, in)."""
    sd = {k.removeprefix("transformer."): v for k, v in hf.items()}
    out = {"embedding.weight": sd["wte.weight"], "position.weight": sd["wpe.weight"],
           "final_norm.weight": sd["ln_f.weight"], "final_norm.bias": sd["ln_f.bias"]}
    names = {"qkv": "attn.c_attn", "proj": "attn.c_proj", "fc1": "mlp.c_fc", "fc2": "mlp.c_proj"}
    for i in range(n_layers):
        p, q = f"h.{i}.", f"blocks.{i}."
        for ours, theirs in names.items():
            out[q + f"{ours}.weight"] = sd[p + f"{theirs}.weight"].t().contiguous()
            out[q + f"{ours}.bias"] = sd[p + f"{theirs}.bias"]
        for ours, theirs in (("norm1", "ln_1"), ("norm2", "ln_2")):
            out[q + f"{ours}.weight"] = sd[p + f"{theirs}.weight"]
            out[q + f"{ours}.bias"] = sd[p + f"{theirs}.bias"]
    return out

