"""Tests for transferlab.pretrain.lm: the LM objective, the BPTT stream, perplexity, NT-ASGD."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig
from transferlab.pretrain.lm import (
    LanguageModel,
    LMLoss,
    LMStream,
    encode_corpus,
    linear_cross_entropy,
    perplexity,
)
from transferlab import IGNORE_INDEX
from transferlab.pretrain import lm
from transferlab.text.vocab import Vocab

from helpers import overfit

V = 99


def tiny_lm(tie: bool = True, **dropouts) -> LanguageModel:
    torch.manual_seed(0)
    cfg = AWDLSTMConfig(vocab_size=V, dim=32, hidden_dim=32, n_layers=2, **dropouts)
    return LanguageModel(AWDLSTM(cfg), V, tie_weights=tie)


def test_overfits_one_batch():
    model = tiny_lm(embed_p=0.0, input_p=0.0, hidden_p=0.0, weight_p=0.1, output_p=0.0).train()
    data = torch.randint(4, V, (2, 17))
    batch = {"ids": data[:, :-1], "labels": data[:, 1:]}
    loss_fn = LMLoss()

    def window_loss():
        loss_fn.reset()  # the same window every step: start from a zero state each time
        return loss_fn(model, batch)

    first, last = overfit(model, window_loss, 100, lr=3e-2)
    assert first == pytest.approx(math.log(V), rel=0.1)
    assert last < 0.35 * first  # about 0.2 x in practice


@pytest.mark.parametrize("variable", [False, True])
def test_stream_windows_are_contiguous_and_shifted(variable):
    ids = torch.arange(1000)
    stream = LMStream(ids, batch_size=4, bptt=10, seed=3, variable=variable)
    batches = list(stream)
    assert len(batches) == len(stream)
    rows = torch.cat([b["ids"] for b in batches], dim=1)  # (B, n - 1)
    labels = torch.cat([b["labels"] for b in batches], dim=1)
    n = 1000 // 4
    assert torch.equal(rows, ids.view(4, n)[:, :-1])  # each row read start to end, no gaps
    assert torch.equal(labels, rows + 1)  # labels are the next tokens
    lengths = [b["ids"].size(1) for b in batches]
    if variable:
        assert len(set(lengths)) > 1 and max(lengths) <= 15 and min(lengths[:-1]) >= 5
    else:
        assert lengths[:-1] == [10] * (len(lengths) - 1) and 0 < lengths[-1] <= 10


def test_stream_is_deterministic_per_seed_and_epoch():
    ids = torch.randint(0, V, (5000,))
    a = LMStream(ids, 8, 20, seed=1, epoch=2)
    assert a.windows() == LMStream(ids, 8, 20, seed=1, epoch=2).windows()
    assert a.windows() != LMStream(ids, 8, 20, seed=1, epoch=3).windows()
    before = a.windows()
    a.epoch = 3
    assert a.windows() != before
    with pytest.raises(ValueError, match="too few"):
        LMStream(torch.arange(5), batch_size=4, bptt=2)


def test_encode_corpus_appends_eos():
    vocab = Vocab.build([["a", "b"], ["b"]])
    ids = encode_corpus(iter(["a b", "", "b zzz"]), vocab)
    a, b = vocab.stoi["a"], vocab.stoi["b"]
    eos, unk = vocab.eos_id, vocab.unk_id
    assert ids.dtype == torch.long
    assert ids.tolist() == [a, b, eos, eos, b, unk, eos]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fused_linear_cross_entropy_matches_pytorch(monkeypatch, dtype):
    monkeypatch.setattr(lm, "_CHUNK_ELEMENTS", 7 * 50)  # 7 rows a chunk: 30 rows, 5 chunks
    torch.manual_seed(0)
    x = torch.randn(30, 8, dtype=dtype, requires_grad=True)
    w = torch.randn(50, 8, dtype=dtype, requires_grad=True)
    b = torch.randn(50, dtype=dtype, requires_grad=True)
    labels = torch.randint(0, 50, (30,))
    labels[::4] = -100  # ignored rows count neither in the mean nor in the gradient
    ref = F.cross_entropy(F.linear(x, w, b), labels)
    ours = linear_cross_entropy(x, w, b, labels)
    tol = 1e-6 if dtype == torch.float32 else 1e-12
    assert abs(ref.item() - ours.item()) < tol
    grads_ref = torch.autograd.grad(3 * ref, (x, w, b))
    for g_ref, g_ours in zip(grads_ref, torch.autograd.grad(3 * ours, (x, w, b))):
        assert g_ours.dtype == dtype and (g_ref - g_ours).abs().max() < tol


def test_lm_loss_equals_cross_entropy_of_the_logits():
    model = tiny_lm().eval()
    batch = {"ids": torch.randint(0, V, (3, 9)), "labels": torch.randint(0, V, (3, 9))}
    batch["labels"][0, :4] = -100
    logits, _ = model(batch["ids"])
    expected = F.cross_entropy(logits.view(-1, V), batch["labels"].view(-1))
    assert abs(LMLoss()(model, batch).item() - expected.item()) < 1e-5


def test_tied_weights_share_storage():
    model = tiny_lm()
    assert model.decoder.weight is model.encoder.embedding.weight
    assert model.decoder.weight.data_ptr() == model.encoder.embedding.weight.data_ptr()
    assert sum(p is model.decoder.weight for p in model.parameters()) == 1
    untied = tiny_lm(tie=False)
    assert untied.decoder.weight.data_ptr() != untied.encoder.embedding.weight.data_ptr()
    with pytest.raises(ValueError, match="tie_weights"):
        LanguageModel(untied.encoder, V + 1)


def test_loss_carries_state_and_checkpoints_it():
    model = tiny_lm().eval()
    stream = list(LMStream(torch.randint(0, V, (600,)), batch_size=4, bptt=10))
    loss_fn = LMLoss()
    loss_fn(model, stream[0])
    assert loss_fn.state is not None and not loss_fn.state[0][0].requires_grad
    saved = {k: v.clone() for k, v in loss_fn.state_dict().items()}
    assert set(saved) == {"state.0.0", "state.0.1", "state.1.0", "state.1.1"}
    expected = loss_fn(model, stream[1])
    fresh = LMLoss()
    assert fresh(model, stream[1]) != expected  # a zero state gives another loss
    fresh.load_state_dict(saved)
    assert fresh(model, stream[1]) == expected  # resuming from a checkpoint is exact
    # a new batch size resets the state instead of crashing
    out = fresh(model, {"ids": stream[2]["ids"][:2], "labels": stream[2]["labels"][:2]})
    assert torch.isfinite(out) and fresh.state[0][0].shape[1] == 2
    fresh.reset()
    assert fresh.state is None and fresh.state_dict() == {}


def test_ar_and_tar_apply_in_training_only():
    model = tiny_lm(embed_p=0.0, input_p=0.0, hidden_p=0.0, weight_p=0.0, output_p=0.0)
    batch = {"ids": torch.randint(0, V, (2, 8)), "labels": torch.randint(0, V, (2, 8))}
    plain = LMLoss()(model.train(), batch)
    regularized = LMLoss(alpha=2.0, beta=1.0)(model, batch)
    assert regularized > plain
    assert LMLoss(alpha=2.0, beta=1.0)(model.eval(), batch) == LMLoss()(model, batch)


def test_perplexity_of_a_uniform_model_is_the_vocab_size():
    model = tiny_lm(tie=False).train()
    torch.nn.init.zeros_(model.decoder.weight)  # every logit 0: a uniform distribution
    stream = LMStream(torch.randint(0, V, (500,)), batch_size=2, bptt=16, variable=False)
    assert perplexity(model, stream) == pytest.approx(V, rel=1e-5)
    assert model.training  # the caller's mode is restored
    assert perplexity(tiny_lm(), stream) > 1.0


def test_sampled_softmax_tends_to_the_full_softmax():
    from transferlab.pretrain.lm import sampled_cross_entropy

    torch.manual_seed(0)
    x, w, b = torch.randn(40, 8), torch.randn(30, 8), torch.randn(30)
    labels = torch.randint(0, 30, (40,))
    labels[3] = IGNORE_INDEX
    full = F.cross_entropy(x @ w.t() + b, labels, ignore_index=IGNORE_INDEX)
    # with far more draws than ids every id is drawn and its expected inclusion is 1: exact
    assert torch.allclose(sampled_cross_entropy(x, w, b, labels, 100_000), full, atol=1e-5)
    # with few draws it is a different (cheaper) loss, and it is differentiable
    w.requires_grad_(True)
    few = sampled_cross_entropy(x, w, b, labels, 8)
    few.backward()
    assert few < full and w.grad.abs().sum() > 0


def test_log_uniform_draws_follow_zipf():
    from transferlab.pretrain.lm import log_uniform_sample

    torch.manual_seed(0)
    draws = log_uniform_sample(200_000, 1000)
    expected = math.log(2) / math.log(1001)  # P(0)
    assert draws.min() >= 0 and draws.max() < 1000
    assert abs((draws == 0).float().mean().item() - expected) < 0.005


def test_lm_loss_samples_only_in_training():
    from transferlab import IGNORE_INDEX  # noqa: F401

    model = tiny_lm(embed_p=0, input_p=0, hidden_p=0, weight_p=0, output_p=0)
    batch = {"ids": torch.randint(4, V, (2, 6)), "labels": torch.randint(4, V, (2, 6))}
    model.eval()
    full = LMLoss()(model, batch)
    assert torch.allclose(LMLoss(samples=4)(model, batch), full)  # eval mode: the full softmax
    model.train()
    assert not torch.allclose(LMLoss(samples=4)(model, batch), LMLoss()(model, batch))


def test_train_flops_per_token_counts_weights_and_scored_rows():
    from transferlab.pretrain.lm import train_flops_per_token

    model = tiny_lm()
    weights = sum(p.numel() for n, p in model.encoder.named_parameters() if p.dim() >= 2 and "embedding" not in n)
    assert train_flops_per_token(model, V) == 6 * (weights + V * 32)
    sampled = train_flops_per_token(model, V, samples=10)
    assert 6 * (weights + 2 * 32) < sampled < 6 * (weights + 11 * 32)  # 1 label + at most 10 unique draws


@pytest.mark.parametrize("min_freq,max_size", [(1, None), (2, 50), (3, 5)])
def test_vocab_and_stream_in_one_pass_equals_build_then_encode(min_freq, max_size):
    from transferlab.pretrain.lm import vocab_and_stream
    from transferlab.text.tokenize import word_tokenize

    lines = ["The cat sat on the mat.", "", "<unk> cats don't sit ; the dog's mat .", "a b c a b a <eos> the"] * 7
    lines += [f"rare{i} the" for i in range(9)]
    vocab, ids = vocab_and_stream(lines, word_tokenize, min_freq, max_size)
    ref = Vocab.build((word_tokenize(line) for line in lines), min_freq=min_freq, max_size=max_size)
    assert vocab.itos == ref.itos
    assert torch.equal(ids, encode_corpus(lines, ref, word_tokenize))


def test_a_token_file_gives_the_same_batches_and_vocabulary(tmp_path):
    from transferlab.pretrain.lm import TokenFile, vocab_and_stream

    lines = [" ".join(f"w{(i * j) % 37}" for j in range(i % 11)) for i in range(3000)]
    vocab, ids = vocab_and_stream(lines, str.split, 2, 30)
    vocab_f, ids_f = vocab_and_stream(lines, str.split, 2, 30, path=tmp_path / "train.ids")
    assert isinstance(ids_f, TokenFile) and vocab_f.itos == vocab.itos and len(ids_f) == len(ids)
    assert not (tmp_path / "train.provisional").exists()
    assert torch.equal(torch.from_numpy(ids_f.read(0, len(ids_f))), ids)
    for variable in (True, False):
        mem = list(LMStream(ids, 7, 9, seed=3, epoch=1, variable=variable))
        disk = list(LMStream(ids_f, 7, 9, seed=3, epoch=1, variable=variable))
        assert len(mem) == len(disk) and all(torch.equal(a[k], b[k]) for a, b in zip(mem, disk) for k in a)
    assert torch.equal(torch.from_numpy(encode_corpus(lines, vocab, str.split, tmp_path / "e.ids").read(0, len(ids))),
                       ids)
