"""Task data: a labeled task from a catalog name or the user's files, split and subset."""

import pytest

from transferlab.config import ConfigError, from_dict, to_dict
from transferlab.data.tasks import TaskDataConfig, load_task


def test_valid_size_scores_a_fixed_subset_of_validation(shared_data):
    full = load_task(TaskDataConfig(task="sst2", train_size=10))
    cut = load_task(TaskDataConfig(task="sst2", train_size=10, valid_size=100))
    assert len(cut["valid"]) == 100 and len(full["valid"]) > 100 and cut["test"] == full["test"]
    assert set(map(str, cut["valid"])) <= set(map(str, full["valid"]))
    assert cut["valid"] == load_task(TaskDataConfig(task="sst2", train_size=10, valid_size=100))["valid"]


def test_max_len_has_one_spelling_of_no_limit():
    assert TaskDataConfig().max_len is None and TaskDataConfig(max_len=0).max_len is None  # 0: TOML's "none"
    assert TaskDataConfig(max_len=60).max_len == 60
    assert from_dict(TaskDataConfig, to_dict(TaskDataConfig())).max_len is None  # JSON null round trip
    with pytest.raises(ValueError, match="data.max_len"):
        TaskDataConfig(max_len=-1)
    with pytest.raises(ConfigError, match="max_len"):
        from_dict(TaskDataConfig, {"max_len": "long"}, "data.")


def test_a_conll_file_of_your_own_with_named_columns(tmp_path):
    from transferlab.data.errors import DataError
    from transferlab.data.tasks import TaskDataConfig, read_examples

    text = "John B-PER\nvisited O\nParis B-LOC\n\nMary B-PER\n"
    for name in ("my.conll", "my.txt"):  # CoNLL-2003 itself ships as .txt
        (tmp_path / name).write_text(text)
        cfg = TaskDataConfig(task="", train=str(tmp_path / name), tags="ner", columns="word,ner")
        sentences = read_examples(cfg, "train", cfg.train)
        assert [s.tags for s in sentences] == [("B-PER", "O", "B-LOC"), ("B-PER",)]
    with pytest.raises(DataError, match="name them with --columns word,pos,ner .* or give the column's 0-based index"):
        read_examples(TaskDataConfig(task="", train=str(tmp_path / "my.conll"), tags="ner"), "train",
                      str(tmp_path / "my.conll"))
    by_index = TaskDataConfig(task="", train=str(tmp_path / "my.conll"), tags="1")
    assert read_examples(by_index, "train", by_index.train)[0].tokens == ("John", "visited", "Paris")
