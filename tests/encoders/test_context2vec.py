"""context2vec's encoder: the batched, shifted-state contexts against one pass per target, the target
left out of its own context, padding that reaches no real state, shapes and the layer contract."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from transferlab.encoders.context2vec import Context2Vec, Context2VecConfig

CFG = Context2VecConfig(vocab_size=20, word_dim=6, hidden_dim=8, mlp_dim=10, dim=7)
SENTS = [[4, 5, 6, 7, 8, 9], [10, 11, 12], [13]]


def _model(cfg: Context2VecConfig = CFG) -> Context2Vec:
    torch.manual_seed(0)
    m = Context2Vec(cfg).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.1 * torch.randn_like(p))  # biases away from their zero init
    return m


def _padded(sents: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    T = max(map(len, sents))
    ids = torch.tensor([s + [0] * (T - len(s)) for s in sents])  # (B, T)
    return ids, ids != 0


def _one_target(m: Context2Vec, sent: list[int], i: int) -> torch.Tensor:
    """The context vector of ``sent[i]`` the slow way: the left LSTM over ``<bos> w_0 .. w_{i-1}``,
    the right LSTM over ``<eos> w_{n-1} .. w_{i+1}``, each on its own, last states into the MLP."""
    left = torch.tensor([[CFG.bos_id] + sent[:i]])  # (1, i + 1)
    right = torch.tensor([[CFG.eos_id] + sent[i + 1 :][::-1]])  # (1, n - i)
    h_left = m.left_lstm(m.left_embedding(left))[0][0, -1]  # (H,)
    h_right = m.right_lstm(m.right_embedding(right))[0][0, -1]  # (H,)
    return m.mlp_out(F.relu(m.mlp_hidden(torch.cat([h_left, h_right]))))


@pytest.mark.parametrize("n_layers", [1, 2])
@torch.no_grad()
def test_batched_contexts_match_one_pass_per_target(n_layers):
    m = _model(Context2VecConfig(**{**CFG.__dict__, "n_layers": n_layers}))
    ids, mask = _padded(SENTS)
    ctx = m.context(ids, mask)
    for b, sent in enumerate(SENTS):
        for i in range(len(sent)):
            want = _one_target(m, sent, i)
            assert torch.allclose(ctx[b, i], want, atol=1e-5), (b, i, (ctx[b, i] - want).abs().max())


@torch.no_grad()
def test_the_target_is_left_out_of_its_own_context():
    m = _model()
    ids, mask = _padded(SENTS)
    ctx = m.context(ids, mask)
    for i in range(len(SENTS[0])):
        changed = ids.clone()
        changed[0, i] = 15  # another word at position i
        ctx2 = m.context(changed, mask)
        assert torch.equal(ctx2[0, i], ctx[0, i]), i  # its own context does not see it
        others = [j for j in range(len(SENTS[0])) if j != i]
        assert not torch.allclose(ctx2[0, others], ctx[0, others])  # every other context does
        assert torch.equal(ctx2[1:], ctx[1:])  # nor does another sentence


@torch.no_grad()
def test_padding_reaches_no_real_state():
    m = _model()
    ids, mask = _padded(SENTS)
    batched = m.context(ids, mask)
    for b, sent in enumerate(SENTS):
        alone = m.context(torch.tensor([sent]))
        assert torch.allclose(batched[b, : len(sent)], alone[0], atol=1e-6)
    junk = ids.masked_fill(~mask, 17)  # what sits under the mask does not matter either
    assert torch.allclose(m.context(junk, mask)[mask], batched[mask], atol=1e-6)


@torch.no_grad()
def test_shapes_layers_and_layer_groups():
    m = _model()
    ids, mask = _padded(SENTS)
    out = m(ids, mask)
    assert m.dim == CFG.dim and out.hidden.shape == (3, 6, CFG.dim)
    assert [tuple(x.shape) for x in out.layers] == [(3, 6, CFG.dim)] * 2
    assert torch.equal(out.layers[0], m.target_embedding(ids)) and torch.equal(out.layers[1], out.hidden)
    left, right = m.states(ids, mask)
    assert left.shape == right.shape == (3, 6, CFG.hidden_dim)
    grouped = [id(p) for g in m.layer_groups() for p in g.parameters()]
    assert len(grouped) == len(set(grouped)) and set(grouped) == {id(p) for p in m.parameters()}
    names = {n.split(".")[0] for n, _ in m.named_parameters()}
    assert names == {"left_embedding", "right_embedding", "left_lstm", "right_lstm", "mlp_hidden", "mlp_out",
                     "target_embedding"}


def test_config_errors_name_the_setting():
    with pytest.raises(ValueError, match="context2vec.hidden_dim"):
        Context2VecConfig(hidden_dim=0)
    with pytest.raises(ValueError, match="context2vec.dropout"):
        Context2VecConfig(dropout=1.0)
    with pytest.raises(ValueError, match="vocab_size"):
        Context2Vec(Context2VecConfig())
