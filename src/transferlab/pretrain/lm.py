"""Next-token language modelling over a token stream (Bengio et al. 2003; Mikolov et al. 2010), with
the training recipe of Merity, Keskar and Socher (2018), "Regularizing and Optimizing LSTM
Language Models": variable-length truncated BPTT, activation regularization (AR) and temporal
activation regularization (TAR), and NT-ASGD. This is ULMFiT's first stage.

- :func:`encode_corpus`: lines -> one 1-D LongTensor, each line followed by ``<eos>``.
- :class:`LMStream`: the stream cut into ``batch_size`` contiguous rows and read in windows;
  batches are ``{"ids": (B, T), "labels": (B, T)}`` with labels the next tokens.
- :class:`LanguageModel`: any encoder with ``.embedding`` and ``.dim`` plus a (tied) decoder.
- :class:`LMLoss`: the objective ``loss(model, batch)``; it carries the recurrent state from
  window to window (detached) and can be checkpointed.
- :func:`perplexity`. NT-ASGD, the paper's optimizer, is ``train.optimizer="sgd"`` with
  ``train.average="nt"`` (:mod:`transferlab.train`: averaging is not specific to language models).
"""

from __future__ import annotations

import dataclasses
import math
from array import array
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from transferlab import IGNORE_INDEX
from transferlab.checkpoint import checkpoint_folder, load_checkpoint, load_weights
from transferlab.config import from_dict
from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig, detach_state
from transferlab.encoders.base import EncoderOutput
from transferlab.text.tokenize import TextConfig, whitespace_tokenize
from transferlab.train import evaluating
from transferlab.text.vocab import Vocab

__all__ = [
    "LanguageModel",
    "build_lm",
    "load_lm",
    "lm_text",
    "LMStream",
    "encode_corpus",
    "TokenFile",
    "vocab_and_stream",
    "LMLoss",
    "linear_cross_entropy",
    "sampled_cross_entropy",
    "perplexity",
]


class TokenFile:
    """Token ids in a file of little-endian int32, read a slice at a time: a training stream that
    never has to fit in memory (:class:`LMStream` reads each window's rows from it)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._len = self.path.stat().st_size // 4

    def __len__(self) -> int:
        return self._len

    def read(self, start: int, stop: int) -> np.ndarray:
        with open(self.path, "rb") as f:
            f.seek(4 * start)
            return np.fromfile(f, dtype="<i4", count=stop - start).astype(np.int64)


class _IdWriter:
    """Appends ids to an int32 file (or to memory when ``path`` is None), 1M ids at a time."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.buf, self.parts = path, array("i"), []
        self.file = open(path.with_suffix(".tmp"), "wb") if path is not None else None

    def extend(self, ids) -> None:
        self.buf.extend(ids)
        if len(self.buf) >= 1 << 20:
            self._flush()

    def _flush(self) -> None:
        arr = np.frombuffer(self.buf, dtype=np.int32)
        if self.file is not None:
            arr.astype("<i4").tofile(self.file)
        else:
            self.parts.append(arr.copy())
        self.buf = array("i")

    def close(self) -> torch.Tensor | TokenFile:
        self._flush()
        if self.file is None:
            return torch.from_numpy(np.concatenate(self.parts or [np.zeros(0, np.int32)]).astype(np.int64))
        self.file.close()
        self.path.with_suffix(".tmp").replace(self.path)
        return TokenFile(self.path)


def encode_corpus(
    lines: Iterable[str], vocab: Vocab, tokenize: Callable[[str], list[str]] = whitespace_tokenize,
    path: str | Path | None = None,
) -> torch.Tensor | TokenFile:
    """Ids of every line's tokens followed by ``<eos>`` (the PTB convention; a blank line is a
    lone ``<eos>``), streamed: the corpus never exists as a list of Python strings. With ``path``
    the ids go to an int32 file and a :class:`TokenFile` comes back, so memory does not grow with
    the corpus; without it, a 1-D LongTensor."""
    out = _IdWriter(Path(path) if path is not None else None)
    eos = vocab.eos_id
    for line in lines:
        out.extend(vocab.encode(tokenize(line)))
        out.extend((eos,))
    return out.close()


def vocab_and_stream(
    lines: Iterable[str], tokenize: Callable[[str], list[str]], min_freq: int = 1, max_size: int | None = None,
    path: str | Path | None = None,
) -> tuple[Vocab, torch.Tensor | TokenFile]:
    """``Vocab.build`` and :func:`encode_corpus` in one tokenizing pass (the slow part on a big
    corpus): tokens get provisional ids in order of first occurrence while they are counted, and
    are mapped to the vocabulary's ids at the end. Equal to building, then encoding (tested).
    With ``path`` both the provisional and the final ids live in files (memory grows with the
    number of distinct words, not with the corpus)."""
    provisional: dict[str, int] = {}
    counts: list[int] = []
    tmp = _IdWriter(Path(path).with_suffix(".provisional") if path is not None else None)
    for line in lines:
        pids = []
        for token in tokenize(line):
            pid = provisional.get(token)
            if pid is None:
                pid = provisional[token] = len(counts)
                counts.append(0)
            counts[pid] += 1
            pids.append(pid)
        pids.append(-1)  # <eos>
        tmp.extend(pids)
    pids = tmp.close()
    words = list(provisional)
    vocab = Vocab.build([], min_freq=min_freq, max_size=max_size, counts=dict(zip(words, counts)))
    lookup = np.array([vocab.stoi.get(w, vocab.unk_id) for w in words] + [vocab.eos_id], dtype=np.int64)
    if not isinstance(pids, TokenFile):
        return vocab, torch.from_numpy(lookup[pids.numpy()])  # -1 -> the last entry, <eos>
    out = _IdWriter(Path(path))
    for start in range(0, len(pids), 1 << 22):
        out.extend(lookup[pids.read(start, min(start + (1 << 22), len(pids)))].astype(np.int32))
    pids.path.unlink()
    return vocab, out.close()


class LMStream:
    """Batches of contiguous windows over a token stream (classic ``batchify``).

    The stream is cut into ``batch_size`` rows of ``n = len(ids) // batch_size`` tokens (the
    remainder is dropped); row ``b`` is ``ids[b*n:(b+1)*n]``, so a window continues each row
    where the previous one stopped and a carried recurrent state stays meaningful.

    Window lengths: with ``variable=False`` every window is ``bptt`` (the last one shorter).
    With ``variable=True`` (AWD-LSTM's variable-length BPTT) each window draws a base length,
    ``bptt`` with probability 0.95 else ``bptt / 2``, then ``int(N(base, 5))`` clipped to
    ``[min(5, bptt), int(1.5 * bptt)]``, and the last window is cut to what is left. Lengths
    come from ``numpy.random.default_rng([seed, epoch])``, so a (seed, epoch) pair always gives
    the same windows: to resume at batch k, skip k batches (they are cheap views). ``len()`` is
    exact: the windows are drawn up front. ``token_ids`` may be a :class:`TokenFile`: each
    window's rows are then read from disk (B small reads a step), the same batches.
    """

    def __init__(
        self,
        token_ids: torch.Tensor | TokenFile,
        batch_size: int,
        bptt: int,
        *,
        seed: int = 0,
        epoch: int = 0,
        variable: bool = True,
    ) -> None:
        if isinstance(token_ids, torch.Tensor) and token_ids.dim() != 1:
            raise ValueError(f"LMStream: token_ids must be 1-D, got {tuple(token_ids.shape)}")
        if batch_size < 1 or bptt < 1:
            raise ValueError(f"LMStream: batch_size={batch_size} and bptt={bptt} must be >= 1")
        n = len(token_ids) // batch_size
        if n < 2:
            raise ValueError(
                f"LMStream: {len(token_ids)} tokens are too few for batch_size={batch_size}"
            )
        self.n = n
        # (B, n) rows in memory, or read window by window from a TokenFile
        self.data = token_ids[: n * batch_size].long().reshape(batch_size, n) \
            if isinstance(token_ids, torch.Tensor) else token_ids
        self.batch_size, self.bptt = batch_size, bptt
        self.seed, self.epoch, self.variable = seed, epoch, variable
        self._cache: tuple[tuple, list[tuple[int, int]]] | None = None

    def windows(self) -> list[tuple[int, int]]:
        """``(start, length)`` of every window of this epoch, in order."""
        key = (self.seed, self.epoch, self.variable, self.bptt)
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._draw_windows())
        return list(self._cache[1])

    def _draw_windows(self) -> list[tuple[int, int]]:
        last = self.n - 1  # the final token of a row is only ever a label
        if not self.variable:
            return [(i, min(self.bptt, last - i)) for i in range(0, last, self.bptt)]
        rng = np.random.default_rng([self.seed, self.epoch])
        lo, hi = min(5, self.bptt), max(self.bptt, int(1.5 * self.bptt))
        out, i = [], 0
        while i < last:
            base = self.bptt if rng.random() < 0.95 else self.bptt / 2
            length = min(max(lo, int(rng.normal(base, 5))), hi, last - i)
            out.append((i, length))
            i += length
        return out

    def __len__(self) -> int:
        return len(self.windows())

    def __iter__(self) -> Iterator[dict[str, torch.Tensor]]:
        for i, length in self.windows():
            if isinstance(self.data, TokenFile):
                rows = np.stack([self.data.read(b * self.n + i, b * self.n + i + length + 1)
                                 for b in range(self.batch_size)])  # (B, T + 1)
                window = torch.from_numpy(rows)
                yield {"ids": window[:, :-1].contiguous(), "labels": window[:, 1:].contiguous()}  # (B, T) each
                continue
            yield {
                "ids": self.data[:, i : i + length].contiguous(),  # (B, T)
                "labels": self.data[:, i + 1 : i + 1 + length].contiguous(),  # (B, T)
            }


_CHUNK_ELEMENTS = 1 << 24  # logits computed 16M entries (64 MB in fp32) at a time


class _LinearCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of ``x @ weight.T + bias`` without keeping the (N, V) logits.

    The loss is a scalar, so its gradients are known in the forward pass: per chunk of rows,
    ``softmax - onehot`` is formed in place in the logits buffer and multiplied out at once.
    Same matmuls as ``F.cross_entropy(F.linear(...))`` but one (chunk, V) buffer instead of
    four full (N, V) tensors (logits, log-probs, and their gradients).
    """

    @staticmethod
    def forward(ctx, x, weight, bias, labels, grad_enabled):
        # x (N, D), weight (V, D), bias (V,) or None, labels (N,)
        device = x.device.type
        autocast = torch.is_autocast_enabled(device)
        dtype = torch.get_autocast_dtype(device) if autocast else weight.dtype
        ctx.dtypes = (x.dtype, weight.dtype, None if bias is None else bias.dtype)
        acc = torch.promote_types(dtype, torch.float32)  # softmax and sums: fp32 or better
        # under no_grad, needs_input_grad still says True: skip the gradients explicitly
        need_x, need_w, need_b = (grad_enabled and n for n in ctx.needs_input_grad[:3])
        with torch.autocast(device, enabled=False):
            xc, wc = x.to(dtype), weight.to(dtype)
            bc = None if bias is None else bias.to(dtype)
            valid = labels != IGNORE_INDEX
            target = labels.masked_fill(~valid, 0)[:, None]  # (N, 1)
            n_valid = valid.sum().clamp(min=1)
            scale = (valid.to(acc) / n_valid)[:, None]  # (N, 1): 0 on ignored rows
            gx = torch.empty_like(xc) if need_x else None
            gw = torch.zeros_like(weight, dtype=acc) if need_w else None
            gb = torch.zeros_like(bias, dtype=acc) if need_b else None
            total = torch.zeros((), dtype=acc, device=x.device)
            rows = max(1, _CHUNK_ELEMENTS // weight.size(0))
            for s in range(0, x.size(0), rows):
                e = s + rows
                logits = F.linear(xc[s:e], wc, bc).to(acc)  # (n, V)
                lse = torch.logsumexp(logits, dim=1, keepdim=True)  # (n, 1)
                nll = lse - logits.gather(1, target[s:e])  # (n, 1)
                total += (nll * valid[s:e, None]).sum()
                if not (need_x or need_w or need_b):
                    continue
                g = logits.sub_(lse).exp_()  # softmax, in place
                g.scatter_add_(1, target[s:e], torch.full_like(nll, -1.0))  # minus onehot
                g = g.mul_(scale[s:e]).to(dtype)  # d(mean loss) / d(logits), (n, V)
                if need_x:
                    torch.mm(g, wc, out=gx[s:e])
                if need_w:
                    gw += g.t() @ xc[s:e]  # (V, D)
                if need_b:
                    gb += g.sum(0)
        ctx.save_for_backward(gx, gw, gb)
        return total / n_valid

    @staticmethod
    def backward(ctx, grad):
        out = []
        for g, dtype in zip(ctx.saved_tensors, ctx.dtypes):
            out.append(None if g is None else (g * grad).to(dtype))
        return (*out, None, None)


def linear_cross_entropy(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, labels: torch.Tensor
) -> torch.Tensor:
    """``F.cross_entropy(F.linear(x, weight, bias), labels, ignore_index=-100)`` for x (N, D),
    computed chunk by chunk (see :class:`_LinearCrossEntropy`); 0 when no label counts."""
    return _LinearCrossEntropy.apply(x, weight, bias, labels, torch.is_grad_enabled())


def log_uniform_sample(n: int, vocab_size: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """``n`` draws (with replacement) from the log-uniform (Zipfian) distribution over ids sorted
    by frequency, ``P(k) = log((k + 2) / (k + 1)) / log(V + 1)``, by inverting its CDF."""
    u = torch.rand(n, device=device, dtype=torch.float64)
    return (torch.exp(u * math.log(vocab_size + 1)) - 1).long().clamp_(0, vocab_size - 1)


def _log_expected(ids: torch.Tensor, vocab_size: int, tries: int) -> torch.Tensor:
    """log P(id is among the unique ids of ``tries`` log-uniform draws) = log(1 - (1 - p)^tries)."""
    p = torch.log1p(1.0 / (ids.double() + 1.0)) / math.log(vocab_size + 1)
    return torch.log(-torch.expm1(tries * torch.log1p(-p))).float()


def train_flops_per_token(model: nn.Module, vocab_size: int, samples: int = 0) -> float:
    """Model FLOPs of one training token (forward and backward, 6 per weight a token meets, as
    in Kaplan et al. 2020): every weight matrix of the encoder except the embedding lookup, plus
    the decoder rows the softmax scores: all of them, or the expected unique sampled ones."""
    emb = {id(p) for p in model.encoder.embedding.parameters()}
    weights = sum(p.numel() for p in model.encoder.parameters() if p.dim() >= 2 and id(p) not in emb)
    if samples:
        scored = float(_log_expected(torch.arange(vocab_size), vocab_size, samples).exp().sum()) + 1.0
    else:
        scored = float(vocab_size)
    return 6.0 * (weights + scored * model.decoder.in_features)


def sampled_cross_entropy(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, labels: torch.Tensor, samples: int
) -> torch.Tensor:
    """Sampled softmax (Jean et al. 2015, as in Jozefowicz et al. 2016 and ELMo): the mean
    cross-entropy of each label against ``samples`` log-uniform draws shared by the batch instead
    of the whole vocabulary. Logits are corrected by the log of each id's expected inclusion
    (so the estimate tends to the full softmax), and a draw equal to a row's own label is masked
    out (an "accidental hit"). Ids must be sorted by frequency (our :class:`Vocab` is). For
    training only: evaluate perplexity with the full softmax."""
    keep = labels != IGNORE_INDEX
    x, labels = x[keep], labels[keep]  # (N, D), (N,)
    if labels.numel() == 0:
        return x.sum() * 0.0
    vocab_size = weight.size(0)
    cands = torch.unique(log_uniform_sample(samples, vocab_size, x.device))  # (K,) unique, K varies
    # padded with masked columns to a multiple of 256: a new matrix shape every step made the CPU
    # allocator's memory grow step after step (11 GB after 4,000 steps of the 1h preset)
    width = -(-cands.numel() // 256) * 256
    padding = cands.new_full((width - cands.numel(),), -1)
    cands = torch.cat([cands, padding])  # (width,), -1 = no candidate
    real = cands.clamp(min=0)
    true = (x * weight[labels].to(x.dtype)).sum(-1)  # (N,)
    sampled = x @ weight[real].to(x.dtype).t()  # (N, width)
    if bias is not None:
        true, sampled = true + bias[labels], sampled + bias[real]
    true = true.float() - _log_expected(labels, vocab_size, samples)
    sampled = sampled.float() - _log_expected(real, vocab_size, samples)
    hit_or_pad = (cands[None, :] == labels[:, None]) | (cands[None, :] < 0)
    sampled = sampled.masked_fill(hit_or_pad, float("-inf"))
    logits = torch.cat([true[:, None], sampled], dim=1)  # (N, 1 + K): the label is column 0
    return F.cross_entropy(logits, torch.zeros_like(labels))


class LanguageModel(nn.Module):
    """An encoder and a linear decoder to the vocabulary, tied to the embedding by default
    (Press and Wolf 2017; Inan et al. 2017). Dropout on ``hidden`` is the encoder's job."""

    def __init__(self, encoder: nn.Module, vocab_size: int, tie_weights: bool = True) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = nn.Linear(encoder.dim, vocab_size)
        nn.init.zeros_(self.decoder.bias)
        if tie_weights:
            emb = encoder.embedding.weight
            if tuple(emb.shape) != (vocab_size, encoder.dim):
                raise ValueError(
                    f"LanguageModel: tie_weights needs an embedding of shape "
                    f"(vocab_size={vocab_size}, dim={encoder.dim}), got {tuple(emb.shape)}"
                )
            self.decoder.weight = emb  # one Parameter: the same storage and gradient

    def forward(
        self, ids: torch.Tensor, mask: torch.Tensor | None = None, state=None
    ) -> tuple[torch.Tensor, EncoderOutput]:
        out = self._encode(ids, mask, state)
        return self.decoder(out.hidden), out  # logits (B, T, V)

    def _encode(self, ids: torch.Tensor, mask: torch.Tensor | None, state) -> EncoderOutput:
        # stateless encoders (a Transformer) need not accept a state argument
        return self.encoder(ids, mask) if state is None else self.encoder(ids, mask, state=state)

    def next_token_loss(
        self, ids: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor | None = None, state=None,
        samples: int = 0,
    ) -> tuple[torch.Tensor, EncoderOutput]:
        """Mean cross-entropy against ``labels (B, T)``, fused with the decoder (the logits are
        never materialized whole); what :class:`LMLoss` uses. With ``samples`` > 0 and in training
        mode, a sampled softmax over that many log-uniform draws (:func:`sampled_cross_entropy`)."""
        out = self._encode(ids, mask, state)
        hidden = out.hidden.reshape(-1, out.hidden.size(-1))  # (B*T, D)
        labels = labels.reshape(-1)  # (B*T,)
        if samples and self.training:
            loss = sampled_cross_entropy(hidden, self.decoder.weight, self.decoder.bias, labels, samples)
        else:
            loss = linear_cross_entropy(hidden, self.decoder.weight, self.decoder.bias, labels)
        return loss, out


def build_lm(cfg: AWDLSTMConfig, vocab_size: int) -> LanguageModel:
    encoder = AWDLSTM(dataclasses.replace(cfg, vocab_size=vocab_size))
    return LanguageModel(encoder, vocab_size, tie_weights=True)


def load_lm(path: str | Path):
    """A pretrained language model checkpoint folder (or its run folder: its best) -> (LanguageModel
    with its weights, Vocab)."""
    path = checkpoint_folder(path)
    ckpt = load_checkpoint(path, json_only=True)
    if "vocab" not in ckpt.files:
        raise ValueError(f"{path}: no vocab.json in this checkpoint; is it a language model?")
    vocab = Vocab.from_dict(ckpt.files["vocab"])
    enc_cfg = from_dict(AWDLSTMConfig, ckpt.config["awd_lstm"], "awd_lstm.")
    model = build_lm(enc_cfg, len(vocab))
    load_weights(model, path)
    return model, vocab


def lm_text(path: str | Path) -> TextConfig:
    """The tokenizer settings a language model checkpoint (or its run folder) read its corpus with."""
    return from_dict(TextConfig, load_checkpoint(checkpoint_folder(path), json_only=True).config.get("text", {}),
                     "text.")


def _batch_size(state) -> int | None:
    """The batch size of a (nested) recurrent state: dim 1 of an RNN's (layers, B, H) tensor."""
    while isinstance(state, (list, tuple)) and state:
        state = state[0]
    return state.size(1) if isinstance(state, torch.Tensor) and state.dim() == 3 else None


class LMLoss:
    """Mean next-token cross-entropy over ``labels != IGNORE_INDEX``, stateful across windows.

    The encoder's returned state is kept (detached: truncated BPTT) and passed to the next call;
    it is reset when the batch size changes and by :meth:`reset`. In training mode AWD-LSTM's
    regularizers are added: AR, ``alpha * mean(hidden ** 2)`` on the dropped last-layer output,
    and TAR, ``beta * mean((h_t - h_{t-1}) ** 2)`` on the raw last layer (the paper's values
    are alpha=2, beta=1; both default to 0). ``samples`` > 0 trains with a sampled softmax of
    that many draws (:func:`sampled_cross_entropy`), so a large vocabulary does not dominate the
    step; without a fused :class:`LanguageModel` (a DDP wrapper) the full softmax is used.
    """

    def __init__(self, alpha: float = 0.0, beta: float = 0.0, samples: int = 0) -> None:
        if alpha < 0 or beta < 0 or samples < 0:
            raise ValueError(f"LMLoss: alpha, beta and samples must be >= 0, got {alpha}, {beta}, {samples}")
        self.alpha, self.beta, self.samples = alpha, beta, samples
        self.state = None

    def reset(self) -> None:
        self.state = None

    def __call__(self, model: nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        ids, labels = batch["ids"], batch["labels"]
        if self.state is not None and _batch_size(self.state) != ids.size(0):
            self.state = None
        if self.state is not None and self.state[0][0].device != ids.device:
            self.state = [tuple(t.to(ids.device) for t in hc) for hc in self.state]
        if isinstance(model, LanguageModel):  # not a DDP or compiled wrapper: fused decoder
            loss, out = model.next_token_loss(ids, labels, batch.get("mask"), state=self.state,
                                              samples=self.samples)
        else:
            logits, out = model(ids, batch.get("mask"), state=self.state)
            loss = F.cross_entropy(
                logits.reshape(-1, logits.size(-1)).float(),  # (B*T, V)
                labels.reshape(-1),  # (B*T,)
                ignore_index=IGNORE_INDEX,
            )
        self.state = detach_state(out.state)
        if model.training and self.alpha > 0.0:
            loss = loss + self.alpha * out.hidden.float().pow(2).mean()
        if model.training and self.beta > 0.0 and out.layers[-1].size(1) > 1:
            raw = out.layers[-1].float()  # (B, T, D)
            loss = loss + self.beta * (raw[:, 1:] - raw[:, :-1]).pow(2).mean()
        return loss

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The carried state as ``{"state.<layer>.<i>": tensor}`` (empty when there is none)."""
        if self.state is None:
            return {}
        return {f"state.{layer}.{i}": t for layer, hc in enumerate(self.state) for i, t in enumerate(hc)}

    def load_state_dict(self, tensors: dict[str, torch.Tensor]) -> None:
        """Restore a state saved by :meth:`state_dict` (an empty dict means no state)."""
        layers: dict[int, dict[int, torch.Tensor]] = {}
        for key, t in tensors.items():
            _, layer, i = key.split(".")
            layers.setdefault(int(layer), {})[int(i)] = t
        self.state = [
            tuple(parts[i] for i in sorted(parts)) for _, parts in sorted(layers.items())
        ] or None


@torch.no_grad()
def perplexity(model: nn.Module, stream: Iterable[dict[str, torch.Tensor]]) -> float:
    """``exp`` of the token-weighted mean cross-entropy, in eval mode, state carried over."""
    total, count, state = 0.0, 0, None
    with evaluating(model):
        for batch in stream:
            labels = batch["labels"]
            if state is not None and _batch_size(state) != labels.size(0):
                state = None
            logits, out = model(batch["ids"], batch.get("mask"), state=state)
            state = out.state
            total += F.cross_entropy(
                logits.reshape(-1, logits.size(-1)).float(),  # (B*T, V)
                labels.reshape(-1),
                ignore_index=IGNORE_INDEX,
                reduction="sum",
            ).item()
            count += int((labels != IGNORE_INDEX).sum())
    if count == 0:
        raise ValueError("perplexity: the stream has no labeled tokens")
    return math.exp(total / count)
