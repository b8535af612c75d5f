"""Chain-thaw (Felbo et al. 2017): the head alone, each layer group alone from the bottom up, then
all of them; the schedule as a pure function of the epoch, and a tiny ULMFiT run that follows it
exactly, each group entering the optimizer when it first thaws, and resumes; and the share of
parameters a run reports when gradual unfreezing reached only some groups."""

from __future__ import annotations

import json

import pytest
from torch import nn

from transferlab import cli
from transferlab.adapt.finetune import chain_thaw_schedule, chain_thaw_stages, thaw
from transferlab.recipes import finetune
from transferlab.recipes.ulmfit import ULMFiTConfig
from transferlab.tasks.loading import load_task_model


def test_the_schedule_is_head_then_each_group_from_the_bottom_then_all():
    # 3 encoder groups and the head (index 3), 2 epochs per stage
    order = [chain_thaw_schedule(e, 4, epochs_per_stage=2) for e in range(12)]
    assert order == [[3], [3], [0], [0], [1], [1], [2], [2], [0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3],
                     [0, 1, 2, 3]]
    assert chain_thaw_stages(4) == 5
    assert [chain_thaw_schedule(e, 2) for e in range(3)] == [[1], [0], [0, 1]]


def test_thaw_trains_exactly_the_named_groups():
    groups = [nn.Linear(2, 2) for _ in range(4)]
    thaw(groups, [1])
    assert [all(p.requires_grad for p in g.parameters()) for g in groups] == [False, True, False, False]
    assert not any(p.requires_grad for i in (0, 2, 3) for p in groups[i].parameters())
    groups[3].weight = groups[0].weight  # shared by a trained and a frozen group: it trains
    thaw(groups, [0])
    assert groups[3].weight.requires_grad and not groups[3].bias.requires_grad


def test_epochs_per_stage_are_validated_naming_the_flag():
    with pytest.raises(ValueError, match="ulmfit.chain_thaw_epochs"):
        ULMFiTConfig(chain_thaw_epochs=0)


WORDS = "good great fun loved fine bad awful boring dull waste the a movie film plot was it".split()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("chain_thaw")
    pos, neg = ["good great fun", "loved the movie", "a fine film"], ["bad awful plot", "boring dull", "a waste"]
    rows = [(t, "good") for t in pos] * 6 + [(t, "bad") for t in neg] * 6
    for name, part in (("train", rows), ("test", rows[::3])):
        (d / f"{name}.tsv").write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in part), encoding="utf-8")
    (d / "corpus.txt").write_text("\n".join(" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(9))
                                            for i in range(300)) + "\n", encoding="utf-8")
    assert cli.main(["pretrain", "lm", "--corpus", str(d / "corpus.txt"), "--preset", "tiny", "--out",
                     str(d / "lm"), "--data.valid_split=train", "--data.test_split=train",
                     "--train.progress=false"]) == 0
    return d


def test_a_tiny_ulmfit_run_follows_chain_thaw_exactly(files, monkeypatch):
    seen = []  # per epoch start: which groups (embedding, LSTM 1, LSTM 2, head) train, which the optimizer has

    real = finetune.chain_thawing

    def recording(groups, pgroups, epochs_per_stage):
        hook = real(groups, pgroups, epochs_per_stage)

        def on_epoch_start(epoch, trainer):
            hook(epoch, trainer)
            seen.append(([all(p.requires_grad for p in g.parameters()) for g in groups],
                         [g["name"] for g in trainer.optimizer.param_groups]))
        return on_epoch_start

    monkeypatch.setattr(finetune, "chain_thawing", recording)
    out = files / "clf"
    args = ["finetune", "--train", str(files / "train.tsv"), "--test", str(files / "test.tsv"), "--preset", "tiny",
            "--encoder", "awd_lstm", "--pretrained", str(files / "lm" / "last"), "--lm_finetune.enabled=false",
            "--ulmfit.chain_thaw=true", "--ulmfit.chain_thaw_epochs=1", "--train.progress=false", "--out", str(out)]
    assert cli.main(args) == 0
    summary = json.loads((out / "results.json").read_text())
    F, T = False, True
    assert [s[0] for s in seen] == [[F, F, F, T], [T, F, F, F], [F, T, F, F], [F, F, T, F], [T, T, T, T]]
    assert [s[1] for s in seen] == [["head"], ["head", "group0"], ["head", "group0", "group1"],
                                    ["head", "group0", "group1", "group2"], ["head", "group0", "group1", "group2"]]
    steps_per_epoch = summary["steps"] // 5
    assert summary["steps"] == 5 * steps_per_epoch > 0  # 5 stages of 1 epoch, whatever train.epochs said
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert sorted({r["epoch"] for r in rows if "eval/valid_accuracy" in r}) == [0, 1, 2, 3, 4]

    # the same command resumes the finished run: the replayed epochs rebuild the optimizer's groups
    # in order (else its saved state would not load) and nothing more trains
    seen.clear()
    assert cli.main(args) == 0
    assert [s[1] for s in seen][-1] == ["head", "group0", "group1", "group2"] and len(seen) == 5
    assert json.loads((out / "results.json").read_text())["steps"] == summary["steps"]


def test_chain_thaw_is_refused_where_nothing_is_pretrained(files, tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["finetune", "--train", str(files / "train.tsv"), "--preset", "tiny", "--encoder", "awd_lstm",
                  "--ulmfit.chain_thaw=true", "--train.progress=false", "--out", str(tmp_path / "x")])
    assert e.value.code == 1 and "ulmfit.chain_thaw" in capsys.readouterr().err


def test_the_trained_share_counts_only_the_groups_gradual_unfreezing_reached(files):
    # one epoch of gradual unfreezing trains the head alone: the summary's share says so, not 100%;
    # and the model loads again, though its vocabulary (the task's) is not the LM's: the LM stage is off,
    # so nothing but retarget_vocab tells the encoder's config (encoder.json) the new size
    out = files / "gradual"
    assert cli.main(["finetune", "--train", str(files / "train.tsv"), "--test", str(files / "test.tsv"), "--preset",
                     "tiny", "--encoder", "awd_lstm", "--pretrained", str(files / "lm" / "last"),
                     "--lm_finetune.enabled=false", "--ulmfit.gradual_unfreeze=true", "--train.epochs=1",
                     "--train.progress=false", "--out", str(out)]) == 0
    summary = json.loads((out / "results.json").read_text())
    model = load_task_model(out / "last").model
    assert summary["trainable_params"] == sum(p.numel() for p in model.head.parameters())
    assert summary["total_params"] == sum(p.numel() for p in model.parameters()) > summary["trainable_params"]
