"""GPT's auxiliary LM loss: the fine-tuning loss is the task loss plus lambda times an LM loss on
the same batch, computed here by hand for a causal and a bidirectional Transformer and for the
AWD-LSTM; the pretrained head's weights are taken; the masked copies are deterministic."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transferlab import IGNORE_INDEX
from transferlab.adapt.aux_lm import MaskedCopies, attach_aux_lm, head_group, with_aux_lm
from transferlab.data.batching import Batches
from transferlab.data.examples import TextExample
from transferlab.encoders import backbone as bb
from transferlab.encoders.awd_lstm import AWDLSTMConfig
from transferlab.encoders.registry import ENCODERS
from transferlab.encoders.transformer import TransformerConfig
from transferlab.pretrain.mlm import mask_tokens
from transferlab.tasks.classify import ClassifierHeadConfig, classify_loss
from transferlab.tasks.model import TaskConfig, build_model, encode_examples
from transferlab.text.subword import SubwordTokenizer
from transferlab.text.tokenize import TextConfig
from transferlab.text.vocab import Vocab

TEXT = ["the cheap tickets sold out", "a dog barked at night", "words of the day", "long tickets to paris"] * 4
LAMBDA = 0.5


def _backbone(kind: str) -> bb.Backbone:
    torch.manual_seed(0)
    if kind == "awd_lstm":
        vocab = Vocab.build(t.split() for t in TEXT)
        enc = ENCODERS["awd_lstm"].new(AWDLSTMConfig(dim=16, hidden_dim=24, n_layers=2), len(vocab), vocab.pad_id)
        return bb.word_backbone(enc, vocab, TextConfig(), 12, pretrained=False)
    cfg = TransformerConfig(dim=16, n_layers=2, n_heads=2, ffn_dim=32, max_len=12, causal=kind == "causal")
    return bb.transformer_backbone(cfg, bb.SubwordConfig(vocab_size=60, min_freq=1), "", TEXT, True, 12)


def _model_and_batches(b: bb.Backbone):
    examples = [TextExample(t, str(i % 2)) for i, t in enumerate(TEXT)]
    enc = encode_examples(b, examples, "classify", ["0", "1"], False, "test")
    model = build_model(b, "classify", 2, TaskConfig(), ClassifierHeadConfig(hidden_dim=8))

    def batches(epoch: int) -> Batches:
        return Batches(enc.seqs, 8, pad_id=b.pad_id, extra={"labels": enc.labels}, seq_extra=enc.seq_extra,
                       seed=0, epoch=epoch)
    return model, batches


def _hand_lm_loss(model, b: bb.Backbone, batch: dict, seed: int, epoch: int, index: int) -> torch.Tensor:
    """The LM loss of ``batch`` written out: logits over the whole vocabulary, plain cross-entropy."""
    ids, mask = batch["ids"], batch["mask"]
    emb, head = model.encoder.embedding.weight, model.aux_lm
    if b.causal:  # position t predicts t + 1
        logits = F.linear(model.encoder(ids, mask).hidden, emb, head.bias)[:, :-1]  # (B, T-1, V)
        labels = ids[:, 1:].masked_fill(~mask[:, 1:], IGNORE_INDEX)
        return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=IGNORE_INDEX)
    tok = SubwordTokenizer.from_dict(b.files["tokenizer"])
    g = torch.Generator().manual_seed(seed * 1_000_003 + epoch * 10_007 + index)
    special = ~mask | torch.isin(ids, torch.tensor(sorted(set(tok.ids.values()))))
    inputs, labels = mask_tokens(ids, special, tok.ids["mask"], tok.vocab_size, 0.15, generator=g)
    assert torch.equal(inputs, batch["lm_ids"]) and torch.equal(labels, batch["lm_labels"])
    assert (labels != IGNORE_INDEX).any() and not (labels[special] != IGNORE_INDEX).any()
    hidden = model.encoder(inputs, mask).hidden
    logits = F.linear(head.transform(hidden), emb, head.bias)  # (B, T, V)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=IGNORE_INDEX)


@pytest.mark.parametrize("kind", ["masked", "causal", "awd_lstm"])
def test_the_loss_is_the_task_loss_plus_lambda_times_the_lm_loss_of_the_batch(kind):
    b = _backbone(kind)
    model, batches = _model_and_batches(b)
    head = attach_aux_lm(model, b)
    assert (head.transform is None) == b.causal  # BERT's transform before a masked LM's decoder only
    with torch.no_grad():
        head.bias.normal_()  # a head that is not at its zero start
    loss, aux_batches = with_aux_lm(classify_loss, batches, b, LAMBDA, seed=3)
    model.eval()  # no dropout: the task and LM passes are deterministic
    for epoch in (0, 1):
        for i, batch in enumerate(aux_batches(epoch)):
            if i > 1:
                break
            expected = classify_loss(model, batch) + LAMBDA * _hand_lm_loss(model, b, batch, 3, epoch, i)
            torch.testing.assert_close(loss(model, batch), expected, atol=1e-5, rtol=1e-5)
    assert len(aux_batches(0)) == len(batches(0))


def test_the_lm_head_trains_beside_the_task_head_but_its_decoder_is_the_embedding():
    b = _backbone("masked")
    model, batches = _model_and_batches(b)
    head = attach_aux_lm(model, b)
    own = {id(p) for p in head_group(model).parameters()}
    assert {id(p) for p in head.parameters()} <= own and {id(p) for p in model.head.parameters()} <= own
    assert id(model.encoder.embedding.weight) not in own  # gradual unfreezing keeps it in the embedding's group
    assert not any(k.startswith("aux_lm.") and "decoder" in k for k in model.state_dict())  # stored once
    assert head_group(build_model(b, "classify", 2, TaskConfig(), ClassifierHeadConfig())).__class__.__name__ \
        == "LinearHead"  # no aux head: the task head itself, as before


def test_the_pretrained_head_is_where_the_aux_head_starts():
    b = _backbone("masked")
    d, v = 16, b.encoder.embedding.num_embeddings
    weights = {"transform.0.weight": torch.randn(d, d), "transform.2.bias": torch.randn(d),
               "decoder.bias": torch.randn(v), "encoder.embedding.weight": torch.randn(v, d)}
    model, _ = _model_and_batches(b)
    head = attach_aux_lm(model, bb.Backbone(**{**b.__dict__, "lm_head": weights}))
    assert torch.equal(head.transform[0].weight, weights["transform.0.weight"])
    assert torch.equal(head.transform[2].bias, weights["transform.2.bias"])
    assert torch.equal(head.bias, weights["decoder.bias"])


def test_masked_copies_are_the_same_for_the_same_epoch_and_differ_across_epochs():
    b = _backbone("masked")
    _, batches = _model_and_batches(b)
    tok = SubwordTokenizer.from_dict(b.files["tokenizer"])
    first = [x["lm_ids"] for x in MaskedCopies(batches(0), tok, seed=1, epoch=0)]
    again = [x["lm_ids"] for x in MaskedCopies(batches(0), tok, seed=1, epoch=0)]
    other = [x["lm_ids"] for x in MaskedCopies(batches(0), tok, seed=1, epoch=1)]
    assert all(torch.equal(a, c) for a, c in zip(first, again))
    assert not all(torch.equal(a, c) for a, c in zip(first, other))


def test_aux_lm_is_refused_where_it_has_no_meaning():
    from transferlab.recipes.finetune import FinetuneConfig

    with pytest.raises(ValueError, match="aux_lm.*>= 0"):
        FinetuneConfig(aux_lm=-0.5)
    with pytest.raises(ValueError, match="adapt=features"):
        FinetuneConfig(aux_lm=0.5, adapt="features")
    vocab = Vocab.build(t.split() for t in TEXT)
    fasttext = bb.word_backbone(ENCODERS["fasttext"].new(ENCODERS["fasttext"].config(dim=8), len(vocab), 0),
                                vocab, TextConfig(), 12, pretrained=False, fam="fasttext")
    model = build_model(fasttext, "classify", 2, TaskConfig(), ClassifierHeadConfig())
    with pytest.raises(ValueError, match="--aux_lm .* not fasttext"):
        attach_aux_lm(model, fasttext)
