"""The examples every reader yields and every task consumes: frozen dataclasses of strings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TextExample:
    text: str
    label: str | None = None


@dataclass(frozen=True)
class PairExample:
    text_a: str
    text_b: str
    label: str | None = None


@dataclass(frozen=True)
class TaggedSentence:
    tokens: tuple[str, ...]
    tags: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    text: str
    start: int  # character offset into the context


@dataclass(frozen=True)
class QAExample:
    id: str
    question: str
    context: str
    answers: tuple[Answer, ...] = ()
    is_impossible: bool = False
    title: str = ""


@dataclass(frozen=True)
class ParsedSentence:
    """One CoNLL-U sentence: words (multiword ranges and empty nodes left out) and their tree.

    ``heads[i]`` is the 1-based index of word i's head, 0 for the root (the CoNLL-U convention).
    """

    tokens: tuple[str, ...]
    lemmas: tuple[str, ...]
    upos: tuple[str, ...]
    xpos: tuple[str, ...]
    heads: tuple[int, ...]
    deprels: tuple[str, ...]
    text: str = ""
    sent_id: str = ""

    def tagged(self, tags: str = "upos") -> TaggedSentence:
        """This sentence as a TaggedSentence, with ``tags`` one of upos, xpos, deprels, lemmas."""
        if tags not in ("upos", "xpos", "deprels", "lemmas"):
            raise ValueError(f"tags must be 'upos', 'xpos', 'deprels' or 'lemmas', not {tags!r}")
        return TaggedSentence(self.tokens, getattr(self, tags))


@dataclass(frozen=True)
class Analogy:
    """A word-analogy question: ``a`` is to ``b`` as ``c`` is to ``d`` (Mikolov et al. 2013)."""

    a: str
    b: str
    c: str
    d: str
    section: str = ""
