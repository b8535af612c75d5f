"""Adapters: a few small trainable modules inside a frozen pretrained Transformer (Houlsby et al. 2019).

"Parameter-Efficient Transfer Learning for NLP", Houlsby, Giurgiu, Jastrzebski, Morrone,
de Laroussilhe, Gesmundo, Attariyan and Gelly, ICML 2019. Each layer gets two bottleneck
adapters, ``x + up(gelu(down(x)))`` with ``down: D -> size`` and ``up: size -> D``: one on the
output of the attention projection, one on the output of the feed-forward block, both before
the residual add and its layer norm (the paper's figure 2; here also before the sublayer's
dropout, which the paper's code applies first: the same model at evaluation). The pretrained weights stay frozen;
only the adapters, the layer norms and the task head train (3.6% of BERT-base's parameters per
task in the paper at size 64), and a task's checkpoint holds only those.

Adapters start near the identity (section 2.1). By default (``init="zeros"``) the up-projection
is zero, so a fresh adapter is exactly the identity and the model computes what its base did
(the down-projection gets gradients from the first step on); ``init="normal"`` draws both
projections from N(0, 1e-3) as in the paper's code (on MiniLM-L6 the outputs then move by about
3e-4 at the start). Biases start at zero.

:class:`AdapterEncoder` inserts them with forward hooks on the sublayers' output modules
(:func:`sublayer_outputs`), so the base model's weights keep their names (and its
``layer_groups()`` its shape): our :class:`~transferlab.encoders.transformer.Transformer`
(``proj`` and ``fc2`` of each block), a Hugging Face BERT-like model inside an
:class:`~transferlab.encoders.hf.HFEncoder` (``*SelfOutput.dense`` and ``*Output.dense``, before
their ``LayerNorm``) or GPT-2 (``attn.c_proj`` and ``mlp.c_proj``). Its ``state_dict()`` leaves
the frozen base out; its ``base_sha256`` (:func:`weights_sha256`) is what a reloaded model's base
must match (:func:`check_base`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from transferlab.config import ConfigError
from transferlab.encoders.base import EncoderOutput
from transferlab.encoders.hf import HFEncoder
from transferlab.encoders.transformer import Transformer

__all__ = ["Adapter", "AdapterEncoder", "AdaptersConfig", "check_base", "parameter_share", "sublayer_outputs",
           "weights_sha256"]


@dataclass(frozen=True)
class AdaptersConfig:
    size: int = 64  # the bottleneck (m in the paper; 64 gives 3.6% of BERT-base per task)
    init: Literal["zeros", "normal"] = "zeros"  # zeros: up = 0 (exact identity); normal: N(0, init_std) both
    init_std: float = 1e-3

    def __post_init__(self):
        if self.size < 1:
            raise ConfigError(f"adapters.size is the bottleneck width and must be >= 1, got {self.size}")
        if self.init not in ("normal", "zeros"):
            raise ConfigError(f"adapters.init must be 'normal' or 'zeros', got {self.init!r}")
        if not 0.0 < self.init_std < 1.0:
            raise ConfigError(f"adapters.init_std must be in (0, 1) for a near-identity start, got {self.init_std}")


class Adapter(nn.Module):
    """Houlsby's bottleneck: ``x + up(gelu(down(x)))``, (..., D) -> (..., D)."""

    def __init__(self, dim: int, cfg: AdaptersConfig = AdaptersConfig()):
        super().__init__()
        self.down = nn.Linear(dim, cfg.size)
        self.up = nn.Linear(cfg.size, dim)
        nn.init.normal_(self.down.weight, std=cfg.init_std)
        if cfg.init == "zeros":
            nn.init.zeros_(self.up.weight)
        else:
            nn.init.normal_(self.up.weight, std=cfg.init_std)
        nn.init.zeros_(self.down.bias)
        nn.init.zeros_(self.up.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.up(F.gelu(self.down(x)))


def sublayer_outputs(encoder: nn.Module) -> list[tuple[nn.Module, nn.Module]]:
    """Per layer, bottom to top, the modules whose outputs the two adapters rewrite: the
    attention's output projection and the feed-forward block's last projection."""
    if isinstance(encoder, Transformer):
        return [(block.proj, block.fc2) for block in encoder.blocks]
    if isinstance(encoder, HFEncoder):
        out = []
        for block in encoder._blocks():
            attn = ffn = None
            for module in block.modules():
                name = type(module).__name__
                if name.endswith("SelfOutput") and hasattr(module, "dense"):  # BERT, RoBERTa, ELECTRA ...
                    attn = module.dense
                elif name.endswith("Output") and hasattr(module, "dense") and hasattr(module, "LayerNorm"):
                    ffn = module.dense
            if attn is None and hasattr(block, "attn") and hasattr(block, "mlp"):  # GPT-2
                attn, ffn = getattr(block.attn, "c_proj", None), getattr(block.mlp, "c_proj", None)
            if attn is None or ffn is None:
                raise ValueError(f"--adapt=adapters: no attention and feed-forward output found in a "
                                 f"{type(block).__name__} of {type(encoder.model).__name__}; adapters go into "
                                 f"BERT-like models (*SelfOutput.dense, *Output.dense) and GPT-2 (c_proj)")
            out.append((attn, ffn))
        return out
    raise ValueError(f"--adapt=adapters inserts adapters into Transformer layers; a {type(encoder).__name__} "
                     f"has none (use a Transformer or a Hugging Face BERT/GPT-2 model)")


def norm_modules(module: nn.Module) -> list[nn.Module]:
    """The layer norms of ``module`` (torch's and the custom ones of some Hugging Face models)."""
    return [m for m in module.modules()
            if isinstance(m, nn.LayerNorm) or type(m).__name__.endswith(("LayerNorm", "RMSNorm"))]


def weights_sha256(module: nn.Module) -> str:
    """sha256 over ``module.state_dict()`` in sorted-name order: each name, dtype, shape and bytes."""
    h = hashlib.sha256()
    for name, t in sorted(module.state_dict().items()):
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


class AdapterEncoder(nn.Module):
    """A frozen pretrained ``base`` encoder with two adapters per layer: the Encoder contract
    (``forward(ids, mask, type_ids) -> EncoderOutput``, ``dim``, ``layer_groups()``), where only
    the adapters and the base's layer norms train, and ``state_dict()`` holds only those."""

    def __init__(self, base: nn.Module, cfg: AdaptersConfig = AdaptersConfig()):
        super().__init__()
        self.base_sha256 = weights_sha256(base)  # before anything trains: the base as loaded
        self.base = base
        self.cfg = cfg
        self.dim = base.dim
        self.takes_type_ids = getattr(base, "takes_type_ids", False)
        sites = sublayer_outputs(base)
        self.adapters = nn.ModuleList(nn.ModuleDict({"attn": Adapter(self.dim, cfg), "ffn": Adapter(self.dim, cfg)})
                                      for _ in sites)
        device = next(base.parameters()).device
        self.adapters.to(device)
        for p in base.parameters():
            p.requires_grad_(False)
        norms = norm_modules(base)
        for m in norms:
            for p in m.parameters():
                p.requires_grad_(True)
        self._sites = sites  # a plain list: the modules stay registered under base only
        for (attn, ffn), pair in zip(sites, self.adapters):
            attn.register_forward_hook(_rewrite(pair["attn"]))
            ffn.register_forward_hook(_rewrite(pair["ffn"]))
        trained = {id(p) for m in norms for p in m.parameters()}
        self._frozen = [n for n, t in base.state_dict(keep_vars=True).items()
                        if not (isinstance(t, nn.Parameter) and id(t) in trained)]
        self.register_state_dict_post_hook(_leave_out_frozen)
        self.register_load_state_dict_pre_hook(_fill_in_frozen)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor | None = None,
                type_ids: torch.Tensor | None = None) -> EncoderOutput:
        if type_ids is not None and self.takes_type_ids:
            return self.base(ids, mask, type_ids)
        return self.base(ids, mask)

    def layer_groups(self) -> list[nn.Module]:
        """The base's groups, bottom to top, each cut down to what trains in it: its layer norms
        and the adapters of its layers."""
        groups = self.base.layer_groups()
        where = {id(p): i for i, g in enumerate(groups) for p in g.parameters()}
        out: list[list[nn.Parameter]] = [[p for p in g.parameters() if p.requires_grad] for g in groups]
        for (attn, _), pair in zip(self._sites, self.adapters):
            out[where[id(next(attn.parameters()))]].extend(pair.parameters())
        return [nn.ParameterList(ps) for ps in out]

    def describe(self, base_name: str) -> dict:
        """What a checkpoint keeps to rebuild this encoder: the base's name and hash, the config."""
        return {"base": base_name, "base_sha256": self.base_sha256, "size": self.cfg.size,
                "init": self.cfg.init, "init_std": self.cfg.init_std}


def _rewrite(adapter: Adapter):
    def hook(module: nn.Module, args, output: torch.Tensor) -> torch.Tensor:
        return adapter(output)
    return hook


def _leave_out_frozen(module: AdapterEncoder, state_dict: dict, prefix: str, local_metadata) -> None:
    for name in module._frozen:
        state_dict.pop(f"{prefix}base.{name}", None)


def _fill_in_frozen(module: AdapterEncoder, state_dict: dict, prefix: str, local_metadata, strict: bool,
                    missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
    """A checkpoint without the frozen base loads strictly: the base keeps its own weights."""
    own = module.base.state_dict()
    for name in module._frozen:
        state_dict.setdefault(f"{prefix}base.{name}", own[name])


def check_base(encoder: AdapterEncoder, saved: dict, where: str) -> None:
    """Refuse adapters whose base model is not the one they were trained on."""
    if encoder.base_sha256 != saved["base_sha256"]:
        raise ValueError(f"{where}: the adapters were trained on {saved['base']} with weights sha256 "
                         f"{saved['base_sha256']}, but {saved['base']} now has weights sha256 {encoder.base_sha256}: "
                         f"the base model changed since; use the base they were trained on, or train them again")


def parameter_share(model: nn.Module, pgroups: list[dict]) -> dict:
    """How many of ``model``'s parameters the optimizer groups train, and their share: those of them
    that require a gradient when asked, so after a run whose gradual unfreezing reached only the top
    groups (fewer epochs than groups) the frozen rest does not count."""
    total = sum(p.numel() for p in model.parameters())
    trained = sum(p.numel() for g in pgroups for p in g["params"] if p.requires_grad)
    return {"trainable_params": trained, "total_params": total, "trainable_share": trained / max(total, 1)}
