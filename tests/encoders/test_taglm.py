"""TagLM (Peters et al. 2017): a tagger with a frozen biLM inserted after its first RNN layer.
The biLM gets no gradient and keeps its weights through training; padding changes nothing; a
word unseen in training still has its characters; ``pretrain bilm`` -> ``finetune --encoder
taglm`` -> ``evaluate``/``predict`` learns a tagging rule and reloads to the same score."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest
import torch

from transferlab import cli
from transferlab.encoders.elmo import ELMo, ELMoConfig
from transferlab.encoders.taglm import TagLM, TagLMConfig

from helpers import overfit

WORDS = ["<pad>", "<unk>", "<bos>", "<eos>", "the", "film", "anna", "berlin", "saw", "in"]
BILM = ELMoConfig(max_chars=12, char_dim=4, filters=((1, 4), (2, 4)), n_highway=1, dim=6, hidden_dim=8, n_layers=2)


def _taglm(rnn="gru", lm_at="layer1") -> TagLM:
    torch.manual_seed(0)
    cfg = TagLMConfig(vocab_size=len(WORDS), word_dim=5, max_chars=12, char_dim=4, char_filters=((2, 3),),
                      rnn=rnn, hidden_dim=7, dropout=0.0, bilm=BILM, lm_at=lm_at)
    return TagLM(cfg, WORDS, bilm=ELMo(BILM, WORDS))


@pytest.mark.parametrize("rnn", ["gru", "lstm"])
def test_shapes_and_layers(rnn):
    m = _taglm(rnn)
    ids = torch.tensor([[4, 5, 6, 0], [7, 8, 0, 0]])
    out = m(ids, ids != 0)
    assert out.hidden.shape == (2, 4, 14) and m.dim == 14 and len(out.layers) == 2
    assert [type(g).__name__ for g in m.layer_groups()] == ["ModuleList", rnn.upper(), rnn.upper()]


def test_the_bilm_is_frozen_and_gets_no_gradient():
    m = _taglm().train()
    assert not m.bilm.training  # its dropout stays off while the tagger trains
    before = {k: v.clone() for k, v in m.bilm.state_dict().items()}
    ids = torch.tensor([[4, 5, 6, 9, 7]])
    overfit([p for p in m.parameters() if p.requires_grad], lambda: m(ids).hidden.pow(2).mean(), 3, lr=0.1)
    assert all(p.grad is None for p in m.bilm.parameters())
    assert all(torch.equal(before[k], v) for k, v in m.bilm.state_dict().items())
    assert m.rnn2.weight_ih_l0.grad is not None


def test_the_baseline_has_no_lm_and_the_same_shape_otherwise():
    torch.manual_seed(0)
    cfg = TagLMConfig(vocab_size=len(WORDS), word_dim=5, max_chars=12, char_dim=4, char_filters=((2, 3),),
                      hidden_dim=7, dropout=0.0, use_lm=False)
    base = TagLM(cfg, WORDS)
    assert base.bilm is None and base.rnn2.input_size == 14 and _taglm().rnn2.input_size == 14 + 12
    out = base(torch.tensor([[4, 5, 6]]))
    assert out.hidden.shape == (1, 3, 14) and [t.shape[-1] for t in out.layers] == [14, 14]
    assert base.add_words(["zyzzyva"]) == [len(WORDS)]


def test_elmo_at_the_input_mixes_every_bilm_layer_beside_the_tokens():
    """``lm_at="input"`` (Peters et al. 2018): RNN 1 reads [word; chars; gamma * sum_j s_j * layer_j],
    RNN 2 reads RNN 1 alone; the mix trains with the token group, the biLM stays frozen."""
    m = _taglm(lm_at="input").eval()
    assert m.rnn1.input_size == 5 + 3 + 12 and m.rnn2.input_size == 14 and m.mix.weights.numel() == 3
    assert any(p is m.mix.gamma for p in m.layer_groups()[0].parameters())
    ids = torch.tensor([[4, 5, 6, 9, 7]])
    with torch.no_grad():  # the input by hand: equal softmax weights, gamma 1 at the start
        m.mix.weights.copy_(torch.tensor([0.5, -1.0, 2.0]))
        m.mix.gamma.fill_(1.7)
        layers = m.bilm(ids).layers
        s = torch.softmax(torch.tensor([0.5, -1.0, 2.0]), 0)
        mixed = 1.7 * sum(w * layer for w, layer in zip(s, layers))
        chars = m.char_cnn(m.chars[ids].reshape(5, -1)).reshape(1, 5, -1)
        x = torch.cat([m.embedding(ids), chars, mixed], dim=-1)
        h1 = m.rnn1(x)[0]
        expected = m.rnn2(h1)[0]
        assert torch.allclose(m(ids).hidden, expected, atol=1e-5)
    m.train()
    before = {k: v.clone() for k, v in m.bilm.state_dict().items()}
    overfit([p for p in m.parameters() if p.requires_grad], lambda: m(ids).hidden.pow(2).mean(), 3, lr=0.1)
    assert m.mix.weights.grad is not None and all(p.grad is None for p in m.bilm.parameters())
    assert all(torch.equal(before[k], v) for k, v in m.bilm.state_dict().items())


def test_padding_changes_nothing():
    m = _taglm().eval()
    short = m(torch.tensor([[4, 5, 6]])).hidden
    padded = m(torch.tensor([[4, 5, 6, 0, 0]]), torch.tensor([[1, 1, 1, 0, 0]], dtype=torch.bool)).hidden
    assert torch.allclose(short, padded[:, :3], atol=1e-6)


def test_an_added_word_has_its_characters_and_unks_embedding():
    m = _taglm().eval()
    (new,) = m.add_words(["zyzzyva"])
    assert new == len(WORDS) and m.chars.size(0) == len(WORDS) + 1 and m.bilm.chars.size(0) == len(WORDS) + 1
    with_new = m(torch.tensor([[4, new]])).hidden
    with_unk = m(torch.tensor([[4, 1]])).hidden
    assert not torch.allclose(with_new, with_unk)  # the characters differ, the word row is <unk>'s


@pytest.fixture(scope="module")
def bilm(tmp_path_factory):
    d = tmp_path_factory.mktemp("taglm")
    words = "the a film plot was good bad saw met in at".split()
    rng = random.Random(0)
    (d / "corpus.txt").write_text("\n".join(" ".join(rng.choice(words) for _ in range(8)) for _ in range(200)) + "\n")
    assert cli.main(["pretrain", "bilm", "--corpus", str(d / "corpus.txt"), "--preset", "tiny", "--out",
                     str(d / "bilm"), "--train.progress=false", "--train.steps=20"]) == 0
    return d / "bilm" / "best"


@pytest.mark.parametrize("lm_at", ["layer1", "input"])
def test_finetune_evaluate_and_predict(bilm, tmp_path, capsys, lm_at):
    rng = random.Random(1)
    names, fill = ["anna", "bob", "carla", "dmitri", "eve"], "the a film plot was good bad saw met in at".split()
    sents = []
    for _ in range(80):  # a capitalised-free rule: the word after "met" is a person
        words = rng.sample(fill, 3) + ["met", rng.choice(names)] + rng.sample(fill, 2)
        sents.append(list(zip(words, ["O"] * 4 + ["B-PER"] + ["O"] * 2)))
    for name, rows in (("train", sents[:64]), ("test", sents[64:])):
        (tmp_path / f"{name}.conll").write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in s) for s in rows) + "\n")
    out = tmp_path / "tagger"
    assert cli.main(["finetune", "--encoder", "taglm", "--pretrained", str(bilm), "--train",
                     str(tmp_path / "train.conll"), "--test", str(tmp_path / "test.conll"), "--out", str(out),
                     "--taglm.hidden_dim=16", "--taglm.word_dim=8", "--train.epochs=15", "--data.batch_size=16",
                     "--train.lr=1e-2", "--train.progress=false", f"--taglm.lm_at={lm_at}"]) == 0
    summary = json.loads((out / "results.json").read_text())
    assert summary["encoder"] == "taglm" and summary["test_entity_f1"] > 0.9
    capsys.readouterr()
    assert cli.main(["evaluate", "--model", str(out / "last"), "--data", str(tmp_path / "test.conll")]) == 0
    assert json.loads(capsys.readouterr().out)["entity_f1"] == pytest.approx(summary["test_entity_f1"])
    assert cli.main(["predict", "--model", str(out / "last"), "the film met zyzzyva in"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert len(row["tags"]) == 5
    if lm_at == "input":
        return
    base = tmp_path / "baseline"  # the same tagger without the biLM
    assert cli.main(["finetune", "--encoder", "taglm", "--taglm.use_lm=false", "--train", str(tmp_path / "train.conll"),
                     "--test", str(tmp_path / "test.conll"), "--out", str(base), "--taglm.hidden_dim=16",
                     "--taglm.word_dim=8", "--train.epochs=2", "--train.progress=false"]) == 0
    assert json.loads((base / "results.json").read_text())["kind"] == "tag"


def _cove_tagger(lm_at="input"):
    """A TagLM with a tiny CoVe MT-LSTM inside: the tagger's words map to rows of CoVe's own table."""
    from transferlab.encoders.cove import CoVe, CoVeConfig

    torch.manual_seed(0)
    cove_cfg = CoVeConfig(vectors="unused", vocab_size=6, embed_dim=4, hidden_dim=5, n_layers=2, dropout=0.0)
    cove = CoVe(cove_cfg, torch.randn(6, 4))
    cfg = TagLMConfig(vocab_size=len(WORDS), word_dim=5, max_chars=12, char_dim=4, char_filters=((2, 3),),
                      hidden_dim=7, dropout=0.0, lm="cove", cove=cove_cfg, lm_at=lm_at)
    m = TagLM(cfg, WORDS, bilm=cove)
    m.lm_ids.copy_(torch.tensor([0, 1, 2, 3, 4, 5, 1, 1, 4, 5]))  # "anna", "berlin": <unk>; "saw", "in" share rows
    return m.eval()


@pytest.mark.parametrize("lm_at", ["layer1", "input"])
def test_cove_inside_reads_its_own_rows_of_the_tagger_words(lm_at):
    """``lm="cove"``: CoVe's layers ([GloVe; 0], [GloVe; biLSTM 1], [GloVe; biLSTM 2], 4 + 10 wide)
    go where the biLM's would, computed on the CoVe ids ``lm_ids`` gives the tagger's words."""
    m = _cove_tagger(lm_at)
    ids = torch.tensor([[4, 5, 6, 8, 9]])
    lm_in = m.lm_ids[ids]
    with torch.no_grad():
        layers = m.bilm(lm_in).layers
        chars = m.char_cnn(m.chars[ids].reshape(5, -1)).reshape(1, 5, -1)
        x = [m.embedding(ids), chars]
        if lm_at == "input":
            assert m.rnn1.input_size == 5 + 3 + 14 and m.mix.weights.numel() == 3
            x.append(m.mix(layers))
        h1 = m.rnn1(torch.cat(x, -1))[0]
        h2 = m.rnn2(h1 if lm_at == "input" else torch.cat([h1, layers[-1]], -1))[0]
        assert torch.allclose(m(ids).hidden, h2, atol=1e-5)
    assert "lm_ids" in m.state_dict() and not any(p.requires_grad for p in m.bilm.parameters())


def test_cove_inside_rebuilds_from_its_config_and_adds_words_from_glove():
    import numpy as np

    from transferlab.config import to_dict
    from transferlab.encoders.registry import ENCODERS
    from transferlab.vectors.keyed import WordVectors

    m = _cove_tagger()
    again = ENCODERS["taglm"].rebuild({"name": "taglm", "config": to_dict(m.cfg)}, {"vocab": {"itos": WORDS}})
    again.load_state_dict(m.state_dict())  # CoVe's table and the word -> row map among the weights
    ids = torch.tensor([[4, 5, 6, 8]])
    with torch.no_grad():
        assert torch.equal(again.eval()(ids).hidden, m(ids).hidden)
    m.bilm.wv = WordVectors(["zyzzyva"], np.ones((1, 4), dtype=np.float32))  # instead of loading cove.vectors
    (new,) = m.add_words(["zyzzyva"])
    assert m.lm_added.tolist() == [6]  # a new row of CoVe's table, holding the word's GloVe vector
    assert torch.equal(m.bilm.embed(torch.tensor([[6]]))[0, 0], torch.ones(4))
    assert m(torch.tensor([[4, new]])).hidden.shape == (1, 2, 14)
    assert "lm_added" not in m.state_dict()


def test_keep_added_makes_added_rows_part_of_the_saved_table():
    import numpy as np

    from transferlab.encoders.cove import CoVe, CoVeConfig
    from transferlab.vectors.keyed import WordVectors

    cove = CoVe(CoVeConfig(vectors="unused", vocab_size=6, embed_dim=4, hidden_dim=5), torch.randn(6, 4))
    cove.wv = WordVectors(["quokka"], np.full((1, 4), 2.0, dtype=np.float32))
    ids = cove.add_words(["blorp", "quokka"])
    before = cove.embed(torch.tensor([ids]))
    cove.keep_added()
    assert ids == [1, 6] and cove.cfg.vocab_size == 7 and cove.state_dict()["vectors"].shape == (7, 4)
    assert torch.equal(cove.embed(torch.tensor([ids])), before) and cove.extra.size(0) == 0
    assert cove.add_words(["quokka"]) == [6]


def test_lm_layers_mixes_only_the_chosen_layers():
    """``lm_layers=(0,)``: the static control, the LM's token layer alone at the input."""
    torch.manual_seed(0)
    cfg = TagLMConfig(vocab_size=len(WORDS), word_dim=5, max_chars=12, char_dim=4, char_filters=((2, 3),),
                      hidden_dim=7, dropout=0.0, bilm=BILM, lm_at="input", lm_layers=(0,))
    m = TagLM(cfg, WORDS, bilm=ELMo(BILM, WORDS)).eval()
    assert m.mix.weights.numel() == 1
    ids = torch.tensor([[4, 5, 6]])
    with torch.no_grad():
        token_layer = m.bilm(ids).layers[0]
        chars = m.char_cnn(m.chars[ids].reshape(3, -1)).reshape(1, 3, -1)
        h1 = m.rnn1(torch.cat([m.embedding(ids), chars, token_layer], -1))[0]  # one layer: weight 1, gamma 1
        assert torch.allclose(m(ids).hidden, m.rnn2(h1)[0], atol=1e-5)
    with pytest.raises(ValueError, match="lm_layers"):
        TagLMConfig(lm_layers=(0,))  # only at the input
    with pytest.raises(ValueError, match="layers 0-2"):
        TagLM(dataclasses.replace(cfg, lm_layers=(3,)), WORDS, bilm=ELMo(BILM, WORDS))
