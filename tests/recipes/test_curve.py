"""``transferlab curve`` end to end on a tiny TSV task: two methods (scratch, fasttext) x three
sizes (one capped) x two seeds, nested subsets, the JSONL rows, the summary, resume without
rerunning a cell, a half-written last row rerunning exactly its cell, and bad input named."""

from __future__ import annotations

import json
import random
import re
import shutil
from pathlib import Path

import pytest

from transferlab import cli
from transferlab.config import ConfigError, load_config
from transferlab.recipes import curve, finetune

POS, NEG = "good great fun loved fine nice superb".split(), "bad awful boring dull waste poor weak".split()
FILLER = "the a movie film plot was it".split()


def _write(path, n, offset):
    rng = random.Random(offset)
    rows = []
    for i in range(n):  # every text unique (its index), so subsets can be compared by text
        words = rng.sample(POS if i % 2 else NEG, 2) + rng.sample(FILLER, 2) + [f"w{i + offset}"]
        rows.append(f"{' '.join(words)}\t{'good' if i % 2 else 'bad'}\n")
    path.write_text("review\tstars\n" + "".join(rows), encoding="utf-8")


def _args(d, out, *extra):
    # 44 rows: 4 held out for validation, 40 to train on; 64 is capped to 40, the same cell as all
    return ["curve", "--train", str(d / "train.tsv"), "--test", str(d / "test.tsv"), "--text-col", "review",
            "--label-col", "stars", "--methods", "scratch,fasttext", "--sizes", "16,32,all,64", "--seeds", "2",
            "--preset", "tiny", "--out", str(out), "--data.batch_size=8", "--progress=false",
            "--fasttext.buckets=1000", "--fasttext.dim=16", "--train.epochs=3", *extra]


@pytest.fixture(scope="module")
def task(tmp_path_factory):
    d = tmp_path_factory.mktemp("curve")
    _write(d / "train.tsv", 44, 0)
    _write(d / "test.tsv", 16, 1000)
    return d


@pytest.fixture(scope="module")
def first(task):
    """The curve run once through the CLI, recording each cell's training examples."""
    seen: dict[tuple, list[str]] = {}
    real = finetune.load_task

    def spy(cfg, **kw):
        data = real(cfg, **kw)
        seen[(cfg.train_size, cfg.subset_seed)] = [ex.text for ex in data["train"]]
        return data

    out = task / "out"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(finetune, "load_task", spy)
        assert cli.main(_args(task, out)) == 0
    return out, seen


def _rows(out):
    return [json.loads(line) for line in (out / "curve.jsonl").read_text().splitlines()]


def test_rows_summary_chart_and_cell_folders(first):
    out, _ = first
    rows = _rows(out)
    assert sorted((r["method"], r["size"], r["seed"]) for r in rows) == sorted(
        (m, n, s) for m in ("scratch", "fasttext") for n in (16, 32, 40) for s in (0, 1))
    assert all(r["metric"] == "accuracy" and 0 <= r["score"] <= 1 and r["train_size"] == r["size"]
               and r["task"].endswith("train.tsv") and r["wall_s"] >= 0 for r in rows)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["n_train"] == 40 and summary["sizes"] == [16, 32, 40]
    assert any("64" in note and "capped" in note for note in summary["notes"])
    eff = summary["efficiency"]
    assert eff["reference"] == "scratch" and eff["reference_size"] == 40
    for m in ("scratch", "fasttext"):
        e = eff["methods"][m]
        assert e["label_savings"] == (40 / e["reaches_at"] if e["reaches_at"] else 0.0)
        assert summary["figures"][f"{m}_label_savings"] == e["label_savings"]
        mean16 = sum(r["score"] for r in rows if r["method"] == m and r["size"] == 16) / 2
        assert summary["figures"][f"{m}_acc_16"] == pytest.approx(mean16)
        assert summary["curve"][m]["16"]["mean"] == pytest.approx(mean16)
    assert summary["figures"]["scratch_acc_all"] == summary["figures"]["scratch_acc_40"]
    assert (out / "curve.png").stat().st_size > 5000 and "| fasttext |" in (out / "curve.md").read_text()
    cell = out / "cells" / "fasttext-16-1"
    cfg = json.loads((cell / "config.json").read_text())
    # the curve's data setting and the finetune overrides reached every method; the cell's own settings too
    assert cfg["data"]["batch_size"] == 8 and cfg["fasttext"]["buckets"] == 1000 and cfg["train"]["seed"] == 1
    assert cfg["train"]["log_every"] == 0 and cfg["train"]["progress"] is False  # the curve's bar instead
    assert cfg["data"]["train_size"] == 16 and cfg["data"]["subset_seed"] == 1 and cfg["encoder"] == "fasttext"
    assert (cell / "results.json").exists() and not [p for p in cell.iterdir() if p.is_dir()]  # checkpoints gone


def test_subsets_are_nested_within_a_seed(first):
    _, seen = first
    for seed in (0, 1):
        small, large, full = (set(seen[(n, seed)]) for n in (16, 32, 40))
        assert len(small) == 16 and len(large) == 32 and small < large < full
    assert set(seen[(16, 0)]) != set(seen[(16, 1)])


def test_resume_runs_no_cell(first, task, monkeypatch, capsys):
    out, _ = first
    before = (out / "curve.jsonl").read_text()

    def fail(cfg):
        raise AssertionError(f"cell rerun: {cfg.out}")

    monkeypatch.setattr(finetune, "run", fail)
    assert cli.main(_args(task, out)) == 0
    assert (out / "curve.jsonl").read_text() == before
    assert "| scratch |" in capsys.readouterr().out  # the table is printed again


def test_half_written_last_row_reruns_that_cell(first, task, tmp_path, monkeypatch):
    out = tmp_path / "out"
    shutil.copytree(first[0], out)
    text = (out / "curve.jsonl").read_text()
    last = text.splitlines()[-1]
    (out / "curve.jsonl").write_text(text[: len(text) - len(last) // 2 - 1])  # cut mid-row, no newline
    cut = json.loads(last)
    ran = []
    real = finetune.run

    def spy(cfg):
        ran.append(Path(cfg.out).name)
        return real(cfg)

    monkeypatch.setattr(finetune, "run", spy)
    summary = curve.run(load_config(curve.CurveConfig, None, [
        f'data.train="{task / "train.tsv"}"', f'data.test="{task / "test.tsv"}"', 'data.text_col="review"',
        'data.label_col="stars"', "data.batch_size=8", 'sizes="16,32,all,64"', "seeds=2",
        'methods="scratch,fasttext"', 'preset="tiny"', f'out="{out}"', "progress=false",
        'finetune=["fasttext.buckets=1000", "fasttext.dim=16", "train.epochs=3"]']))
    assert ran == [f"{cut['method']}-{cut['size']}-{cut['seed']}"]
    assert any("half-written" in note for note in summary["notes"])
    assert len(_rows(out)) == 12 and summary["rows"] == 12


def test_report_only_trains_nothing_and_leaves_the_record_alone(first, task, tmp_path, monkeypatch, capsys):
    """A look at a curve in progress: the cells recorded so far are charted, the missing ones
    named, a cell with fewer seeds marked, and the record (maybe being written by the running
    curve, here a half-written last row) left as it is."""
    lines = (first[0] / "curve.jsonl").read_text().splitlines(keepends=True)
    record = tmp_path / "partial.jsonl"
    record.write_text("".join(lines[1:]) + lines[0][:20])  # first cell missing, a row mid-write
    before = record.read_text()

    def fail(cfg):
        raise AssertionError(f"cell trained: {cfg.out}")

    monkeypatch.setattr(finetune, "run", fail)
    assert cli.main(_args(task, tmp_path / "out", "--report-only", f"--record={record}")) == 0
    assert record.read_text() == before
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    first_row = json.loads(lines[0])
    assert any(f"not yet run: {first_row['method']} 16 (seed 0)" in n for n in summary["notes"])
    assert summary["rows"] == 11 and (tmp_path / "out" / "curve.png").exists()
    assert "(1 of 2 seeds)" in capsys.readouterr().out


def test_report_only_without_the_lm_checkpoint_reports_the_recorded_lm(first, task, tmp_path, monkeypatch, capsys):
    """A fresh checkout keeps the committed record, not the LM checkpoint: report-only takes the
    one LM recorded, refuses to guess between two, and reports the one --lm_id names."""
    rows = _rows(first[0])
    ulmfit = [dict(r, method="ulmfit", lm_id="aaaa") for r in rows if r["method"] == "scratch"]
    record = tmp_path / "record.jsonl"
    record.write_text("".join(json.dumps(r) + "\n" for r in rows + ulmfit))
    monkeypatch.setattr(finetune, "run", lambda cfg: pytest.fail(f"cell trained: {cfg.out}"))
    args = _args(task, tmp_path / "out", "--report-only", f"--record={record}", "--methods", "scratch,fasttext,ulmfit",
                 "--lm", str(tmp_path / "gone"))
    assert cli.main(args) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["rows"] == 18 and "ulmfit" in summary["curve"]
    other = [dict(r, lm_id="bbbb", score=0.0) for r in ulmfit]
    record.write_text(record.read_text() + "".join(json.dumps(r) + "\n" for r in other))
    with pytest.raises(SystemExit) as exit_:
        cli.main(args)
    assert exit_.value.code == 2
    assert re.search(r"2 language models \(aaaa: 6 cells, bbbb: 6 cells\).*--lm_id=ID", capsys.readouterr().err)
    assert cli.main([*args, "--lm_id=bbbb"]) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["curve"]["ulmfit"]["16"]["mean"] == 0.0
    with pytest.raises(ConfigError, match="lm_id picks recorded cells for --report-only"):
        curve.CurveConfig(lm_id="aaaa")


def test_bad_input_is_named(task, tmp_path):
    with pytest.raises(ConfigError, match=r"unknown method 'nope' \(known: scratch, glove, ulmfit"):
        curve.run(curve.CurveConfig(methods="scratch,nope", out=str(tmp_path)))
    with pytest.raises(ValueError, match="data.train_size"):
        load_config(curve.CurveConfig, None, ["data.train_size=100"])
    with pytest.raises(ValueError, match="--sizes: 'lots'"):
        load_config(curve.CurveConfig, None, ['sizes="100,lots"'])
    with pytest.raises(ValueError, match="twice"):
        curve.CurveConfig(methods="scratch,scratch")
    with pytest.raises(ConfigError, match="method mlm starts from a masked LM: pass --mlm"):
        curve.run(curve.CurveConfig(methods="scratch,mlm", out=str(tmp_path)))
    (tmp_path / "curve.jsonl").write_text(json.dumps({"method": "scratch", "size": 16, "seed": 0, "metric": "accuracy",
                                                      "score": 0.5, "task": "sst2"}) + "\n")
    with pytest.raises(ValueError, match="holds a curve of sst2"):
        curve.run(load_config(curve.CurveConfig, None, [f'data.train="{task / "train.tsv"}"', 'data.text_col="review"',
                                                        'data.label_col="stars"', 'methods="scratch"',
                                                        f'out="{tmp_path}"']))


def test_methods_file_adds_and_changes_methods(tmp_path):
    (tmp_path / "m.toml").write_text('[mine]\nencoder = "fasttext"\n"train.epochs" = 2\n\n'
                                     '[scratch.train]\nlr = 0.5\n', encoding="utf-8")
    cfg = curve.CurveConfig(methods="mine,scratch,ulmfit", methods_file=str(tmp_path / "m.toml"), preset="tiny",
                            lm="runs/lm/best", out=str(tmp_path / "o"), min_steps=0)
    methods = curve.load_methods(cfg)
    mine = curve.cell_config(cfg, "mine", methods["mine"], 16, 1, cfg.lm)
    assert mine.encoder == "fasttext" and mine.train.epochs == 2 and mine.train.seed == 1
    assert not mine.lm_finetune.enabled and not mine.ulmfit.discriminative  # the fasttext family defaults
    scratch = curve.cell_config(cfg, "scratch", methods["scratch"], 16, 0, cfg.lm)
    assert scratch.encoder == "awd_lstm" and scratch.train.lr == 0.5 and scratch.awd_lstm.dim == 32  # tiny
    ulm = curve.cell_config(cfg, "ulmfit", methods["ulmfit"], 32, 2, cfg.lm)
    assert ulm.pretrained == "runs/lm/best" and ulm.out.endswith("ulmfit-32-2")
    # every size and seed shares one target-task LM fine-tuning
    assert ulm.lm_finetune.out == curve.cell_config(cfg, "ulmfit", methods["ulmfit"], 16, 0, cfg.lm).lm_finetune.out
    assert "lm-finetuned-" in ulm.lm_finetune.out
    (tmp_path / "bad.toml").write_text('[mine]\n"train.epoch" = 2\n', encoding="utf-8")
    bad = curve.CurveConfig(methods="mine", methods_file=str(tmp_path / "bad.toml"))
    with pytest.raises(ConfigError, match="method mine: .*train.epoch"):
        curve.cell_config(bad, "mine", curve.load_methods(bad)["mine"], 16, 0, "")


def test_every_packaged_method_builds_its_config(tmp_path):
    names = "scratch,glove,ulmfit,minilm,features,fasttext,mlm"
    cfg = curve.CurveConfig(methods=names, lm="runs/lm/best", mlm="runs/mlm/best", out=str(tmp_path))
    built = {n: curve.cell_config(cfg, n, m, 100, 0, cfg.lm) for n, m in curve.load_methods(cfg).items()}
    assert {n: c.encoder for n, c in built.items()} == {
        "scratch": "awd_lstm", "glove": "awd_lstm", "ulmfit": "awd_lstm", "minilm": "minilm-l6",
        "features": "minilm-l6", "fasttext": "fasttext", "mlm": "transformer"}
    assert built["mlm"].pretrained == "runs/mlm/best" and built["mlm"].train.lr == 1e-4  # defaults_transformer
    assert built["mlm"].task.pooling == "mean" and not built["mlm"].task.pooler  # no NSP: [CLS] is untrained
    assert built["glove"].vectors == "glove-6b-50d" and not built["scratch"].vectors and not built["scratch"].pretrained
    assert built["features"].adapt == "features" and built["minilm"].adapt == "finetune"
    assert built["minilm"].train.lr == 5e-5 and built["scratch"].awd_lstm.dim == 200  # BERT's recipe; small preset


def test_ulmfit_cells_share_one_lm_finetuning(task, tmp_path, monkeypatch):
    from transferlab.recipes import pretrain_lm, ulmfit

    corpus = tmp_path / "corpus.txt"
    words = POS + NEG + FILLER
    corpus.write_text("\n".join(" ".join(words[(i * 7 + j) % len(words)] for j in range(9)) for i in range(200)) + "\n")
    lm = pretrain_lm.run(load_config(pretrain_lm.PretrainLMConfig, "tiny", [
        f'data.corpus="{corpus}"', 'data.valid_split="train"', 'data.test_split="train"', "train.progress=false",
        "train.steps=2", f'out="{tmp_path / "lm"}"'], kind="lm"))["checkpoint"]
    stages = []
    real_fit = ulmfit.fit
    monkeypatch.setattr(ulmfit, "fit", lambda *a, **k: stages.append(k["out_dir"]) or real_fit(*a, **k))
    out = tmp_path / "out"
    with pytest.raises(FileNotFoundError, match="--lm .*no such checkpoint"):
        curve.run(curve.CurveConfig(methods="ulmfit", lm=str(tmp_path / "no"), out=str(tmp_path / "o")))
    assert cli.main(_args(task, out, "--methods", "ulmfit", "--sizes", "16,all", "--seeds", "1", "--lm", lm,
                          "--lm_finetune.train.steps=5")) == 0
    assert len(stages) == 1 and stages[0].name.startswith("lm-finetuned-")  # once for both cells
    assert {(r["method"], r["size"]) for r in _rows(out)} == {("ulmfit", 16), ("ulmfit", 40)}
    cell = json.loads((out / "cells" / "ulmfit-16-0" / "config.json").read_text())
    assert cell["pretrained"] == lm and cell["lm_finetune"]["out"] == str(stages[0])

    # The same recipe in another folder is the same LM: nothing reruns. Another recipe is not:
    # both cells run again from it, and the curve reads only its rows (the old ones stay on file).
    def pretrain(folder, steps):
        return pretrain_lm.run(load_config(pretrain_lm.PretrainLMConfig, "tiny", [
            f'data.corpus="{corpus}"', 'data.valid_split="train"', 'data.test_split="train"', "train.progress=false",
            f"train.steps={steps}", f'out="{tmp_path / folder}"'], kind="lm"))["checkpoint"]

    twin, other = pretrain("twin", 2), pretrain("other", 3)
    ids = {curve.lm_identity(curve.CurveConfig(methods="ulmfit", lm=p)) for p in (lm, twin)}
    assert len(ids) == 1 and curve.lm_identity(curve.CurveConfig(methods="ulmfit", lm=other)) not in ids
    assert all(r["lm_id"] in ids for r in _rows(out))
    args = _args(task, out, "--methods", "ulmfit", "--sizes", "16,all", "--seeds", "1",
                 "--lm_finetune.train.steps=5")
    assert cli.main([*args, "--lm", twin]) == 0 and len(stages) == 1
    assert cli.main([*args, "--lm", other]) == 0 and len(stages) == 2 and len(_rows(out)) == 4
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rows"] == 2 and "another language model" in " ".join(summary["notes"])


def test_without_lm_the_curve_pretrains_one_once(tmp_path, monkeypatch):
    from transferlab.recipes import pretrain_lm

    calls = []

    def fake(cfg):
        calls.append(cfg)
        (tmp_path / "lm-ptb").mkdir()
        (tmp_path / "lm-ptb" / "results.json").write_text("{}")

    monkeypatch.setattr(pretrain_lm, "run", fake)
    cfg = curve.CurveConfig(methods="ulmfit", out=str(tmp_path))
    assert curve.pretrained_lm(cfg) == str(tmp_path / "lm-ptb" / "best") == curve.pretrained_lm(cfg)
    assert len(calls) == 1 and calls[0].data.corpus == "ptb" and calls[0].out == str(tmp_path / "lm-ptb")
    assert calls[0].train.steps == 1600  # the demo preset


def test_few_labels_train_for_min_steps_in_more_epochs():
    from transferlab.train import TrainConfig

    recipe = TrainConfig(epochs=3)
    # 100 labels in batches of 32: 3 batches an epoch (the last partial one dropped), 9 steps
    longer = curve.at_least(recipe, 100, 32, 200)
    assert longer.epochs == 67 and longer.epochs * 3 >= 200
    assert longer.eval_every == 67 and longer.save_every == 67  # still 3 evaluations, spread out
    assert curve.at_least(recipe, 5000, 32, 200) == recipe  # 468 steps: as the recipe says
    assert curve.at_least(recipe, 100, 32, 0) == recipe  # min_steps=0: off
    assert curve.at_least(TrainConfig(steps=50), 100, 32, 200).steps == 50  # a fixed step count stands
    assert curve.at_least(TrainConfig(epochs=2, grad_accum=2), 20, 32, 10).epochs == 10  # one batch, one step
    cfg = curve.CurveConfig(methods="minilm", lm="runs/lm/best", out="o")
    cell = curve.cell_config(cfg, "minilm", curve.load_methods(cfg)["minilm"], 50, 0, cfg.lm)
    assert cell.train.epochs * 1 >= 200 and cell.data.train_size == 50
    with pytest.raises(ValueError, match="min_steps must be >= 0"):
        curve.CurveConfig(min_steps=-1)
