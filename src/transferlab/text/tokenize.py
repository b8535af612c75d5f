"""Word-level tokenizers: whitespace split and a fast Penn-Treebank-style regex tokenizer.

:func:`word_tokenize` follows the conventions of the Penn Treebank tokenizer (Marcus, Santorini
and Marcinkiewicz 1993, "Building a Large Annotated Corpus of English: The Penn Treebank"), the
tokenization of PTB, SST-2, CoNLL-2003 and most corpora in the transfer learning literature:

- words, with internal hyphens, periods, slashes, ampersands and apostrophes kept
  (``well-made``, ``u.s.-soviet``, ``at&t``, ``o'brien``, ``1\\/2-year``);
- numbers with internal punctuation (``10,000``, ``3.14``, ``12:30``, ``24/7``);
- clitics split from their host: ``don't`` -> ``do n't``, ``it's`` -> ``it 's``,
  ``can't`` -> ``ca n't`` (PTB style), likewise ``'re 've 'm 'll 'd``;
- every other punctuation mark as its own token, runs such as ``...``, ``--``, ``''``, ``!?``
  kept together; ``<unk>``-style special tokens and PTB bracket escapes (``-lrb-``) whole.

A word followed by a period keeps the period only when it is an abbreviation: it contains an
internal period (``u.s.``, ``a.m.``), it is a single letter (an initial, ``j.``), or it is in
:data:`ABBREVIATIONS` (``mr.``, ``corp.``, ``calif.``); otherwise the period is a sentence end
and is split off (``end.`` -> ``end .``). On text that is already tokenized this way (PTB,
SST-2: lowercased, space-separated) the result equals ``text.split()``; a test checks every
line of both corpora.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

__all__ = ["ABBREVIATIONS", "TextConfig", "detokenize", "tokenizer", "whitespace_tokenize", "word_tokenize"]

#: Words that keep a following period (compared lowercased): titles, company suffixes, months,
#: US state abbreviations and Latin abbreviations, as in Moses' nonbreaking-prefix list.
ABBREVIATIONS = frozenset(
    """
    mr mrs ms messrs dr prof rev gen gov sen sens rep reps col capt lt sgt adm cmdr maj st sr jr
    mt ft hon pres supt insp det
    inc corp co cos ltd bros plc cie assn dept univ
    jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thurs fri sat sun
    ala ariz ark calif colo conn del fla ga ida ill ind kan kans ky la md mass mich minn miss mo
    mont neb nev okla ore pa penn tenn tex va vt wash wis wyo
    al etc vs viz cf approx no nos vol vols fig figs ed eds est
    """.split()
)

_CLITIC = r"['’](?:s|re|ve|m|ll|d)\b"
_CORE = r"(?:(?!n['’]t\b)[^\W_])+"  # letters and digits, stopping before a clitic "n't"
_CONNECTOR = (
    r"(?:\.-|\\/|[-./&]"  # u.s.-soviet, 1\/2, well-made, u.s, and/or, at&t
    r"|['’](?!(?:s|re|ve|m|ll|d)\b)"  # o'brien, d'arcy (but not it's)
    r"|(?<=\d)[,:](?=\d))"  # 10,000 12:30
)
_TOKEN_RE = re.compile(
    "|".join(
        [
            r"<[^\W\d_]+>",  # special tokens: <unk> <eos>
            r"-[lr][rcs]b-",  # PTB bracket escapes: -lrb- -rcb-
            r"['’](?:n['’]|n|til|tis|twas|em|cause|\d+s?)(?![\w'’])",  # 'n' 'til 'em '80s
            r"\bol['’](?![\w'’])",  # ol'
            r"n['’]t\b",  # n't split from its host
            _CLITIC,  # 's 're 've 'm 'll 'd
            # a word: core runs joined by connectors, then an optional period (decided below),
            # a trailing hyphen before a space (anti- and pro-), or a currency sign (hk$, us$)
            rf"{_CORE}(?:{_CONNECTOR}{_CORE})*(?:\.(?![^\W_])|-(?=\s|$)|(?<=[^\W\d_])\$)?",
            r"(?:\\[^\w\s])+",  # PTB-escaped symbols: \* \*\*
            r"\.{2,}|-{2,}|\*{2,}|={2,}|`+|['’]+|[!?]+",  # runs: ... -- *** `` '' !?
            r"[^\w\s]",  # any other symbol, alone
        ]
    ),
    re.IGNORECASE,
)


def whitespace_tokenize(text: str, lower: bool = False) -> list[str]:
    """Split on runs of whitespace (the tokenization of PTB and SST-2 as distributed)."""
    return (text.lower() if lower else text).split()


def _is_abbreviation(token: str) -> bool:
    """Whether a ``word.`` token keeps its period (see the module docstring)."""
    stem = token[:-1]
    if stem[-1].isalpha() and ("." in stem or len(stem) == 1):
        return True  # u.s. a.m. non-u.s. j.
    return stem.lower() in ABBREVIATIONS


def _split_periods(tokens: list[str]) -> list[str]:
    out: list[str] = []
    for tok in tokens:
        if len(tok) > 1 and tok[-1] == "." and tok[-2] != "." and not _is_abbreviation(tok):
            out.append(tok[:-1])
            out.append(".")
        else:
            out.append(tok)
    return out


def word_tokenize(text: str, lower: bool = False) -> list[str]:
    """Tokenize raw text into PTB-style word tokens (see the module docstring).

    ``lower`` lowercases the tokens after tokenization, so that case still tells words apart
    from clitics and abbreviations.

    >>> word_tokenize("Mr. Smith didn't pay $1,000.50 in the U.S. today.")
    ['Mr.', 'Smith', 'did', "n't", 'pay', '$', '1,000.50', 'in', 'the', 'U.S.', 'today', '.']
    """
    tokens = _TOKEN_RE.findall(text)
    if "." in text:
        tokens = _split_periods(tokens)
    if lower:
        tokens = [t.lower() for t in tokens]
    return tokens


@dataclass(frozen=True)
class TextConfig:
    tokenizer: Literal["word", "whitespace"] = "word"
    lower: bool = True


def tokenizer(cfg: TextConfig) -> Callable[[str], list[str]]:
    if cfg.tokenizer == "whitespace":
        if cfg.lower:
            return lambda text: whitespace_tokenize(text.lower())
        return whitespace_tokenize
    return lambda text: word_tokenize(text, lower=cfg.lower)


_NO_SPACE_BEFORE = re.compile(r" ([.,;:!?%)\]}]|n['’]t\b|" + _CLITIC + ")", re.IGNORECASE)
_NO_SPACE_AFTER = re.compile(r"([(\[{$]) ")


def detokenize(tokens: list[str]) -> str:
    """Words back to text, undoing what :func:`word_tokenize` split off: no space before closing
    punctuation or a clitic, none after an opening bracket or ``$`` (quotes stay spaced: which
    side a ``"`` belongs to is not in the tokens).

    >>> detokenize(["mr.", "smith", "did", "n't", "pay", "$", "1,000", "(", "today", ")", "."])
    "mr. smith didn't pay $1,000 (today)."
    """
    return _NO_SPACE_AFTER.sub(r"\1", _NO_SPACE_BEFORE.sub(r"\1", " ".join(tokens)))
