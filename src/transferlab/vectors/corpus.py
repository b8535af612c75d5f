"""A corpus for the static-vector trainers: read once through transferlab's readers, cached as tokens.

The trainers (gensim's word2vec, fastText, doc2vec and our GloVe) pass over a corpus many
times. Tokenizing the raw text on every pass costs more than the training itself (word2vec
skip-gram on SOTU: 27 s streaming through the tokenizer each epoch against 16 s from tokens),
so :func:`tokenize_corpus` streams the text once through the catalog's readers and
transferlab's tokenizer, writes the tokens to a file in gensim's ``LineSentence`` format (one
sentence or document per line, tokens separated by spaces; our tokenizers never put a space
inside a token) and counts the words on the way. Nothing is held in memory but the counts: a
corpus larger than memory works (gensim ``LineSentence``, DESIGN.md section 5). The file feeds
gensim's ``corpus_file`` mode, whose C reader scales with its worker threads.
"""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from transferlab.data import catalog
from transferlab.data.errors import DataError


@dataclass
class TokenFile:
    """Tokens of a corpus, one line per sentence (or document), and the word counts."""

    path: Path
    counts: Counter = field(default_factory=Counter)
    lines: int = 0  # sentences (documents) written; lines that tokenize to nothing are skipped
    words: int = 0
    source: str = ""

    def __iter__(self) -> Iterator[list[str]]:
        """The token lists again (restartable), read back from the file."""
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                yield line.split()

    def vocabulary(self, min_count: int, max_size: int = 0) -> list[str]:
        """Words occurring at least ``min_count`` times, most frequent first (ties by first sight).

        A cut-off that keeps nothing is a DataError naming the corpus, instead of training on
        nothing.
        """
        kept = [w for w, n in self.counts.most_common() if n >= min_count]
        if max_size:
            kept = kept[:max_size]
        if not kept:
            top = max(self.counts.values(), default=0)
            raise DataError(self.source or self.path, None, None,
                            f"no word occurs at least min_count={min_count} times ({self.words:,} words, "
                            f"{len(self.counts):,} distinct, the most frequent {top:,} times): "
                            f"lower min_count or give a larger corpus")
        return kept

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)


def tokenize_corpus(names: str, tokenize: Callable[[str], list[str]], split: str = "train",
                    folder: str | Path | None = None, progress: bool = True) -> TokenFile:
    """Stream ``names`` (catalog names or paths, comma-separated) into a token file with counts."""
    if folder is not None:
        Path(folder).mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="tokens-", suffix=".txt", dir=folder)
    out = TokenFile(Path(tmp), source=names)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f, \
                tqdm(desc=f"reading {names}", unit=" lines", disable=None if progress else True,
                     mininterval=1.0) as bar:
            for text in catalog.corpus(names, split):
                tokens = tokenize(text)
                bar.update()
                if not tokens:
                    continue
                out.counts.update(tokens)
                out.words += len(tokens)
                out.lines += 1
                f.write(" ".join(tokens))
                f.write("\n")
    except BaseException:
        out.remove()
        raise
    if not out.words:
        out.remove()
        raise DataError(names, None, None, "the corpus holds no words")
    return out
