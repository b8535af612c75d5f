import itertools

import pytest
import torch
import torch.nn.functional as F

from transferlab import IGNORE_INDEX
from transferlab.data import catalog
from transferlab.data.batching import Batches
from transferlab.data.examples import ParsedSentence
from transferlab.encoders import backbone as bb
from transferlab.encoders.awd_lstm import AWDLSTMConfig
from transferlab.encoders.registry import ENCODERS
from transferlab.tasks.classify import ClassifierHeadConfig
from transferlab.tasks.mst import is_tree
from transferlab.tasks.model import TaskConfig, build_model, encode_examples, evaluate, label_set
from transferlab.tasks.parse import (BiaffineParser, ParserConfig, ParserModel, complete_tree, encode_trees,
                                     parse_loss, predict_trees)
from transferlab.text.tokenize import TextConfig
from transferlab.text.vocab import Vocab

TINY = ParserConfig(arc_dim=24, rel_dim=12, dropout=0.0)


def _randomized(model: ParserModel) -> ParserModel:
    """The biaffine weights start at zero (every head scores alike): give them values to compare."""
    torch.manual_seed(1)
    for p in (model.head.arc_U, model.head.arc_u, model.head.rel_U):
        torch.nn.init.normal_(p, std=0.3)
    return model


def _batch(ids: list[list[int]], heads: list[list[int]], rels: list[list[int]]) -> dict:
    positions = [list(range(len(row))) for row in ids]
    b = Batches(ids, len(ids), shuffle=False, seq_extra={"word_index": (positions, -1), "heads": (heads, IGNORE_INDEX),
                                                         "rels": (rels, IGNORE_INDEX)})
    return next(iter(b))


def test_padding_does_not_change_the_scores(bag_encoder):
    model = _randomized(ParserModel(bag_encoder(), BiaffineParser(16, 5, TINY))).eval()
    short, long_ = [3, 4, 5], [6, 7, 8, 9, 10, 11, 12]
    alone = model(_batch([short], [[2, 0, 2]], [[1, 2, 3]]))
    together = model(_batch([long_, short], [[2, 0, 2, 3, 4, 5, 6], [2, 0, 2]], [[0] * 7, [1, 2, 3]]))
    # the batch sorts by length: the short sentence is row 0 there, padded to 7 words
    assert torch.allclose(together.arcs[0, :4, :4], alone.arcs[0], atol=1e-6)
    assert torch.allclose(together.rels[0, :3], alone.rels[0], atol=1e-6)
    assert (together.arcs[0, :, 4:] == torch.finfo(torch.float32).min).all()  # padding is never a head


def test_loss_is_head_then_relation_cross_entropy_over_real_words(bag_encoder):
    model = _randomized(ParserModel(bag_encoder(), BiaffineParser(16, 5, TINY))).eval()
    batch = _batch([[6, 7, 8, 9], [3, 4]], [[2, 0, 2, IGNORE_INDEX], [0, 1]], [[1, 2, 3, 4], [0, IGNORE_INDEX]])
    s = model(batch)
    row = {int(i): r for r, i in enumerate(batch["index"])}  # the batch sorts by length
    words = [(row[0], 1, 2, 1), (row[0], 2, 0, 2), (row[0], 3, 2, 3), (row[1], 1, 0, 0), (row[1], 2, 1, None)]
    arc = F.cross_entropy(torch.stack([s.arcs[b, w] for b, w, _, _ in words]),
                          torch.tensor([h for _, _, h, _ in words]))
    labeled = [(b, w, r) for b, w, _, r in words if r is not None]
    rel = F.cross_entropy(torch.stack([s.rels[b, w - 1] for b, w, _ in labeled]),
                          torch.tensor([r for *_, r in labeled]))
    assert torch.allclose(parse_loss(model, batch), arc + rel, atol=1e-6)


def test_predictions_are_trees_in_the_examples_order_and_cut_words_hang_on(bag_encoder):
    model = _randomized(ParserModel(bag_encoder(), BiaffineParser(16, 5, TINY)))
    ids = [[3, 4, 5, 6, 7], [8, 9], [10, 11, 12]]
    batches = Batches(ids, 2, shuffle=False, seq_extra={"word_index": ([list(range(len(r))) for r in ids], -1)})
    n_words = [5, 4, 3]  # sentence 1 lost two words to truncation
    trees = predict_trees(model, batches, n_words, fallback=4)
    for (heads, rels), n in zip(trees, n_words):
        assert len(heads) == len(rels) == n and is_tree(heads) and heads.count(0) == 1
    assert trees[1][0][2:] == [2, 3] and trees[1][1][2:] == [4, 4]
    assert complete_tree([], [], 3, 0) == ([0, 1, 2], [0, 0, 0])


def _tiny_backbone(sentences, max_len=None):
    vocab = Vocab.build([[w.lower() for w in s.tokens] for s in sentences], min_freq=1)
    cfg = AWDLSTMConfig(dim=32, hidden_dim=64, n_layers=2, embed_p=0.0, input_p=0.0, hidden_p=0.0, weight_p=0.0,
                        output_p=0.0)
    torch.manual_seed(0)
    encoder = ENCODERS["awd_lstm"].new(cfg, len(vocab), vocab.pad_id)
    return bb.word_backbone(encoder, vocab, TextConfig(), max_len, pretrained=False)


def _ewt(shared_data, n, longest=12):
    sents = catalog.load_examples("ud-ewt", "train", parsed=True)
    return list(itertools.islice((s for s in sents if 3 <= len(s.tokens) <= longest), n))


def test_encoding_marks_heads_cut_by_truncation(shared_data):
    sents = _ewt(shared_data, 4, longest=40)
    b = _tiny_backbone(sents, max_len=3)
    seqs, extra, positions, n_cut = encode_trees(b, sents, label_set("parse", sents))
    assert n_cut == 4 and all(len(p) == 3 for p in positions)
    for s, heads in zip(sents, extra["heads"][0]):
        assert heads == [h if h <= 3 else IGNORE_INDEX for h in s.heads[:3]]
    with pytest.raises(ValueError, match="dependency trees"):
        encode_trees(b, [s.tagged() for s in sents], [])


def test_overfits_a_few_ewt_sentences_to_uas_1(shared_data):
    sents = _ewt(shared_data, 6)
    b = _tiny_backbone(sents)
    rels = label_set("parse", sents)
    model = build_model(b, "parse", len(rels), TaskConfig(kind="parse"), ClassifierHeadConfig(),
                        parser=ParserConfig(arc_dim=64, rel_dim=32, dropout=0.0))
    enc = encode_examples(b, sents, "parse", rels, False, "ewt")
    batch = next(iter(Batches(enc.seqs, len(sents), pad_id=b.pad_id, seq_extra=enc.seq_extra)))
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    torch.manual_seed(0)
    for _ in range(200):
        opt.zero_grad()
        loss = parse_loss(model, batch)
        if loss.item() < 0.01:  # about 100 steps: fitted
            break
        loss.backward()
        opt.step()
    scores = evaluate(model, enc, "parse", rels, b.pad_id, sents)
    assert scores["uas"] == 1.0 and scores["las"] == 1.0 and scores["uas_nopunct"] == 1.0


def test_parser_config_names_the_flag():
    with pytest.raises(ValueError, match="parser.arc_dim"):
        ParserConfig(arc_dim=0)
    with pytest.raises(ValueError, match="parser.dropout"):
        ParserConfig(dropout=1.0)


def test_placeholder_trees_encode_for_prediction():
    s = ParsedSentence(("a", "b"), ("_",) * 2, ("_",) * 2, ("_",) * 2, (0, 0), ("dep", "dep"))
    b = _tiny_backbone([s])
    seqs, extra, positions, _ = encode_trees(b, [s], ["dep"])
    assert positions == [[0, 1]] and extra["rels"][0] == [[0, 0]]
