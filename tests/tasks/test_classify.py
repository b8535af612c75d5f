import torch

from transferlab.tasks.classify import ClassifierHeadConfig, PoolingClassifier, TaskModel, classify_loss, pool

from helpers import overfit


def test_concat_pooling_reads_only_real_tokens():
    hidden = torch.tensor([[[1.0], [5.0], [100.0]], [[2.0], [-3.0], [4.0]]])  # (B=2,T=3,D=1)
    mask = torch.tensor([[True, True, False], [True, True, True]])
    out = pool(hidden, mask, "concat")  # [last, max, mean]
    assert out.tolist() == [[5.0, 5.0, 3.0], [4.0, 4.0, 1.0]]


def test_head_overfits_one_batch(bag_encoder):
    torch.manual_seed(0)
    model = TaskModel(bag_encoder(20, 8), PoolingClassifier(8, 3, ClassifierHeadConfig(input_p=0.0, hidden_p=0.0)))
    batch = {"ids": torch.randint(1, 20, (12, 5)), "mask": torch.ones(12, 5, dtype=torch.bool),
             "labels": torch.arange(12) % 3}
    first, last = overfit(model, lambda: classify_loss(model, batch), 150, lr=1e-2)
    assert last < 0.05 * first
