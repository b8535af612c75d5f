"""Greedy decoding and beam search: beam 1 is greedy on a real model, a wider beam finds the
hypothesis greedy misses, length normalization changes which one wins, and batched generation
returns every output in the input order. A causal LM's continuations: top-k and top-p keep exactly
the right tokens, temperature 0 and beam 1 are greedy, seeded sampling repeats, the KV cache changes
no token (ours and Hugging Face GPT-2's), and greedy matches Hugging Face's ``generate``."""

from __future__ import annotations

import pytest
import torch

from transferlab.encoders.cove import CoVe, CoVeConfig, CoVeMT, MTDecoderConfig
from transferlab.encoders.transformer import Transformer, TransformerConfig
from transferlab.pretrain.lm import LanguageModel
from transferlab.pretrain.mt import MTLoss, Parallel, ParallelBatches
from transferlab.tasks.generate import (GenerateConfig, HFCausalLM, LMGenerateConfig, PromptDecoder, TransformerLM,
                                        beam_search, continue_prompts, generate, greedy_decode, next_token,
                                        sample_decode, top_k_filter, top_p_filter)

from helpers import overfit

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
    overfit(m, lambda: MTLoss()(m, batch), steps, lr=0.03)
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


# --- a causal LM continues prompts ---------------------------------------------------------------

class MarkovLM:
    """A hand-made causal LM: the next token's distribution depends only on the last token."""

    max_len = None

    def __init__(self, toy: Markov) -> None:
        self.logp = toy.logp

    def logits(self, ids, cache, use_cache):
        return self.logp[ids[:, -1]], (torch.zeros(ids.size(0)) if use_cache else None)

    def reorder_cache(self, cache, index):
        return cache[index]


def tiny_lm(max_len: int = 16, seed: int = 0) -> TransformerLM:
    torch.manual_seed(seed)
    cfg = TransformerConfig(vocab_size=50, dim=32, n_layers=2, n_heads=4, ffn_dim=64, max_len=max_len, causal=True,
                            norm="pre", embed_norm=False, type_vocab_size=0, dropout=0.0, attn_dropout=0.0)
    return TransformerLM(LanguageModel(Transformer(cfg), 50).eval())


def kept(logits: torch.Tensor) -> list[set[int]]:
    return [set(torch.isfinite(row).nonzero().flatten().tolist()) for row in logits]


def test_top_k_keeps_the_k_most_probable():
    logits = torch.tensor([[0.1, 0.4, 0.2, 0.3], [0.7, 0.1, 0.05, 0.15]]).log()
    assert kept(top_k_filter(logits, 1)) == [{1}, {0}]
    assert kept(top_k_filter(logits, 2)) == [{1, 3}, {0, 3}]
    assert kept(top_k_filter(logits, 3)) == [{1, 2, 3}, {0, 1, 3}]
    assert torch.equal(top_k_filter(logits, 0), logits) and torch.equal(top_k_filter(logits, 4), logits)


def test_top_p_keeps_the_smallest_set_that_reaches_p():
    logits = torch.tensor([[0.05, 0.5, 0.15, 0.3], [0.25, 0.23, 0.28, 0.24]]).log()
    assert kept(top_p_filter(logits, 1e-9)) == [{1}, {2}]  # never empty: the most probable token
    assert kept(top_p_filter(logits, 0.45)) == [{1}, {0, 2}]  # 0.5 >= 0.45; 0.28 < 0.45 <= 0.28 + 0.25
    assert kept(top_p_filter(logits, 0.7)) == [{1, 3}, {0, 2, 3}]  # 0.5 < 0.7 <= 0.5 + 0.3; 0.53 < 0.7 <= 0.77
    assert kept(top_p_filter(logits, 0.85)) == [{1, 2, 3}, {0, 1, 2, 3}]  # 0.8 < 0.85 <= 0.95; 0.77 < 0.85
    assert kept(top_p_filter(logits, 0.99)) == [{0, 1, 2, 3}] * 2
    assert torch.equal(top_p_filter(logits, 1.0), logits)
    # top-k, then top-p over what top-k left (renormalized): 0.5 / 0.8 = 0.625 >= 0.6
    g = torch.Generator().manual_seed(0)
    draws = {int(next_token(logits[:1].expand(400, -1), 1.0, 2, 0.6, g)[i]) for i in range(400)}
    assert draws == {1}
    draws = next_token(logits[:1].expand(2000, -1), 1.0, 2, 1.0, g)
    assert set(draws.tolist()) == {1, 3} and abs(float((draws == 1).float().mean()) - 0.625) < 0.05


def test_config_errors_name_the_flag():
    for kw, flag in ((dict(top_p=0.0), "--top-p"), (dict(temperature=-1.0), "--temperature"),
                     (dict(max_new_tokens=0), "--max-new-tokens"), (dict(beam=2, top_k=5), "--beam")):
        with pytest.raises(ValueError, match=flag):
            LMGenerateConfig(**kw)


def test_beam_over_a_causal_lm_finds_what_greedy_misses():
    lm, prompts = MarkovLM(TOY), [[BOS], [BOS, A]]
    greedy = continue_prompts(lm, prompts, EOS, LMGenerateConfig(temperature=0.0))
    assert greedy == [[A, C], [C]]
    assert continue_prompts(lm, prompts, EOS, LMGenerateConfig(beam=2, alpha=0.0)) == [[B], [C]]
    assert continue_prompts(lm, prompts, EOS, LMGenerateConfig(beam=2, alpha=1.0)) == [[A, C], [C]]
    src = torch.tensor([[BOS]] * 2)
    assert beam_search(PromptDecoder(lm), src, torch.ones_like(src, dtype=torch.bool), 0, EOS, 1, 5) == [[A, C]] * 2


def test_beam_1_is_greedy_and_temperature_to_0_is_greedy_on_a_transformer():
    lm = tiny_lm()
    src = torch.randint(0, 50, (4, 3))
    mask = torch.ones_like(src, dtype=torch.bool)
    greedy = greedy_decode(PromptDecoder(lm), src, mask, 0, 7, 10)
    assert beam_search(PromptDecoder(lm), src, mask, 0, 7, beam=1, max_len=10) == greedy
    assert sample_decode(PromptDecoder(lm), src, mask, 0, 7, 10, temperature=1e-4) == greedy
    assert continue_prompts(lm, src.tolist(), 7, LMGenerateConfig(temperature=0.0, max_new_tokens=10)) == greedy


def test_seeded_sampling_is_reproducible_and_the_cache_changes_no_token():
    lm = tiny_lm()
    prompts = [[1, 2, 3], [4, 5], [6, 7, 8], [9]]
    cfg = LMGenerateConfig(max_new_tokens=20, seed=3, top_k=20, top_p=0.95)
    a = continue_prompts(lm, prompts, None, cfg)
    assert a == continue_prompts(lm, prompts, None, cfg)
    assert all(len(x) == 20 for x in a)  # no end token: max_new_tokens each
    assert a != continue_prompts(lm, prompts, None, LMGenerateConfig(max_new_tokens=20, seed=4, top_k=20, top_p=0.95))
    # the cache gives the tokens of reading the whole prefix, also once the window slides past max_len (16)
    assert a == continue_prompts(lm, prompts, None, LMGenerateConfig(max_new_tokens=20, seed=3, top_k=20,
                                                                      top_p=0.95, cache=False))
    greedy = LMGenerateConfig(max_new_tokens=20, temperature=0.0)
    assert continue_prompts(lm, prompts, None, greedy) == continue_prompts(
        lm, prompts, None, LMGenerateConfig(max_new_tokens=20, temperature=0.0, cache=False))
    beam = LMGenerateConfig(max_new_tokens=8, beam=3)
    assert continue_prompts(lm, prompts, 11, beam) == continue_prompts(
        lm, prompts, 11, LMGenerateConfig(max_new_tokens=8, beam=3, cache=False))
    with pytest.raises(ValueError, match="empty prompt"):
        continue_prompts(lm, [[1], []], None, cfg)


def test_hf_gpt2_through_the_same_decoding_matches_its_generate():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=99, n_positions=64, n_embd=32, n_layer=2, n_head=4, bos_token_id=98, eos_token_id=98,
        resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)).eval()
    lm = HFCausalLM(hf)
    prompts = torch.randint(0, 98, (3, 5))
    ours = continue_prompts(lm, prompts.tolist(), None, LMGenerateConfig(max_new_tokens=12, temperature=0.0))
    ref = hf.generate(prompts, attention_mask=torch.ones_like(prompts), max_new_tokens=12, min_new_tokens=12,
                      do_sample=False, pad_token_id=98)
    assert ours == ref[:, 5:].tolist()
    nocache = LMGenerateConfig(max_new_tokens=12, temperature=0.0, cache=False)
    assert continue_prompts(lm, prompts.tolist(), None, nocache) == ours
    beam = [LMGenerateConfig(max_new_tokens=6, beam=3, cache=c) for c in (True, False)]
    assert continue_prompts(lm, prompts.tolist(), 4, beam[0]) == continue_prompts(lm, prompts.tolist(), 4, beam[1])
