"""`finetune --aux_lm`: with 0 the run is bit for bit the one without the auxiliary loss (none of
its code runs); with 0.5 the LM head trains beside the task head, is saved with the task model and
reloads with it, and the predictor reproduces the run's figures."""

from __future__ import annotations

import json
import random

import pytest
import torch

from transferlab import cli
from transferlab.checkpoint import load_checkpoint, save_checkpoint
from transferlab.config import to_dict
from transferlab.data.tasks import TaskDataConfig, read_examples
from transferlab.encoders.transformer import Transformer, TransformerConfig
from transferlab.pretrain.mlm import MaskedLM
from transferlab.recipes import finetune, predict
from transferlab.tasks.loading import load_task_model
from transferlab.text.subword import train_tokenizer

GOOD, BAD = "good great fun loved fine".split(), "bad awful boring dull waste".split()
FILL = "the a movie film plot was it".split()
TINY = ["--train.epochs=2", "--train.progress=false", "--train.log_every=1", "--data.max_len=24",
        "--data.batch_size=16"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A toy sentiment task and a tiny `pretrain mlm`-shaped checkpoint (random weights) on its text:
    a fixed tokenizer (the WordPiece trainer's ids differ from one training to the next)."""
    d = tmp_path_factory.mktemp("aux")
    rng = random.Random(0)
    rows = [(" ".join(rng.sample(GOOD if i % 2 else BAD, 2) + rng.sample(FILL, 3)), "pos" if i % 2 else "neg")
            for i in range(64)]
    for name, part in (("train", rows[:48]), ("test", rows[48:])):
        (d / f"{name}.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in part), encoding="utf-8")
    tok = train_tokenizer([t for t, _ in rows], "wordpiece", 200, 1, lower=True)
    cfg = TransformerConfig(vocab_size=tok.vocab_size, dim=32, n_layers=2, n_heads=2, ffn_dim=64, max_len=32,
                            pad_id=tok.pad_id)
    torch.manual_seed(0)
    save_checkpoint(d / "mlm", MaskedLM(Transformer(cfg), tok.vocab_size, nsp=False),
                    config={"transformer": to_dict(cfg)}, files={"tokenizer": tok.to_dict()})
    return d


def _run(data, out, *extra) -> dict:
    assert cli.main(["finetune", "--train", str(data / "train.tsv"), "--test", str(data / "test.tsv"),
                     "--encoder", "transformer", "--pretrained", str(data / "mlm"), "--out", str(out), *TINY,
                     *extra]) == 0
    return json.loads((out / "results.json").read_text())


def _losses(out) -> list[float]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [r["loss"] for r in rows if "loss" in r]


def test_aux_lm_zero_trains_exactly_as_without_it(data, tmp_path, monkeypatch):
    _run(data, tmp_path / "zero", "--aux_lm=0")

    def never(*a, **k):
        raise AssertionError("the auxiliary LM code ran with aux_lm=0")

    monkeypatch.setattr(finetune, "attach_aux_lm", never)
    monkeypatch.setattr(finetune, "with_aux_lm", never)
    monkeypatch.setattr(finetune, "head_group", lambda model: model.head)  # the groups as before aux_lm existed
    _run(data, tmp_path / "before")
    a, b = (load_checkpoint(tmp_path / name / "last").weights for name in ("zero", "before"))
    assert a.keys() == b.keys() and not any(k.startswith("aux_lm.") for k in a)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert _losses(tmp_path / "zero") == _losses(tmp_path / "before")


def test_aux_lm_trains_an_lm_head_that_is_saved_and_reloaded(data, tmp_path):
    plain = _run(data, tmp_path / "plain")
    aux = _run(data, tmp_path / "aux", "--aux_lm=0.5")
    weights = load_checkpoint(aux["checkpoint"]).weights
    start = torch.zeros_like(weights["aux_lm.bias"])
    assert "aux_lm.transform.0.weight" in weights and not torch.equal(weights["aux_lm.bias"], start)  # it trained
    # the first step's loss holds half an LM loss over ~200 pieces (about ln(200) / 2 = 2.6 more)
    assert _losses(tmp_path / "aux")[0] > _losses(tmp_path / "plain")[0] + 2.0
    predictor = load_task_model(aux["checkpoint"])
    assert hasattr(predictor.model, "aux_lm")
    cfg = TaskDataConfig(task="", train=str(data / "test.tsv"))
    again = predict.evaluate(aux["checkpoint"], read_examples(cfg, "test", cfg.train), "test.tsv")
    assert again["accuracy"] == pytest.approx(aux["test_accuracy"]) and plain["steps"] == aux["steps"]
