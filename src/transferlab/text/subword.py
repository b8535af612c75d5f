"""Subword tokenizers on Hugging Face ``tokenizers``: WordPiece and byte-level BPE.

Two vocabularies of the transfer learning literature, trained with the Rust implementations
the field uses (we never reimplement the algorithms):

- **WordPiece** (Schuster and Nakajima 2012; Wu et al. 2016), as in BERT (Devlin et al. 2019):
  ``BertNormalizer`` (cleanup, CJK spacing, lowercasing and accent stripping when ``lower``),
  ``BertPreTokenizer`` (whitespace and punctuation), ``##`` continuation pieces, ``[UNK]``.
- **Byte-level BPE** (Sennrich et al. 2016, "Neural Machine Translation of Rare Words with
  Subword Units"), as in GPT-2 (Radford et al. 2019): text is bytes mapped to 256 printable
  characters, so no input is ever unknown; a space is prefixed to the text so the first word is
  split like every other one. Our decoder strips that one added space again, so
  ``decode(encode(text)) == text`` (lowercased when ``lower``) for text that does not start
  with a space; decode a whole sequence, not a continuation piece by piece.

:class:`SubwordTokenizer` wraps any ``tokenizers.Tokenizer`` (ours or a Hugging Face model's
``tokenizer.json``) with a map from the :data:`ROLES` to special-token strings. It never adds
specials, truncates or pads: the batching code places ``[CLS]``/``[SEP]`` and pads itself.
Tokenizers we train have all seven :data:`OUR_SPECIALS` at ids 0..6 in that order.

Saved as a folder: ``tokenizer.json`` (loadable by ``tokenizers.Tokenizer.from_file`` and by
``transformers.PreTrainedTokenizerFast(tokenizer_file=...)``) and ``tokenizer_roles.json``
(``{"pad": "[PAD]", ...}``). In a checkpoint the same content is one JSON object,
:meth:`SubwordTokenizer.to_dict`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import tokenizers
from tokenizers import decoders, models, normalizers, pre_tokenizers, trainers

__all__ = ["ROLES", "OUR_SPECIALS", "SubwordTokenizer", "train_tokenizer"]

ROLES = ("pad", "unk", "cls", "sep", "mask", "bos", "eos")
OUR_SPECIALS = {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]",
                "mask": "[MASK]", "bos": "[BOS]", "eos": "[EOS]"}
ROLES_FILE = "tokenizer_roles.json"
# Hugging Face folders without a role file: the first of these strings in the vocabulary.
KNOWN_SPECIALS = {
    "pad": ("[PAD]", "<pad>"),
    "unk": ("[UNK]", "<unk>"),
    "cls": ("[CLS]", "<s>"),
    "sep": ("[SEP]", "</s>", "<|endoftext|>"),
    "mask": ("[MASK]", "<mask>"),
    "bos": ("[BOS]", "<s>", "<|endoftext|>"),
    "eos": ("[EOS]", "</s>", "<|endoftext|>"),
}


class SubwordTokenizer:
    """A ``tokenizers.Tokenizer`` plus special-token roles (see the module docstring)."""

    def __init__(self, tokenizer: tokenizers.Tokenizer, specials: dict[str, str]) -> None:
        ids = {}
        for role, token in specials.items():
            if role not in ROLES:
                raise ValueError(f"unknown special-token role {role!r}; roles are {list(ROLES)}")
            if not isinstance(token, str):
                raise ValueError(f"special token for role {role!r} must be a string, got {token!r}")
            token_id = tokenizer.token_to_id(token)
            if token_id is None:
                raise ValueError(f"special token {token!r} (role {role!r}) is not in the vocabulary")
            ids[role] = token_id
        # HF model files ship truncation at 128 and fixed padding; batching does both itself.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        self.specials: dict[str, str] = {r: specials[r] for r in ROLES if r in specials}
        self.ids: dict[str, int] = {r: ids[r] for r in ROLES if r in ids}
        self.vocab_size: int = tokenizer.get_vocab_size(with_added_tokens=True)

    def __repr__(self) -> str:
        model = type(self.tokenizer.model).__name__
        return f"SubwordTokenizer({model}, vocab_size={self.vocab_size}, ids={self.ids})"

    @property
    def pad_id(self) -> int:
        """The pad id; a tokenizer without one (GPT-2) pads with eos, else with 0."""
        return self.ids.get("pad", self.ids.get("eos", 0))

    def encode(self, text: str) -> list[int]:
        """Piece ids of ``text``: no special tokens, no truncation."""
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        """:meth:`encode` for many texts, in parallel in Rust."""
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [e.ids for e in encodings]

    def encode_words(self, words: Sequence[str]) -> tuple[list[int], list[int]]:
        """Piece ids of pre-tokenized ``words`` and the position of each word's first piece.

        A word that yields no piece (an empty string, a control character the normalizer
        removes) becomes the unk id, so every word has a position (for tagging heads).
        """
        encoding = self.tokenizer.encode(list(words), is_pretokenized=True, add_special_tokens=False)
        return self._first_pieces(encoding, len(words))

    def encode_words_batch(
        self, sentences: Sequence[Sequence[str]]
    ) -> list[tuple[list[int], list[int]]]:
        """:meth:`encode_words` for many sentences, in parallel in Rust."""
        encodings = self.tokenizer.encode_batch(
            [list(words) for words in sentences], is_pretokenized=True, add_special_tokens=False
        )
        return [self._first_pieces(e, len(words)) for e, words in zip(encodings, sentences)]

    def _first_pieces(self, encoding: tokenizers.Encoding, n_words: int) -> tuple[list[int], list[int]]:
        # word_ids is non-decreasing for pre-tokenized input: walk it once
        pieces = [(i, w) for i, w in zip(encoding.ids, encoding.word_ids) if w is not None]
        unk = self.ids.get("unk", self.pad_id)
        ids: list[int] = []
        starts: list[int] = []
        j = 0
        for w in range(n_words):
            starts.append(len(ids))
            first = j
            while j < len(pieces) and pieces[j][1] == w:
                j += 1
            ids.extend([i for i, _ in pieces[first:j]] if j > first else [unk])
        return ids, starts

    def pieces(self) -> list[str]:
        """Every piece, in id order (row i of an embedding is piece i)."""
        vocab = self.tokenizer.get_vocab(with_added_tokens=True)
        out = [""] * self.vocab_size
        for piece, i in vocab.items():
            out[i] = piece
        return out

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` (ints or a tensor's ``tolist()``), special tokens skipped."""
        return self.tokenizer.decode([int(i) for i in ids], skip_special_tokens=True)

    def to_dict(self) -> dict[str, Any]:
        """``{"tokenizer": <tokenizer.json content>, "specials": {role: token}}``."""
        return {"tokenizer": json.loads(self.tokenizer.to_str()), "specials": dict(self.specials)}

    @classmethod
    def from_dict(cls, data: Any, source: str = "tokenizer dict") -> SubwordTokenizer:
        """Inverse of :meth:`to_dict`; ``source`` names the origin in error messages."""
        if not isinstance(data, dict) or not isinstance(data.get("tokenizer"), dict):
            raise ValueError(f"{source}: expected a JSON object with a 'tokenizer' object")
        specials = data.get("specials")
        if not isinstance(specials, dict):
            raise ValueError(f"{source}: expected a 'specials' object mapping roles to tokens")
        try:
            tokenizer = tokenizers.Tokenizer.from_str(json.dumps(data["tokenizer"]))
        except Exception as err:  # tokenizers raises a bare Exception on a bad spec
            raise ValueError(f"{source}: 'tokenizer' is not a valid tokenizer.json ({err})") from None
        try:
            return cls(tokenizer, specials)
        except ValueError as err:
            raise ValueError(f"{source}: {err}") from None

    def save(self, folder: str | Path) -> Path:
        """Write ``folder/tokenizer.json`` and ``folder/tokenizer_roles.json``; return the former."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "tokenizer.json"
        _write_atomic(path, self.tokenizer.to_str(pretty=True))
        _write_atomic(folder / ROLES_FILE, json.dumps(self.specials, indent=2, ensure_ascii=False))
        return path

    @classmethod
    def load(cls, path: str | Path) -> SubwordTokenizer:
        """Load ours (a role file beside ``tokenizer.json``) or a Hugging Face model's.

        ``path`` is a folder or a ``tokenizer.json`` file. Without a role file the roles come
        from ``special_tokens_map.json`` / ``tokenizer_config.json``, else from the special
        strings of BERT, RoBERTa and GPT-2 found in the vocabulary.
        """
        path = Path(path)
        file = path / "tokenizer.json" if path.is_dir() else path
        if not file.is_file():
            hint = (" (a slow-only Hugging Face tokenizer can be converted with "
                    "transformers: AutoTokenizer.from_pretrained(folder).save_pretrained(folder))"
                    if path.is_dir() else "")
            raise FileNotFoundError(f"no tokenizer file: looked for {file}{hint}")
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(file))
        except Exception as err:  # tokenizers raises a bare Exception on a bad file
            raise ValueError(f"{file}: not a valid tokenizer.json ({err})") from None
        try:
            return cls(tokenizer, _roles(file.parent, tokenizer))
        except ValueError as err:
            raise ValueError(f"{file}: {err}") from None


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)  # a crash never leaves half a file


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None


def _roles(folder: Path, tokenizer: tokenizers.Tokenizer) -> dict[str, str]:
    """Role -> token for a tokenizer file in ``folder`` (see :meth:`SubwordTokenizer.load`)."""
    ours = folder / ROLES_FILE
    if ours.is_file():
        roles = _read_json(ours)
        if not isinstance(roles, dict):
            raise ValueError(f"{ours}: expected a JSON object mapping roles to tokens")
        return roles
    roles = {}
    for name in ("tokenizer_config.json", "special_tokens_map.json"):  # the map wins
        if (folder / name).is_file():
            roles.update(_hf_roles(_read_json(folder / name), folder / name))
    if roles:
        return roles
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    for role, candidates in KNOWN_SPECIALS.items():
        found = next((tok for tok in candidates if tok in vocab), None)
        if found is not None:
            roles[role] = found
    return roles


def _hf_roles(config: Any, path: Path) -> dict[str, str]:
    """The ``<role>_token`` entries of a Hugging Face config (strings or ``{"content": ...}``)."""
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a JSON object")
    roles = {}
    for role in ROLES:
        value = config.get(f"{role}_token")
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            roles[role] = value
    return roles


def _wordpiece(lower: bool, vocab_size: int, min_freq: int, show_progress: bool
               ) -> tuple[tokenizers.Tokenizer, trainers.Trainer]:
    """BERT's pipeline and its trainer."""
    tokenizer = tokenizers.Tokenizer(
        models.WordPiece(unk_token=OUR_SPECIALS["unk"], continuing_subword_prefix="##"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=lower)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, min_frequency=min_freq, show_progress=show_progress,
        special_tokens=list(OUR_SPECIALS.values()), continuing_subword_prefix="##")
    return tokenizer, trainer


def _byte_bpe(lower: bool, vocab_size: int, min_freq: int, show_progress: bool
              ) -> tuple[tokenizers.Tokenizer, trainers.Trainer]:
    """GPT-2's byte-level BPE pipeline and its trainer."""
    tokenizer = tokenizers.Tokenizer(models.BPE())
    if lower:
        tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    # Strip removes the space add_prefix_space put before the text (ByteLevel yields one string)
    tokenizer.decoder = decoders.Sequence([decoders.ByteLevel(), decoders.Strip(" ", 1, 0)])
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, min_frequency=min_freq, show_progress=show_progress,
        special_tokens=list(OUR_SPECIALS.values()),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    return tokenizer, trainer


PIPELINES = {"wordpiece": _wordpiece, "bpe": _byte_bpe}


def train_tokenizer(
    lines: Iterable[str],
    kind: Literal["wordpiece", "bpe"] = "wordpiece",
    vocab_size: int = 8000,
    min_freq: int = 2,
    lower: bool = True,
    show_progress: bool = False,
) -> SubwordTokenizer:
    """Train a WordPiece or byte-level BPE tokenizer on a stream of text lines.

    ``lines`` is read once, as a stream (a generator works). ``vocab_size`` counts the seven
    specials and the alphabet (256 bytes for bpe; the corpus' characters and their ``##``
    forms for wordpiece); too small a size is a ValueError that says how many are needed.

    Byte-level BPE is deterministic. WordPiece is not quite: ``tokenizers`` numbers the ``##``
    alphabet in hash-map order and breaks merge-count ties by those numbers
    (huggingface/tokenizers#1794), so two trainings on one corpus can differ in a few pieces of
    equal count. A run that must be repeated keeps its tokenizer (every checkpoint holds it, and
    ``pretrain mlm --resume`` reads it back rather than training another).
    """
    if kind not in PIPELINES:
        raise ValueError(f"train_tokenizer: kind must be one of {list(PIPELINES)}, got {kind!r}")
    if min_freq < 1:
        raise ValueError(f"train_tokenizer: min_freq must be >= 1, got {min_freq}")
    floor = len(OUR_SPECIALS) + (len(pre_tokenizers.ByteLevel.alphabet()) if kind == "bpe" else 1)
    if vocab_size < floor:
        raise ValueError(f"train_tokenizer: vocab_size={vocab_size} is too small for {kind}: "
                         f"the {len(OUR_SPECIALS)} specials and the alphabet need at least {floor}")
    tokenizer, trainer = PIPELINES[kind](lower, vocab_size, min_freq, show_progress)
    seen = [0]  # lines with text, counted while tokenizers consumes the stream
    tokenizer.train_from_iterator(_counting(lines, seen), trainer=trainer)
    if seen[0] == 0:
        raise ValueError("train_tokenizer: the corpus yielded no text (no non-blank line)")
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    if size > vocab_size:
        raise ValueError(f"train_tokenizer: vocab_size={vocab_size} is too small for this corpus: "
                         f"the {len(OUR_SPECIALS)} specials and its alphabet alone need {size}")
    return SubwordTokenizer(tokenizer, dict(OUR_SPECIALS))


def _counting(lines: Iterable[str], seen: list[int]) -> Iterator[str]:
    for line in lines:
        if not isinstance(line, str):
            raise TypeError(f"train_tokenizer: lines must be strings, got {type(line).__name__}")
        if line and not line.isspace():
            seen[0] += 1
        yield line
