import torch
from transferlab.tasks.classify import TaskModel
from transferlab.tasks.tag import IGNORE_INDEX, TokenTagger, position_labels, predict_tags, tag_loss

from helpers import overfit


def test_position_labels_ignore_non_first_pieces():
    assert position_labels(5, [1, 3], [7, 8]) == [IGNORE_INDEX, 7, IGNORE_INDEX, 8, IGNORE_INDEX]


def test_ignored_positions_add_nothing_to_the_loss(bag_encoder):
    torch.manual_seed(0)
    model = TaskModel(bag_encoder(), TokenTagger(16, 4, dropout=0.0))
    ids = torch.randint(1, 30, (2, 6))
    labels = torch.full((2, 6), IGNORE_INDEX)
    labels[0, 1], labels[1, 4] = 2, 3
    batch = {"ids": ids, "mask": torch.ones(2, 6, dtype=torch.bool), "labels": labels}
    logits = model(batch)
    expected = torch.nn.functional.cross_entropy(torch.stack([logits[0, 1], logits[1, 4]]), torch.tensor([2, 3]))
    assert torch.allclose(tag_loss(model, batch), expected)


def test_overfits_and_maps_predictions_back_to_words(bag_encoder):
    torch.manual_seed(0)
    model = TaskModel(bag_encoder(), TokenTagger(16, 3, dropout=0.0))
    ids = torch.arange(1, 21).view(4, 5)  # distinct tokens: a context-free encoder can fit them
    positions = [[0, 2, 3], [1, 2], [0], [0, 1, 2, 3, 4]]
    tags = [[i % 3 for i in range(len(p))] for p in positions]
    labels = torch.tensor([position_labels(5, p, t) for p, t in zip(positions, tags)])
    batch = {"ids": ids, "mask": torch.ones(4, 5, dtype=torch.bool), "labels": labels}
    overfit(model, lambda: tag_loss(model, batch), 100, lr=0.05)
    order = [2, 0, 3, 1]  # a length-sorted batch: rows in another order than the examples
    batches = [{"ids": ids[order], "mask": batch["mask"], "index": torch.tensor(order)}]
    n_words = [3, 3, 1, 5]  # example 1 had a word cut by truncation: it gets the fallback
    pred = predict_tags(model, batches, positions, n_words, fallback=9)
    assert pred[0] == tags[0] and pred[2] == tags[2] and pred[3] == tags[3]
    assert pred[1] == tags[1] + [9]
