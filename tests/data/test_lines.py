"""Line reading: BOM, CRLF, no final newline, control characters, invalid UTF-8, restart."""

import pytest

from transferlab.data.errors import DataError
from transferlab.data.lines import Stream, chain_streams, decode_whole, iter_lines


def test_bom_crlf_and_missing_final_newline(write):
    path = write("a.txt", b"\xef\xbb\xbfone\r\ntwo  \r\nthree")
    assert list(iter_lines(path)) == [(1, "one"), (2, "two  "), (3, "three")]


def test_only_newline_ends_a_line(write):
    # U+2028, U+001C and a lone CR are field content here, not line breaks (str.splitlines disagrees).
    path = write("a.txt", "a\u2028b\x1cc\rd\x02e\nnext\n")
    assert [t for _, t in iter_lines(path)] == ["a\u2028b\x1cc\rd\x02e", "next"]


def test_invalid_utf8_names_the_line(write):
    path = write("bad.txt", b"fine\nstill fine\nbroken \xff here\n")
    with pytest.raises(DataError) as info:
        list(iter_lines(path))
    assert info.value.line == 3 and str(path) in str(info.value) and "UTF-8" in str(info.value)


def test_decode_whole_names_the_line(write):
    path = write("bad.json", b'{\n"a":\n"\xc3("}\n')
    with pytest.raises(DataError) as info:
        decode_whole(path)
    assert info.value.line == 3


def test_stream_restarts_and_chains():
    s = Stream(range, 3)
    assert list(s) == list(s) == [0, 1, 2]
    both = chain_streams([s, Stream(range, 2)])
    assert list(both) == list(both) == [0, 1, 2, 0, 1]
