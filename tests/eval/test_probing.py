"""Probing: batched probes equal probes trained one by one and sklearn's accuracy, control tasks,
sentence-level tasks, and `transferlab probe` end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from transferlab.eval import probing
from transferlab.eval.probing import ProbeConfig, control_labels, stack_layers, train_probes


def synthetic(n: int, seed: int):
    """Layer 0 is noise; layer 1 carries the 4-class label linearly (plus noise); 8 dims."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    centers = rng.normal(size=(4, 8)) * 2
    return [rng.normal(size=(n, 8)), centers[y] + rng.normal(size=(n, 8))], y


def test_batched_probes_equal_probes_trained_one_layer_at_a_time():
    layers, y = synthetic(600, 0)
    cfg = ProbeConfig(epochs=3, batch_size=64)
    x, m, s = stack_layers(layers)
    both = train_probes(x, [y], x, [y], [4], cfg)
    for j in range(2):
        alone = train_probes(x[j:j + 1], [y], x[j:j + 1], [y], [4], cfg)
        np.testing.assert_allclose(both[0, j], alone[0, 0], atol=1e-9)
    assert both[0, 1] > 0.9 and both[0, 0] < 0.45


def test_linear_probe_matches_sklearn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    (_, signal), labels = synthetic(4000, 1)
    y, ty = labels[:3000], labels[3000:]
    train, mean, std = stack_layers([signal[:3000]])
    test, _, _ = stack_layers([signal[3000:]], mean, std)
    ours = train_probes(train, [y], test, [ty], [4], ProbeConfig())[0, 0]
    ref = LogisticRegression(max_iter=1000).fit(train[0].float().numpy(), y).score(test[0].float().numpy(), ty)
    assert abs(ours - ref) < 0.01


def test_mlp_probe_and_several_label_sets_with_different_class_counts():
    layers, y = synthetic(1600, 2)
    parity = (y % 2).astype(np.int64)
    masked = y.copy()
    masked[::5] = -1  # unlabeled words are left out of training and scoring
    x, mean, std = stack_layers([a[:800] for a in layers])
    tx, _, _ = stack_layers([a[800:] for a in layers], mean, std)
    acc = train_probes(x, [masked[:800], parity[:800]], tx, [masked[800:], parity[800:]], [4, 2],
                       ProbeConfig(probe="mlp", epochs=8))
    assert acc.shape == (2, 2) and acc[0, 1] > 0.95 and acc[1, 1] > 0.95 and acc[1, 0] < 0.65


def test_control_labels_are_one_per_word_type_from_the_label_distribution():
    words = ["the", "dog", "the", "cat", "runs", "the"] * 50
    labels = np.array([0, 1, 0, 1, 2, 0] * 50)
    a, b = control_labels(words, ["dog", "zebra", "the"], labels, 3, seed=0)
    table = {}
    for w, c in zip(words, a):
        assert table.setdefault(w, c) == c
    assert b[0] == table["dog"] and b[2] == table["the"] and 0 <= b[1] < 3
    again, _ = control_labels(words[:10], [], labels, 3, seed=0)
    assert list(again) == list(a[:10])  # given the label distribution, a type's label is its own
    many = [f"w{i}" for i in range(3000)]
    drawn, _ = control_labels(many, [], np.array([0] * 2000 + [1] * 1000), 2, seed=1)
    assert 0.62 < np.mean(drawn == 0) < 0.72  # two thirds, as in the task


def test_sentence_tasks_from_raw_text():
    rng = np.random.default_rng(0)
    vocab = ["".join(chr(97 + (i // 26**k) % 26) for k in range(3)) for i in range(2000)]  # aaa, baa, ...
    lines = [" ".join(rng.choice(vocab, size=rng.integers(4, 30))) for _ in range(3000)]
    length, shift, content = probing.sentence_tasks(lines, ["length", "bigram_shift", "word_content"],
                                                    max_sentences=1000, n_words=20, seed=0,
                                                    tokenize=str.split)
    for s, y in zip(length.sentences["train"], length.labels["train"]):
        lo, hi = probing.LENGTH_BINS[y]
        assert lo <= len(s) <= hi
    assert 0.4 < shift.labels["train"].mean() < 0.6 and shift.classes == ["original", "inverted"]
    assert len(content.classes) == 20
    for s, y in zip(content.sentences["test"], content.labels["test"]):
        assert [w for w in s if w in content.classes] and {w for w in s if w in content.classes} == {content.classes[y]}
    n = len(length.sentences["train"]) + len(length.sentences["test"])
    assert n == 1000 and len(length.sentences["test"]) == 200
    capped, = probing.sentence_tasks(lines, ["length"], max_sentences=1000, tokenize=str.split, max_train=30,
                                     max_test=7)  # --max-train-sentences and --max-test-sentences apply here too
    assert len(capped.sentences["train"]) == len(capped.labels["train"]) == 30 and len(capped.sentences["test"]) == 7
    assert all(sent in length.sentences["train"] for sent in capped.sentences["train"])  # a subset of the same split
    with pytest.raises(ValueError, match="need 20 or more"):
        probing.sentence_tasks(["a b c"] * 5, ["length"])


@pytest.fixture(scope="module")
def glove_probe(tmp_path_factory, shared_data):
    from transferlab.config import load_config
    from transferlab.recipes import probe

    out = tmp_path_factory.mktemp("probe")
    cfg = load_config(probe.ProbeRunConfig, None, [
        'encoder="glove-6b-50d"', 'tasks="upos,ner,length"', "max_train_sentences=300", "max_test_sentences=150",
        "sentence_task_size=400", f'cache="{out / "cache"}"', f'out="{out / "run"}"', "progress=false"])
    return probe.run(cfg), out, cfg


def test_probe_of_static_vectors_end_to_end(glove_probe):
    results, out, _ = glove_probe
    assert results["n_layers"] == 1
    upos = results["tasks"]["upos"]
    assert upos["accuracy"][0] > upos["majority"] + 0.3 and upos["selectivity"][0] > 0
    assert "selectivity" not in results["tasks"]["length"]  # control tasks are word-level
    assert json.loads((out / "run" / "probe.json").read_text())["tasks"]["ner"]["classes"] == 9
    assert "| 0 |" in (out / "run" / "probe.md").read_text()
    assert (out / "run" / "probe.png").stat().st_size > 1000


def test_a_second_probe_run_reads_the_cache(glove_probe, capsys):
    from transferlab.recipes import probe

    results, out, cfg = glove_probe
    again = probe.run(cfg)
    assert capsys.readouterr().err.count("from the cache") == 6  # ud-ewt, conll2003, length: train and test
    assert again["tasks"]["upos"]["accuracy"] == results["tasks"]["upos"]["accuracy"]


def test_random_awd_lstm_has_a_row_per_layer(tmp_path, shared_data):
    from transferlab.config import load_config
    from transferlab.recipes import probe

    cfg = load_config(probe.ProbeRunConfig, None, [
        'encoder="awd_lstm"', 'tasks="chunk"', "max_train_sentences=100", "max_test_sentences=50",
        "scratch.awd_lstm.dim=16", "scratch.awd_lstm.hidden_dim=24", "scratch.awd_lstm.n_layers=2",
        f'cache="{tmp_path / "cache"}"', f'out="{tmp_path / "run"}"', "progress=false", "probe.epochs=2"])
    results = probe.run(cfg)
    assert results["n_layers"] == 3 and len(results["tasks"]["chunk"]["control"]) == 3


@pytest.mark.parametrize("encoder, extra, n_layers", [
    ("transformer", ["scratch.transformer.dim=16", "scratch.transformer.n_layers=2", "scratch.transformer.n_heads=2",
                     "scratch.transformer.ffn_dim=32", "scratch.subword.vocab_size=300"], 3),
    ("fasttext", ["scratch.fasttext.dim=64", "scratch.fasttext.buckets=1000"], 1),
    ("minilm-l6", [], 7),
])
def test_every_encoder_family_probes(encoder, extra, n_layers, tmp_path, shared_data):
    """Our Transformer (subword tokenizer, first-subword words), the fastText-style bag of
    embeddings, and a Hugging Face model: each gives a row per layer and a word- and a
    sentence-level probe (the awd_lstm and static vectors are tested above). The word-level probe
    beats the majority class even at random initialization: the embedding tells word types apart."""
    from transferlab.config import load_config
    from transferlab.recipes import probe

    cfg = load_config(probe.ProbeRunConfig, None, [
        f'encoder="{encoder}"', 'tasks="upos,length"', "max_train_sentences=100", "max_test_sentences=50",
        "sentence_task_size=200", f'cache="{tmp_path / "cache"}"', f'out="{tmp_path / "run"}"', "progress=false",
        "probe.epochs=3", *extra])
    results = probe.run(cfg)
    assert results["n_layers"] == n_layers
    upos = results["tasks"]["upos"]
    assert len(upos["accuracy"]) == len(upos["control"]) == n_layers
    assert max(upos["accuracy"]) > upos["majority"] + 0.1
    assert len(results["tasks"]["length"]["accuracy"]) == n_layers


def test_an_encoder_without_word_alignment_says_so_by_name():
    from transferlab.recipes.probe import check_alignment

    class NoWords:
        def words(self, ws):
            return [5], [0]

    with pytest.raises(ValueError, match="--encoder charcnn cannot align its tokens to words"):
        check_alignment(NoWords(), "charcnn", ["two", "words"])


def test_unknown_task_names_are_listed():
    from transferlab.recipes.probe import ProbeRunConfig

    with pytest.raises(ValueError, match="unknown probing task\\(s\\) sentiment; known: upos"):
        ProbeRunConfig(tasks="upos,sentiment")


def test_files_of_your_own_are_probing_tasks(tmp_path, shared_data):
    from transferlab.config import load_config
    from transferlab.recipes import probe

    tags = {"Paris": "LOC", "London": "LOC", "John": "PER", "Mary": "PER", "visited": "O", "likes": "O"}
    words = list(tags)
    (tmp_path / "mine.conll").write_text("".join("".join(f"{words[(i * j + j) % 6]} X {tags[words[(i * j + j) % 6]]}\n"
                                                         for j in range(5)) + "\n" for i in range(40)))
    (tmp_path / "sent.tsv").write_text("text\tlabel\n" + "good fun film\tpos\ndull bad plot\tneg\n" * 20)
    cfg = load_config(probe.ProbeRunConfig, None, [
        'encoder="awd_lstm"', f'tasks="{tmp_path / "mine.conll"},{tmp_path / "sent.tsv"}"',
        'data.columns="word,pos,ner"', 'data.tags="ner"', "scratch.awd_lstm.dim=16",
        "scratch.awd_lstm.hidden_dim=24", "scratch.awd_lstm.n_layers=2", f'cache="{tmp_path / "cache"}"',
        f'out="{tmp_path / "run"}"', "progress=false", "probe.epochs=2"])
    results = probe.run(cfg)
    assert results["tasks"]["mine"]["level"] == "word" and results["tasks"]["mine"]["classes"] == 3
    assert results["tasks"]["sent"]["level"] == "sentence" and results["tasks"]["sent"]["n_test"] == 8


def test_a_corpus_no_task_reads_is_an_error():
    from transferlab.recipes.probe import ProbeRunConfig

    with pytest.raises(ValueError, match="read only by the sentence-level tasks.*--tasks my.conll"):
        ProbeRunConfig(tasks="pos", corpus="my.conll")
