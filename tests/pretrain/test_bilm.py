"""The biLM objective: each direction sees only its own side, both learn one batch, and the
perplexities come from the full softmax."""

from __future__ import annotations

import torch

from transferlab.encoders.elmo import ELMo, ELMoConfig
from transferlab.pretrain.bilm import BiLM, BiLMLoss, bilm_perplexity
from transferlab.pretrain.lm import LMStream

from helpers import overfit

WORDS = ["<pad>", "<unk>", "<bos>", "<eos>"] + [f"w{i}" for i in range(20)]
CFG = ELMoConfig(max_chars=8, char_dim=4, filters=((1, 4), (2, 4)), n_highway=1, dim=8, hidden_dim=16,
                 n_layers=2, dropout=0.0)


def _bilm() -> BiLM:
    torch.manual_seed(0)
    return BiLM(ELMo(CFG, WORDS), len(WORDS))


@torch.no_grad()
def test_each_direction_sees_only_its_side():
    model = _bilm().eval()
    seq = torch.randint(4, len(WORDS), (1, 7))
    changed = seq.clone()
    changed[0, 4] = 4 if seq[0, 4] != 4 else 5
    (f, b), (f2, b2) = model(seq), model(changed)
    # forward state i predicts token i+1 from tokens 0..i: those before position 4 are unchanged
    assert torch.allclose(f[:, :4], f2[:, :4]) and not torch.allclose(f[:, 4], f2[:, 4])
    # backward state i (for token i) reads tokens i+1..: those for tokens 4.. are unchanged
    assert torch.allclose(b[:, 4:], b2[:, 4:]) and not torch.allclose(b[:, 3], b2[:, 3])


def test_both_directions_learn_one_batch():
    model = _bilm().train()
    batch = next(iter(LMStream(torch.randint(4, len(WORDS), (200,)), 4, 10, variable=False)))
    loss_fn = BiLMLoss()
    first, _ = overfit(model, lambda: loss_fn(model, batch), 150, lr=2e-2)
    fwd, bwd = bilm_perplexity(model, [batch])
    assert first > 2.5 and fwd < 1.5 and bwd < 1.5


def test_sampled_softmax_in_training_only():
    model = _bilm()
    batch = next(iter(LMStream(torch.randint(4, len(WORDS), (200,)), 4, 10, variable=False)))
    model.eval()
    assert torch.allclose(BiLMLoss(samples=3)(model, batch), BiLMLoss()(model, batch))
    model.train()
    assert not torch.allclose(BiLMLoss(samples=3)(model, batch), BiLMLoss()(model, batch))
