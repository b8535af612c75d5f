"""Greedy decoding and beam search: beam 1 is greedy on a real model, a wider beam finds the
hypothesis greedy misses, length normalization changes which one wins, and batched generation
returns every output in the input order."""

from __future__ import annotations

import torch

from transferlab.encoders.cove import CoVe, CoVeConfig, CoVeMT, MTDecoderConfig
from transferlab.pretrain.mt import MTLoss, Parallel, ParallelBatches
from transferlab.tasks.generate import GenerateConfig, beam_search, generate, greedy_decode

BOS, EOS, A, B, C = 0, 1, 2, 3, 4


class Markov:
    """A toy seq2seq: the next token's distribution depends only on the previous token."""

    def __init__(self, probs: dict[int, dict[int, float]], V: int = 5) -> None:
        table = torch.zeros(V, V)
        for prev, nxt in probs.items():
            for tok, p in nxt.items():
                table[prev, tok] = p
        self.logp = table.log()  # (V, V), -inf where impossible

    def start(self, src, mask):
        return torch.zeros(src.size(0))

    def step(self, prev, state):
        return self.logp[prev], state

    def reorder(self, state, index):
        return state[index]


# greedy takes A (0.6) then C (0.55): p(A C) = 0.33; p(B) = 0.4 is more probable but shorter
TOY = Markov({BOS: {A: 0.6, B: 0.4}, A: {C: 0.55, B: 0.45}, B: {EOS: 1.0}, C: {EOS: 1.0}})
SRC, MASK = torch.ones(2, 3, dtype=torch.long), torch.ones(2, 3, dtype=torch.bool)


def test_beam_finds_what_greedy_misses_and_length_normalization_decides():
    assert greedy_decode(TOY, SRC, MASK, BOS, EOS, max_len=5) == [[A, C]] * 2
    assert beam_search(TOY, SRC, MASK, BOS, EOS, beam=1, max_len=5) == [[A, C]] * 2
    # the raw log-probability: log 0.4 > log 0.33
    assert beam_search(TOY, SRC, MASK, BOS, EOS, beam=2, max_len=5, alpha=0.0) == [[B]] * 2
    # per token (EOS counted): log(0.4) / 2 = -0.46 < log(0.33) / 3 = -0.37
    assert beam_search(TOY, SRC, MASK, BOS, EOS, beam=2, max_len=5, alpha=1.0) == [[A, C]] * 2


def test_max_len_ends_unfinished_hypotheses():
    loop = Markov({BOS: {A: 1.0}, A: {A: 0.9, EOS: 0.1}})
    assert greedy_decode(loop, SRC, MASK, BOS, EOS, max_len=4) == [[A] * 4] * 2
    assert beam_search(loop, SRC, MASK, BOS, EOS, beam=1, max_len=4) == [[A] * 4] * 2
    assert beam_search(loop, SRC, MASK, BOS, EOS, beam=3, max_len=4, alpha=0.0) == [[A]] * 2


def _cove_mt(steps: int = 0) -> CoVeMT:
    """A small CoVe MT model, trained ``steps`` steps on random pairs with targets of 1 to 8 pieces."""
    torch.manual_seed(3)
    enc = CoVe(CoVeConfig(vectors="unused", vocab_size=20, embed_dim=6, hidden_dim=8, dropout=0.0),
               torch.randn(20, 6))
    m = CoVeMT(enc, MTDecoderConfig(vocab_size=15, embed_dim=8, hidden_dim=12, dropout=0.0))
    data = Parallel([torch.randint(4, 20, (n % 5 + 1,)).tolist() for n in range(8)],
                    [torch.randint(2, 15, (n + 1,)).tolist() for n in range(8)])
    batch = next(iter(ParallelBatches(data, 8, src_pad=0, tgt_pad=0, bos=BOS, eos=EOS)))
    opt = torch.optim.Adam(m.parameters(), lr=0.03)
    for _ in range(steps):
        opt.zero_grad()
        MTLoss()(m, batch).backward()
        opt.step()
    return m.eval()


def test_beam_1_equals_greedy_on_cove():
    m = _cove_mt(steps=30)
    torch.manual_seed(0)
    src = torch.randint(4, 20, (8, 6))
    mask = torch.arange(6)[None, :] < torch.tensor([6, 5, 4, 3, 2, 1, 6, 3])[:, None]
    src = src.masked_fill(~mask, 0)
    greedy = greedy_decode(m, src, mask, BOS, EOS, max_len=10)
    assert beam_search(m, src, mask, BOS, EOS, beam=1, max_len=10) == greedy
    assert len({len(g) for g in greedy}) > 2, greedy  # ends at different steps
    wide = beam_search(m, src, mask, BOS, EOS, beam=4, max_len=10, alpha=0.0)

    def logprob(i: int, seq: list[int]) -> float:  # the model's log p(seq + EOS | src_i), teacher-forced
        tgt = seq + [EOS] if len(seq) < 10 else seq
        logits = m(src[i: i + 1], mask[i: i + 1], torch.tensor([[BOS] + tgt[:-1]]))
        return float(logits.log_softmax(-1)[0, torch.arange(len(tgt)), torch.tensor(tgt)].sum())

    with torch.no_grad():  # a wider beam never scores worse than greedy (raw scores, alpha = 0)
        for i in range(8):
            assert logprob(i, wide[i]) >= logprob(i, greedy[i]) - 1e-4


def test_generate_keeps_the_input_order():
    m = _cove_mt(steps=30)
    seqs = [[5, 6, 7], [], [8], [9, 10, 11, 12, 13], [14, 15]]
    out = generate(m, seqs, 0, BOS, EOS, GenerateConfig(beam=1, batch_size=2, max_len_a=1.0, max_len_b=4))
    assert out[1] == []
    # longest first, two at a time: (3, 0) of 5 words at most, then (4, 2) of 2: up to 5 + 4 and 2 + 4 pieces
    for i, max_len in ((3, 9), (0, 9), (4, 6), (2, 6)):
        one = torch.tensor([seqs[i]])
        assert out[i] == greedy_decode(m, one, torch.ones_like(one, dtype=torch.bool), BOS, EOS, max_len)[0]
