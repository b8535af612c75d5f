"""Generation: a sequence-to-sequence model's output, or a causal language model's continuation of a
prompt; greedy decoding, sampling and beam search, batched.

Any model with the :class:`Seq2Seq` methods decodes here (:class:`transferlab.encoders.cove.CoVeMT`
is the first): ``start(src, mask)`` encodes a batch once, ``step(prev, state)`` gives the
log-probabilities of the next token after ``prev`` and the state after it, ``reorder(state,
index)`` keeps the rows ``index`` of a state.

- Greedy: the most probable token at each step, every sentence of the batch at once, until each
  has produced end-of-sequence or ``max_len`` tokens.
- Beam search (as fairseq's ``SequenceGenerator``): ``beam`` live hypotheses per sentence, one
  row each; at each step the ``2 * beam`` best extensions are ranked; one that ends the sequence
  among the top ``beam`` is finished, and the best ``beam`` that do not end it stay live. A
  sentence is done when it has ``beam`` finished hypotheses (or at ``max_len``, when its live
  ones are finished as they are). The answer is the finished hypothesis of highest length-
  normalized score ``log p(y | x) / |y|^alpha`` (``alpha`` = 0: the raw sum, which favours short
  outputs; 1: the mean per token), ``|y|`` counting the end token. With ``beam = 1`` this is
  exactly greedy decoding (tested).

:func:`generate` decodes a list of sequences in length-sorted batches and returns the outputs in
the input order, without the start and end tokens.

A causal LM (our Transformer's ``pretrain clm`` model, the AWD-LSTM of ``pretrain lm``, any Hugging
Face ``AutoModelForCausalLM``) continues prompts through the same functions: :class:`PromptDecoder`
is a :class:`Seq2Seq` whose source is the prompt (``start`` reads it and keeps the next token's
distribution, which the first ``step`` returns), over a :class:`CausalLM` that reads tokens with or
without a cache (a Transformer's keys and values, an LSTM's state).
:func:`continue_prompts` adds sampling (:func:`sample_decode`) with a temperature (0: greedy),
top-k (Fan et al. 2018) and top-p, nucleus, filtering (Holtzman et al. 2020, "The Curious Case of
Neural Text Degeneration": the smallest set of tokens whose probability reaches p), drawn from a
seeded ``torch.Generator``, so the same prompts, settings and seed give the same text.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch

from transferlab.data.batching import pad_batch
from transferlab.encoders.transformer import KVCache

__all__ = ["GenerateConfig", "Seq2Seq", "greedy_decode", "beam_search", "generate", "LMGenerateConfig", "CausalLM",
           "PromptDecoder", "TransformerLM", "RecurrentLM", "HFCausalLM", "top_k_filter", "top_p_filter", "next_token",
           "sample_decode", "continue_prompts"]


@dataclass(frozen=True)
class GenerateConfig:
    beam: int = 4  # 1 = greedy decoding
    alpha: float = 1.0  # length normalization: score / length**alpha
    max_len_a: float = 3.0  # at most a * (longest source in the batch) + b tokens
    max_len_b: int = 10
    batch_size: int = 64  # sentences decoded at once (each takes `beam` rows)

    def __post_init__(self) -> None:
        if self.beam < 1 or self.batch_size < 1:
            raise ValueError(f"generate.beam and generate.batch_size must be >= 1, got {self.beam}, "
                             f"{self.batch_size}")
        if self.alpha < 0 or self.max_len_a < 0 or self.max_len_b < 1:
            raise ValueError("generate.alpha and generate.max_len_a must be >= 0, generate.max_len_b >= 1")


class Seq2Seq(Protocol):
    def start(self, src: torch.Tensor, mask: torch.Tensor) -> Any: ...

    def step(self, prev: torch.Tensor, state: Any) -> tuple[torch.Tensor, Any]: ...

    def reorder(self, state: Any, index: torch.Tensor) -> Any: ...


def _cut(tokens: list[int], eos: int) -> list[int]:
    return tokens[: tokens.index(eos)] if eos in tokens else tokens


@torch.no_grad()
def greedy_decode(model: Seq2Seq, src: torch.Tensor, mask: torch.Tensor, bos: int, eos: int,
                  max_len: int) -> list[list[int]]:
    """The argmax token at each step for every row of src (B, S); outputs without bos and eos."""
    return _decode(model, src, mask, bos, eos, max_len, lambda logp: logp.argmax(-1))


@torch.no_grad()
def sample_decode(model: Seq2Seq, src: torch.Tensor, mask: torch.Tensor, bos: int, eos: int, max_len: int,
                  temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                  generator: torch.Generator | None = None) -> list[list[int]]:
    """A token drawn at each step for every row of src (B, S) by :func:`next_token`."""
    return _decode(model, src, mask, bos, eos, max_len,
                   lambda logp: next_token(logp, temperature, top_k, top_p, generator))


def _decode(model: Seq2Seq, src: torch.Tensor, mask: torch.Tensor, bos: int, eos: int, max_len: int,
            choose: Callable[[torch.Tensor], torch.Tensor]) -> list[list[int]]:
    """One token per row and step, ``choose(logp (B, V)) -> (B,)``, until every row has ended."""
    state = model.start(src, mask)
    prev = torch.full((src.size(0),), bos, dtype=torch.long, device=src.device)
    done = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
    out = []
    for _ in range(max_len):
        logp, state = model.step(prev, state)
        prev = choose(logp)  # (B,)
        out.append(prev)
        done |= prev == eos
        if bool(done.all()):
            break
    return [_cut(row, eos) for row in torch.stack(out, dim=1).tolist()]


@torch.no_grad()
def beam_search(model: Seq2Seq, src: torch.Tensor, mask: torch.Tensor, bos: int, eos: int, beam: int,
                max_len: int, alpha: float = 1.0) -> list[list[int]]:
    """The best hypothesis per row of src (B, S) by length-normalized score (module docstring)."""
    B, K, dev = src.size(0), beam, src.device
    state = model.reorder(model.start(src, mask), torch.arange(B, device=dev).repeat_interleave(K))
    scores = torch.full((B, K), float("-inf"), device=dev)
    scores[:, 0] = 0.0  # the K copies of a sentence are one hypothesis until the first step
    tokens = torch.full((B * K, 1), bos, dtype=torch.long, device=dev)  # (B*K, t + 1)
    finished: list[list[tuple[float, list[int]]]] = [[] for _ in range(B)]
    rank = torch.arange(2 * K, device=dev)
    for t in range(max_len):
        logp, state = model.step(tokens[:, -1], state)  # (B*K, V)
        V = logp.size(1)
        cand = (scores[:, :, None] + logp.view(B, K, V)).view(B, K * V)  # (B, K*V)
        n = min(2 * K, K * V)
        top, idx = cand.topk(n, dim=1)  # (B, n), best first
        origin, token = idx // V, idx % V  # the hypothesis each extends, and the token
        is_eos = token == eos
        _finish(finished, top, origin, is_eos, tokens, K, t + 1, alpha)
        # the best K extensions that do not end the sequence stay live
        keep = (is_eos.long() * n + rank[:n]).argsort(dim=1)[:, :K]  # (B, K)
        scores = top.gather(1, keep).masked_fill(is_eos.gather(1, keep), float("-inf"))
        rows = (torch.arange(B, device=dev)[:, None] * K + origin.gather(1, keep)).view(-1)  # (B*K,)
        tokens = torch.cat([tokens[rows], token.gather(1, keep).view(-1, 1)], dim=1)
        state = model.reorder(state, rows)
        if all(len(f) >= K for f in finished):
            break
    else:  # max_len reached: the live hypotheses of unfinished sentences are finished as they are
        for b in range(B):
            if len(finished[b]) < K:
                for k, s in enumerate(scores[b].tolist()):
                    if math.isfinite(s):
                        finished[b].append((s / max_len ** alpha, tokens[b * K + k, 1:].tolist()))
    return [_cut(max(f, key=lambda h: h[0])[1], eos) if f else [] for f in finished]


def _finish(finished: list, top: torch.Tensor, origin: torch.Tensor, is_eos: torch.Tensor, tokens: torch.Tensor,
            K: int, length: int, alpha: float) -> None:
    """Record the extensions among each sentence's top K that end the sequence (not for done sentences)."""
    hits = is_eos[:, :K] & torch.isfinite(top[:, :K])
    for b, r in hits.nonzero().tolist():
        if len(finished[b]) < K:
            seq = tokens[b * K + int(origin[b, r]), 1:].tolist()
            finished[b].append((float(top[b, r]) / length ** alpha, seq))


@torch.no_grad()
def generate(model: Seq2Seq, seqs: Sequence[Sequence[int]], pad_id: int, bos: int, eos: int,
             cfg: GenerateConfig = GenerateConfig(), device: str | torch.device = "cpu") -> list[list[int]]:
    """Outputs for every source sequence (in the input order), decoded in length-sorted batches;
    greedy when ``cfg.beam`` is 1."""
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    out: list[list[int]] = [[] for _ in seqs]
    for start in range(0, len(order), cfg.batch_size):
        index = [i for i in order[start: start + cfg.batch_size] if len(seqs[i])]  # an empty source: empty output
        if not index:
            continue
        batch = pad_batch([seqs[i] for i in index], pad_id)
        src, mask = batch["ids"].to(device), batch["mask"].to(device)
        max_len = int(cfg.max_len_a * src.size(1) + cfg.max_len_b)
        if cfg.beam == 1:
            hyps = greedy_decode(model, src, mask, bos, eos, max_len)
        else:
            hyps = beam_search(model, src, mask, bos, eos, cfg.beam, max_len, cfg.alpha)
        for i, h in zip(index, hyps):
            out[i] = h
    return out


# --- a causal language model continues prompts -------------------------------------------------

@dataclass(frozen=True)
class LMGenerateConfig:
    """How :func:`continue_prompts` continues prompts: beam search when ``beam`` > 1, else the argmax
    at ``temperature`` 0, else sampling."""

    max_new_tokens: int = 50
    temperature: float = 1.0  # logits / temperature before sampling; 0 = greedy (the argmax)
    top_k: int = 0  # sample among the k most probable tokens; 0 = all
    top_p: float = 1.0  # sample within the nucleus of probability p; 1 = all
    beam: int = 1  # > 1: beam search (deterministic: leave the sampling settings alone)
    alpha: float = 1.0  # beam search: score / length**alpha (Hugging Face's length_penalty)
    seed: int = 0  # of the sampling generator
    cache: bool = True  # keep keys and values between steps; false: the whole prefix is read at every step
    batch_size: int = 8  # prompts continued at once (prompts of one length together)

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1 or self.beam < 1 or self.batch_size < 1:
            raise ValueError(f"generate.max_new_tokens (--max-new-tokens), generate.beam (--beam) and "
                             f"generate.batch_size must be >= 1, got {self.max_new_tokens}, {self.beam}, "
                             f"{self.batch_size}")
        if self.temperature < 0 or self.top_k < 0:
            raise ValueError(f"generate.temperature (--temperature) and generate.top_k (--top-k) must be >= 0, "
                             f"got {self.temperature}, {self.top_k}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"generate.top_p (--top-p) is a probability in (0, 1], got {self.top_p}")
        if self.alpha < 0:
            raise ValueError(f"generate.alpha (--alpha) must be >= 0, got {self.alpha}")
        if self.beam > 1 and (self.temperature != 1.0 or self.top_k or self.top_p != 1.0):
            raise ValueError("generate.beam (--beam) > 1 is beam search, which samples nothing: leave --temperature, "
                             "--top-k and --top-p at their defaults with it")


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """``logits (B, V)`` with all but each row's k largest set to -inf (ties with the k-th kept);
    k = 0 or k >= V: unchanged."""
    if k <= 0 or k >= logits.size(-1):
        return logits
    kth = logits.topk(k, dim=-1).values[:, -1:]  # (B, 1)
    return logits.masked_fill(logits < kth, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """``logits (B, V)`` with each row's nucleus kept and the rest set to -inf: the smallest set of
    most probable tokens whose probability reaches ``p``, never empty (Holtzman et al. 2020);
    p = 1: unchanged."""
    if p >= 1.0:
        return logits
    probs, order = logits.softmax(-1).sort(dim=-1, descending=True)  # (B, V), most probable first
    before = torch.cat([torch.zeros_like(probs[:, :1]), probs.cumsum(-1)[:, :-1]], dim=1)  # mass ahead of each
    drop = before >= p  # the set already reached p without it (never the first token: 0 < p)
    return logits.masked_fill(torch.zeros_like(drop).scatter(-1, order, drop), float("-inf"))


def next_token(logp: torch.Tensor, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
               generator: torch.Generator | None = None) -> torch.Tensor:
    """A token (B,) per row of ``logp (B, V)`` (log-probabilities or logits): the argmax at
    temperature 0, else drawn from softmax(logp / temperature) after the top-k, then the top-p,
    filter (the order of Hugging Face's logits warpers)."""
    if temperature == 0:
        return logp.argmax(-1)
    logits = top_p_filter(top_k_filter(logp.float() / temperature, top_k), top_p)
    return torch.multinomial(logits.softmax(-1), 1, generator=generator).squeeze(-1)


class CausalLM(Protocol):
    """A left-to-right LM: ``logits(ids, cache, use_cache)`` gives the next token's logits (B, V)
    after ``ids (B, T)``, which follow the positions held in ``cache`` (None: nothing before them),
    and the cache extended by them (None unless ``use_cache``); ``max_len`` is how many positions
    it reads (None: no limit)."""

    max_len: int | None

    def logits(self, ids: torch.Tensor, cache: Any, use_cache: bool) -> tuple[torch.Tensor, Any]: ...

    def reorder_cache(self, cache: Any, index: torch.Tensor) -> Any: ...


@dataclass
class _PromptState:
    tokens: torch.Tensor  # (B, t): the prompt and the tokens chosen since
    cache: Any  # the LM's keys and values of the positions read (None without a cache)
    pending: torch.Tensor | None  # (B, V): the prompt's next-token log-probabilities, for the first step


class PromptDecoder:
    """A :class:`CausalLM` as a :class:`Seq2Seq` whose source is the prompt (module docstring).

    With ``use_cache`` a step reads only the newest token; without, the whole sequence again.
    Past ``lm.max_len`` positions the window slides (nanoGPT's crop): the last ``max_len`` tokens
    are read afresh at each step, cache or not, so both give the same tokens throughout."""

    def __init__(self, lm: CausalLM, use_cache: bool = True) -> None:
        self.lm, self.use_cache = lm, use_cache

    def start(self, src: torch.Tensor, mask: torch.Tensor | None) -> _PromptState:
        if mask is not None and not bool(mask.all()):
            raise ValueError("PromptDecoder: the prompts of a batch must have one length (no padding)")
        logits, cache = self._read(src)
        return _PromptState(src, cache, logits.float().log_softmax(-1))

    def step(self, prev: torch.Tensor, state: _PromptState) -> tuple[torch.Tensor, _PromptState]:
        if state.pending is not None:  # the first step: the prompt's distribution (prev, a placeholder, is not read)
            return state.pending, _PromptState(state.tokens, state.cache, None)
        tokens = torch.cat([state.tokens, prev[:, None]], dim=1)  # (B, t + 1)
        if self.use_cache and (self.lm.max_len is None or tokens.size(1) <= self.lm.max_len):
            logits, cache = self.lm.logits(prev[:, None], state.cache, True)
        else:
            logits, cache = self._read(tokens)
        return logits.float().log_softmax(-1), _PromptState(tokens, cache, None)

    def reorder(self, state: _PromptState, index: torch.Tensor) -> _PromptState:
        cache = self.lm.reorder_cache(state.cache, index) if state.cache is not None else None
        pending = state.pending[index] if state.pending is not None else None
        return _PromptState(state.tokens[index], cache, pending)

    def _read(self, tokens: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """The whole sequence (its last ``max_len`` tokens), with a fresh cache if caching."""
        window = tokens if self.lm.max_len is None else tokens[:, -self.lm.max_len:]  # (B, <= max_len)
        return self.lm.logits(window, None, self.use_cache)


class TransformerLM:
    """A ``pretrain clm`` model (a :class:`~transferlab.pretrain.lm.LanguageModel` over our causal
    :class:`~transferlab.encoders.transformer.Transformer`) as a :class:`CausalLM`; its cache is a
    :class:`~transferlab.encoders.transformer.KVCache`."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.max_len: int | None = model.encoder.cfg.max_len

    def logits(self, ids: torch.Tensor, cache: Any, use_cache: bool) -> tuple[torch.Tensor, Any]:
        if use_cache and cache is None:
            cache = KVCache()
        out = self.model.encoder(ids, cache=cache)
        return self.model.decoder(out.hidden[:, -1]), cache  # (B, V): only the last position is scored

    def reorder_cache(self, cache: KVCache, index: torch.Tensor) -> KVCache:
        return cache.reorder(index)


class RecurrentLM:
    """A ``pretrain lm`` model (a :class:`~transferlab.pretrain.lm.LanguageModel` over the
    AWD-LSTM) as a :class:`CausalLM`; its cache is the LSTM state, one ``(h, c)`` per layer, each
    (1, B, H). A recurrent LM reads any number of positions (``max_len`` None). ``never``: ids it
    may not produce (a word-level LM's ``<unk>``, as fastai's ``LMLearner.predict(no_unk=True)``)."""

    max_len: int | None = None

    def __init__(self, model: torch.nn.Module, never: Sequence[int] = ()) -> None:
        self.model, self.never = model, list(never)

    def logits(self, ids: torch.Tensor, cache: Any, use_cache: bool) -> tuple[torch.Tensor, Any]:
        out = self.model.encoder(ids, state=cache)
        logits = self.model.decoder(out.hidden[:, -1])  # (B, V)
        if self.never:
            logits[:, self.never] = -math.inf
        return logits, out.state if use_cache else None

    def reorder_cache(self, cache: Any, index: torch.Tensor) -> Any:
        return [(h.index_select(1, index), c.index_select(1, index)) for h, c in cache]


class HFCausalLM:
    """A Hugging Face ``AutoModelForCausalLM`` (GPT-2 ...) as a :class:`CausalLM`; its cache is the
    model's own (``past_key_values``, called ``cache`` from transformers 5.2x)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        c = model.config
        self.max_len = getattr(c, "n_positions", None) or getattr(c, "max_position_embeddings", None)
        params = inspect.signature(model.forward).parameters
        self._cache = "cache" if "cache" in params else "past_key_values"
        self._keep_last = {"logits_to_keep": 1} if "logits_to_keep" in params else {}  # score the last position only

    def logits(self, ids: torch.Tensor, cache: Any, use_cache: bool) -> tuple[torch.Tensor, Any]:
        out = self.model(input_ids=ids, use_cache=use_cache, **{self._cache: cache}, **self._keep_last)
        if not use_cache:
            return out.logits[:, -1], None
        return out.logits[:, -1], out["cache"] if "cache" in out else out["past_key_values"]

    def reorder_cache(self, cache: Any, index: torch.Tensor) -> Any:
        if hasattr(cache, "reorder_cache"):  # a transformers Cache: reordered in place
            cache.reorder_cache(index)
            return cache
        return tuple(tuple(t.index_select(0, index) for t in layer) for layer in cache)  # legacy (k, v) tuples


@torch.no_grad()
def continue_prompts(lm: CausalLM, prompts: Sequence[Sequence[int]], eos: int | None,
                     cfg: LMGenerateConfig = LMGenerateConfig(), device: str | torch.device = "cpu"
                     ) -> list[list[int]]:
    """The new tokens after every prompt (in the input order, up to and without ``eos``; None: no
    end token, ``max_new_tokens`` each). Prompts of one length are continued together, in batches
    of ``cfg.batch_size``: no padding, so no prompt's positions shift."""
    if any(len(p) == 0 for p in prompts):
        raise ValueError("continue_prompts: an empty prompt; start it with the model's start (or end) token")
    decoder, end = PromptDecoder(lm, cfg.cache), -1 if eos is None else eos
    generator = torch.Generator(device=device).manual_seed(cfg.seed)
    by_length: dict[int, list[int]] = {}
    for i, p in enumerate(prompts):
        by_length.setdefault(len(p), []).append(i)
    out: list[list[int]] = [[] for _ in prompts]
    for length in sorted(by_length):
        same = by_length[length]
        for start in range(0, len(same), cfg.batch_size):
            index = same[start: start + cfg.batch_size]
            src = torch.tensor([list(prompts[i]) for i in index], dtype=torch.long, device=device)  # (B, length)
            mask = torch.ones_like(src, dtype=torch.bool)
            if cfg.beam > 1:
                hyps = beam_search(decoder, src, mask, 0, end, cfg.beam, cfg.max_new_tokens, cfg.alpha)
            else:
                hyps = sample_decode(decoder, src, mask, 0, end, cfg.max_new_tokens, cfg.temperature, cfg.top_k,
                                     cfg.top_p, generator)
            for i, h in zip(index, hyps):
                out[i] = h
    return out
