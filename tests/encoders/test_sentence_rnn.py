import numpy as np
import pytest
import torch
from torch import nn

from transferlab.config import ConfigError
from transferlab.encoders.registry import ENCODERS
from transferlab.encoders.sentence_rnn import SentenceRNN, SentenceRNNConfig
from transferlab.vectors.keyed import WordVectors


def encoder(**kw) -> SentenceRNN:
    torch.manual_seed(0)
    return SentenceRNN(SentenceRNNConfig(vocab_size=40, dim=8, hidden_dim=6, **kw)).eval()


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(4, 40, (3, 7), generator=g)
    ids[1, 4:] = 0
    ids[2, 2:] = 0
    return ids, ids.ne(0)


@pytest.mark.parametrize("kw", [dict(cell="gru"), dict(cell="lstm", bidirectional=True, pooling="max"),
                                dict(cell="gru", bidirectional=True, towers=2, n_layers=2),
                                dict(cell="lstm", pooling="mean", towers=2)])
def test_padding_changes_no_sentence_vector(kw):
    m = encoder(**kw)
    ids, mask = batch()
    z = m.sentence(ids, mask)
    assert z.shape == (3, m.sentence_dim)
    for b, n in ((1, 4), (2, 2)):
        alone = m.sentence(ids[b:b + 1, :n], mask[b:b + 1, :n])
        torch.testing.assert_close(z[b], alone[0], atol=1e-6, rtol=0)


def test_last_pooling_is_the_final_state_of_a_plain_bigru():
    m = encoder(cell="gru", bidirectional=True)
    ids, mask = batch()
    ref = nn.GRU(8, 6, batch_first=True, bidirectional=True)
    ref.load_state_dict(m.rnns[0][0].state_dict())
    z = m.sentence(ids, mask)
    for b, n in enumerate(mask.sum(1).tolist()):
        _, h_n = ref(m.embedding[0](ids[b:b + 1, :n]))  # h_n: (2, 1, 6), forward then backward
        torch.testing.assert_close(z[b], torch.cat([h_n[0, 0], h_n[1, 0]]), atol=1e-6, rtol=0)


def test_max_pooling_ignores_padding_and_towers_split():
    m = encoder(cell="lstm", pooling="max", towers=2)
    ids, mask = batch()
    out = m(ids, mask)
    assert out.hidden.shape == (3, 7, 12) and len(out.layers) == 2
    z = m.sentence(ids, mask)
    torch.testing.assert_close(z[2], out.hidden[2, :2].max(0).values)
    f, g = m.tower_sentences(ids, mask)
    assert f.shape == g.shape == (3, 6) and not torch.allclose(f, g)


def test_vocabulary_expansion_maps_static_vectors_to_new_rows(monkeypatch):
    m = encoder()
    itos = ["<pad>", "<unk>", "<s>", "</s>"] + [f"w{i}" for i in range(36)]
    rng = np.random.default_rng(0)
    static_vecs = rng.normal(size=(41, 5)).astype(np.float32)
    # the encoder's embeddings are an exact linear image of the static vectors: R^2 = 1
    W = torch.randn(5, 8)
    with torch.no_grad():
        m.embedding[0].weight[4:] = torch.as_tensor(static_vecs[:36]) @ W
    wv = WordVectors([f"w{i}" for i in range(36)] + ["new0", "new1", "x", "y", "z"], static_vecs)
    assert m.expand(itos, wv, "my-vectors") == pytest.approx(1.0, abs=1e-4)
    assert (m.cfg.expand, m.cfg.expand_dim) == ("my-vectors", 5)
    assert m.add_words(["new0", "never-seen", "new1", "new0"]) == [40, 1, 41, 40]
    assert m.embedding[0].num_embeddings == 40  # the mapped rows are not parameters
    rows = m.embed(0, torch.tensor([[40, 41, 5]]))[0]
    torch.testing.assert_close(rows[1], torch.as_tensor(static_vecs[37]) @ W, atol=1e-4, rtol=0)
    torch.testing.assert_close(rows[2], m.embedding[0].weight[5])
    # a rebuilt encoder (another process: only the config and the saved weights) loads the vectors
    # by their name on first use and maps a word to the same vector
    again = SentenceRNN(m.cfg)
    again.load_state_dict(m.state_dict())
    loaded = []
    monkeypatch.setattr("transferlab.vectors.keyed.load_vectors", lambda name: loaded.append(name) or wv)
    assert again.add_words(["new1"]) == [40] and loaded == ["my-vectors"]
    torch.testing.assert_close(again.embed(0, torch.tensor([[40]]))[0, 0], rows[1])
    assert again.sentence(torch.tensor([[40, 5]])).shape == (1, 6)


def test_registry_builds_and_rebuilds_it():
    fam = ENCODERS["sentence_rnn"]
    m = fam.new(SentenceRNNConfig(dim=8, hidden_dim=6), 30, 0)
    again = fam.rebuild({"config": {"vocab_size": 30, "dim": 8, "hidden_dim": 6, "pad_id": 0}}, {})
    assert again.load_state_dict(m.state_dict()) is not None
    with pytest.raises(ConfigError, match="sentence_rnn.pooling"):
        SentenceRNNConfig(pooling="first")
