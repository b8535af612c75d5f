"""One command line for every encoder family and task shape: `transferlab finetune` on texts, text
pairs and tagged words with --encoder awd_lstm, transformer (from scratch and from `pretrain mlm`)
and minilm-l6; the checkpoint reloads and evaluates to the same figures; bad pair input is named."""

from __future__ import annotations

import json
import random

import pytest
import torch

from transferlab import cli
from transferlab.checkpoint import load_checkpoint
from transferlab.data import catalog
from transferlab.data.tasks import TaskDataConfig, read_examples
from transferlab.recipes import finetune, predict

GOOD, BAD = "good great fun loved fine".split(), "bad awful boring dull waste".split()
FILL = "the a movie film plot was it".split()
NAMES = "alice bob carol dave".split()


def _sentence(rng, polar):
    return " ".join(rng.sample(polar, 2) + rng.sample(FILL, 3))


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("families")
    rng = random.Random(0)
    texts = [(_sentence(rng, GOOD), "pos") if i % 2 else (_sentence(rng, BAD), "neg") for i in range(64)]
    for name, rows in (("cls_train", texts[:48]), ("cls_test", texts[48:])):
        (d / f"{name}.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows), encoding="utf-8")
    pairs = []
    for i in range(64):  # paraphrase-like: same polarity = "1"
        a, same = _sentence(rng, GOOD if i % 2 else BAD), i % 4 < 2
        b = _sentence(rng, (GOOD if i % 2 else BAD) if same else (BAD if i % 2 else GOOD))
        pairs.append((a, b, "1" if same else "0"))
    for name, rows in (("pair_train", pairs[:48]), ("pair_test", pairs[48:])):
        (d / f"{name}.tsv").write_text("s1\ts2\tlabel\n" + "".join(f"{a}\t{b}\t{y}\n" for a, b, y in rows),
                                       encoding="utf-8")
    sents = []
    for _ in range(64):  # names are B-PER, a name after a name is I-PER
        words = rng.sample(FILL, 3) + [rng.choice(NAMES), rng.choice(NAMES)] + rng.sample(FILL, 2)
        tags = ["O"] * 3 + ["B-PER", "I-PER"] + ["O"] * 2
        sents.append(list(zip(words, tags)))
    for name, rows in (("tag_train", sents[:48]), ("tag_test", sents[48:])):
        (d / f"{name}.conll").write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in s) for s in rows) + "\n",
                                         encoding="utf-8")
    return d


TINY = ["--train.epochs=2", "--train.progress=false", "--lm_finetune.train.progress=false",
        "--data.max_len=24", "--awd_lstm.dim=32", "--awd_lstm.hidden_dim=32", "--transformer.dim=32",
        "--transformer.n_layers=2", "--transformer.n_heads=2", "--transformer.ffn_dim=64",
        "--subword.vocab_size=200", "--subword.min_freq=1", "--data.batch_size=16"]
SHAPES = {"cls": ["--text-col", "text"], "pair": ["--text-col", "s1", "--text-b-col", "s2"], "tag": []}
SUFFIX = {"cls": "tsv", "pair": "tsv", "tag": "conll"}


def _finetune(data, tmp_path, shape, encoder, *extra):
    out = tmp_path / f"{shape}-{encoder}"
    args = ["finetune", "--train", str(data / f"{shape}_train.{SUFFIX[shape]}"),
            "--test", str(data / f"{shape}_test.{SUFFIX[shape]}"), *SHAPES[shape], "--encoder", encoder,
            "--out", str(out), *TINY, *extra]
    assert cli.main(args) == 0
    return json.loads((out / "results.json").read_text())


def _minilm():
    pytest.importorskip("transformers")
    try:
        catalog.resolve("minilm-l6")
    except Exception as e:
        pytest.skip(f"minilm-l6 not available: {e}")
    return "minilm-l6"


@pytest.mark.parametrize("shape", ["cls", "pair", "tag"])
@pytest.mark.parametrize("encoder", ["awd_lstm", "transformer", "minilm-l6"])
def test_one_command_line_for_every_encoder_and_shape(data, tmp_path, shape, encoder):
    if encoder == "minilm-l6":
        _minilm()
    summary = _finetune(data, tmp_path, shape, encoder)
    assert summary["kind"] == {"cls": "classify", "pair": "classify", "tag": "tag"}[shape]
    key = "test_entity_f1" if shape == "tag" else "test_accuracy"
    assert 0.0 <= summary[key] <= 1.0 and summary["steps"] > 0
    if shape == "pair":
        assert "test_f1" in summary and "test_mcc" in summary


def test_minilm_learns_to_tag_names_from_44_sentences(data, tmp_path):
    _minilm()
    summary = _finetune(data, tmp_path, "tag", "minilm-l6", "--train.lr=5e-4", "--train.epochs=4")
    assert summary["test_entity_f1"] > 0.9


def test_checkpoint_reloads_and_reproduces_its_test_figures(data, tmp_path):
    _minilm()
    summary = _finetune(data, tmp_path, "pair", "minilm-l6")
    cfg = TaskDataConfig(task="", train=str(data / "pair_test.tsv"), text_col="s1", text_b_col="s2")
    examples = read_examples(cfg, "test", cfg.train)
    again = predict.evaluate(summary["checkpoint"], examples, "pair_test.tsv")
    assert again["accuracy"] == pytest.approx(summary["test_accuracy"]) and again["n"] == 16
    tagged = _finetune(data, tmp_path, "tag", "transformer")
    sents = list(catalog.load_examples(str(data / "tag_test.conll"), "test"))
    again = predict.evaluate(tagged["checkpoint"], sents, "tag_test.conll")
    assert again["entity_f1"] == pytest.approx(tagged["test_entity_f1"])


def test_pretrain_mlm_then_finetune_the_transformer(data, tmp_path):
    corpus = tmp_path / "corpus.txt"
    rng = random.Random(1)
    corpus.write_text("\n".join(_sentence(rng, GOOD if i % 2 else BAD) + " ." for i in range(200)) + "\n")
    out = tmp_path / "mlm"
    assert cli.main(["pretrain", "mlm", "--corpus", str(corpus), "--preset", "tiny", "--out", str(out),
                     '--data.valid_split=train', "--train.progress=false"]) == 0
    pre = json.loads((out / "results.json").read_text())
    assert pre["valid_mlm_loss"] < 6.0 and pre["steps"] == 30  # below ln(400) = 6.0: it learned something
    summary = _finetune(data, tmp_path, "cls", "transformer", "--pretrained", pre["checkpoint"])
    assert summary["pretrained"] and 0.0 <= summary["test_accuracy"] <= 1.0
    # the checkpoint says what it holds: --encoder CKPT (as probe takes it) or --pretrained CKPT alone
    # is the Transformer, with the Transformer's defaults (not the default AWD-LSTM's, which cannot read it);
    # the run folder stands for its best checkpoint
    ckpt, transformer_lr = pre["checkpoint"], finetune.load_finetune_config(None, ['encoder="transformer"']).train.lr
    assert ckpt == str(out / "best")
    for given in (f'encoder="{ckpt}"', f'pretrained="{ckpt}"', f'encoder="{out}"', f'pretrained="{out}"'):
        cfg = finetune.load_finetune_config(None, [given])
        assert (cfg.encoder, cfg.pretrained, cfg.train.lr) == ("transformer", ckpt, transformer_lr)
    # a task model starts another task (STILTs): its fine-tuned encoder, a fresh head
    task_model = tmp_path / "cls-transformer" / "last"
    tuned = load_checkpoint(task_model).weights
    for given in (f'encoder="{task_model}"', f'pretrained="{task_model}"'):
        cfg = finetune.load_finetune_config(None, [given])
        assert (cfg.encoder, cfg.pretrained, cfg.train.lr) == ("transformer", str(task_model), transformer_lr)
        b = finetune.build_backbone(cfg, {})
        assert all(torch.equal(v, tuned[f"encoder.{k}"]) for k, v in b.encoder.state_dict().items())
    tagged = _finetune(data, tmp_path, "tag", "transformer", "--pretrained", str(task_model))
    assert tagged["pretrained"] and 0.0 <= tagged["test_entity_f1"] <= 1.0
    sents = list(catalog.load_examples(str(data / "tag_test.conll"), "test"))  # it reloads whole
    assert predict.evaluate(tagged["checkpoint"], sents, "tag_test.conll")["entity_f1"] == \
        pytest.approx(tagged["test_entity_f1"])
    for wrong, says in (('encoder="awd_lstm"', "holds a fine-tuned transformer encoder"),
                        ("reinit=true", "reinit=true discards")):
        with pytest.raises(ValueError, match=says):
            finetune.build_backbone(finetune.load_finetune_config(None, [f'pretrained="{task_model}"', wrong]), {})


def test_continued_mlm_pretraining_of_minilm_then_finetune(data, tmp_path):
    _minilm()
    corpus = tmp_path / "reviews.txt"
    rng = random.Random(4)
    corpus.write_text("\n".join(_sentence(rng, GOOD + BAD) for _ in range(60)) + "\n")
    out = tmp_path / "minilm-mlm"
    assert cli.main(["pretrain", "mlm", "--init", "minilm-l6", "--corpus", str(corpus), "--out", str(out),
                     "--data.valid_split=train", "--data.batch_size=4", "--transformer.max_len=32",
                     "--train.steps=2", "--train.progress=false"]) == 0
    pre = json.loads((out / "results.json").read_text())
    assert pre["vocab_size"] == 30522 and pre["valid_mlm_loss"] < 8.0  # a pretrained BERT: far below ln(30522)
    summary = _finetune(data, tmp_path, "cls", "transformer", "--pretrained", pre["checkpoint"])
    assert summary["pretrained"] and summary["steps"] > 0


def test_pretrain_clm_runs(tmp_path):
    corpus = tmp_path / "corpus.txt"
    rng = random.Random(2)
    corpus.write_text("\n".join(_sentence(rng, GOOD) for _ in range(200)) + "\n")
    out = tmp_path / "clm"
    assert cli.main(["pretrain", "clm", "--corpus", str(corpus), "--preset", "tiny", "--out", str(out),
                     '--data.valid_split=train', "--train.progress=false"]) == 0
    pre = json.loads((out / "results.json").read_text())
    assert 1.0 < pre["valid_ppl"] < pre["vocab_size"] / 2  # well below a uniform guess: it learned


def test_pair_file_missing_its_second_text_names_file_line_and_field(data, tmp_path, capsys):
    bad = tmp_path / "bad_pairs.tsv"
    bad.write_text("s1\ts2\tlabel\ngood fun\tgreat film\t1\nboring plot\t\t0\n", encoding="utf-8")
    with pytest.raises(SystemExit) as e:
        cli.main(["finetune", "--train", str(bad), "--text-col", "s1", "--text-b-col", "s2", "--out",
                  str(tmp_path / "x"), *TINY])
    err = capsys.readouterr().err
    assert e.value.code == 1 and "bad_pairs.tsv, line 3, field 's2'" in err


def test_long_input_is_truncated_and_counted(data, tmp_path, capsys):
    long = tmp_path / "long.tsv"
    rng = random.Random(3)
    rows = [(" ".join(rng.choice(GOOD + FILL) for _ in range(60)), "pos") for _ in range(8)]
    rows += [(" ".join(rng.choice(BAD + FILL) for _ in range(5)), "neg") for _ in range(8)]
    long.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows), encoding="utf-8")
    summary = _finetune(data, tmp_path, "cls", "transformer", "--train", str(long), "--test", str(long))
    assert summary["truncated"]["train"] >= 6  # the 60-word texts exceed 24 tokens
    assert "cut to 24 tokens" in capsys.readouterr().err


@pytest.mark.parametrize("shape", ["cls", "tag"])
def test_feature_extraction_trains_only_the_mix_and_the_head(data, tmp_path, shape):
    """--adapt=features: the encoder's weights do not move, the scalar mix does; the checkpoint
    reloads to the same figures; minilm-l6's frozen layers separate the toy task."""
    import torch

    from transferlab.checkpoint import load_checkpoint
    from transferlab.tasks.loading import load_task_model

    encoder = _minilm()
    summary = _finetune(data, tmp_path, shape, encoder, "--adapt=features", "--train.epochs=8", "--train.lr=1e-2")
    key = "test_entity_f1" if shape == "tag" else "test_accuracy"
    assert summary["adapt"] == "features" and summary[key] > 0.8
    trained = load_checkpoint(summary["checkpoint"]).weights
    from transferlab.encoders.hf import load_pretrained

    original = load_pretrained("minilm-l6").encoder.state_dict()
    enc = {k.removeprefix("encoder.encoder."): v for k, v in trained.items() if k.startswith("encoder.encoder.")}
    assert enc and all(torch.equal(enc[k], original[k]) for k in original if k in enc)
    assert not torch.equal(trained["encoder.mix.weights"], torch.zeros(7))
    predictor = load_task_model(summary["checkpoint"])
    assert predictor.model.encoder.used == list(range(7))


def test_frozen_mix_caches_each_sequence_once():
    import torch

    from transferlab.adapt.features import FrozenMixEncoder
    from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig

    lstm = AWDLSTM(AWDLSTMConfig(vocab_size=20, dim=8, hidden_dim=12, n_layers=2))
    frozen = FrozenMixEncoder(lstm)
    assert frozen.used == [0, 2]  # the embedding and the top layer have the output width; the middle is wider
    ids = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    mask = ids != 0
    frozen.train()
    assert not lstm.training and not any(p.requires_grad for p in lstm.parameters())
    first = frozen(ids, mask).hidden
    calls = []
    lstm.register_forward_hook(lambda *a: calls.append(1))
    again = frozen(ids[[1, 0]], mask[[1, 0]]).hidden  # the same sequences, another batch order
    assert not calls
    torch.testing.assert_close(again[0, :2], first[1, :2], atol=1e-3, rtol=1e-3)
    first.sum().backward()
    assert frozen.mix.weights.grad is not None


def test_frozen_mix_reads_only_the_chosen_layers():
    import pytest
    import torch

    from transferlab.adapt.features import FrozenMixEncoder
    from transferlab.encoders.awd_lstm import AWDLSTM, AWDLSTMConfig

    lstm = AWDLSTM(AWDLSTMConfig(vocab_size=20, dim=8, hidden_dim=12, n_layers=2)).eval()
    embedding_only = FrozenMixEncoder(lstm, layers=[0])
    assert embedding_only.used == [0]
    ids = torch.tensor([[5, 6, 7]])
    out = embedding_only(ids, ids != 0).hidden
    torch.testing.assert_close(out, embedding_only.mix.gamma * lstm(ids).layers[0], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match=r"--features_layers \[1\].*choose from \[0, 2\]"):
        FrozenMixEncoder(lstm, layers=[1])


def test_word_vectors_as_the_encoder_frozen_or_trained(data, tmp_path, shared_data):
    """--encoder glove-6b-50d: a bag of GloVe vectors under a linear head; frozen with
    --adapt=features (a 1-layer mix), trained otherwise; the checkpoint reloads."""
    from transferlab.tasks.loading import load_task_model

    frozen = _finetune(data, tmp_path, "cls", "glove-6b-50d", "--adapt=features", "--train.epochs=8",
                       "--train.lr=1e-2", "--train.schedule=constant")
    assert frozen["test_accuracy"] > 0.8  # good/great vs bad/awful: GloVe separates them
    predictor = load_task_model(frozen["checkpoint"])
    assert predictor.backbone.family == "static" and predictor.model.encoder.used == [0]
    cfg = TaskDataConfig(task="", train=str(data / "cls_test.tsv"))
    again = predict.evaluate(frozen["checkpoint"], read_examples(cfg, "test", cfg.train), "cls_test.tsv")
    assert again["accuracy"] == pytest.approx(frozen["test_accuracy"])
    tuned = _finetune(data, tmp_path / "tuned", "cls", "glove-6b-50d", "--train.epochs=2")
    assert tuned["adapt"] == "finetune" and tuned["steps"] > 0
