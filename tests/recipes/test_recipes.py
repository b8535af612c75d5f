"""The recipes end to end at tiny sizes on the user's own files: pretrain lm -> finetune (ULMFiT)
-> evaluate -> predict, the classifier's own dropouts on a pretrained encoder, bad input named,
and every subcommand's --help showing an example."""

from __future__ import annotations

import io
import json

import pytest

from transferlab import cli
from transferlab.config import load_config
from transferlab.data.tasks import TaskDataConfig, read_examples
from transferlab.recipes import finetune, predict, pretrain_lm, ulmfit
from transferlab.tasks.loading import load_task_model

WORDS = "good great fun loved fine bad awful boring dull waste the a movie film plot was it".split()


def _write_task(path, rows):
    path.write_text("review\tstars\n" + "".join(f"{t}\t{y}\n" for t, y in rows), encoding="utf-8")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("recipes")
    pos, neg = ["good great fun", "loved the movie", "a fine film"], ["bad awful plot", "boring dull", "a waste"]
    rows = [(t, "good") for t in pos] * 6 + [(t, "bad") for t in neg] * 6
    _write_task(d / "train.tsv", rows)
    _write_task(d / "test.tsv", rows[::3])
    (d / "corpus.txt").write_text("\n".join(" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(9))
                                            for i in range(300)) + "\n", encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def lm(files):
    cfg = load_config(pretrain_lm.PretrainLMConfig, "tiny",
                      [f'data.corpus="{files / "corpus.txt"}"', 'data.valid_split="train"',
                       'data.test_split="train"', "train.progress=false", f'out="{files / "lm"}"'], kind="lm")
    return pretrain_lm.run(cfg)


def _finetune_cfg(files, out, *extra):
    return load_config(finetune.FinetuneConfig, "tiny",
                       ['data.task=""', f'data.train="{files / "train.tsv"}"', f'data.test="{files / "test.tsv"}"',
                        'data.text_col="review"', 'data.label_col="stars"', "train.progress=false",
                        "lm_finetune.train.progress=false", f'out="{out}"', *extra], kind="finetune")


def test_pretrain_reports_perplexities(lm):
    assert lm["valid_ppl"] > 1 and lm["test_ppl"] > 1 and lm["steps"] == 30


def test_ulmfit_pipeline_and_classifier_dropouts(files, lm, tmp_path):
    cfg = _finetune_cfg(files, tmp_path / "clf", f'pretrained="{lm["checkpoint"]}"', "awd_lstm.output_p=0.33",
                        "awd_lstm.weight_p=0.44")
    summary = finetune.run(cfg)
    assert summary["pretrained"] and 0.0 <= summary["test_accuracy"] <= 1.0
    loaded = load_task_model(summary["checkpoint"])
    model, labels = loaded.model, loaded.labels
    assert labels == ["bad", "good"]
    # the classifier trained with its own dropouts, recorded in its checkpoint; sizes stay the LM's
    assert model.encoder.cfg.output_p == 0.33 and model.encoder.cfg.weight_p == 0.44
    assert all(r.weight_p == 0.44 for r in model.encoder.rnns)
    assert model.encoder.cfg.dim == 32
    # the fine-tuned LM kept the pretraining dropouts
    lm_cfg = json.loads((tmp_path / "clf" / "lm" / "last" / "config.json").read_text())
    assert lm_cfg["awd_lstm"]["output_p"] != 0.33

    examples = read_examples(TaskDataConfig(task="", train=str(files / "test.tsv"), text_col="review",
                                            label_col="stars"), "test", str(files / "test.tsv"))
    metrics = predict.evaluate(summary["checkpoint"], examples, "test.tsv")
    assert metrics["n"] == len(examples) and metrics["accuracy"] == pytest.approx(summary["test_accuracy"])
    out = io.StringIO()
    assert predict.predict(summary["checkpoint"], ["good fun", "dull"], out) == 2
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert rows[0]["label"] in labels and sum(rows[0]["probabilities"].values()) == pytest.approx(1.0)


def test_unseen_label_at_evaluation_is_named(files, tmp_path):
    summary = finetune.run(_finetune_cfg(files, tmp_path / "scratch"))
    assert not summary["pretrained"]
    bad = tmp_path / "odd.tsv"
    _write_task(bad, [("good fun", "good"), ("so so", "meh")])
    examples = read_examples(TaskDataConfig(task="", train=str(bad), text_col="review", label_col="stars"),
                             "test", str(bad))
    with pytest.raises(ValueError, match="meh"):
        predict.evaluate(summary["checkpoint"], examples, "odd.tsv")


def test_evaluate_reads_a_file_with_the_models_own_columns(files, tmp_path, capsys):
    rows = (files / "train.tsv").read_text().splitlines()[1:]
    (tmp_path / "headerless.tsv").write_text("\n".join(rows) + "\n")
    assert cli.main(["finetune", "--train", str(tmp_path / "headerless.tsv"), "--text-col", "0", "--label-col", "1",
                     "--preset", "tiny", "--out", str(tmp_path / "m"), "--train.progress=false",
                     "--lm_finetune.enabled=false"]) == 0
    capsys.readouterr()
    assert cli.main(["evaluate", "--model", str(tmp_path / "m" / "last"), "--data",
                     str(tmp_path / "headerless.tsv")]) == 0  # no column flags: the model's are used
    assert json.loads(capsys.readouterr().out)["n"] == len(rows)
    # no --data, no --task: the model's own file, its test part held out as finetune held it out
    assert cli.main(["evaluate", "--model", str(tmp_path / "m" / "last")]) == 0
    scores = json.loads(capsys.readouterr().out)
    summary = json.loads((tmp_path / "m" / "results.json").read_text())
    assert scores["accuracy"] == summary["test_accuracy"] and scores["n"] < len(rows)
    # predict on a table reads its text column (the model's), not whole lines with the label in them
    table = tmp_path / "to_label.tsv"
    table.write_text("\n".join(rows[:3]) + "\n")
    assert cli.main(["predict", "--model", str(tmp_path / "m" / "last"), "--input", str(table)]) == 0
    texts = [json.loads(line)["text"] for line in capsys.readouterr().out.splitlines()]
    assert texts == [r.split("\t")[0] for r in rows[:3]]


def test_predict_tags_new_text_with_a_tagger(tmp_path, capsys):
    tags = {"Paris": "B-LOC", "London": "B-LOC", "John": "B-PER", "visited": "O", "likes": "O", "the": "O"}
    words = list(tags)
    (tmp_path / "my.conll").write_text("".join("".join(f"{words[(i + j) % 6]} {tags[words[(i + j) % 6]]}\n"
                                                       for j in range(4)) + "\n" for i in range(30)))
    assert cli.main(["finetune", "--train", str(tmp_path / "my.conll"), "--tags", "1", "--preset", "tiny",
                     "--out", str(tmp_path / "tagger"), "--train.progress=false"]) == 0
    capsys.readouterr()
    assert cli.main(["predict", "--model", str(tmp_path / "tagger" / "last"), "John visited Paris ."]) == 0
    row = json.loads(capsys.readouterr().out.strip())
    assert row["tokens"] == ["John", "visited", "Paris", "."] and len(row["tags"]) == 4
    assert set(row["tags"]) <= {"B-LOC", "B-PER", "O"}


def test_the_console_says_what_was_read_and_what_happened(files, tmp_path, capsys):
    assert cli.main(["finetune", "--train", str(files / "train.tsv"), "--text-col", "review", "--label-col", "stars",
                     "--preset", "tiny", "--out", str(tmp_path / "m"), "--lm_finetune.enabled=false"]) == 0
    err = capsys.readouterr().err
    assert "examples held out of train (10%" in err and "no validation file or split was given" in err
    assert "labels in train: " in err and "good " in err and "bad " in err
    assert "another 3 examples held out of train, apart from valid" in err  # no test file: its own part (issue 24)
    assert "(epoch 1): valid_accuracy" in err and "best valid_accuracy" in err
    assert "of the positive class" in err and f"model written to {tmp_path / 'm' / 'last'}" in err
    assert "\r" not in err


def test_malformed_row_names_file_line_and_field(files, tmp_path, capsys):
    bad = tmp_path / "bad.tsv"
    bad.write_text("review\tstars\ngood fun\tgood\n\tbad\n", encoding="utf-8")
    code = None
    try:
        cli.main(["finetune", "--train", str(bad), "--text-col", "review", "--label-col", "stars",
                  "--preset", "tiny", "--out", str(tmp_path / "x")])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 1 and "bad.tsv, line 3, field 'review': empty text" in err


@pytest.mark.parametrize("command", sorted(cli.EXAMPLES))
def test_every_help_shows_an_example(command, capsys):
    with pytest.raises(SystemExit):
        cli.main([command, "--help"])
    out = capsys.readouterr().out
    assert "example:" in out and f"transferlab {command}" in out


def test_pretrain_objective_help_lists_its_settings(capsys):
    with pytest.raises(SystemExit):
        cli.main(["pretrain", "lm", "--help"])
    out = capsys.readouterr().out
    assert "--budget" in out and "lm.samples=0" in out and "data.held_out=0.02" in out and "resume=false" in out
    with pytest.raises(SystemExit):
        cli.main(["pretrain", "bilm", "--help"])
    assert "elmo.hidden_dim=2048" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        cli.main(["pretrain", "mlm", "--help"])
    out = capsys.readouterr().out  # a section's own default (TrainConfig(lr=5e-4)), not TrainConfig's 1e-3
    assert "train.lr=0.0005" in out and "transformer.max_len=128" in out


def test_lm_stage_trains_the_tied_embedding_at_the_top_rate():
    from transferlab.adapt.finetune import param_groups
    from transferlab.encoders.awd_lstm import AWDLSTMConfig
    from transferlab.pretrain.lm import build_lm

    lm = build_lm(AWDLSTMConfig(dim=8, hidden_dim=12, n_layers=3), vocab_size=30)
    groups = ulmfit.lm_groups(lm)
    assert groups == list(lm.encoder.rnns)  # the embedding is tied to the decoder: left out
    pg = param_groups(groups, 1e-2, 2.6, head=lm.decoder)
    top = pg[-1]
    assert top["name"] == "head" and top["lr"] == 1e-2
    assert any(p is lm.encoder.embedding.weight for p in top["params"])
    assert pg[0]["lr"] == pytest.approx(1e-2 / 2.6**3)
    n = sum(p.numel() for g in pg for p in g["params"])
    assert n == sum(p.numel() for p in lm.parameters())  # every parameter once


def test_an_lm_stage_folder_of_another_lm_is_refused_not_reused(files, lm, tmp_path):
    """The target-task LM stage is reused only for the pretrained LM, text and settings that made it."""
    stage = tmp_path / "stage"
    first = _finetune_cfg(files, tmp_path / "a", f'pretrained="{lm["checkpoint"]}"', f'lm_finetune.out="{stage}"')
    finetune.run(first)
    held = json.loads((stage / "stage.json").read_text())
    assert held["pretrained"].endswith("best") and "out" not in held["lm_finetune"]
    again = _finetune_cfg(files, tmp_path / "b", f'pretrained="{lm["checkpoint"]}"', f'lm_finetune.out="{stage}"',
                          "data.train_size=12")  # fewer labels: the same stage, reused
    assert finetune.run(again)["train_size"] == 12
    other = _finetune_cfg(files, tmp_path / "c", f'pretrained="{lm["checkpoint"]}"', f'lm_finetune.out="{stage}"',
                          "lm_finetune.train.steps=7")
    with pytest.raises(ulmfit.ConfigError, match="differs in: lm_finetune"):
        finetune.run(other)


def test_quick_demo_runs_end_to_end(tmp_path, capsys):
    from transferlab.recipes import demo

    summary = demo.run(quick=True, out=tmp_path / "demo", labels=200)
    assert 0.0 <= summary["ulmfit_acc"] <= 1.0 and summary["lm"].endswith("lm-ptb/best")
    assert (tmp_path / "demo" / "accuracy.png").exists() and "transfer gain" in capsys.readouterr().out
    # --lm takes a `pretrain lm` run folder for its best checkpoint, and refuses anything else by the flag
    assert demo.language_model(str(tmp_path / "demo" / "lm-ptb"), False, tmp_path) == tmp_path / "demo/lm-ptb/best"
    for wrong in (tmp_path / "nothing", tmp_path / "demo" / "ulmfit" / "last"):
        with pytest.raises(ValueError, match="--lm .*not a `transferlab pretrain lm`"):
            demo.language_model(str(wrong), False, tmp_path)
