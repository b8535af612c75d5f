"""No silent wrong results and no tracebacks (issue 24): a user's mistakes with files, checkpoints
and folders end in one line, ``transferlab CMD: error: ...``, naming the file and what is wrong."""

from __future__ import annotations

import json

import pytest

from transferlab import cli

ROWS = [("good great fun", "good"), ("loved the movie", "good"), ("bad awful plot", "bad"), ("boring dull", "bad")]


def _write(path, rows):
    path.write_text("review\tstars\n" + "".join(f"{t}\t{y}\n" for t, y in rows), encoding="utf-8")
    return path


def _finetune(train, out, *extra):
    return ["finetune", "--train", str(train), "--text-col", "review", "--label-col", "stars", "--preset", "tiny",
            "--out", str(out), "--train.progress=false", "--lm_finetune.enabled=false", "--train.epochs=1", *extra]


def _fails(capsys, argv, code=1) -> str:
    """The one-line message of a command that must fail with ``code``."""
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    err = capsys.readouterr().err
    assert e.value.code == code, err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_errors")
    assert cli.main(_finetune(_write(d / "train.tsv", ROWS * 6), d / "m")) == 0
    return d / "m" / "last"


def test_predict_refuses_empty_text_as_training_does(model, capsys):
    line = _fails(capsys, ["predict", "--model", str(model), "good fun", "   "])
    assert line == "transferlab predict: error: text 2 of 2: empty text"


def test_a_missing_or_truncated_checkpoint_is_one_line(model, tmp_path, capsys):
    data = _write(tmp_path / "x.tsv", ROWS)
    line = _fails(capsys, ["evaluate", "--model", str(tmp_path / "nowhere"), "--data", str(data)])
    assert line.startswith("transferlab evaluate: error: ") and "nowhere" in line
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in model.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:200])
    line = _fails(capsys, ["predict", "--model", str(broken), "good fun"])
    assert line.startswith("transferlab predict: error: ") and "corrupt or truncated" in line
    line = _fails(capsys, _finetune(data, tmp_path / "x", "--pretrained", str(tmp_path / "nowhere")))
    assert line.startswith("transferlab finetune: error: ")


def test_a_config_that_disagrees_with_the_weights_names_tensor_and_shapes(model, tmp_path, capsys):
    edited = tmp_path / "edited"
    edited.mkdir()
    for f in model.iterdir():
        (edited / f.name).write_bytes(f.read_bytes())
    encoder = json.loads((edited / "encoder.json").read_text())
    config = encoder.get("config", encoder)
    assert config["hidden_dim"] == 32
    config["hidden_dim"] = 48
    (edited / "encoder.json").write_text(json.dumps(encoder))
    line = _fails(capsys, ["predict", "--model", str(edited), "good fun"])
    assert f"{edited / 'model.safetensors'}: tensor " in line and "has shape (" in line and "describes has (" in line


def test_out_under_a_file_and_a_bogus_split(tmp_path, capsys):
    train = _write(tmp_path / "train.tsv", ROWS * 3)
    line = _fails(capsys, _finetune(train, train / "run"))
    assert line == (f"transferlab finetune: error: {train / 'run'}: {train} is a file, not a folder "
                    f"(choose another --out?)")
    line = _fails(capsys, ["evaluate", "--model", str(tmp_path), "--split", "bogus"], code=2)
    assert "invalid choice: 'bogus'" in line and "'train', 'valid', 'test'" in line


def test_an_empty_file_and_an_unseen_test_label_name_the_file(tmp_path, capsys):
    empty = tmp_path / "empty.tsv"
    empty.write_text("review\tstars\n")
    line = _fails(capsys, _finetune(empty, tmp_path / "x"))
    assert line == f"transferlab finetune: error: {empty}: no examples: the file is empty or holds only a header line"
    test = _write(tmp_path / "test.tsv", [("good fun", "good"), ("so so", "meh")])
    line = _fails(capsys, _finetune(_write(tmp_path / "train.tsv", ROWS * 3), tmp_path / "y", "--test", str(test)))
    assert line.startswith(f"transferlab finetune: error: {test}, line 3, field 'stars': label 'meh' was never seen")


def test_vectors_convert_onto_an_existing_path_asks_for_overwrite(tmp_path, capsys):
    src, out = tmp_path / "v.txt", tmp_path / "out.txt"
    src.write_text("2 3\nfrog 1 0 0\ntoad 0 1 0\n")
    out.write_text("keep me\n")
    line = _fails(capsys, ["vectors", "convert", str(src), str(out)])
    assert line == f"transferlab vectors: error: {out} exists: pass --overwrite to replace it, or choose another " \
                   "output path"
    assert out.read_text() == "keep me\n"
    assert cli.main(["vectors", "convert", str(src), str(out), "--overwrite"]) == 0
    assert out.read_text().startswith("2 3\n")


def test_labels_zero_means_all_in_the_help(capsys):
    for command in ("finetune", "vectors"):
        with pytest.raises(SystemExit):
            cli.main([command, "--help"])
        assert "0 = all" in " ".join(capsys.readouterr().out.split())


def test_evaluate_names_the_line_of_a_label_the_model_never_saw(model, tmp_path, capsys):
    data = _write(tmp_path / "odd.tsv", [("good fun", "good"), ("so so", "meh")])
    line = _fails(capsys, ["evaluate", "--model", str(model), "--data", str(data)])
    assert line.startswith(f"transferlab evaluate: error: {data}, line 3, field 'stars': label 'meh' was never seen")


def test_slips_between_names_files_and_folders_get_told_what_to_pass(tmp_path, capsys, monkeypatch):
    """A file where a catalog name belongs, a name that is nothing, and a question without words."""
    monkeypatch.chdir(tmp_path)
    _write(tmp_path / "mine.tsv", ROWS)
    line = _fails(capsys, ["finetune", "--task", "mine.tsv", "--preset", "tiny"], code=2)  # a config error
    assert "--train mine.tsv" in line
    line = _fails(capsys, ["generate", "--model", "no-such-model", "hi"])
    assert "unknown name 'no-such-model': not a catalog name, and no file or folder" in line
    line = _fails(capsys, ["vectors", "neighbors", "glove-6b-50d"])
    assert "neighbors of what?" in line
