"""``pretrain context2vec`` -> ``vectors neighbors --context`` on a toy corpus built so that each slot
has obvious fillers: "X drank a [] of Y" is always "cup", "the [] chased the Y" an animal."""

from __future__ import annotations

import json
import random

import pytest

from transferlab import cli
from transferlab.recipes.pretrain_context2vec import is_context2vec, load_context2vec

WHO = "i she he we they you".split()
DRINKS = "tea coffee water milk juice".split()
ANIMALS = "dog cat mouse horse bird fox".split()
TOPICS = "history music science art poetry sport".split()


def _line(i: int, rng: random.Random) -> str:
    if i % 3 == 0:
        return f"{rng.choice(WHO)} drank a cup of {rng.choice(DRINKS)}"
    if i % 3 == 1:
        return "the {} chased the {}".format(*rng.sample(ANIMALS, 2))
    return f"{rng.choice(WHO)} read a book about {rng.choice(TOPICS)}"


def _args(d, *extra):
    return ["pretrain", "context2vec", "--corpus", str(d / "corpus.txt"), "--preset", "tiny", "--out", str(d / "run"),
            "--train.steps=300", "--data.held_out=0.1", "--train.progress=false", *extra]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("context2vec")
    rng = random.Random(0)
    (d / "corpus.txt").write_text("\n".join(_line(i, rng) for i in range(600)) + "\n", encoding="utf-8")
    assert cli.main(_args(d)) == 0
    return d


def _neighbors(capsys, *args) -> dict[str, list[str]]:
    capsys.readouterr()
    assert cli.main(["vectors", "neighbors", *map(str, args), "--topn", "5"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    return {query: [p.split()[0] for p in pairs.split(", ")] for query, pairs in (ln.rsplit(": ", 1) for ln in lines)}


def test_pretraining_learns_to_fill_held_out_slots(trained):
    results = json.loads((trained / "run" / "results.json").read_text())
    assert results["steps"] == 300 and results["vocab_size"] == 4 + 9 + len(WHO + DRINKS + ANIMALS + TOPICS)
    # among 32 words, most held-out targets are the top filler of their context, nearly all in the top 10
    assert results["test_top1"] > 0.5 and results["test_top10"] > 0.95 and results["test_loss"] < 1.5
    ckpt = trained / "run" / "best"
    assert is_context2vec(ckpt) and not is_context2vec(trained)
    assert load_context2vec(ckpt).vocab.itos[:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]


def test_the_obvious_filler_ranks_first(trained, capsys):
    ckpt = trained / "run" / "best"
    found = _neighbors(capsys, ckpt, "--context", "She drank a [] of tea")
    assert found["She drank a [] of tea"][0] == "cup"
    found = _neighbors(capsys, ckpt, "--context", "the [] chased the cat")
    assert set(found["the [] chased the cat"][:3]) <= set(ANIMALS)
    found = _neighbors(capsys, ckpt, "--context", "they read a book about []")
    assert set(found["they read a book about []"][:3]) <= set(TOPICS)


def test_word_neighbors_are_target_embedding_neighbors(trained, capsys):
    found = _neighbors(capsys, trained / "run" / "best", "dog", "tea", "--context", "a [] of")
    assert list(found) == ["a [] of", "dog", "tea"]
    assert found["dog"][0] in ANIMALS and found["tea"][0] in DRINKS and "dog" not in found["dog"]
    assert not {"<pad>", "<unk>", "<bos>", "<eos>"} & {w for ws in found.values() for w in ws}


def test_a_run_folder_needs_resume_and_a_context_needs_a_checkpoint(trained, tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(_args(trained))
    assert "pass --resume to continue it" in capsys.readouterr().err
    assert cli.main(_args(trained, "--resume")) == 0  # finished: resumes to the end at once
    with pytest.raises(SystemExit):
        cli.main(["vectors", "neighbors", str(tmp_path), "--context", "a [] of"])
    assert "--context goes with" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["vectors", "neighbors", str(trained / "run" / "best"), "--context", "no slot here"])
    assert "exactly one [] slot" in capsys.readouterr().err


def test_finetune_takes_the_checkpoint(trained, tmp_path, capsys):
    """context2vec is an encoder like any other: `finetune --pretrained` reads its context vectors
    (the registry's pretrained-only route); `--encoder context2vec` alone names what it needs."""
    rows = [(f"{w} drank a cup of {d}", "drink") for w, d in zip(["she", "he"] * 5, DRINKS * 2)]
    rows += [(f"the {a} chased the {b}", "chase") for a, b in zip(ANIMALS, ANIMALS[1:] + ANIMALS[:1])] * 2
    (tmp_path / "t.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows))
    out = tmp_path / "clf"
    assert cli.main(["finetune", "--train", str(tmp_path / "t.tsv"), "--text-col", "text", "--label-col", "label",
                     "--pretrained", str(trained / "run" / "best"), "--preset", "tiny", "--out", str(out),
                     "--train.progress=false"]) == 0
    summary = json.loads((out / "results.json").read_text())
    assert summary["encoder"] == "context2vec" and summary["pretrained"] and 0.0 <= summary["test_accuracy"] <= 1.0
    assert json.loads((out / "last" / "encoder.json").read_text())["name"] == "context2vec"
    with pytest.raises(SystemExit):
        cli.main(["finetune", "--encoder", "context2vec", "--train", str(tmp_path / "t.tsv"), "--text-col", "text",
                  "--label-col", "label", "--out", str(tmp_path / "no")])
    assert "needs --pretrained: a `transferlab pretrain context2vec` checkpoint" in capsys.readouterr().err
