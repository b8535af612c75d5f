"""Word-level vocabulary: the closed vocabulary of count-based LMs (Mikolov et al. 2010) and ULMFiT.

Ids are fixed for the four specials: ``<pad>`` = 0, ``<unk>`` = 1, ``<bos>`` = 2, ``<eos>`` = 3,
then words by frequency, most frequent first. Ties are broken by first occurrence in the
corpus (``Counter`` keeps insertion order and the sort is stable), so building twice from the
same stream gives the same ids. A literal special in the data (PTB already has ``<unk>``) is
the special itself: it is never counted as a word and encodes to the special's id.

A vocabulary is saved as JSON: ``{"itos": [...], "specials": {"pad": "<pad>", ...},
"min_freq": 1, "max_size": null}``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["PAD", "UNK", "BOS", "EOS", "SPECIALS", "Vocab"]

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS: tuple[str, ...] = (PAD, UNK, BOS, EOS)
_ROLES = ("pad", "unk", "bos", "eos")


class Vocab:
    """A token <-> id mapping with the specials first (see the module docstring)."""

    pad_id, unk_id, bos_id, eos_id = 0, 1, 2, 3

    def __init__(
        self, itos: Sequence[str], min_freq: int = 1, max_size: int | None = None
    ) -> None:
        itos = list(itos)
        if tuple(itos[: len(SPECIALS)]) != SPECIALS:
            raise ValueError(
                f"Vocab.itos must start with the specials {list(SPECIALS)}, got {itos[:4]}"
            )
        stoi = {tok: i for i, tok in enumerate(itos)}
        if len(stoi) != len(itos):
            dupes = sorted(t for t, c in Counter(itos).items() if c > 1)[:5]
            raise ValueError(f"Vocab.itos has duplicate tokens: {dupes}")
        self.itos: list[str] = itos
        self.stoi: dict[str, int] = stoi
        self.min_freq = min_freq
        self.max_size = max_size

    @classmethod
    def build(
        cls,
        token_lists: Iterable[Iterable[str]],
        min_freq: int = 1,
        max_size: int | None = None,
        counts: dict[str, int] | None = None,
    ) -> Vocab:
        """Count tokens in one streaming pass; keep words seen ``min_freq`` times or more.

        ``max_size`` caps the number of words, specials not included (the most frequent are
        kept). ``counts`` (word -> count, in first-occurrence order) adds counts made elsewhere.
        Raises ValueError when no word reaches ``min_freq``.
        """
        if min_freq < 1:
            raise ValueError(f"Vocab.build: min_freq must be >= 1, got {min_freq}")
        if max_size is not None and max_size < 1:
            raise ValueError(f"Vocab.build: max_size must be >= 1 or None, got {max_size}")
        counts = Counter(counts or {})
        for tokens in token_lists:
            counts.update(tokens)
        for special in SPECIALS:
            counts.pop(special, None)
        # sorted() is stable: equal counts stay in first-occurrence order
        words = [w for w, c in sorted(counts.items(), key=lambda wc: -wc[1]) if c >= min_freq]
        if not words:
            most = max(counts.values(), default=0)
            raise ValueError(
                f"Vocab.build: no word occurs min_freq={min_freq} times "
                f"({len(counts)} distinct words, the most frequent occurs {most} times)"
            )
        return cls(list(SPECIALS) + words[:max_size], min_freq=min_freq, max_size=max_size)

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: object) -> bool:
        return token in self.stoi

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and self.itos == other.itos

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, min_freq={self.min_freq}, max_size={self.max_size})"

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Token ids; unknown tokens map to ``unk_id``."""
        get, unk = self.stoi.get, self.unk_id
        return [get(t, unk) for t in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Tokens for ``ids`` (ints or a 1-D tensor's ``tolist()``)."""
        itos, n = self.itos, len(self.itos)
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < n:
                raise IndexError(f"Vocab.decode: id {i} is outside the vocabulary (size {n})")
            out.append(itos[i])
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "itos": list(self.itos),
            "specials": dict(zip(_ROLES, SPECIALS)),
            "min_freq": self.min_freq,
            "max_size": self.max_size,
        }

    @classmethod
    def from_dict(cls, data: Any, source: str = "vocabulary dict") -> Vocab:
        """Inverse of :meth:`to_dict`; ``source`` names the origin in error messages."""
        if not isinstance(data, dict) or not isinstance(data.get("itos"), list):
            raise ValueError(f"{source}: expected a JSON object with an 'itos' list")
        if not all(isinstance(t, str) for t in data["itos"]):
            raise ValueError(f"{source}: 'itos' must be a list of strings")
        specials = data.get("specials", dict(zip(_ROLES, SPECIALS)))
        if specials != dict(zip(_ROLES, SPECIALS)):
            raise ValueError(
                f"{source}: 'specials' must be {dict(zip(_ROLES, SPECIALS))}, got {specials}"
            )
        try:
            return cls(data["itos"], data.get("min_freq", 1), data.get("max_size"))
        except ValueError as err:
            raise ValueError(f"{source}: {err}") from None

    def save(self, path: str | Path) -> None:
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_dict(), ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)  # atomic: a crash never leaves half a vocabulary

    @classmethod
    def load(cls, path: str | Path) -> Vocab:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}: not a valid vocabulary JSON file ({err})") from None
        return cls.from_dict(data, source=str(path))
