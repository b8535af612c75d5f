"""The encoder registry: a plain dict from name to (module class, config class), one place.

Recipes build an encoder with ``cls, cfg_cls = ENCODERS[name]; cls(cfg_cls(**options))``.
"""

from __future__ import annotations

from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig
from transferlab.encoders.transformer import Transformer, TransformerConfig

ENCODERS: dict[str, tuple[type, type]] = {
    "awd_lstm": (AWDLSTM, AWDLSTMConfig),
    "transformer": (Transformer, TransformerConfig),
}
