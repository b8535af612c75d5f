"""encoders/hf.py: any Hugging Face model behind the Encoder contract (local MiniLM)."""

import json
import shutil

import pytest
import torch

from transferlab.data import catalog

pytest.importorskip("transformers")

from transferlab.encoders.hf import HFEncoder, load_pretrained  # noqa: E402


@pytest.fixture(scope="module")
def minilm():
    try:
        return catalog.resolve("minilm-l6")
    except Exception as e:  # the shared data is absent on this machine
        pytest.skip(f"minilm-l6 not available: {e}")


@pytest.fixture(scope="module")
def both(minilm):
    return load_pretrained("minilm-l6"), load_pretrained(str(minilm), native=False)


def test_native_and_wrapped_agree_on_every_layer(both):
    native, wrapped = both
    assert native.native and not wrapped.native and isinstance(wrapped.encoder, HFEncoder)
    tok = native.tokenizer
    texts = ["a gorgeous , witty film", "dull"]
    ids = [[tok.ids["cls"], *tok.encode(t), tok.ids["sep"]] for t in texts]
    width = max(map(len, ids))
    batch = torch.tensor([s + [tok.pad_id] * (width - len(s)) for s in ids])
    mask = batch != tok.pad_id
    native.encoder.eval(), wrapped.encoder.eval()
    with torch.no_grad():
        a, b = native.encoder(batch, mask), wrapped.encoder(batch, mask)
    assert len(a.layers) == len(b.layers) == 7  # embeddings + 6 blocks
    for x, y in zip(a.layers, b.layers):
        assert (x - y)[mask].abs().max() < 1e-4
    assert native.pooler is not None and native.pooler["weight"].shape == (384, 384)


def test_wrapped_layer_groups_cover_every_parameter_once_bottom_to_top(both):
    _, wrapped = both
    groups = wrapped.encoder.layer_groups()
    assert len(groups) == 7
    ids = [id(p) for g in groups for p in g.parameters()]
    assert len(ids) == len(set(ids)) == len(list(wrapped.encoder.parameters()))
    emb = wrapped.encoder.model.get_input_embeddings().weight
    assert any(p is emb for p in groups[0].parameters())
    pooler = wrapped.encoder.model.pooler.dense.weight  # after the blocks: with the top block
    assert any(p is pooler for p in groups[-1].parameters())


def test_tokenizer_larger_than_the_model_is_refused(minilm, tmp_path):
    folder = tmp_path / "odd"
    shutil.copytree(minilm, folder, ignore=shutil.ignore_patterns("1_Pooling"))
    config = json.loads((folder / "config.json").read_text())
    config["vocab_size"] = 30000  # fewer rows than the tokenizer's 30,522 tokens
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="30,522 tokens.*30,000 rows"):
        load_pretrained(str(folder), native=True)  # refused before the weights are read


def test_a_name_that_is_nowhere_says_so():
    with pytest.raises((FileNotFoundError, OSError, ValueError)):
        load_pretrained("/no/such/model/folder")
