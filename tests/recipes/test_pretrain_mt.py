"""``pretrain mt`` on a few hundred l10n-en-de pairs -> ``translate`` -> ``finetune --encoder cove``:
the run reports perplexities and BLEU (sacreBLEU's, with the copy-source baseline), resumes only
when asked, translates from the command line, and its frozen MT-LSTM gives a task model CoVe
features ([GloVe; MT-LSTM]) with GloVe vectors for the task's own words."""

from __future__ import annotations

import csv
import json

import pytest
import sacrebleu
import torch

from transferlab import cli
from transferlab.checkpoint import load_checkpoint
from transferlab.recipes.pretrain_mt import bleu, load_translator

N_TEST = 30


@pytest.fixture(scope="module")
def mt(tmp_path_factory, shared_data):
    d = tmp_path_factory.mktemp("mt")
    assert cli.main(["pretrain", "mt", "--corpus", "l10n-en-de", "--preset", "tiny", "--out", str(d / "mt"),
                     "--data.train_size=300", f"--data.eval_size={N_TEST}", "--train.progress=false"]) == 0
    return d / "mt"


def _test_pairs(shared_data) -> list[tuple[str, str]]:
    with open(shared_data / "corpora" / "l10n-en-de" / "test.tsv", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(en, de) for en, de in rows[1: N_TEST + 1]]


def test_bleu_is_sacrebleus_corpus_bleu():
    hyps = ["Datei öffnen", "Alle Änderungen speichern?", "Das Fenster schließen", "neu"]
    refs = ["Datei öffnen", "Alle Änderungen sichern?", "Fenster schließen", "Neues Fenster"]
    assert bleu(hyps, refs) == pytest.approx(sacrebleu.corpus_bleu(hyps, [refs]).score, abs=1e-9)
    assert 0 < bleu(hyps, refs) < 100 and bleu(refs, refs) == pytest.approx(100.0)


def test_pretrain_reports_perplexity_and_bleu(mt, shared_data):
    results = json.loads((mt / "results.json").read_text())
    assert results["valid_ppl"] > 1 and results["test_ppl"] > 1 and results["steps"] == 30
    assert results["src_vocab"] > 100 and results["tgt_vocab"] <= 400 and results["beam"] == 2
    pairs = _test_pairs(shared_data)
    assert results["test_bleu_copy"] == pytest.approx(bleu([en for en, _ in pairs], [de for _, de in pairs]))
    with open(mt / "test_translations.tsv", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE, escapechar="\\"))
    assert rows[0] == ["en", "de", "beam", "greedy"] and len(rows) == N_TEST + 1
    assert [r[0] for r in rows[1:]] == [en for en, _ in pairs]
    assert results["test_bleu"] == pytest.approx(bleu([r[2] for r in rows[1:]], [de for _, de in pairs]))
    assert results["test_bleu_greedy"] == pytest.approx(bleu([r[3] for r in rows[1:]], [de for _, de in pairs]))
    assert "tok:13a" in results["bleu_signature"]


def test_translate_command(mt, tmp_path, capsys):
    texts = ["Open the file", "Save all changes before closing the window?"]
    translator = load_translator(mt)  # the run folder: its best checkpoint
    capsys.readouterr()
    assert cli.main(["translate", str(mt / "best"), *texts, "--beam", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == translator.translate(texts, beam=1) and len(lines) == 2
    (tmp_path / "in.txt").write_text("Open the file\n\nquit the zyzzyva game\n", encoding="utf-8")
    assert cli.main(["translate", str(mt / "best"), "--file", str(tmp_path / "in.txt")]) == 0
    lines = capsys.readouterr().out.split("\n")[:-1]
    assert len(lines) == 3 and lines[1] == ""  # a blank line gives a blank line
    assert lines == translator.translate(["Open the file", "", "quit the zyzzyva game"], beam=2)


def test_resume_only_when_asked(mt, capsys):
    args = ["pretrain", "mt", "--corpus", "l10n-en-de", "--preset", "tiny", "--out", str(mt.parent / "mt"),
            "--data.train_size=300", f"--data.eval_size={N_TEST}", "--train.progress=false"]
    with pytest.raises(SystemExit) as e:
        cli.main(args)
    assert e.value.code == 2 and "--resume" in capsys.readouterr().err
    assert cli.main(args + ["--resume", "--train.steps=34"]) == 0
    assert json.loads((mt / "results.json").read_text())["steps"] == 34


def test_finetune_cove_features(mt, tmp_path):
    rows = [("open a great file", "pos"), ("the best window", "pos"), ("a bad error", "neg"),
            ("could not save the file", "neg")]
    (tmp_path / "t.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in rows * 6))
    base = ["finetune", "--train", str(tmp_path / "t.tsv"), "--text-col", "text", "--label-col", "label",
            "--encoder", "cove", "--pretrained", str(mt / "best"), "--preset", "tiny", "--train.progress=false"]
    assert cli.main(base + ["--out", str(tmp_path / "frozen")]) == 0
    mt_weights = load_checkpoint(mt / "best").weights
    task = load_checkpoint(tmp_path / "frozen" / "last")
    assert task.files["encoder"]["name"] == "cove"
    for name in ("lstms.0.weight_ih_l0", "lstms.1.weight_hh_l0_reverse", "vectors"):  # frozen: the MT-LSTM as it was
        assert torch.equal(task.weights[f"encoder.{name}"], mt_weights[f"encoder.{name}"])
    assert cli.main(base + ["--out", str(tmp_path / "mix"), "--adapt=features"]) == 0
    mix = load_checkpoint(tmp_path / "mix" / "last").weights["encoder.mix.weights"]
    assert mix.shape == (3,) and not torch.equal(mix, torch.zeros(3))  # GloVe, CoVe 1, CoVe 2: all mixed, learned
    from transferlab.tasks.loading import load_task_model

    predictor = load_task_model(tmp_path / "mix" / "last")  # reloads; a word unseen in MT gets its GloVe row
    ids = predictor.backbone.texts(["a zebra file"])[0]
    vocab_size = len(load_checkpoint(mt / "best").files["vocab"]["itos"])
    assert ids[1] >= vocab_size
    assert predictor.outputs([predictor_example("a zebra file")]).shape == (1, 2)


def test_taglm_with_cove_inside(mt, tmp_path, capsys):
    """``finetune --encoder taglm --pretrained MT``: the GloVe tagger with CoVe at its input (the
    "+ CoVe" row of contextual_ner.py), frozen, its word -> row map saved; evaluate and predict
    reload it to the same score, a word unseen anywhere gets its GloVe row."""
    import random

    rng = random.Random(1)
    names, fill = ["anna", "bob", "carla", "dmitri", "eve"], "the file window was open new saved in all".split()
    sents = []
    for _ in range(80):  # the word after "met" is a person
        words = rng.sample(fill, 3) + ["met", rng.choice(names)] + rng.sample(fill, 2)
        sents.append(list(zip(words, ["O"] * 4 + ["B-PER"] + ["O"] * 2)))
    for name, rows in (("train", sents[:64]), ("test", sents[64:])):
        (tmp_path / f"{name}.conll").write_text("\n\n".join("\n".join(f"{w} {t}" for w, t in s) for s in rows) + "\n")
    out = tmp_path / "tagger"
    assert cli.main(["finetune", "--encoder", "taglm", "--pretrained", str(mt / "best"), "--taglm.lm_at=input",
                     "--train", str(tmp_path / "train.conll"), "--test", str(tmp_path / "test.conll"), "--out",
                     str(out), "--taglm.hidden_dim=16", "--taglm.word_dim=8", "--train.epochs=15",
                     "--data.batch_size=16", "--train.lr=1e-2", "--train.progress=false"]) == 0
    summary = json.loads((out / "results.json").read_text())
    assert summary["encoder"] == "taglm" and summary["test_entity_f1"] > 0.9
    task, mt_weights = load_checkpoint(out / "last"), load_checkpoint(mt / "best").weights
    assert task.files["encoder"]["config"]["lm"] == "cove"
    for name in ("lstms.0.weight_ih_l0", "lstms.1.weight_hh_l0_reverse"):  # frozen: the MT-LSTM as it was
        assert torch.equal(task.weights[f"encoder.bilm.{name}"], mt_weights[f"encoder.{name}"])
    vocab = load_checkpoint(mt / "best").files["vocab"]["itos"]
    assert torch.equal(task.weights["encoder.bilm.vectors"][: len(vocab)], mt_weights["encoder.vectors"])
    capsys.readouterr()
    assert cli.main(["evaluate", "--model", str(out / "last"), "--data", str(tmp_path / "test.conll")]) == 0
    assert json.loads(capsys.readouterr().out)["entity_f1"] == pytest.approx(summary["test_entity_f1"])
    assert cli.main(["predict", "--model", str(out / "last"), "the file met zebra in"]) == 0
    assert len(json.loads(capsys.readouterr().out.strip().splitlines()[-1])["tags"]) == 5


def test_cove_backbone_is_frozen_unless_trainable(mt):
    from transferlab.encoders import backbone as bb
    from transferlab.text.tokenize import TextConfig

    frozen = bb.cove_backbone(mt / "best", TextConfig(), None)
    assert frozen.family == "cove" and frozen.encoder.layer_groups() == [] and not frozen.causal
    assert not any(p.requires_grad for p in frozen.encoder.parameters())
    tuned = bb.cove_backbone(mt / "best", TextConfig(), None, trainable=True)
    assert len(tuned.encoder.layer_groups()) == 2 and all(p.requires_grad for p in tuned.encoder.parameters())
    assert bb.checkpoint_family(mt / "best") == "cove"
    probed = bb.pretrained_backbone(mt / "best", TextConfig(), None)  # probe's way in
    assert probed.family == "cove" and probed.encoder.dim == 50 + 2 * 16


def predictor_example(text: str):
    from transferlab.data.examples import TextExample

    return TextExample(text, "pos")
