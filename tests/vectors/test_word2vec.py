"""word2vec / fastText through transferlab: the same vectors as gensim called directly, errors, artifact."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from transferlab.data.errors import DataError
from transferlab.text.tokenize import whitespace_tokenize
from transferlab.vectors.corpus import tokenize_corpus
from transferlab.vectors.keyed import WordVectors
from transferlab.vectors.word2vec import FastTextConfig, Word2VecConfig, common_args, train_word2vec


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, shared_data) -> Path:
    """The first 3,000 PTB sentences: 60k words, a 3k-word vocabulary at min_count 3."""
    lines = (shared_data / "corpora/ptb/train.txt").read_text(encoding="utf-8").splitlines()[:3000]
    path = tmp_path_factory.mktemp("w2v") / "ptb3k.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_token_file_streams_the_corpus_and_counts(corpus, tmp_path):
    tokens = tokenize_corpus(str(corpus), whitespace_tokenize, folder=tmp_path, progress=False)
    lines = [line.split() for line in corpus.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert list(tokens) == lines
    assert tokens.words == sum(map(len, lines)) and tokens.lines == len(lines)
    assert tokens.counts["the"] == sum(line.count("the") for line in lines)
    vocab = tokens.vocabulary(3)
    assert vocab[0] == "the" and all(tokens.counts[w] >= 3 for w in vocab)
    tokens.remove()
    assert not tokens.path.exists()


def test_a_cut_off_that_keeps_nothing_says_so(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text("a b c\nd e f\n", encoding="utf-8")
    tokens = tokenize_corpus(str(path), whitespace_tokenize, folder=tmp_path, progress=False)
    with pytest.raises(DataError, match=r"no word occurs at least min_count=5 times \(6 words"):
        train_word2vec(tokens, Word2VecConfig(min_count=5), progress=False)


def test_an_empty_corpus_says_so(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n\n", encoding="utf-8")
    with pytest.raises(DataError, match="holds no words"):
        tokenize_corpus(str(path), whitespace_tokenize, folder=tmp_path, progress=False)
    assert not list(tmp_path.glob("tokens-*"))  # the half-made token file is gone


@pytest.mark.parametrize("cfg", [
    Word2VecConfig(arch="skipgram", dim=20, epochs=2, min_count=3, workers=1),
    Word2VecConfig(arch="cbow", loss="hierarchical", dim=20, epochs=2, min_count=3, workers=1),
])
def test_equals_gensim_called_directly(cfg, corpus, tmp_path):
    """One worker thread makes gensim deterministic: our wrapping passes every setting through."""
    from gensim.models import Word2Vec

    tokens = tokenize_corpus(str(corpus), whitespace_tokenize, folder=tmp_path, progress=False)
    ours, stats = train_word2vec(tokens, cfg, progress=False)
    direct = Word2Vec(corpus_file=str(corpus), sg=int(cfg.arch == "skipgram"), cbow_mean=1, **common_args(cfg))
    assert ours.keys == list(direct.wv.index_to_key)
    np.testing.assert_allclose(ours.vectors, direct.wv.vectors, atol=1e-6)
    assert stats["vocab_size"] == len(direct.wv) and stats["corpus_words"] == tokens.words
    assert ours.meta["trainer"] == "word2vec" and ours.meta["config"]["arch"] == cfg.arch


def test_fasttext_vectors_for_unseen_words_survive_saving(corpus, tmp_path):
    from gensim.models import FastText

    cfg = FastTextConfig(dim=16, epochs=1, min_count=3, bucket=5000, workers=1)
    tokens = tokenize_corpus(str(corpus), whitespace_tokenize, folder=tmp_path, progress=False)
    ours, _ = train_word2vec(tokens, cfg, progress=False)
    direct = FastText(corpus_file=str(corpus), sg=1, cbow_mean=1, min_n=3, max_n=6, bucket=5000, **common_args(cfg))
    assert ours.subwords is not None and "unbelievably" not in ours
    np.testing.assert_allclose(ours["unbelievably"], direct.wv["unbelievably"], atol=1e-6)
    ours.save(tmp_path / "ft")
    again = WordVectors.load(tmp_path / "ft")
    np.testing.assert_allclose(again["unbelievably"], direct.wv["unbelievably"], atol=1e-6)


def test_config_errors_name_the_flag():
    with pytest.raises(ValueError, match="word2vec.dim must be >= 1"):
        Word2VecConfig(dim=0)
    with pytest.raises(ValueError, match="fasttext.window must be >= 1"):
        FastTextConfig(window=0)
    with pytest.raises(ValueError, match=r"word2vec.lr must be > 0"):
        Word2VecConfig(lr=0.0)
