"""Extractive question answering (SQuAD): a start/end span head on any subword encoder.

Devlin et al. 2019 (BERT), section 4.2 and 4.3: the question and the context are one sequence
framed as the backbone frames a pair (BERT's ``[CLS] question [SEP] context [SEP]``); one linear
layer maps every position's vector to a start and an end logit, and the answer is the context
span with the highest start + end score (end >= start, at most ``max_answer_len`` pieces). A
context longer than a window is read in windows that overlap by ``stride`` pieces (Hugging Face's
``doc_stride``: the tokenizer's ``stride``, 128 of 384 by default); each window is a training
sequence whose labels are the answer's first and last piece, or position 0 (``[CLS]``) when the
answer is not inside it, as for a SQuAD v2.0 unanswerable question. Each context piece keeps
its character offsets, so a span maps back to the exact text of the context.

Decoding is Hugging Face's ``postprocess_qa_predictions``: in every window of a question the
``n_best`` highest start and end logits are paired, spans outside the context or too long are
dropped, the best span over the windows wins. For v2.0 the null score is the ``[CLS]`` start +
end score (the lowest over the windows); the question is left unanswered when null score minus
best span score exceeds a threshold, tuned on the validation split to maximize F1
(:func:`transferlab.eval.squad.best_threshold`) and stored with the model.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from transferlab.config import check_at_least, from_dict
from transferlab.data.batching import Batches
from transferlab.data.examples import QAExample
from transferlab.devices import to_device
from transferlab.encoders.base import EncoderOutput
from transferlab.encoders.registry import ENCODERS
from transferlab.eval.squad import best_threshold, squad_metrics
from transferlab.text.framing import Framing
from transferlab.text.subword import SubwordTokenizer
from transferlab.train import evaluating


@dataclass(frozen=True)
class QAConfig:
    max_len: int = 384  # pieces per window, specials included (the model's own limit still applies)
    stride: int = 128  # pieces shared by two consecutive windows of a long context
    max_query_len: int = 64  # question pieces kept (BERT's max_query_length)
    max_answer_len: int = 30  # pieces in a predicted answer
    n_best: int = 20  # start and end candidates per window

    def __post_init__(self):
        check_at_least(self, "qa", 1, ("max_len", "max_query_len", "max_answer_len", "n_best"))
        check_at_least(self, "qa", 0, ("stride",))


# --- question + context -> windows ---------------------------------------------------------------

def qa_tokenizer(b) -> SubwordTokenizer:
    """The backbone's subword tokenizer (its pieces carry character offsets)."""
    if "tokenizer" not in b.files:
        raise ValueError(f"extractive QA needs an encoder that reads subword pieces with character offsets "
                         f"(a Hugging Face model such as minilm-l6, or --encoder transformer); {b.family} "
                         f"reads words")
    return SubwordTokenizer.from_dict(b.files["tokenizer"])


def window_len(b, cfg: QAConfig) -> int:
    """``qa.max_len`` within the encoder's own input limit (data.max_len does not apply to QA)."""
    spec = b.files["encoder"]
    model_max = ENCODERS[spec["name"]].max_len(spec, b.encoder)
    return min(cfg.max_len, model_max) if model_max else cfg.max_len


def piece_offsets(tok: SubwordTokenizer, texts: Sequence[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
    """Each text's piece ids and their character spans in it, leading spaces trimmed (byte-level
    BPE counts the space before a word in its piece)."""
    out = []
    for text, enc in zip(texts, tok.tokenizer.encode_batch(list(texts), add_special_tokens=False)):
        spans = []
        for s, e in enc.offsets:
            while s < e and text[s].isspace():
                s += 1
            spans.append((s, e))
        out.append((list(enc.ids), spans))
    return out


def answer_pieces(spans: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int] | None:
    """The first and last piece of the characters ``[start, end)``: the first piece ending after
    ``start``, the last one starting before ``end``; None when no piece covers them."""
    first = bisect.bisect_right([e for _, e in spans], start)
    last = bisect.bisect_left([s for s, _ in spans], end) - 1
    return (first, last) if first <= last and first < len(spans) else None


@dataclass
class Windows:
    """The windows of some examples: model input, labels, and what maps a position back."""

    seqs: list[list[int]]
    type_ids: list[list[int]]
    example: list[int]  # the example each window reads
    context_at: list[int]  # the position of the window's first context piece
    first_piece: list[int]  # the index (in its context's pieces) of that piece
    n_pieces: list[int]  # context pieces in the window
    start: list[int]  # labels: the answer's first and last position, 0 and 0 when not inside
    end: list[int]
    spans: list[list[tuple[int, int]]]  # per example: its context pieces' character spans
    n_unaligned: int = 0  # training answers no piece span covers (labeled as no answer)


def encode_qa(tok: SubwordTokenizer, framing: Framing, examples: Sequence[QAExample], cfg: QAConfig,
              length: int) -> Windows:
    """Every example as windows of ``length`` pieces: the question (up to ``max_query_len``) framed
    with a stretch of the context, consecutive stretches sharing ``stride`` pieces. The first
    answer is the label (training reads one answer per question, as BERT's run_squad)."""
    n_specials = sum(x is not None for x in (framing.start, framing.delim, framing.end))
    free = dataclasses.replace(framing, max_len=None)  # windows are cut here, never by the framing
    contexts = list(dict.fromkeys(ex.context for ex in examples))  # a paragraph's questions share it
    pieces = dict(zip(contexts, piece_offsets(tok, contexts)))
    questions = tok.encode_batch([ex.question for ex in examples])
    w = Windows([], [], [], [], [], [], [], [], [])
    for i, (ex, q) in enumerate(zip(examples, questions)):
        q = q[:cfg.max_query_len]
        ids, spans = pieces[ex.context]
        w.spans.append(spans)
        budget = length - n_specials - len(q)
        if budget <= cfg.stride:
            raise ValueError(f"qa.max_len={length} leaves {budget} context pieces after a question of {len(q)} "
                             f"pieces and {n_specials} specials: not more than qa.stride={cfg.stride}; raise "
                             f"qa.max_len or lower qa.stride / qa.max_query_len")
        gold = None
        if ex.answers and not ex.is_impossible:
            a = ex.answers[0]
            gold = answer_pieces(spans, a.start, a.start + len(a.text))
            w.n_unaligned += gold is None
        at = (framing.start is not None) + len(q) + (framing.delim is not None)
        first = 0
        while True:
            last = min(first + budget, len(ids))
            enc = free.pair(q, ids[first:last])
            inside = gold is not None and first <= gold[0] and gold[1] < last
            w.seqs.append(enc.ids)
            w.type_ids.append(enc.type_ids)
            w.example.append(i)
            w.context_at.append(at)
            w.first_piece.append(first)
            w.n_pieces.append(last - first)
            w.start.append(at + gold[0] - first if inside else 0)
            w.end.append(at + gold[1] - first if inside else 0)
            if last >= len(ids):
                break
            first = last - cfg.stride
    return w


# --- the head and its loss -----------------------------------------------------------------------

class SpanHead(nn.Module):
    """(B, T, D) hidden states -> one linear layer -> (B, T, 2) start and end logits (BERT's
    ``qa_outputs``), a per-position head for :class:`~transferlab.tasks.classify.TaskModel`."""

    def __init__(self, dim: int):
        super().__init__()
        self.out = nn.Linear(dim, 2)
        nn.init.normal_(self.out.weight, std=0.02)
        nn.init.zeros_(self.out.bias)

    def features(self, out: EncoderOutput, mask: torch.Tensor) -> torch.Tensor:
        return out.hidden.float()  # (B, T, D)

    def output(self, features: torch.Tensor) -> torch.Tensor:
        return self.out(features)  # (B, T, 2)


def span_logits(model: nn.Module, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
    """Start and end logits (B, T) each, padding at -1e4 so it never wins a softmax."""
    logits = model(batch).float()  # (B, T, 2)
    pad = ~batch["mask"]
    return logits[..., 0].masked_fill(pad, -1e4), logits[..., 1].masked_fill(pad, -1e4)


def qa_loss(model: nn.Module, batch: dict) -> torch.Tensor:
    """BERT's: the mean of the start and the end positions' cross-entropies."""
    start, end = span_logits(model, batch)
    return (F.cross_entropy(start, batch["start"]) + F.cross_entropy(end, batch["end"])) / 2


def window_batches(w: Windows, batch_size: int, pad_id: int, segments: bool, **kw) -> Batches:
    """Batches of windows: ids, mask, type_ids (for an encoder with segments), start and end."""
    return Batches(w.seqs, batch_size, pad_id=pad_id, extra={"start": w.start, "end": w.end},
                   seq_extra={"type_ids": (w.type_ids, 0)} if segments else None, **kw)


@torch.no_grad()
def window_logits(model: nn.Module, w: Windows, batch_size: int, pad_id: int, segments: bool
                  ) -> list[np.ndarray]:
    """Each window's (T, 2) start and end logits, in window order."""
    device = next(model.parameters()).device
    out: list[np.ndarray] = [np.empty((0, 2), np.float32)] * len(w.seqs)
    with evaluating(model):
        for batch in window_batches(w, batch_size, pad_id, segments, shuffle=False):
            start, end = span_logits(model, to_device(batch, device))
            both = torch.stack([start, end], -1).cpu().numpy()  # (B, T, 2)
            for row, i in enumerate(batch["index"].tolist()):
                out[i] = both[row, :len(w.seqs[i])]
    return out


# --- decoding ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Prediction:
    text: str  # the best span's text ("" when no span qualifies)
    start: int  # its characters [start, end) in the context (-1 when none)
    end: int
    score: float  # start + end logit of the span
    null_score: float  # start + end logit of position 0, the lowest over the windows

    def answer(self, threshold: float | None) -> str:
        """The text, or "" when no-answer is allowed (a threshold) and null minus span exceeds it."""
        if threshold is not None and self.null_score - self.score > threshold:
            return ""
        return self.text


def best_spans(examples: Sequence[QAExample], w: Windows, logits: Sequence[np.ndarray], cfg: QAConfig
               ) -> list[Prediction]:
    """The best span of each example over its windows (Hugging Face's n-best search)."""
    best: list[tuple[float, int, int, int]] = [(-np.inf, -1, 0, 0)] * len(examples)  # score, window, pieces
    null = [np.inf] * len(examples)
    for k, lg in enumerate(logits):
        i, s, e = w.example[k], lg[:, 0], lg[:, 1]
        null[i] = min(null[i], float(s[0] + e[0]))
        n = min(cfg.n_best, len(s))
        top_s, top_e = np.argsort(-s, kind="stable")[:n], np.argsort(-e, kind="stable")[:n]
        lo, hi = w.context_at[k], w.context_at[k] + w.n_pieces[k]
        ok = ((top_s >= lo) & (top_s < hi))[:, None] & ((top_e >= lo) & (top_e < hi))[None, :] \
            & (top_e[None, :] >= top_s[:, None]) & (top_e[None, :] - top_s[:, None] < cfg.max_answer_len)  # (n, n)
        if not ok.any():
            continue
        scores = np.where(ok, s[top_s][:, None] + e[top_e][None, :], -np.inf)  # (n, n)
        a, b = np.unravel_index(int(np.argmax(scores)), scores.shape)
        if scores[a, b] > best[i][0]:
            offset = w.first_piece[k] - lo  # position -> index among the context's pieces
            best[i] = (float(scores[a, b]), k, int(top_s[a]) + offset, int(top_e[b]) + offset)
    out = []
    for i, ex in enumerate(examples):
        score, k, p, q = best[i]
        if k < 0:
            out.append(Prediction("", -1, -1, score, null[i]))
            continue
        start, end = w.spans[i][p][0], w.spans[i][q][1]
        out.append(Prediction(ex.context[start:end], start, end, score, null[i]))
    return out


def is_version2(examples: Sequence[QAExample]) -> bool:
    """SQuAD v2.0-style data: some question has no answer."""
    return any(ex.is_impossible or not ex.answers for ex in examples)


def qa_scores(model: nn.Module, examples: Sequence[QAExample], w: Windows, cfg: QAConfig, pad_id: int,
              segments: bool, version2: bool, threshold: float | None = 0.0, batch_size: int = 64) -> dict:
    """SQuAD EM and F1 of the model's answers. A ``version2`` model may answer nothing: at the
    given null threshold, or (``threshold=None``) at the one that maximizes F1 here, returned
    as ``null_threshold``."""
    preds = best_spans(examples, w, window_logits(model, w, batch_size, pad_id, segments), cfg)
    if not version2:
        return squad_metrics(examples, {ex.id: p.text for ex, p in zip(examples, preds)})
    if threshold is None:
        threshold, _ = best_threshold(examples, {ex.id: p.text for ex, p in zip(examples, preds)},
                                      {ex.id: p.null_score - p.score for ex, p in zip(examples, preds)})
    answers = {ex.id: p.answer(threshold) for ex, p in zip(examples, preds)}
    return squad_metrics(examples, answers) | {"null_threshold": float(threshold)}


# --- a trained model (a :class:`~transferlab.tasks.loading.TaskPredictor`) ----------------------

def predictor_windows(p, examples: Sequence[QAExample]) -> tuple[QAConfig, Windows]:
    """The examples as windows the way the predictor's model was trained (its ``qa`` config)."""
    cfg = from_dict(QAConfig, p.config.get("qa", {}), "qa.")
    return cfg, encode_qa(qa_tokenizer(p.backbone), p.backbone.framing, examples, cfg, window_len(p.backbone, cfg))


def predictor_spans(p, examples: Sequence[QAExample]) -> list[Prediction]:
    """Each example's best span under the predictor's model (its windows, then the n-best search)."""
    cfg, w = predictor_windows(p, examples)
    logits = window_logits(p.model, w, p.batch_size, p.backbone.pad_id, p.backbone.framing.segments)
    return best_spans(examples, w, logits, cfg)


def predictor_threshold(p) -> float | None:
    """The no-answer threshold a v2.0-style model stored; None for a model that always answers."""
    return float(p.task.get("null_threshold", 0.0)) if p.task.get("version2") else None


def evaluate_predictor(p, examples: Sequence[QAExample]) -> dict:
    """SQuAD EM and F1 (and HasAns/NoAns on v2.0 data) at the model's stored null threshold."""
    if not examples or not isinstance(examples[0], QAExample):
        raise ValueError("an extractive QA model is evaluated on questions with contexts (SQuAD JSON, or "
                         "a catalog QA task such as squad-v1.1)")
    cfg, w = predictor_windows(p, examples)
    return qa_scores(p.model, examples, w, cfg, p.backbone.pad_id, p.backbone.framing.segments,
                     bool(p.task.get("version2")), float(p.task.get("null_threshold", 0.0)), p.batch_size)
