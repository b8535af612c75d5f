"""`transferlab finetune --task squad-v1.1|squad-v2.0` with a tiny random BERT on 50 questions, then
`evaluate` (the same figures from the reloaded checkpoint, v2.0's tuned no-answer threshold read back)
and `predict --task qa --question ... --context ...` (the answer is the context's characters)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from transferlab import cli
from transferlab.data import catalog


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory, make_tiny_bert) -> Path:
    """A random 2-layer BERT of hidden size 32 with minilm-l6's uncased WordPiece vocabulary."""
    return make_tiny_bert(tmp_path_factory.mktemp("qa") / "tiny-bert")


def write_squad(examples, path: Path) -> str:
    """QAExamples as a SQuAD JSON file (one article, a paragraph per context)."""
    paragraphs: dict[str, list] = {}
    for ex in examples:
        qa = {"id": ex.id, "question": ex.question, "is_impossible": ex.is_impossible,
              "answers": [{"text": a.text, "answer_start": a.start} for a in ex.answers]}
        paragraphs.setdefault(ex.context, []).append(qa)
    doc = {"version": "test", "data": [{"title": "t", "paragraphs": [{"context": c, "qas": q}
                                                                      for c, q in paragraphs.items()]}]}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return str(path)


TINY = ["--labels", "50", "--data.valid_size=24", "--train.epochs=2", "--train.lr=1e-3", "--train.progress=false",
        "--train.log_every=0", "--qa.max_len=128", "--qa.stride=32", "--data.batch_size=16"]


def _run(capsys, *args) -> str:
    capsys.readouterr()
    assert cli.main(list(args)) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("task", ["squad-v1.1", "squad-v2.0"])
def test_finetune_evaluate_predict(tiny_bert, tmp_path, capsys, task):
    test = write_squad(list(catalog.load_examples(task, "test"))[:30], tmp_path / "test.json")
    out = tmp_path / "run"
    _run(capsys, "finetune", "--task", task, "--test", test, "--encoder", str(tiny_bert), "--out", str(out), *TINY)
    results = json.loads((out / "results.json").read_text())
    assert results["kind"] == "qa" and results["train_size"] == 50 and results["steps"] > 0
    assert 0.0 <= results["test_exact_match"] <= results["test_f1"] <= 1.0 and results["test_total"] == 30
    task_file = json.loads((out / "last" / "task.json").read_text())
    assert task_file["kind"] == "qa" and task_file["version2"] == (task == "squad-v2.0")

    scores = json.loads(_run(capsys, "evaluate", "--model", str(out / "last"), "--data", test))
    assert scores["f1"] == pytest.approx(results["test_f1"]) and scores["n"] == 30  # the checkpoint reloads
    if task == "squad-v2.0":
        assert math.isfinite(task_file["null_threshold"])
        assert results["test_null_threshold"] == task_file["null_threshold"] == scores["null_threshold"]
        assert scores["has_ans_total"] + scores["no_ans_total"] == 30 and 0.0 <= scores["no_ans_f1"] <= 1.0

    context = "The Broncos defeated the Panthers 24-10 at Levi's Stadium in Santa Clara on February 7, 2016."
    rows = [json.loads(line) for line in _run(capsys, "predict", "--model", str(out / "last"), "--task", "qa",
                                              "--question", "Who won?", "--question", "Where was it played?",
                                              "--context", context).splitlines()]
    assert [r["question"] for r in rows] == ["Who won?", "Where was it played?"]
    for r in rows:
        assert math.isfinite(r["score"])
        if r["answer"]:
            assert context[r["start"]:r["end"]] == r["answer"]
        else:  # a v2.0 model may answer nothing
            assert task == "squad-v2.0" and r["start"] is None


def test_a_qa_model_wants_a_question_and_a_context(tiny_bert, tmp_path, capsys):
    test = write_squad(list(catalog.load_examples("squad-v1.1", "test"))[:5], tmp_path / "test.json")
    out = tmp_path / "run"
    _run(capsys, "finetune", "--task", "squad-v1.1", "--test", test, "--encoder", str(tiny_bert), "--out", str(out),
         *TINY[:2], "--train.epochs=1", "--data.valid_size=4", "--train.progress=false")
    with pytest.raises(SystemExit) as e:
        cli.main(["predict", "--model", str(out / "last"), "a text"])
    assert e.value.code == 1 and "--question" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        cli.main(["predict", "--model", str(out / "last"), "--task", "qa", "--question", "Who?"])
    assert e.value.code == 2 and "--context" in capsys.readouterr().err
