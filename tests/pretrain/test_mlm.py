"""BERT's objectives: masking proportions, whole-word masking, NSP pairs, overfitting one batch."""

from __future__ import annotations

import pytest
import torch

from transferlab import IGNORE_INDEX
from transferlab.encoders.transformer import Transformer, TransformerConfig
from transferlab.pretrain.mlm import MaskedLM, mask_tokens, mlm_loss, nsp_pairs

from helpers import overfit

MASK, V = 3, 1000


def test_masking_proportions_over_100k_tokens():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(10, V, (800, 128), generator=g)
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = special[:, -1] = True  # [CLS] ... [SEP]
    ids[special] = 1
    inputs, labels = mask_tokens(ids, special, MASK, V, generator=g)
    eligible = ~special
    selected = labels != IGNORE_INDEX
    assert not (selected & special).any()  # special tokens never selected
    assert torch.equal(labels[selected], ids[selected])
    n = int(eligible.sum())
    assert n > 100_000
    k = int(selected.sum())
    share = lambda x: 100 * int(x.sum()) / k  # noqa: E731
    assert abs(100 * k / n - 15) < 0.5
    masked = selected & (inputs == MASK)
    kept = selected & (inputs == ids)
    randomized = selected & ~masked & ~kept  # a random token equal to the original counts as kept
    assert abs(share(masked) - 80) < 0.5
    assert abs(share(kept) - 10) < 0.5 + 100 / V  # random draws hitting the original token
    assert abs(share(randomized) - 10) < 0.5
    assert torch.equal(inputs[~selected], ids[~selected])


def test_whole_word_masking_takes_every_subword_of_a_word():
    g = torch.Generator().manual_seed(1)
    word_ids = torch.arange(60).repeat_interleave(2)[None].repeat(200, 1)  # 60 words of 2 subwords
    word_ids[:, 0] = -1
    ids = torch.randint(10, V, word_ids.shape, generator=g)
    special = word_ids < 0
    _, labels = mask_tokens(ids, special, MASK, V, generator=g, word_ids=word_ids)
    chosen = labels != IGNORE_INDEX
    first, second = chosen[:, 2::2], chosen[:, 3::2]  # words 1..59 sit at positions 2w, 2w + 1
    assert torch.equal(first, second)
    sel = first
    assert abs(sel.float().mean().item() - 0.15) < 0.02


def test_nsp_pairs_negatives_from_other_documents_and_half_positive():
    docs = [[f"d{d} s{i}" for i in range(20 + d % 7)] for d in range(400)]
    pairs = nsp_pairs(docs, seed=0)
    assert len(pairs) == sum(len(d) - 1 for d in docs)
    positives = [p for p in pairs if p[2] == 0]
    assert abs(100 * len(positives) / len(pairs) - 50) < 2
    for a, b, label in pairs:
        doc_a, doc_b = a.split()[0], b.split()[0]
        if label == 0:
            assert doc_a == doc_b and int(b.split()[1][1:]) == int(a.split()[1][1:]) + 1
        else:
            assert doc_a != doc_b
    with pytest.raises(ValueError, match="two"):
        nsp_pairs([["only one document"]])


def tiny_bert() -> Transformer:
    torch.manual_seed(0)
    return Transformer(TransformerConfig(vocab_size=60, dim=32, n_layers=2, n_heads=4, ffn_dim=64, max_len=16,
                                         dropout=0.0, attn_dropout=0.0))


def test_mlm_and_nsp_overfit_one_batch():
    model = MaskedLM(tiny_bert(), 60)
    assert model.decoder.weight is model.encoder.embedding.weight
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 60, (8, 12), generator=g)
    special = torch.zeros_like(ids, dtype=torch.bool)
    special[:, 0] = True
    inputs, labels = mask_tokens(ids, special, MASK, 60, p=0.3, generator=g)
    batch = {"ids": inputs, "mask": torch.ones_like(ids, dtype=torch.bool), "type_ids": torch.zeros_like(ids),
             "labels": labels, "nsp_labels": torch.tensor([0, 1] * 4)}
    _, last = overfit(model, lambda: mlm_loss(model, batch), 200, lr=3e-3)
    assert last < 0.05


def test_vocabulary_size_mismatch_is_refused_with_both_sizes():
    with pytest.raises(ValueError, match=r"\(60, 32\).*\(61, 32\)"):
        MaskedLM(tiny_bert(), 61)
    model = MaskedLM(tiny_bert(), 60, nsp=False)
    batch = {"ids": torch.ones(2, 4, dtype=torch.long), "labels": torch.ones(2, 4, dtype=torch.long),
             "nsp_labels": torch.zeros(2, dtype=torch.long)}
    with pytest.raises(ValueError, match="NSP head"):
        mlm_loss(model, batch)


def test_packing_and_masked_batches_are_contiguous_and_deterministic():
    from transferlab.pretrain.mlm import MaskedBatches, packed_windows, token_stream
    from transferlab.text.subword import train_tokenizer

    lines = ["the cat sat on the mat", "a dog ate the bone", "the mat was red"] * 10
    tok = train_tokenizer(lines, "wordpiece", 80, 1, lower=True)
    cls, sep = tok.ids["cls"], tok.ids["sep"]
    stream = token_stream(lines, tok, sep, chunk=7)  # encoded in batches of 7 lines, one sep after each
    assert stream.dtype == torch.int64 and int((stream == sep).sum()) == len(lines)
    windows = packed_windows(stream, 10, cls, sep)
    assert all(len(w) <= 10 and w[0] == cls and w[-1] == sep for w in windows)
    inner = [t for w in windows for t in w[1:-1]]
    assert inner == stream[:len(inner)].tolist()  # consecutive, nothing skipped
    first = list(MaskedBatches(windows, 4, tok, 0.15, seed=1, epoch=0))
    again = list(MaskedBatches(windows, 4, tok, 0.15, seed=1, epoch=0))
    assert all(torch.equal(a["ids"], b["ids"]) and torch.equal(a["labels"], b["labels"]) for a, b in zip(first, again))
    labels = torch.cat([b["labels"].flatten() for b in first])
    assert (labels != IGNORE_INDEX).any() and not torch.isin(labels, torch.tensor([cls, sep, tok.pad_id])).any()


def test_heads_start_as_bert_initialises_them():
    """Every linear layer of the MLM and NSP heads from N(0, 0.02) with zero biases, as BERT's
    ``_init_weights`` does (PyTorch's default, uniform within 1/sqrt(fan_in), has sd 0.036 here)."""
    torch.manual_seed(0)
    d = 256
    enc = Transformer(TransformerConfig(vocab_size=500, dim=d, n_layers=1, n_heads=4, ffn_dim=64, max_len=16))
    model = MaskedLM(enc, 500)
    for layer in (model.transform[0], model.pooler[0], model.nsp_head):
        assert abs(layer.weight.std().item() - 0.02) < 0.002
        assert not layer.bias.any()
    norm = model.transform[2]
    assert torch.equal(norm.weight, torch.ones(d)) and not norm.bias.any()
