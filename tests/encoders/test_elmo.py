"""ELMo's encoder: the forward pass against a reference in plain torch ops (a hand-written LSTMP
loop, convolutions as unfolded matmuls), the paper's parameter count, characters for any word,
padding that never reaches a backward state, and the layer contract."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transferlab.encoders.elmo import BOW, EOW, PAPER_FILTERS, ELMo, ELMoConfig, char_ids

WORDS = ["<pad>", "<unk>", "<bos>", "<eos>", "the", "cat", "sat", "on", "mat", "naïve", "x" * 80]
SMALL = ELMoConfig(max_chars=12, char_dim=4, filters=((1, 3), (2, 4), (3, 5)), n_highway=2, dim=6, hidden_dim=10,
                   n_layers=2, dropout=0.0)


def _model() -> ELMo:
    torch.manual_seed(0)
    m = ELMo(SMALL, WORDS).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))  # biases away from their zero init
    return m


def _lstmp(lstm: torch.nn.LSTM, x: torch.Tensor) -> torch.Tensor:
    """One LSTM layer with projection over x (T, D), written out step by step."""
    w_ih, w_hh, w_hr = lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.weight_hr_l0
    b = lstm.bias_ih_l0 + lstm.bias_hh_l0
    h, c, out = torch.zeros(w_hr.size(0)), torch.zeros(w_ih.size(0) // 4), []
    for t in range(x.size(0)):
        i, f, g, o = (w_ih @ x[t] + w_hh @ h + b).chunk(4)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = w_hr @ (torch.sigmoid(o) * torch.tanh(c))
        out.append(h)
    return torch.stack(out)


def _reference(m: ELMo, ids: list[int]) -> list[torch.Tensor]:
    """The layers of one unpadded sentence, from the module's weights and plain ops."""
    chars = m.chars[torch.tensor(ids)]  # (T, C)
    emb = m.char_cnn.embedding.weight[chars]  # (T, C, Dc)
    pooled = []
    for conv in m.char_cnn.convs:
        w = conv.weight  # (n, Dc, width)
        width = w.size(2)
        windows = emb.unfold(1, width, 1)  # (T, C - width + 1, Dc, width)
        scores = torch.einsum("tcdk,ndk->tcn", windows, w) + conv.bias  # (T, positions, n)
        pooled.append(F.relu(scores.max(dim=1).values))
    x = torch.cat(pooled, dim=1)
    for layer in m.highway.layers:
        dim = x.size(1)
        h, g = x @ layer.weight[:dim].t() + layer.bias[:dim], x @ layer.weight[dim:].t() + layer.bias[dim:]
        gate = torch.sigmoid(g)
        x = gate * x + (1 - gate) * F.relu(h)
    tok = x @ m.proj.weight.t() + m.proj.bias
    layers, f_in, b_in = [torch.cat([tok, tok], -1)], tok, tok.flip(0)
    for i, (lf, lb) in enumerate(zip(m.forward_lstms, m.backward_lstms)):
        f_out, b_out = _lstmp(lf, f_in), _lstmp(lb, b_in)
        if i > 0:
            f_out, b_out = f_out + f_in, b_out + b_in
        layers.append(torch.cat([f_out, b_out.flip(0)], -1))
        f_in, b_in = f_out, b_out
    return layers


@torch.no_grad()
def test_forward_matches_a_plain_torch_reference_on_a_padded_batch():
    m = _model()
    sents = [[4, 5, 6, 7, 4, 8], [9, 10, 1], [5]]
    T = max(map(len, sents))
    ids = torch.tensor([s + [0] * (T - len(s)) for s in sents])
    mask = ids != 0
    out = m(ids, mask)
    assert out.hidden.shape == (3, T, 2 * SMALL.dim) and len(out.layers) == 3 and m.dim == 12
    for b, sent in enumerate(sents):
        for got, want in zip(out.layers, _reference(m, sent)):
            assert torch.allclose(got[b, : len(sent)], want, atol=1e-5), (b, (got[b, : len(sent)] - want).abs().max())


@torch.no_grad()
def test_padding_never_reaches_a_state():
    m = _model()
    short = m(torch.tensor([[4, 5, 6]]))
    padded = m(torch.tensor([[4, 5, 6, 0, 0]]), torch.tensor([[True, True, True, False, False]]))
    for a, b in zip(short.layers, padded.layers):
        assert torch.allclose(a, b[:, :3], atol=1e-6)


def test_characters_of_any_word():
    ids = char_ids("naïve", 10)
    assert ids[0] == BOW and ids[-1] == 0 and ids[1:7] == [b + 1 for b in "naïve".encode()] and ids[7] == EOW
    long = char_ids("x" * 80, 10)
    assert len(long) == 10 and long[-1] == EOW
    m = ELMo(SMALL, WORDS)
    assert (m.chars[0] == 0).all() and m.chars.shape == (len(WORDS), SMALL.max_chars)
    m.set_words(["the", "zyzzyva"])  # a new vocabulary: every word has its characters
    assert m.chars.shape == (2, SMALL.max_chars) and m.tokens(torch.tensor([[1]])).shape == (1, 1, SMALL.dim)


def test_paper_sizes_have_the_papers_parameter_count():
    cfg = ELMoConfig(filters=PAPER_FILTERS, dim=512, hidden_dim=4096, n_layers=2, n_highway=2)
    n = sum(p.numel() for p in ELMo(cfg).parameters())
    assert 93.5e6 < n < 93.7e6, n  # Peters et al. 2018: 93.6M


def test_layer_groups_cover_every_parameter_once():
    m = ELMo(SMALL, WORDS)
    grouped = [p for g in m.layer_groups() for p in g.parameters()]
    assert len(grouped) == len(set(map(id, grouped))) == len(list(m.parameters()))


def test_config_names_the_field():
    with pytest.raises(ValueError, match="elmo.max_chars=2 is shorter than the widest filter"):
        ELMoConfig(max_chars=2, filters=((3, 4),))
