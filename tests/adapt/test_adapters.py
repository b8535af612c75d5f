"""Adapters (Houlsby et al. 2019): a fresh adapter is the identity; the adapters sit in the same
place in our Transformer and in Hugging Face's BERT (same outputs with the same adapter weights)
and GPT-2; only adapters, layer norms and the head train (about 3% of minilm-l6 at size 64); the
checkpoint holds no base weights, resumes, reloads through evaluate/predict, and refuses a base
whose weights changed."""

from __future__ import annotations

import json
import random
import shutil

import pytest
import torch

from transferlab import cli
from transferlab.adapt.adapters import (Adapter, AdapterEncoder, AdaptersConfig, parameter_share, sublayer_outputs,
                                        weights_sha256)
from transferlab.config import ConfigError
from transferlab.encoders.transformer import Transformer, TransformerConfig


def _minilm():
    pytest.importorskip("transformers")
    from transferlab.data import catalog

    try:
        return catalog.resolve("minilm-l6")
    except Exception as e:
        pytest.skip(f"minilm-l6 not available: {e}")


def _tiny(norm="post", causal=False) -> Transformer:
    torch.manual_seed(0)
    return Transformer(TransformerConfig(vocab_size=99, dim=32, n_layers=2, n_heads=2, ffn_dim=64, max_len=16,
                                         norm=norm, causal=causal)).eval()


def _batch():
    ids = torch.randint(1, 99, (3, 9))
    mask = torch.ones(3, 9, dtype=torch.bool)
    mask[1, 6:] = False
    return ids, mask


def _randomize(encoder: AdapterEncoder, seed: int = 1) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in encoder.adapters.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.05)


def test_config_names_the_flag():
    with pytest.raises(ConfigError, match="adapters.size"):
        AdaptersConfig(size=0)
    with pytest.raises(ConfigError, match="adapters.init_std"):
        AdaptersConfig(init_std=0.0)


@pytest.mark.parametrize("norm,causal", [("post", False), ("pre", True)])
def test_fresh_adapters_leave_the_outputs_unchanged(norm, causal):
    base = _tiny(norm, causal)
    ids, mask = _batch()
    with torch.no_grad():
        ref = base(ids, mask)
        exact = AdapterEncoder(base).eval()(ids, mask)  # init="zeros": the up-projection is zero
    assert torch.equal(exact.hidden, ref.hidden) and all(torch.equal(a, b) for a, b in zip(exact.layers, ref.layers))


def test_paper_init_is_near_identity_and_adapters_are_in_the_path():
    ids, mask = _batch()
    base = _tiny()
    with torch.no_grad():
        ref = base(ids, mask).hidden
        near = AdapterEncoder(_tiny(), AdaptersConfig(size=8, init="normal")).eval()
        diff = (near(ids, mask).hidden - ref).abs().max().item()
    assert 0 < diff < 1e-4  # N(0, 1e-3) projections: near, not exactly, the identity
    _randomize(near)
    with torch.no_grad():
        assert (near(ids, mask).hidden - ref).abs().max().item() > 1e-2  # the hooks do rewrite the sublayers


def test_the_adapter_is_a_residual_bottleneck():
    a = Adapter(6, AdaptersConfig(size=2, init="normal"))
    x = torch.randn(4, 6)
    assert a.down.weight.shape == (2, 6) and a.up.weight.shape == (6, 2)
    assert torch.allclose(a(x), x + a.up(torch.nn.functional.gelu(a.down(x))))


def test_only_adapters_layer_norms_and_head_train_and_the_state_dict_leaves_the_base_out():
    from transferlab.tasks.classify import LinearHead, TaskModel

    enc = AdapterEncoder(_tiny(), AdaptersConfig(size=4))
    model = TaskModel(enc, LinearHead(32, 2, "first", 0.1))
    trained = {n for n, p in model.named_parameters() if p.requires_grad}
    for name in trained:
        assert name.startswith(("encoder.adapters.", "head.")) or "norm" in name, name
    assert {n for n, _ in model.named_parameters() if "norm" in n} <= trained
    assert not any(p.requires_grad for n, p in model.named_parameters() if ".qkv." in n or ".embedding." in n)
    sd = model.state_dict()
    assert set(sd) == trained  # the frozen base is not in the state dict ...
    fresh = TaskModel(AdapterEncoder(_tiny(), AdaptersConfig(size=4)), LinearHead(32, 2, "first", 0.1))
    _randomize(model.encoder)
    fresh.load_state_dict(sd)  # ... and a state dict without it loads strictly
    assert torch.equal(fresh.encoder.adapters[1]["ffn"].up.weight, model.encoder.adapters[1]["ffn"].up.weight)
    # each layer's adapters train with its layer group (discriminative rates, unfreezing)
    groups = enc.layer_groups()
    assert len(groups) == 3 and sum(p.numel() for g in groups for p in g.parameters()) == sum(
        p.numel() for p in enc.parameters() if p.requires_grad)
    assert any(p is enc.adapters[0]["attn"].down.weight for p in groups[1].parameters())


def test_the_weights_hash_follows_every_tensor():
    a, b = _tiny(), _tiny()
    assert weights_sha256(a) == weights_sha256(b)
    with torch.no_grad():
        b.blocks[1].fc1.bias[3] += 1e-6
    assert weights_sha256(a) != weights_sha256(b)


def test_other_encoders_are_refused_with_the_flag():
    from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig

    with pytest.raises(ValueError, match="--adapt=adapters"):
        sublayer_outputs(AWDLSTM(AWDLSTMConfig(vocab_size=20, dim=8, hidden_dim=8, n_layers=2)))


def test_hugging_face_bert_takes_the_adapters_where_our_transformer_does():
    """minilm-l6 natively (our Transformer) and as a wrapped BertModel, with the same adapter
    weights: the same outputs, so both insert them after the output projections, before the
    residual add and layer norm."""
    from transferlab.encoders.hf import load_pretrained

    _minilm()
    native = AdapterEncoder(load_pretrained("minilm-l6").encoder.eval())
    wrapped = AdapterEncoder(load_pretrained("minilm-l6", native=False).encoder.eval())
    assert len(sublayer_outputs(wrapped.base)) == 6
    assert type(sublayer_outputs(wrapped.base)[0][0]).__name__ == "Linear"
    _randomize(native)
    wrapped.adapters.load_state_dict(native.adapters.state_dict())
    ids = torch.tensor([[101, 2023, 3185, 2001, 2307, 999, 102, 0]])
    mask = ids != 0
    with torch.no_grad():
        a, b = native(ids, mask).hidden, wrapped(ids, mask).hidden
    assert (a - b)[mask].abs().max().item() < 1e-4
    trained = {n for n, p in wrapped.named_parameters() if p.requires_grad}
    assert trained and all(n.startswith("adapters.") or "LayerNorm" in n for n in trained)


def test_hugging_face_gpt2_takes_adapters_after_both_c_proj():
    transformers = pytest.importorskip("transformers")
    from transferlab.encoders.hf import HFEncoder

    torch.manual_seed(0)
    gpt2 = HFEncoder(transformers.GPT2Model(transformers.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=2,
                                                                    n_positions=16, bos_token_id=1,
                                                                    eos_token_id=2))).eval()
    sites = sublayer_outputs(gpt2)
    assert [(a, f) for a, f in sites] == [(b.attn.c_proj, b.mlp.c_proj) for b in gpt2.model.h]
    ids, mask = _batch()
    with torch.no_grad():
        ref = gpt2(ids, mask).hidden
        enc = AdapterEncoder(gpt2).eval()
        assert torch.equal(enc(ids, mask).hidden, ref)
        _randomize(enc)
        assert (enc(ids, mask).hidden - ref).abs().max().item() > 1e-3
    trained = {n for n, p in enc.named_parameters() if p.requires_grad}
    assert all(n.startswith("adapters.") or ".ln_" in n for n in trained)


def test_trainable_share_of_minilm_with_size_64():
    from transferlab.encoders import backbone as bb
    from transferlab.tasks.classify import ClassifierHeadConfig
    from transferlab.tasks.model import TaskConfig, build_model

    _minilm()
    b = bb.hf_backbone("minilm-l6", 64)
    model = build_model(b, "classify", 2, TaskConfig(), ClassifierHeadConfig(), "adapters",
                        adapters=AdaptersConfig(size=64))
    share = parameter_share(model, [{"params": [p for p in model.parameters() if p.requires_grad]}])
    adapters = sum(p.numel() for p in model.encoder.adapters.parameters())
    print(f"minilm-l6, adapters of size 64: {share['trainable_params']:,} of {share['total_params']:,} parameters "
          f"train ({100 * share['trainable_share']:.2f}%; the adapters alone {adapters:,}, "
          f"{100 * adapters / sum(p.numel() for p in b.encoder.parameters()):.2f}% of the base)")
    assert adapters == 6 * 2 * (384 * 64 + 64 + 64 * 384 + 384)
    assert 0.03 < share["trainable_share"] < 0.04


# --- end to end: finetune -> evaluate / predict, resume, a changed base -------------------------

GOOD, BAD = "good great fun loved fine".split(), "bad awful boring dull waste".split()
FILL = "the a movie film plot was it".split()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    _minilm()
    d = tmp_path_factory.mktemp("adapters")
    rng = random.Random(0)
    rows = [(" ".join(rng.sample(GOOD if i % 2 else BAD, 2) + rng.sample(FILL, 3)), "pos" if i % 2 else "neg")
            for i in range(56)]
    for name, part in (("train", rows[:40]), ("test", rows[40:])):
        (d / f"{name}.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in part), encoding="utf-8")
    args = ["finetune", "--train", str(d / "train.tsv"), "--test", str(d / "test.tsv"), "--encoder", "minilm-l6",
            "--adapt=adapters", "--adapters.size=64", "--train.progress=false", "--data.max_len=24",
            "--data.batch_size=16", "--out", str(d / "out")]
    assert cli.main([*args, "--train.epochs=1"]) == 0
    first = json.loads((d / "out" / "results.json").read_text())
    return d, args, first


def test_finetune_with_adapters_reports_the_share_and_saves_only_what_trained(run):
    from transferlab.checkpoint import load_checkpoint

    d, _, summary = run
    assert summary["adapt"] == "adapters" and summary["steps"] > 0 and 0.03 < summary["trainable_share"] < 0.04
    assert summary["trainable_params"] < summary["total_params"]
    ckpt = load_checkpoint(summary["checkpoint"])
    assert (d / "out" / "last" / "model.safetensors").stat().st_size < 4e6  # minilm-l6's weights are 90 MB
    base = [k for k in ckpt.weights if k.startswith("encoder.base.")]
    assert base and all(".norm" in k or "embed_norm" in k for k in base)  # the layer norms only
    held = ckpt.files["adapters"]
    assert held["base"] == "minilm-l6" and len(held["base_sha256"]) == 64 and held["size"] == 64


def test_the_checkpoint_reloads_through_evaluate_and_predict(run, capsys):
    from transferlab.data.tasks import TaskDataConfig, read_examples
    from transferlab.recipes import predict

    d, _, summary = run
    examples = read_examples(TaskDataConfig(task="", train=str(d / "test.tsv")), "test", str(d / "test.tsv"))
    again = predict.evaluate(summary["checkpoint"], examples, "test.tsv")
    assert again["accuracy"] == pytest.approx(summary["test_accuracy"]) and again["n"] == 16
    capsys.readouterr()
    assert cli.main(["predict", "--model", summary["checkpoint"], "good fun film", "dull waste"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 2 and {r["label"] for r in rows} <= {"pos", "neg"}


def test_a_changed_base_is_refused_naming_both_hashes(run, tmp_path):
    from safetensors.torch import load_file, save_file

    from transferlab.tasks.loading import load_task_model

    d, _, summary = run
    ckpt = tmp_path / "ckpt"
    shutil.copytree(summary["checkpoint"], ckpt)
    base = tmp_path / "minilm-changed"
    shutil.copytree(_minilm(), base)
    weights = load_file(str(base / "model.safetensors"))
    name = next(k for k in weights if k.endswith("intermediate.dense.bias"))
    weights[name] = weights[name] + 1e-3
    save_file(weights, str(base / "model.safetensors"))
    held = json.loads((ckpt / "adapters.json").read_text())
    (ckpt / "adapters.json").write_text(json.dumps({**held, "base": str(base)}))
    with pytest.raises(ValueError, match="base model changed") as e:
        load_task_model(ckpt)
    assert held["base_sha256"] in str(e.value) and str(base) in str(e.value)
    now = str(e.value).split("now has weights sha256 ")[1][:64]
    assert len(now) == 64 and now != held["base_sha256"]


def test_a_run_resumes_from_its_adapter_checkpoint(run):
    from transferlab.checkpoint import load_checkpoint

    d, args, first = run
    before = load_checkpoint(d / "out" / "last").weights
    assert cli.main([*args, "--train.epochs=2"]) == 0  # the same out: continues the run to 2 epochs
    second = json.loads((d / "out" / "results.json").read_text())
    assert second["steps"] == 2 * first["steps"]
    after = load_checkpoint(d / "out" / "last").weights
    key = "encoder.adapters.0.attn.up.weight"
    assert not torch.equal(before[key], after[key]) and set(before) == set(after)
