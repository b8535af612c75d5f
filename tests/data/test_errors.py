"""DataError names the file, the 1-based line and the field; CatalogError carries a message."""

import pickle

import pytest

from transferlab.data.errors import CatalogError, DataError


def test_message_names_file_line_and_field():
    e = DataError("data/train.tsv", 17, "label", "missing value")
    assert str(e) == "data/train.tsv, line 17, field 'label': missing value"
    assert (e.path, e.line, e.field, e.problem) == ("data/train.tsv", 17, "label", "missing value")


def test_index_field_and_missing_parts():
    assert str(DataError("a.tsv", None, 3, "bad")) == "a.tsv, column 3: bad"
    assert str(DataError(None, None, None, "bad")) == "bad"


def test_is_a_value_error_and_survives_pickling():
    # DataLoader workers send exceptions back to the main process by pickling them.
    e = pickle.loads(pickle.dumps(DataError("x.tsv", 2, "text", "empty text")))
    assert isinstance(e, ValueError) and str(e) == "x.tsv, line 2, field 'text': empty text"
    c = pickle.loads(pickle.dumps(CatalogError("nowhere")))
    assert isinstance(c, DataError) and str(c) == "nowhere"
    with pytest.raises(ValueError):
        raise c
