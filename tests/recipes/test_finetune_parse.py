"""`transferlab finetune --task-kind parse` on 50 English-EWT sentences, then `evaluate` (UAS/LAS)
and `predict` (CoNLL-U out) on the checkpoint, with a tiny word-level and a tiny subword encoder."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from transferlab import cli
from transferlab.data.conll import ConlluReader
from transferlab.data.treebank import sentence_lines
from transferlab.tasks.mst import is_tree

SIZES = {"train": 50, "dev": 15, "test": 15}
TINY = ["--preset", "tiny", "--train.epochs=2", "--train.progress=false", "--parser.arc_dim=32",
        "--parser.rel_dim=16", "--transformer.dim=32", "--transformer.n_layers=2", "--transformer.n_heads=2",
        "--transformer.ffn_dim=64", "--subword.vocab_size=300", "--subword.min_freq=1", "--data.max_len=64"]
FIGURES = ("uas", "las", "uas_nopunct", "las_nopunct")


@pytest.fixture(scope="module")
def ewt(shared_data, tmp_path_factory):
    """The first sentences of each EWT split, lines as published (comments, multiword tokens)."""
    d = tmp_path_factory.mktemp("ewt")
    for split, n in SIZES.items():
        blocks = itertools.islice(sentence_lines(shared_data / f"datasets/ud-ewt/{split}.conllu"), n)
        (d / f"{split}.conllu").write_text("".join("\n".join(b) + "\n\n" for b in blocks), encoding="utf-8")
    return d


def _finetune(ewt, out, encoder):
    assert cli.main(["finetune", "--train", str(ewt / "train.conllu"), "--valid", str(ewt / "dev.conllu"),
                     "--test", str(ewt / "test.conllu"), "--task-kind", "parse", "--encoder", encoder,
                     "--out", str(out), *TINY]) == 0
    return json.loads((out / "results.json").read_text())


def _trees_ok(path, expected_words):
    sents = list(ConlluReader(path))
    assert [len(s.tokens) for s in sents] == expected_words
    assert all(is_tree(s.heads) and s.heads.count(0) == 1 for s in sents)
    return sents


@pytest.fixture(scope="module")
def awd_run(ewt, tmp_path_factory):
    return _finetune(ewt, tmp_path_factory.mktemp("parse") / "run", "awd_lstm")


def test_finetune_evaluate_predict_with_a_word_level_encoder(ewt, awd_run, tmp_path, capsys):
    summary = awd_run
    assert summary["kind"] == "parse" and summary["steps"] > 0 and "root" in summary["labels"]
    assert all(0.0 <= summary[f"test_{k}"] <= 1.0 and math.isfinite(summary[f"test_{k}"]) for k in FIGURES)
    ckpt = summary["checkpoint"]
    capsys.readouterr()
    assert cli.main(["evaluate", "--model", ckpt, "--data", str(ewt / "test.conllu")]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["n"] == SIZES["test"]
    for k in FIGURES:  # the reloaded checkpoint reproduces the run's own test figures
        assert scores[k] == pytest.approx(summary[f"test_{k}"])

    out = tmp_path / "parsed.conllu"
    assert cli.main(["predict", "--model", ckpt, "--input", str(ewt / "test.conllu"), "--output", str(out)]) == 0
    gold = list(ConlluReader(ewt / "test.conllu"))
    _trees_ok(out, [len(s.tokens) for s in gold])
    for before, after in zip(sentence_lines(ewt / "test.conllu"), sentence_lines(out)):
        assert len(before) == len(after)  # comments, ranges and empty nodes kept, in place
        for a, b in zip(before, after):
            a, b = a.split("\t"), b.split("\t")
            assert a[:6] + a[8:] == b[:6] + b[8:]

    text = tmp_path / "text.conllu"
    assert cli.main(["predict", "--model", ckpt, "--output", str(text), "The dog barked .", "Go home"]) == 0
    assert [s.tokens for s in _trees_ok(text, [4, 2])] == [("The", "dog", "barked", "."), ("Go", "home")]


def test_evaluate_reads_the_catalog_treebank_as_trees(awd_run, capsys):
    capsys.readouterr()
    assert cli.main(["evaluate", "--model", awd_run["checkpoint"], "--task", "ud-ewt", "--split", "test"]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert scores["n"] == 2077 and all(0.0 <= scores[k] <= 1.0 for k in FIGURES)


def test_a_subword_encoder_parses_from_first_pieces(ewt, tmp_path):
    summary = _finetune(ewt, tmp_path / "run", "transformer")
    assert summary["kind"] == "parse" and all(math.isfinite(summary[f"test_{k}"]) for k in FIGURES)
    out = tmp_path / "text.conllu"
    assert cli.main(["predict", "--model", summary["checkpoint"], "--output", str(out),
                     "Unbelievably , parsing works ."]) == 0
    _trees_ok(out, [5])


@pytest.mark.parametrize("data", [["--train", "t.tsv"], ["--task", "sst2"]])
def test_parse_needs_trees(shared_data, tmp_path, capsys, data):
    (tmp_path / "t.tsv").write_text("text\tlabel\na b\t1\n", encoding="utf-8")
    data = [str(tmp_path / d) if d.endswith(".tsv") else d for d in data]
    with pytest.raises(SystemExit) as e:
        cli.main(["finetune", *data, "--task-kind", "parse", "--out", str(tmp_path / "run"), *TINY])
    assert e.value.code == 1 and "parsing needs dependency trees" in capsys.readouterr().err
