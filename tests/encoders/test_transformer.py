"""Tests for transferlab.encoders.transformer: parity with Hugging Face's BertModel (MiniLM's
real weights) and GPT2LMHeadModel (a tiny random GPT-2), padding, causality, layer groups."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from transferlab.data import catalog
from transferlab.encoders.transformer import Transformer, TransformerConfig, bert_state_dict, gpt2_state_dict

from helpers import overfit

transformers = pytest.importorskip("transformers")


def minilm_dir() -> Path:
    try:
        return Path(catalog.resolve("minilm-l6"))
    except Exception as e:  # the shared data is absent: say so instead of failing obscurely
        pytest.skip(f"minilm-l6 not available: {e}")


def test_minilm_hidden_states_match_hf_bert_on_a_padded_batch():
    from safetensors.torch import load_file

    path = minilm_dir()
    hf = transformers.BertModel.from_pretrained(str(path)).eval()
    cfg = TransformerConfig.from_hf(json.loads((path / "config.json").read_text()))
    ours = Transformer(cfg).eval()
    missing = ours.load_state_dict(bert_state_dict(load_file(str(path / "model.safetensors")), cfg.n_layers),
                                   strict=True)
    assert not missing.missing_keys and not missing.unexpected_keys
    torch.manual_seed(0)
    ids = torch.randint(1000, 30000, (3, 17))
    mask = torch.ones(3, 17, dtype=torch.bool)
    mask[1, 11:] = False
    mask[2, 5:] = False
    ids = ids.masked_fill(~mask, 0)
    types = torch.zeros_like(ids)
    types[0, 9:] = 1  # a sentence pair
    with torch.no_grad():
        ref = hf(input_ids=ids, attention_mask=mask.long(), token_type_ids=types, output_hidden_states=True)
        out = ours(ids, mask, types)
    assert len(out.layers) == len(ref.hidden_states) == 7
    for a, b in zip(out.layers, ref.hidden_states):
        diff = (a - b)[mask].abs().max().item()  # padded positions are don't-care in both
        assert diff < 1e-4, diff
    assert (out.hidden - ref.last_hidden_state)[mask].abs().max().item() < 1e-4


def test_tiny_gpt2_logits_match_hf():
    cfg_hf = transformers.GPT2Config(vocab_size=101, n_positions=32, n_embd=48, n_layer=3, n_head=4,
                                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(cfg_hf).eval()
    cfg = TransformerConfig.from_hf(cfg_hf.to_dict())
    assert cfg.causal and cfg.norm == "pre" and cfg.type_vocab_size == 0
    ours = Transformer(cfg).eval()
    ours.load_state_dict(gpt2_state_dict(hf.state_dict(), cfg.n_layers), strict=True)
    ids = torch.randint(0, 101, (2, 20))
    with torch.no_grad():
        ref = hf(input_ids=ids).logits
        logits = ours(ids).hidden @ ours.embedding.weight.t()  # GPT-2's LM head is the tied embedding
    assert (logits - ref).abs().max().item() < 1e-4
    # right padding changes nothing at the real positions of a causal model
    mask = torch.ones(2, 20, dtype=torch.bool)
    mask[1, 12:] = False
    with torch.no_grad():
        padded = ours(ids, mask).hidden @ ours.embedding.weight.t()
    assert (padded - ref)[mask].abs().max().item() < 1e-4


def tiny(**kw) -> Transformer:
    torch.manual_seed(0)
    base = dict(vocab_size=50, dim=32, n_layers=2, n_heads=4, ffn_dim=64, max_len=16, dropout=0.0, attn_dropout=0.0)
    return Transformer(TransformerConfig(**{**base, **kw})).eval()


def test_causal_mode_never_looks_ahead():
    model = tiny(causal=True, norm="pre", embed_norm=False, type_vocab_size=0)
    ids = torch.randint(0, 50, (1, 10))
    changed = ids.clone()
    changed[0, 6:] = (changed[0, 6:] + 1) % 50
    with torch.no_grad():
        a, b = model(ids).hidden, model(changed).hidden
    assert torch.allclose(a[:, :6], b[:, :6], atol=1e-6)
    assert not torch.allclose(a[:, 6:], b[:, 6:])


def test_bidirectional_padding_is_invisible():
    model = tiny()
    ids = torch.randint(1, 50, (1, 8))
    mask = torch.ones(1, 12, dtype=torch.bool)
    mask[0, 8:] = False
    padded = torch.cat([ids, torch.zeros(1, 4, dtype=torch.long)], 1)
    with torch.no_grad():
        a = model(ids).hidden
        b = model(padded, mask).hidden[:, :8]
    assert torch.allclose(a, b, atol=1e-5)


def test_layer_groups_cover_every_parameter_once_bottom_to_top():
    for kw in ({}, dict(causal=True, norm="pre", embed_norm=False, type_vocab_size=0)):
        model = tiny(**kw)
        groups = model.layer_groups()
        assert len(groups) == 1 + model.cfg.n_layers
        assert any(p is model.embedding.weight for p in groups[0].parameters())
        ids = [id(p) for g in groups for p in g.parameters()]
        assert len(ids) == len(set(ids)) == len(list(model.parameters()))


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="divisible"):
        TransformerConfig(vocab_size=10, dim=30, n_heads=4)
    with pytest.raises(ValueError, match="max_len"):
        tiny()(torch.zeros(1, 17, dtype=torch.long))
    with pytest.raises(ValueError, match="model_type"):
        TransformerConfig.from_hf({"model_type": "t5"})


def test_overfits_one_batch():
    model = tiny(causal=True, norm="pre", embed_norm=False, type_vocab_size=0).train()
    ids = torch.randint(0, 50, (4, 12))

    def next_token_loss():
        logits = model(ids[:, :-1]).hidden @ model.embedding.weight.t()
        return torch.nn.functional.cross_entropy(logits.reshape(-1, 50), ids[:, 1:].reshape(-1))

    _, last = overfit(model, next_token_loss, 150, lr=3e-3)
    assert last < 0.1


def test_registered():
    from transferlab.encoders.registry import ENCODERS

    assert ENCODERS["transformer"].module is Transformer and ENCODERS["transformer"].config is TransformerConfig


def test_gpt_style_causal_lm_through_language_model_and_fit():
    """Causal LM pretraining of our Transformer is the AWD-LSTM's objective unchanged: the tied
    LanguageModel, LMLoss and packed fixed-length windows of a token stream, trained by fit()."""
    from transferlab.pretrain.lm import LanguageModel, LMLoss, LMStream
    from transferlab.train import TrainConfig, fit

    model = LanguageModel(tiny(causal=True, norm="pre", embed_norm=False, type_vocab_size=0), 50)
    stream = torch.arange(40).repeat(30) % 50  # a repeated 40-token sequence
    loss = LMLoss()
    cfg = TrainConfig(lr=3e-3, epochs=8, progress=False, log_every=0)
    fit(model, loss, lambda e: LMStream(stream, 4, 15, seed=0, epoch=e, variable=False), cfg)
    model.eval()
    batch = next(iter(LMStream(stream, 4, 15, variable=False)))
    with torch.no_grad():
        assert LMLoss()(model, batch).item() < 0.2


def gpt(**kw) -> Transformer:
    return tiny(causal=True, norm="pre", embed_norm=False, type_vocab_size=0, **kw)


def test_kv_cache_gives_the_logits_of_recomputing_the_prefix():
    """N tokens read one at a time after a prompt, with the cache, give at every step the top layer
    of recomputing the whole prefix: the same greedy tokens and logits to 1e-5."""
    from transferlab.encoders.transformer import KVCache

    model = gpt()
    torch.manual_seed(1)
    ids = torch.randint(0, 50, (3, 4))  # a batch of prompts
    cache = KVCache()
    with torch.no_grad():
        hidden = model(ids, cache=cache).hidden
        assert len(cache) == 4 and model(ids).state is None  # no cache asked for, none returned
        for _ in range(10):
            full = model(ids).hidden  # (B, t, D): the whole prefix again
            assert (hidden[:, -1] - full[:, -1]).abs().max().item() < 1e-5
            logits = hidden[:, -1] @ model.embedding.weight.t()  # (B, V)
            ref = full[:, -1] @ model.embedding.weight.t()
            assert (logits - ref).abs().max().item() < 1e-5
            nxt = logits.argmax(-1, keepdim=True)  # (B, 1)
            assert torch.equal(nxt, ref.argmax(-1, keepdim=True))
            ids = torch.cat([ids, nxt], 1)
            out = model(nxt, cache=cache)
            assert out.state is cache and len(cache) == ids.size(1)
            hidden = out.hidden
    assert ids.size(1) == 14


def test_kv_cache_takes_several_tokens_at_once_and_padding_and_reorders():
    from transferlab.encoders.transformer import KVCache

    model = gpt()
    ids = torch.randint(0, 50, (2, 11))
    mask = torch.ones(2, 11, dtype=torch.bool)
    mask[1, 9:] = False  # the second row is right-padded
    with torch.no_grad():
        ref = model(ids, mask).hidden
        cache = KVCache()
        first = model(ids[:, :5], mask[:, :5], cache=cache).hidden
        rest = model(ids[:, 5:], mask, cache=cache).hidden  # the mask covers the cached positions too
        assert ((torch.cat([first, rest], 1) - ref)[mask].abs().max().item()) < 1e-5
        unpadded = KVCache()
        model(ids[:, :5], cache=unpadded)
        chunk = model(ids[:, 5:], cache=unpadded).hidden  # no mask: causal over cached + new keys
        assert (chunk[0] - ref[0, 5:]).abs().max().item() < 1e-5
        swapped = unpadded.reorder(torch.tensor([1, 1]))
        assert torch.equal(swapped.keys[0][0], unpadded.keys[0][1]) and len(swapped) == 11
    with pytest.raises(ValueError, match="max_len"):
        model(ids[:, :6], cache=unpadded)  # 11 cached + 6 > 16 positions
    with pytest.raises(ValueError, match="cached"):
        model(ids[:, :1], mask[:, :1], cache=unpadded)  # a mask of the new position only
