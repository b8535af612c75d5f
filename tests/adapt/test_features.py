"""Feature extraction: ELMo's scalar mix, word vectors per layer (first / mean subword), the cache."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transferlab.adapt.features import ScalarMix, cached_word_features, word_features
from transferlab.encoders import backbone as bb
from transferlab.encoders.transformer import TransformerConfig
from transferlab.tasks.loading import load_backbone
from transferlab.text.tokenize import TextConfig

SENTENCES = [["the", "unbelievably", "cheap", "tickets", "sold"], ["a", "dog"],
             ["tokenization", "of", "extraordinarily", "long", "words", "works", "here", "too"]]
TEXT = ["the cheap tickets sold", "a dog barked", "words of the day", "long tickets"] * 5


@pytest.fixture(scope="module")
def backbone():
    scratch = bb.ScratchConfig(transformer=TransformerConfig(dim=16, n_layers=2, n_heads=2, ffn_dim=32,
                                                             max_len=12, dropout=0.0, attn_dropout=0.0),
                               subword=bb.SubwordConfig(vocab_size=60, min_freq=1))
    return load_backbone("transformer", TextConfig(), lambda: iter(TEXT), scratch, seed=0)


def test_scalar_mix_is_gamma_times_the_softmax_weighted_sum():
    mix = ScalarMix(3)
    layers = [torch.randn(2, 4, 5) for _ in range(3)]
    torch.testing.assert_close(mix(layers), torch.stack(layers).mean(0))  # zero weights: the mean, gamma 1
    with torch.no_grad():
        mix.weights.copy_(torch.tensor([1.0, 0.0, -1.0]))
        mix.gamma.fill_(2.0)
    w = torch.softmax(torch.tensor([1.0, 0.0, -1.0]), 0)
    torch.testing.assert_close(mix(torch.stack(layers)), 2.0 * sum(wi * x for wi, x in zip(w, layers)))
    mix(layers).sum().backward()
    assert mix.weights.grad is not None and mix.gamma.grad is not None
    with pytest.raises(ValueError, match="ScalarMix of 3 layers got 2"):
        mix(layers[:2])


def test_first_and_mean_subword_vectors_are_the_pieces_of_each_word(backbone):
    first = word_features(backbone, SENTENCES, "first", progress=False)
    mean = word_features(backbone, SENTENCES, "mean", progress=False)
    assert first.n_layers == 3 and first.layers[0].shape == (sum(map(len, SENTENCES)), 16)
    # by hand, sentence 0 alone: the framed pieces, the encoder's layers, each word's span
    pieces, starts = backbone.words(SENTENCES[0])
    f = backbone.framing.words(pieces, starts)
    with torch.no_grad():
        out = backbone.encoder(torch.tensor([f.ids]), torch.ones(1, len(f.ids), dtype=torch.bool))
    assert len(pieces) > len(SENTENCES[0])  # some word has several pieces
    ends = starts[1:] + [len(pieces)]
    for layer in range(3):
        h = out.layers[layer][0]
        for w, (s, e) in enumerate(zip(starts, ends)):
            np.testing.assert_allclose(first.layers[layer][w], h[1 + s].numpy(), atol=2e-3, rtol=2e-3)
            np.testing.assert_allclose(mean.layers[layer][w], h[1 + s:1 + e].mean(0).numpy(), atol=2e-3, rtol=2e-3)


def test_words_past_the_model_maximum_are_marked_and_zero(backbone):
    feats = word_features(backbone, SENTENCES, "mean", progress=False)
    third = slice(feats.offsets[2], feats.offsets[3])
    assert not feats.kept[third].all() and feats.kept[third][0]  # max_len 12 cuts the long sentence
    assert feats.kept[: feats.offsets[2]].all()
    assert not np.any(feats.layers[1][third][~feats.kept[third]])
    means = feats.sentence_means()
    assert means[0].shape == (3, 16)
    second = np.asarray(feats.layers[2][feats.offsets[1]:feats.offsets[2]], np.float32)
    np.testing.assert_allclose(means[2][1], second.mean(0), atol=1e-3)


def test_the_cache_is_reused_and_an_interrupted_extraction_leaves_nothing(backbone, tmp_path, monkeypatch):
    feats, hit = cached_word_features(backbone, "tiny", SENTENCES, tmp_path, "first", progress=False)
    assert not hit and isinstance(feats.layers[0], np.memmap)
    again, hit = cached_word_features(backbone, "tiny", SENTENCES, tmp_path, "first", progress=False)
    assert hit
    for a, b in zip(feats.layers, again.layers):
        np.testing.assert_array_equal(a, b)
    _, hit = cached_word_features(backbone, "tiny", SENTENCES, tmp_path, "mean", progress=False)
    assert not hit  # another subword rule is another entry

    import transferlab.adapt.features as features

    def broken(*args, **kwargs):
        kwargs["write"](0, np.array([0]), np.zeros((1, 16), np.float32))
        raise KeyboardInterrupt

    monkeypatch.setattr(features, "word_features", broken)
    with pytest.raises(KeyboardInterrupt):
        cached_word_features(backbone, "tiny", SENTENCES[:2], tmp_path, "first", progress=False)
    assert len(list(tmp_path.iterdir())) == 2  # the two finished entries; no half-written one


@pytest.mark.parametrize("family", ["transformer", "awd_lstm"])
def test_features_with_mean_pooling_is_the_masked_mean_of_the_mixed_layers(backbone, family):
    """--adapt=features --task.pooling=mean, for any family: the head reads the mean over the real
    tokens of gamma * sum_j softmax(s)_j * h_j (padding left out), then one linear layer."""
    from transferlab.encoders.awd_lstm import AWDLSTMConfig
    from transferlab.encoders.registry import ENCODERS
    from transferlab.tasks.classify import ClassifierHeadConfig
    from transferlab.tasks.model import TaskConfig, build_model
    from transferlab.text.vocab import Vocab

    b = backbone
    if family == "awd_lstm":
        vocab = Vocab.build(t.split() for t in TEXT)
        lstm = ENCODERS["awd_lstm"].new(AWDLSTMConfig(dim=16, hidden_dim=16, n_layers=2), len(vocab), vocab.pad_id)
        b = bb.word_backbone(lstm, vocab, TextConfig(), 12, pretrained=False)
    torch.manual_seed(0)
    model = build_model(b, "classify", 3, TaskConfig(pooling="mean", pooler=False), ClassifierHeadConfig(),
                        adapt="features").eval()
    with torch.no_grad():
        model.encoder.mix.weights.copy_(torch.randn(len(model.encoder.used)))
        model.encoder.mix.gamma.fill_(1.7)
    seqs = [b.framing.single(x).ids for x in b.texts(["the cheap tickets sold", "a dog"])]
    ids = torch.full((2, max(map(len, seqs))), b.pad_id)
    for i, s in enumerate(seqs):
        ids[i, :len(s)] = torch.tensor(s)
    mask = ids != b.pad_id
    mask[:, 0] = True
    layers = b.encoder.eval()(ids, mask).layers
    w = torch.softmax(model.encoder.mix.weights, 0)
    mixed = 1.7 * sum(w[k] * layers[j] for k, j in enumerate(model.encoder.used))  # (B, T, D)
    mean = (mixed * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)  # (B, D)
    expected = model.head.out(mean)
    torch.testing.assert_close(model({"ids": ids, "mask": mask}), expected, atol=1e-4, rtol=1e-4)


def test_features_on_a_transformer_default_to_mean_pooling_without_a_pooler():
    from transferlab.recipes.finetune import load_finetune_config

    feats = load_finetune_config(None, ['encoder="minilm-l6"', 'adapt="features"'])
    assert (feats.task.pooling, feats.task.pooler) == ("mean", False) and feats.train.lr == 1e-3
    first = load_finetune_config(None, ['encoder="transformer"', 'adapt="features"', 'task.pooling="first"'])
    assert first.task.pooling == "first"
    tuned = load_finetune_config(None, ['encoder="minilm-l6"'])
    assert (tuned.task.pooling, tuned.task.pooler) == ("auto", True)  # fine-tuning keeps [CLS] and the pooler
    lstm = load_finetune_config(None, ['encoder="awd_lstm"', 'adapt="features"'])
    assert lstm.task.pooling == "auto"  # the AWD-LSTM keeps ULMFiT's concat pooling
