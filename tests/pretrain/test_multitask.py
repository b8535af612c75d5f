"""GenSen's multi-task objective: the task mixture samples tasks in proportion to size ** alpha,
deterministically per (seed, epoch), each task reading its own epochs in order; a batch's loss is
its head's own loss (InferSent's for NLI); the held-out scores; one batch of each task overfitted."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch
import torch.nn.functional as F

from transferlab import IGNORE_INDEX
from transferlab.config import ConfigError
from transferlab.encoders.sentence_rnn import SentenceRNN, SentenceRNNConfig
from transferlab.pretrain.multitask import (SELECT, TASKS, GenSen, GenSenConfig, TaskMixture, gensen_loss,
                                            gensen_scores, task_probabilities)
from transferlab.pretrain.nli import InferSent, NLIConfig, nli_loss
from transferlab.pretrain.paraphrase import PairBatches
from transferlab.pretrain.sentences import decoder_rows

V, V_DE, C, PAD, BOS, EOS = 30, 20, 3, 0, 2, 3


# --- the mixture -----------------------------------------------------------------------------------

class _Fake:
    """A task's batches of one epoch: ``n`` batches, each naming (task, epoch, position)."""

    def __init__(self, name: str, n: int, epoch: int) -> None:
        self.name, self.n, self.epoch = name, n, epoch

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        yield from ({"ids": torch.zeros(1, 1, dtype=torch.long), "at": (self.name, self.epoch, i)}
                    for i in range(self.n))


def _mixture(lengths: dict[str, int], sizes: dict[str, int], alpha: float, epoch: int = 0, seed: int = 0,
             steps: int = 0) -> TaskMixture:
    tasks = {t: (lambda e, t=t: _Fake(t, lengths[t], e)) for t in lengths}
    return TaskMixture(tasks, sizes, alpha, steps=steps, seed=seed, epoch=epoch)


def test_probabilities_are_sizes_to_the_power_alpha():
    sizes = {"a": 900, "b": 100}
    assert task_probabilities(sizes, 1.0) == pytest.approx({"a": 0.9, "b": 0.1})
    assert task_probabilities(sizes, 0.0) == pytest.approx({"a": 0.5, "b": 0.5})
    assert task_probabilities(sizes, 0.5) == pytest.approx({"a": 30 / 40, "b": 10 / 40})
    with pytest.raises(ValueError, match="training examples"):
        task_probabilities({"a": 10, "b": 0}, 1.0)


@pytest.mark.parametrize("alpha", [1.0, 0.5, 0.0])
def test_task_frequencies_follow_the_probabilities(alpha):
    sizes = {"next": 6000, "mt": 3000, "nli": 1000}
    mix = _mixture({"next": 50, "mt": 30, "nli": 7}, sizes, alpha, steps=6000)
    counts = Counter(b["task"] for b in mix)
    assert len(mix) == sum(counts.values()) == 6000
    for task, p in task_probabilities(sizes, alpha).items():
        assert counts[task] / 6000 == pytest.approx(p, abs=0.025)  # ~4 standard errors


def test_draws_are_a_function_of_seed_and_epoch():
    lengths = sizes = {"next": 5, "mt": 3, "nli": 2}
    run = lambda **kw: [b["at"] for b in _mixture(lengths, sizes, 1.0, **kw)]  # noqa: E731
    assert run(epoch=1, seed=3) == run(epoch=1, seed=3)
    assert run(epoch=1, seed=3) != run(epoch=2, seed=3) and run(epoch=1, seed=3) != run(epoch=1, seed=4)
    assert len(_mixture(lengths, sizes, 1.0)) == 10  # an epoch: every task's batches together


def test_each_task_reads_its_epochs_one_after_another_across_mixture_epochs():
    lengths, sizes = {"next": 4, "mt": 3, "nli": 2}, {"next": 1, "mt": 1, "nli": 1}
    seen = {t: [] for t in lengths}
    for epoch in range(5):  # every mixture epoch built afresh, as fit (or a resumed fit) builds it
        for b in _mixture(lengths, sizes, 0.0, epoch=epoch, seed=7):
            assert b["at"][0] == b["task"]
            seen[b["task"]].append(b["at"])
    for t, n in lengths.items():  # no batch skipped or repeated: epoch 0, 1, ... of the task in order
        assert seen[t] == [(t, e, i) for e in range(len(seen[t]) // n + 1) for i in range(n)][: len(seen[t])]
        assert len(seen[t]) > n  # the small tasks wrapped into their next epoch


# --- the model -------------------------------------------------------------------------------------

def _model(seed: int = 0) -> GenSen:
    torch.manual_seed(seed)
    encoder = SentenceRNN(SentenceRNNConfig(vocab_size=V, dim=8, hidden_dim=6, bidirectional=True))
    return GenSen.build(encoder, GenSenConfig(decoder_dim=10, mt_embed_dim=5, nli_hidden_dim=16), V_DE, PAD, C)


def _rows(g: torch.Generator, B: int, high: int) -> list[list[int]]:
    return [torch.randint(4, high, (int(n),), generator=g).tolist() for n in torch.randint(2, 7, (B,), generator=g)]


def _batch(task: str, seed: int = 0, B: int = 4) -> dict:
    g = torch.Generator().manual_seed(seed)
    a = _rows(g, B, V)
    if task == "nli":
        batch = next(iter(PairBatches(a, _rows(g, B, V), B, labels=[i % C for i in range(B)], shuffle=False)))
        return batch | {"task": task}
    width = max(map(len, a))
    ids = torch.tensor([r + [PAD] * (width - len(r)) for r in a])
    tgt_in, labels = decoder_rows(_rows(g, B, V if task == "next" else V_DE), BOS, EOS, PAD)
    return {"task": task, "ids": ids, "mask": ids.ne(PAD), "tgt_in": tgt_in, "labels": labels}


@pytest.mark.parametrize("task", ["next", "mt"])
def test_a_decoding_batch_loss_is_its_decoders_cross_entropy(task):
    model, batch = _model(), _batch(task)
    loss = gensen_loss(model, batch)
    head = model.heads[task]
    with torch.no_grad():
        h = model.encoder.sentence(batch["ids"], batch["mask"])  # (B, 2 * 6): last states of both directions
        logits = head.logits(h, batch["tgt_in"])  # (B, T, V) at every position
    assert h.shape == (4, 12)
    want = F.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(), ignore_index=IGNORE_INDEX)
    assert torch.allclose(loss, want, atol=1e-5)
    assert logits.size(-1) == (V if task == "next" else V_DE)
    loss.backward()  # only this task's head (and the encoder) get gradients
    other = model.heads["mt" if task == "next" else "next"]
    assert all(p.grad is None for n, p in other.named_parameters() if not n.startswith("embedding"))
    assert model.heads["nli"].classifier[1].weight.grad is None


def test_the_next_sentence_decoder_reads_the_encoders_embeddings_the_translation_decoder_its_own():
    model = _model()
    assert model.heads["next"].embedding is model.encoder.embedding[0]
    assert model.heads["mt"].embedding.weight.shape == (V_DE, 5)
    names = {n for n, _ in model.named_parameters()}  # the shared table is one parameter
    assert "encoder.embedding.0.weight" in names and "heads.next.embedding.weight" not in names


def test_an_nli_batch_loss_is_infersents():
    model, batch = _model(), _batch("nli")
    infersent = InferSent(model.encoder, C, NLIConfig(hidden_dim=16))
    infersent.classifier.load_state_dict(model.heads["nli"].classifier.state_dict())  # the same layers
    assert torch.allclose(gensen_loss(model, batch), nli_loss(infersent, batch), atol=1e-6)


def test_an_unknown_task_is_named():
    with pytest.raises(ValueError, match="'parse'"):
        _model()(_batch("mt") | {"task": "parse"})


def test_held_out_scores_and_the_selection_figure():
    model = _model()
    held = {t: [{k: v for k, v in _batch(t, seed=s).items() if k != "task"} for s in (1, 2)] for t in TASKS}
    scores = gensen_scores(model, held)
    assert model.training  # evaluated in eval mode, the mode restored
    for t in ("next", "mt"):
        assert scores[f"{t}_ppl"] == pytest.approx(math.exp(scores[f"{t}_loss"]))
    assert 0.0 <= scores["nli_accuracy"] <= 1.0
    chance = {"next": math.log(V), "mt": math.log(V_DE), "nli": math.log(C)}
    assert scores[SELECT] == pytest.approx(sum(scores[f"{t}_loss"] / chance[t] for t in TASKS) / 3)
    assert 0.8 < scores[SELECT] < 1.2  # untrained: about a uniform guess


def test_overfits_one_batch_of_each_task():
    model = _model()
    batches = [_batch(t, seed=3, B=3) for t in TASKS]
    opt = torch.optim.Adam(model.parameters(), lr=3e-2)
    for _ in range(60):
        for batch in batches:
            opt.zero_grad()
            gensen_loss(model, batch).backward()
            opt.step()
    with torch.no_grad():
        model.eval()
        assert all(gensen_loss(model, b).item() < 0.1 for b in batches)


def test_config_names_the_flag():
    with pytest.raises(ConfigError, match="objective.alpha"):
        GenSenConfig(alpha=-0.5)
    with pytest.raises(ConfigError, match="objective.mt_decoder_dim"):
        GenSenConfig(mt_decoder_dim=-1)
