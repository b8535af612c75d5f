"""Task data: a labeled task from a catalog name or the user's files, split and subset."""

from transferlab.data.tasks import TaskDataConfig, load_task


def test_valid_size_scores_a_fixed_subset_of_validation(shared_data):
    full = load_task(TaskDataConfig(task="sst2", train_size=10))
    cut = load_task(TaskDataConfig(task="sst2", train_size=10, valid_size=100))
    assert len(cut["valid"]) == 100 and len(full["valid"]) > 100 and cut["test"] == full["test"]
    assert set(map(str, cut["valid"])) <= set(map(str, full["valid"]))
    assert cut["valid"] == load_task(TaskDataConfig(task="sst2", train_size=10, valid_size=100))["valid"]
