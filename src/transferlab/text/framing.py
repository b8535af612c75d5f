"""Input transformations: one text, a pair of texts or a list of words -> one token-id sequence.

Each model family frames its input its own way, and a task head reads the position that framing
puts the summary in:

- BERT (Devlin et al. 2019): ``[CLS] a [SEP] b [SEP]``, segment (type) ids 0 for the first part
  and 1 for the second; the head reads ``[CLS]``.
- GPT (Radford et al. 2018, figure 1): ``start a delim b extract``; the head reads the extract
  token (the last one). For similarity, where the two texts have no order, both orders are
  encoded and their extract representations summed (:meth:`Framing.pair` with ``swap``); for
  multiple choice, one sequence per option (:meth:`Framing.choices`), scored and soft-maxed across
  the options by the head.
- A word-level LSTM (ULMFiT): the words, with an end-of-sentence token between two texts; its
  concat-pooling head reads the whole sequence.

Truncation rule, stated once: a sequence longer than ``max_len`` (specials included) is cut at
the end; a pair is cut longest-first (one token off the longer text at a time, as Hugging Face's
``longest_first``), so the shorter text survives whole when it can. Callers count how many
sequences were cut and say so in the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Framing", "Encoded", "truncate_pair"]


@dataclass(frozen=True)
class Encoded:
    ids: list[int]
    type_ids: list[int]
    truncated: bool = False
    word_positions: list[int] | None = None  # for words: where each kept word's first piece is


def truncate_pair(a: list[int], b: list[int], budget: int) -> tuple[list[int], list[int]]:
    """Cut the longer of ``a`` and ``b`` one token at a time until ``len(a) + len(b) <= budget``."""
    n_a, n_b = len(a), len(b)
    while n_a + n_b > budget:
        if n_a >= n_b:
            n_a -= 1
        else:
            n_b -= 1
    return a[:n_a], b[:n_b]


@dataclass(frozen=True)
class Framing:
    """Where the special tokens go: ``start a delim b end``; None leaves a special out."""

    start: int | None = None
    delim: int | None = None  # between the two texts of a pair
    end: int | None = None  # after the last text: GPT's extract token, BERT's final [SEP]
    segments: bool = False  # type id 1 for the second text and what follows it (BERT)
    max_len: int | None = None  # the model's limit, specials included; None = no limit

    @staticmethod
    def bert(cls_id: int, sep_id: int, max_len: int | None) -> Framing:
        return Framing(start=cls_id, delim=sep_id, end=sep_id, segments=True, max_len=max_len)

    @staticmethod
    def gpt(start_id: int, delim_id: int, extract_id: int, max_len: int | None) -> Framing:
        return Framing(start=start_id, delim=delim_id, end=extract_id, segments=False, max_len=max_len)

    def _specials(self, pair: bool) -> tuple[list[int], list[int], list[int]]:
        head = [self.start] if self.start is not None else []
        mid = [self.delim] if pair and self.delim is not None else []
        tail = [self.end] if self.end is not None else []
        return head, mid, tail

    def single(self, a: Sequence[int]) -> Encoded:
        head, _, tail = self._specials(False)
        budget = None if self.max_len is None else self.max_len - len(head) - len(tail)
        cut = budget is not None and len(a) > budget
        ids = head + list(a[:budget] if cut else a) + tail
        return Encoded(ids, [0] * len(ids), cut)

    def pair(self, a: Sequence[int], b: Sequence[int], swap: bool = False) -> Encoded:
        """``a`` then ``b`` (``b`` then ``a`` with ``swap``), truncated longest-first."""
        head, mid, tail = self._specials(True)
        a, b = list(a), list(b)
        cut = False
        if self.max_len is not None:
            budget = self.max_len - len(head) - len(mid) - len(tail)
            cut = len(a) + len(b) > budget
            a, b = truncate_pair(a, b, max(budget, 0))
        if swap:
            a, b = b, a
        first = head + a + mid
        second = b + tail
        types = [0] * len(first) + [1 if self.segments else 0] * len(second)
        return Encoded(first + second, types, cut)

    def choices(self, context: Sequence[int], options: Sequence[Sequence[int]]) -> list[Encoded]:
        """GPT's multiple choice: ``start context delim option extract`` for each option."""
        return [self.pair(context, option) for option in options]

    def words(self, pieces: Sequence[int], first_piece: Sequence[int]) -> Encoded:
        """A word-tokenized sentence as subword ``pieces`` with each word's ``first_piece`` index:
        framed as :meth:`single`; ``word_positions`` keeps the words whose first piece survived
        truncation (a prefix of the words), shifted past the start token."""
        enc = self.single(pieces)
        offset = 1 if self.start is not None else 0
        kept = len(enc.ids) - offset - (1 if self.end is not None else 0)
        positions = [p + offset for p in first_piece if p < kept]
        return Encoded(enc.ids, enc.type_ids, enc.truncated or len(positions) < len(first_piece), positions)
