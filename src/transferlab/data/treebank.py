"""CoNLL-U in and out for a parser: each sentence's original lines, with a predicted tree written back.

:func:`sentence_lines` yields each sentence of a CoNLL-U file as its lines, comments,
multiword-token ranges (``1-2``) and empty nodes (``8.1``) included, one list per sentence of
:class:`~transferlab.data.conll.ConlluReader` (a block without words is skipped by both).
:func:`with_tree` puts predicted HEAD and DEPREL into columns 7 and 8 of the word lines and
leaves every other line and column as it was (DEPS, the enhanced graph, too: it still describes
the gold analysis). :func:`new_sentence` writes a sentence of plain words (raw text given to
``transferlab predict``) with only ID, FORM, HEAD and DEPREL filled.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from transferlab.data.lines import PathLike, check_file, iter_lines

__all__ = ["sentence_lines", "with_tree", "new_sentence"]


def _is_word(line: str) -> bool:
    """A syntactic word's line: an integer ID (not a comment, a range ``1-2`` or an empty node ``1.1``)."""
    return line.split("\t", 1)[0].isdigit()


def sentence_lines(path: PathLike) -> Iterator[list[str]]:
    """Each sentence's lines (without line endings), in file order; blocks without words skipped."""
    block: list[str] = []
    for _, line in iter_lines(check_file(path)):
        line = line.replace("\ufeff", "")  # byte-order marks, as ConlluReader drops them
        if line.strip():
            block.append(line)
            continue
        if any(_is_word(x) for x in block):
            yield block
        block = []
    if any(_is_word(x) for x in block):
        yield block


def with_tree(lines: Sequence[str], heads: Sequence[int], deprels: Sequence[str]) -> list[str]:
    """``lines`` with word k's HEAD and DEPREL (columns 7 and 8) set to ``heads[k-1]``, ``deprels[k-1]``."""
    out = []
    for line in lines:
        if not _is_word(line):
            out.append(line)
            continue
        fields = line.split("\t")
        k = int(fields[0])
        fields[6], fields[7] = str(heads[k - 1]), deprels[k - 1]
        out.append("\t".join(fields))
    return out


def new_sentence(words: Sequence[str], heads: Sequence[int], deprels: Sequence[str], text: str = "") -> list[str]:
    """A CoNLL-U sentence of ``words`` and their tree; the other columns are ``_``."""
    head = [f"# text = {text}"] if text else []
    return head + [f"{k}\t{w}\t_\t_\t_\t_\t{h}\t{r}\t_\t_"
                   for k, (w, h, r) in enumerate(zip(words, heads, deprels), start=1)]
