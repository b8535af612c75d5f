"""Extractive QA: offsets map answers back exactly, windows with a stride cover long contexts, decoding
follows Hugging Face's n-best rules, and a tiny random BERT overfits a handful of SQuAD questions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from transferlab.data import catalog
from transferlab.data.examples import Answer, QAExample
from transferlab.encoders.backbone import Backbone, hf_backbone
from transferlab.tasks.classify import ClassifierHeadConfig
from transferlab.tasks.model import TaskConfig, build_model
from transferlab.tasks.qa import (QAConfig, Windows, answer_pieces, best_spans, encode_qa, piece_offsets, qa_loss,
                                  qa_scores, qa_tokenizer, window_batches, window_len)
from transferlab.text.framing import Framing
from transferlab.text.subword import SubwordTokenizer


def minilm_folder() -> Path:
    try:
        return Path(catalog.resolve("minilm-l6"))
    except Exception as e:  # noqa: BLE001  the catalog says where it looked
        pytest.skip(f"minilm-l6 not available: {e}")


@pytest.fixture(scope="module")
def tok() -> SubwordTokenizer:
    return SubwordTokenizer.load(minilm_folder())


@pytest.fixture(scope="module")
def squad_train() -> list[QAExample]:
    return list(catalog.load_examples("squad-v1.1", "train"))


BERT = Framing.bert(101, 102, 512)  # minilm-l6's [CLS] and [SEP]


def test_gold_answers_map_back_to_their_exact_text(tok, squad_train):
    examples = squad_train[:300]
    exact = total = 0
    for ex, (_, spans) in zip(examples, piece_offsets(tok, [ex.context for ex in examples])):
        for a in ex.answers:
            first, last = answer_pieces(spans, a.start, a.start + len(a.text))
            text = ex.context[spans[first][0]:spans[last][1]]
            assert a.text in text  # the pieces always cover the answer
            exact += text == a.text
            total += 1
    assert exact / total > 0.98  # the rest start or end inside a word ("Japan" in "Japanese")
    for ex in examples[:5]:  # and these, through the training windows' labels
        w = encode_qa(tok, BERT, [ex], QAConfig(), 384)
        (k,) = [k for k in range(len(w.seqs)) if w.start[k] > 0]
        first, last = w.start[k] - w.context_at[k] + w.first_piece[k], w.end[k] - w.context_at[k] + w.first_piece[k]
        assert ex.context[w.spans[0][first][0]:w.spans[0][last][1]] == ex.answers[0].text


def test_windows_with_a_stride_cover_a_long_context_and_the_answer_lands_inside(tok, squad_train):
    paragraphs = list(dict.fromkeys(ex.context for ex in squad_train[:60]))[:5]
    context = " ".join(paragraphs)
    last = next(ex for ex in squad_train if ex.context == paragraphs[-1])
    shift = context.index(paragraphs[-1])
    ex = QAExample("q", last.question, context, (Answer(last.answers[0].text, last.answers[0].start + shift),))
    cfg = QAConfig(max_len=64, stride=16)
    w = encode_qa(tok, BERT, [ex], cfg, 64)
    n = len(w.spans[0])
    assert n > 400 and len(w.seqs) > 8
    q = len(tok.encode(ex.question))
    for k, seq in enumerate(w.seqs):
        assert len(seq) <= 64 and seq[0] == 101 and seq[w.context_at[k] - 1] == 102 and seq[-1] == 102
        assert w.context_at[k] == 1 + q + 1 and len(seq) == w.context_at[k] + w.n_pieces[k] + 1
        assert w.type_ids[k] == [0] * w.context_at[k] + [1] * (w.n_pieces[k] + 1)
    assert w.first_piece[0] == 0 and w.first_piece[-1] + w.n_pieces[-1] == n  # every piece is read
    for k in range(1, len(w.seqs)):  # consecutive windows share exactly `stride` pieces
        assert w.first_piece[k] == w.first_piece[k - 1] + w.n_pieces[k - 1] - cfg.stride
    a = ex.answers[0]
    gold = answer_pieces(w.spans[0], a.start, a.start + len(a.text))
    for k in range(len(w.seqs)):
        inside = w.first_piece[k] <= gold[0] and gold[1] < w.first_piece[k] + w.n_pieces[k]
        if not inside:
            assert w.start[k] == w.end[k] == 0  # [CLS]: not in this window
            continue
        first = w.start[k] - w.context_at[k] + w.first_piece[k]
        last_piece = w.end[k] - w.context_at[k] + w.first_piece[k]
        assert context[w.spans[0][first][0]:w.spans[0][last_piece][1]] == a.text
    assert sum(s > 0 for s in w.start) >= 1 and w.start[0] == 0  # found, and not in the first window


def _windows(n_windows: int, length: int, at: int = 3) -> Windows:
    spans = [(2 * i, 2 * i + 1) for i in range(100)]  # piece i is the character 2i of "a a a ..."
    return Windows([[0] * length] * n_windows, [[0] * length] * n_windows, [0] * n_windows, [at] * n_windows,
                   [10 * k for k in range(n_windows)], [length - at - 1] * n_windows, [0] * n_windows,
                   [0] * n_windows, [spans])


def test_decoding_takes_the_best_valid_span_over_windows():
    context = " ".join("abcdefghijklmnopqrstuvwxyz" * 4)[:199]
    ex = QAExample("q", "?", context)
    w = _windows(2, 20)  # context positions 3..18 in each window
    lg = [np.full((20, 2), -10.0, np.float32), np.full((20, 2), -10.0, np.float32)]
    lg[0][1, 0] = lg[0][1, 1] = 50.0  # a question position: never an answer
    lg[0][8, 0], lg[0][5, 1] = 9.0, 9.0  # end before start: invalid
    lg[1][10, 0], lg[1][12, 1] = 4.0, 4.0  # valid, score 8: wins
    lg[1][11, 0] = 3.0  # with 12: valid, score 7
    lg[0][0] = [1.0, 1.0]
    lg[1][0] = [0.5, 0.0]  # null score: the lowest over the windows
    (p,) = best_spans([ex], w, lg, QAConfig())
    first, last = 10 + 10 - 3, 12 + 10 - 3  # window 1 starts at piece 10
    assert (p.start, p.end) == (2 * first, 2 * last + 1) and p.text == context[2 * first:2 * last + 1]
    assert p.score == pytest.approx(8.0) and p.null_score == pytest.approx(0.5)
    assert p.answer(None) == p.text and p.answer(-7.0) == p.text and p.answer(-8.0) == ""
    (short,) = best_spans([ex], w, lg, QAConfig(max_answer_len=2))  # the 3-piece spans are too long now
    assert short.score == pytest.approx(7.0) and (short.start, short.end) == (2 * 18, 2 * 19 + 1)  # 11..12


def test_configs_and_encoders_without_offsets_are_refused(tok):
    with pytest.raises(ValueError, match="qa.stride"):
        QAConfig(stride=-1)
    with pytest.raises(ValueError, match="qa.max_len"):
        encode_qa(tok, BERT, [QAExample("q", "what " * 60, "a context")], QAConfig(max_len=64, stride=16), 64)
    words = Backbone(torch.nn.Identity(), "awd_lstm", Framing(), 0, None, None, {"vocab": {}})
    with pytest.raises(ValueError, match="subword pieces"):
        qa_tokenizer(words)


def test_a_tiny_bert_overfits_eight_questions(tmp_path, squad_train, make_tiny_bert):
    tiny = make_tiny_bert(tmp_path / "tiny-bert", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    b = hf_backbone(str(tiny), None)
    seen: dict[str, int] = {}
    examples = []  # two questions on each of four paragraphs: the question decides the span
    for ex in squad_train:
        seen[ex.context] = seen.get(ex.context, 0) + 1
        if seen[ex.context] <= 2 and len(examples) < 8:
            examples.append(ex)
    cfg = QAConfig()
    w = encode_qa(qa_tokenizer(b), b.framing, examples, cfg, window_len(b, cfg))
    model = build_model(b, "qa", 2, TaskConfig(), ClassifierHeadConfig())
    before = qa_scores(model, examples, w, cfg, b.pad_id, True, False)
    opt = torch.optim.AdamW(model.parameters(), 3e-3)
    for epoch in range(120):
        for batch in window_batches(w, 8, b.pad_id, True, epoch=epoch):
            loss = qa_loss(model, batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
    after = qa_scores(model, examples, w, cfg, b.pad_id, True, False)
    assert before["exact_match"] < 0.5 and after["exact_match"] == 1.0 and after["f1"] == 1.0
    assert loss.item() < 0.1
