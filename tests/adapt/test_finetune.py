import torch
from torch import nn

from transferlab.adapt.finetune import freeze_to, param_groups, transfer_embeddings, unfreeze_schedule


def _groups():
    return [nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2)]


def test_discriminative_learning_rates_divide_by_decay_going_down():
    groups = _groups()
    head = nn.Linear(2, 1)
    pg = param_groups(groups, lr=0.01, decay=2.6, head=head)
    assert [g["name"] for g in pg] == ["group0", "group1", "group2", "head"]
    for depth, g in enumerate(reversed(pg)):
        assert abs(g["lr"] - 0.01 / 2.6**depth) < 1e-12
    assert pg[-1]["params"] == list(head.parameters())


def test_shared_parameters_are_kept_once():
    emb = nn.Embedding(5, 3)
    dec = nn.Linear(3, 5)
    dec.weight = emb.weight
    pg = param_groups([emb], lr=1.0, head=dec)
    ids = [id(p) for g in pg for p in g["params"]]
    assert len(ids) == len(set(ids)) == 2  # embedding weight + decoder bias


def test_freeze_to_and_the_unfreezing_schedule():
    groups = _groups()
    freeze_to(groups, 1)
    assert [all(p.requires_grad for p in g.parameters()) for g in groups] == [False, False, True]
    freeze_to(groups, 5)
    assert all(p.requires_grad for g in groups for p in g.parameters())
    assert [unfreeze_schedule(e, 4) for e in range(6)] == [1, 2, 3, 4, 4, 4]
    assert unfreeze_schedule(0, 4, enabled=False) == 4


def test_vocabulary_transfer_keeps_known_rows_and_means_new_ones():
    old = torch.arange(12, dtype=torch.float).view(4, 3)
    new, n_new = transfer_embeddings(old, ["<pad>", "a", "b", "c"], ["<pad>", "c", "zzz", "a"])
    assert n_new == 1
    assert torch.equal(new[1], old[3]) and torch.equal(new[3], old[1]) and torch.equal(new[0], old[0])
    assert torch.allclose(new[2], old.mean(0))
