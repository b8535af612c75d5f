"""CoVe's MT-LSTM and attentional decoder: shapes and the layer contract, padding that reaches
nothing (packed encoder, masked attention), attention weights that sum to one, a model that learns
a tiny parallel batch by heart, GloVe rows for words outside the vocabulary, and freezing."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transferlab.encoders.cove import CoVe, CoVeConfig, CoVeMT, MTDecoderConfig, glove_rows
from transferlab.pretrain.mt import MTLoss, Parallel, ParallelBatches
from transferlab.tasks.generate import greedy_decode
from transferlab.vectors.keyed import WordVectors

from helpers import overfit

WORDS = ["<pad>", "<unk>", "<bos>", "<eos>", "the", "file", "open", "save", "close", "window", "new", "all"]
PAD, BOS, EOS = 0, 1, 2  # target specials in these tests
ENC = CoVeConfig(vectors="unused", vocab_size=len(WORDS), embed_dim=6, hidden_dim=8, n_layers=2, dropout=0.0)
DEC = MTDecoderConfig(vocab_size=13, embed_dim=8, hidden_dim=16, n_layers=2, dropout=0.0, pad_id=PAD)


def _model(seed: int = 0) -> CoVeMT:
    torch.manual_seed(seed)
    rows = torch.randn(len(WORDS), ENC.embed_dim)
    rows[:4] = 0.0
    return CoVeMT(CoVe(ENC, rows), DEC).eval()


def _padded(seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    T = max(map(len, seqs))
    ids = torch.tensor([s + [0] * (T - len(s)) for s in seqs])
    return ids, ids != 0


@torch.no_grad()
def test_shapes_and_layers():
    m = _model()
    src, mask = _padded([[4, 5, 6], [7, 8]])
    out = m.encoder(src, mask)
    D = ENC.embed_dim + 2 * ENC.hidden_dim
    assert m.encoder.dim == D and out.hidden.shape == (2, 3, D) and len(out.layers) == 3
    assert all(layer.shape == (2, 3, D) for layer in out.layers)
    glove = m.encoder.vectors[src]
    for layer in out.layers:  # GloVe first in every layer; layer 0 is GloVe alone
        assert torch.equal(layer[..., : ENC.embed_dim], glove)
    assert torch.equal(out.layers[0][..., ENC.embed_dim:], torch.zeros(2, 3, 2 * ENC.hidden_dim))
    assert torch.equal(out.hidden, out.layers[-1]) and out.layers[1].abs().sum() > out.layers[0].abs().sum()
    logits = m(src, mask, torch.tensor([[BOS, 5, 6, 7], [BOS, 8, 0, 0]]))
    assert logits.shape == (2, 4, DEC.vocab_size)


@torch.no_grad()
def test_padding_reaches_nothing():
    """Each sentence of a padded batch gets the encoder states and logits it gets alone."""
    m = _model()
    srcs, tgts = [[4, 5, 6, 7, 8], [9, 10], [11]], [[BOS, 3, 4, 5], [BOS, 6], [BOS, 7, 8]]
    src, mask = _padded(srcs)
    tgt = torch.tensor([t + [PAD] * (4 - len(t)) for t in tgts])
    layers, logits = m.encoder(src, mask).layers, m(src, mask, tgt)
    for b, (s, t) in enumerate(zip(srcs, tgts)):
        one = torch.tensor([s])
        alone = m.encoder(one, torch.ones_like(one, dtype=torch.bool)).layers
        for got, want in zip(layers, alone):
            assert torch.allclose(got[b, : len(s)], want[0], atol=1e-6)
            assert torch.equal(got[b, len(s):, ENC.embed_dim:], torch.zeros_like(got[b, len(s):, ENC.embed_dim:]))
        want = m(one, torch.ones_like(one, dtype=torch.bool), torch.tensor([t]))
        assert torch.allclose(logits[b, : len(t)], want[0], atol=1e-5)


@torch.no_grad()
def test_attention_sums_to_one_and_padding_gets_none():
    m = _model()
    src, mask = _padded([[4, 5, 6, 7], [8, 9], [10]])
    state = m.start(src, mask)
    for prev in ([BOS, BOS, BOS], [5, 6, 7]):
        logp, state = m.step(torch.tensor(prev), state)
        alpha = state.alpha  # (B, S)
        assert alpha.shape == (3, 4)
        assert torch.allclose(alpha.sum(-1), torch.ones(3), atol=1e-6)
        assert torch.equal(alpha[~mask], torch.zeros(int((~mask).sum())))
        assert (alpha[mask] > 0).all()
        assert torch.allclose(logp.exp().sum(-1), torch.ones(3), atol=1e-5)
    h = torch.randn(3, DEC.hidden_dim)  # the attention alone, on any query
    context, alpha = m.decoder.attend(h, state.memory, mask)
    assert torch.allclose(context, torch.einsum("bs,bsd->bd", alpha, state.memory), atol=1e-6)


def test_overfits_a_tiny_parallel_batch():
    """Teacher-forced training on four pairs, then greedy decoding gives back each target."""
    m = _model(1).train()
    data = Parallel(src=[[4, 5], [6, 5, 11], [7, 9, 10], [8, 9]],
                    tgt=[[3, 4, 5], [6, 7], [8, 9, 10, 11], [12, 3]])
    batch = next(iter(ParallelBatches(data, 4, src_pad=0, tgt_pad=PAD, bos=BOS, eos=EOS, shuffle=False)))
    loss_fn = MTLoss()
    _, last = overfit(m, lambda: loss_fn(m, batch), 80, lr=0.03)
    assert last < 0.05
    m.eval()
    src, mask = batch["ids"], batch["mask"]
    got = greedy_decode(m, src, mask, BOS, EOS, max_len=8)
    want = [data.tgt[i] for i in batch["index"].tolist()]
    assert got == want


def test_add_words_gives_glove_rows_and_unk():
    wv = WordVectors(["the", "zebra", "quokka"], np.arange(18, dtype=np.float32).reshape(3, 6))
    enc = CoVe(ENC, torch.zeros(len(WORDS), ENC.embed_dim))
    enc.wv = wv  # instead of loading cove.vectors
    ids = enc.add_words(["quokka", "Zebra", "blorp", "quokka"])  # as written, else lower-cased
    assert ids[0] == len(WORDS) and ids[1] == len(WORDS) + 1 and ids[2] == ENC.unk_id and ids[3] == ids[0]
    assert enc.add_words(["Zebra"]) == [ids[1]]  # the same word, the same id
    x = enc.embed(torch.tensor([[ids[0], ids[1], 4]]))
    assert torch.equal(x[0, 0], torch.tensor(wv["quokka"])) and torch.equal(x[0, 1], torch.tensor(wv["zebra"]))
    assert torch.equal(x[0, 2], enc.vectors[4])
    assert "extra" not in enc.state_dict() and "vectors" in enc.state_dict()  # added rows are never saved
    assert torch.equal(glove_rows(["THE", "nope"], wv), torch.cat([torch.tensor(wv["the"])[None], torch.zeros(1, 6)]))


def test_freeze_makes_a_feature_extractor():
    enc = _model().encoder
    assert len(enc.layer_groups()) == ENC.n_layers
    enc.freeze()
    enc.train()
    assert not enc.training and not enc.drop.training and enc.layer_groups() == []
    assert not any(p.requires_grad for p in enc.parameters())
    out = enc(*_padded([[4, 5]]))
    assert not out.hidden.requires_grad


@pytest.mark.parametrize("name,value", [("hidden_dim", 0), ("n_layers", 0), ("dropout", 1.0)])
def test_config_rejects_bad_values(name, value):
    with pytest.raises(ValueError, match=f"cove.{name}"):
        CoVeConfig(**{name: value})


def test_registry_rebuilds_the_encoder_from_its_description():
    from transferlab.config import to_dict
    from transferlab.encoders.registry import ENCODERS, buildable

    fam = ENCODERS["cove"]
    assert fam.module is CoVe and fam.config is CoVeConfig and fam.tokens == "words" and "cove" not in buildable()
    enc = _model().encoder
    again = fam.rebuild({"name": "cove", "config": to_dict(enc.cfg)}, {})
    again.load_state_dict(enc.state_dict())  # the same shape, the GloVe rows among the weights
    ids, mask = _padded([[4, 5, 6], [7]])
    with torch.no_grad():
        assert torch.equal(again.eval()(ids, mask).hidden, enc(ids, mask).hidden)
    assert not fam.causal({}, enc) and fam.max_len({}, enc) is None
