"""A table row with more fields than the header (or the first row) is an error naming the file,
line, column and counts, like a row with too few (issue 24); extra columns are ignored only
when asked, and the catalog's STS-B (rows with extra source columns) still reads."""

from __future__ import annotations

import pytest

from transferlab.data.catalog import load_examples
from transferlab.data.errors import DataError
from transferlab.data.readers import TableReader, read_text_examples
from transferlab.data.tasks import TaskDataConfig, load_task, read_examples


def test_a_row_with_more_fields_than_the_header_is_named(tmp_path):
    path = tmp_path / "my.tsv"
    path.write_text("review\tstars\ngreat\tgood\ngreat\tfun\tgood\n", encoding="utf-8")
    with pytest.raises(DataError) as e:
        list(read_text_examples(path, "review", "stars"))
    assert e.value.line == 3 and e.value.field == 2
    assert str(e.value).startswith(f"{path}, line 3, column 2: expected 2 columns (as the header on line 1), found 3")
    assert "data.extra_columns=ignore" in str(e.value)


def test_csv_and_headerless_files_count_against_the_first_row(tmp_path):
    csv_path = tmp_path / "my.csv"
    csv_path.write_text('text,label\n"a, quoted text",pos\nan unquoted, text,neg\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"line 3, column 2: expected 2 columns .* found 3"):
        list(read_text_examples(csv_path, "text", "label"))
    bare = tmp_path / "bare.tsv"
    bare.write_text("fine\tpos\nfine\tsad\tneg\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"line 2, column 2: expected 2 columns \(as line 1, the first row\)"):
        list(TableReader(bare, {"text": 0, "label": 1}))


def test_extra_columns_are_ignored_only_when_asked(tmp_path):
    path = tmp_path / "my.tsv"
    path.write_text("review\tstars\ngreat\tgood\ngreat\tfun\tgood\ndull\tbad\t\n", encoding="utf-8")
    cfg = TaskDataConfig(task="", train=str(path), text_col="review", label_col="stars", extra_columns="ignore")
    assert [ex.label for ex in read_examples(cfg, "train", str(path))] == ["good", "fun", "bad"]
    trailing = tmp_path / "trailing.tsv"  # a trailing tab shifts nothing: accepted
    trailing.write_text("review\tstars\ngreat\tgood\t\n", encoding="utf-8")
    assert [ex.label for ex in read_text_examples(trailing, "review", "stars")] == ["good"]


def test_stsb_rows_with_extra_source_columns_still_read(shared_data):
    assert sum(1 for _ in load_examples("stsb", "dev")) == 1500


def test_an_empty_or_header_only_file_names_the_file(tmp_path):
    for text in ("", "review\tstars\n"):
        path = tmp_path / "empty.tsv"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(DataError, match=f"{path}: no examples"):
            load_task(TaskDataConfig(train=str(path), text_col="review", label_col="stars"))


def test_train_alone_holds_out_a_test_part_apart_from_valid(tmp_path):
    path = tmp_path / "my.tsv"
    path.write_text("review\tstars\n" + "".join(f"text {i}\t{'ab'[i % 2]}\n" for i in range(50)), encoding="utf-8")
    data = load_task(TaskDataConfig(train=str(path), text_col="review", label_col="stars"))
    texts = {split: {ex.text for ex in data[split]} for split in data}
    assert len(texts["valid"]) == len(texts["test"]) == 5 and len(texts["train"]) == 40
    assert not texts["valid"] & texts["test"] and not (texts["valid"] | texts["test"]) & texts["train"]
    # a validation file given, no test: it stands in for test as before (said in the log)
    valid = tmp_path / "valid.tsv"
    valid.write_text("review\tstars\nother\ta\n", encoding="utf-8")
    data = load_task(TaskDataConfig(train=str(path), valid=str(valid), text_col="review", label_col="stars"))
    assert data["test"] == data["valid"] and len(data["train"]) == 50
