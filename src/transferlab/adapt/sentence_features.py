"""Sentence vectors from a frozen encoder: its top layer pooled over each text, cached on disk.

The sentence embeddings SentEval evaluates (Conneau & Kiela 2018) and sentence-transformers
computes: each text framed as the encoder's family frames one text (BERT's ``[CLS] a [SEP]``,
the LSTM's words), run through the encoder, and its top layer (``hidden``) pooled:

- ``mean``: the mean over the text's real tokens (its special tokens included, as
  sentence-transformers' mean pooling over the attention mask); for static word vectors, the
  mean of the vectors of the words the vectors know (a bag of vectors: unknown words, whose
  vector is zero, are left out);
- ``cls``: the first position, BERT's ``[CLS]`` (the first word for an encoder without a start
  token, which static vectors refuse: there it is only the first word's vector);
- ``auto``: the encoder's own sentence vector where its method defines one (a ``sentence``
  method: skip-thought's last state, InferSent's max-pool, ...), else ``mean``;
- ``layers``: ``mean`` over the unweighted average of every layer (the embedding output and each
  block), ELMo's mix without task weights: a language model's top layer is the most specialised
  to predicting words and keeps the least of which words a sentence has.

Texts run longest first in batches of about ``batch_tokens`` tokens, each distinct text once.
:func:`cached_sentence_features` keeps the (N, D) float32 result in one ``.npy`` under a key made
of the encoder's identity, the pooling and the texts, so a second run on the same encoder and
data never loads the encoder; the file is written under a temporary name and renamed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from tqdm import tqdm

from transferlab.adapt.features import length_batches
from transferlab.data.batching import pad_batch
from transferlab.tasks import classify

Pooling = Literal["auto", "mean", "cls", "layers"]


def pool(hidden: torch.Tensor, mask: torch.Tensor, pooling: Pooling, known_only: bool = False) -> torch.Tensor:
    """(B, T, D) states and (B, T) mask -> (B, D). ``known_only``: leave all-zero vectors (static
    vectors' unknown words) out of the mean."""
    keep = mask & (hidden.abs().sum(-1) > 0) if known_only else mask  # (B, T)
    return classify.pool(hidden, keep, "first" if pooling == "cls" else "mean")  # auto without a method of its own


def layer_average(layers: list[torch.Tensor]) -> torch.Tensor:
    """The unweighted mean of an encoder's layers, (B, T, D) each; an encoder whose layers differ
    in width (the AWD-LSTM's) or that has none is refused."""
    widths = {x.size(-1) for x in layers}
    if len(widths) != 1:
        raise ValueError(f"--pooling layers averages an encoder's layers, which needs one width; this "
                         f"encoder's layers are {[x.size(-1) for x in layers] or 'not exposed'}: use mean")
    return torch.stack([x.float() for x in layers]).mean(0)


@torch.no_grad()
def sentence_embeddings(backbone, texts: Sequence[str], pooling: Pooling = "auto", batch_tokens: int = 8192,
                        device: str | torch.device = "cpu", progress: bool = False) -> np.ndarray:
    """(N, D) float32 vectors of ``texts`` under ``backbone``'s frozen encoder (see the module doc)."""
    static = backbone.family == "static"
    if static and pooling == "cls":
        raise ValueError("--pooling cls takes a sentence vector from a start token ([CLS]); static word vectors "
                         "have none: use --pooling mean (their bag of vectors)")
    encoder = backbone.encoder.to(device).eval()
    unique = list(dict.fromkeys(texts))
    framed = [backbone.framing.single(ids).ids for ids in backbone.texts(unique)]
    own = pooling == "auto" and hasattr(encoder, "sentence")  # the method's own sentence vector
    out = np.zeros((len(unique), encoder.sentence_dim if own else encoder.dim), dtype=np.float32)
    bar = tqdm(total=len(unique), desc="encoding", unit=" texts", disable=None if progress else True,
               mininterval=1.0)
    for batch in length_batches([len(f) for f in framed], batch_tokens):
        padded = pad_batch([framed[i] for i in batch], backbone.pad_id)
        mask = padded["mask"].to(device)
        ids = padded["ids"].to(device)
        if own:
            out[batch] = encoder.sentence(ids, mask).float().cpu().numpy()
        else:
            result = encoder(ids, mask)
            hidden = layer_average(result.layers) if pooling == "layers" else result.hidden.float()  # (B, T, D)
            out[batch] = pool(hidden, mask, pooling, known_only=static).cpu().numpy()
        bar.update(len(batch))
    bar.close()
    index = {t: i for i, t in enumerate(unique)}
    return out[[index[t] for t in texts]]


def sentence_key(identity: str, texts: Sequence[str], pooling: Pooling) -> str:
    h = hashlib.sha256(f"sentences\n{identity}\n{pooling}\n".encode())
    for t in texts:
        h.update(t.encode() + b"\n")
    return h.hexdigest()[:24]


def cached_sentence_features(backbone: Callable[[], object], identity: str, texts: Sequence[str], cache: str | Path,
                             name: str, pooling: Pooling = "auto", device: str | torch.device = "cpu",
                             progress: bool = False) -> tuple[np.ndarray, bool]:
    """:func:`sentence_embeddings`, stored as ``cache/NAME-POOLING-KEY.npy`` (``name`` says what it
    holds: task, split, side); True when it came from the cache. ``backbone()`` gives the encoder
    and is called only on a miss, so a run served from the cache never loads it; ``identity``
    must therefore name everything that changes the vectors (the encoder's files, its text
    settings)."""
    path = Path(cache) / f"{name}-{pooling}-{sentence_key(identity, texts, pooling)}.npy"
    if path.is_file():
        return np.load(path), True
    x = sentence_embeddings(backbone(), texts, pooling, device=device, progress=progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            np.save(f, x)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return x, False
