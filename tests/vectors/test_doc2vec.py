"""Paragraph vectors: PV-DM and PV-DBOW, saved without pickle, inference after reloading."""

from __future__ import annotations

import numpy as np
import pytest

from transferlab.text.tokenize import whitespace_tokenize
from transferlab.vectors.corpus import tokenize_corpus
from transferlab.vectors.doc2vec import Doc2VecConfig, ParagraphVectors, train_doc2vec


@pytest.fixture(scope="module")
def tokens(tmp_path_factory, shared_data):
    lines = (shared_data / "corpora/ptb/train.txt").read_text(encoding="utf-8").splitlines()[:2000]
    folder = tmp_path_factory.mktemp("d2v")
    (folder / "ptb2k.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tokenize_corpus(str(folder / "ptb2k.txt"), whitespace_tokenize, folder=folder, progress=False)


@pytest.mark.parametrize("mode, loss", [("dbow", "negative"), ("dm", "hierarchical")])
def test_reloaded_model_infers_what_the_original_infers(mode, loss, tokens, tmp_path):
    cfg = Doc2VecConfig(mode=mode, loss=loss, dim=16, epochs=3, min_count=2, workers=1)
    pv, stats = train_doc2vec(tokens, cfg, progress=False)
    assert stats["documents"] == tokens.lines and pv.doc_vectors().shape == (tokens.lines, 16)
    doc = "the company said its profit rose in the third quarter".split()
    before = pv.infer(doc, seed=3)
    pv.save(tmp_path / "pv")
    assert not list((tmp_path / "pv").glob("*.pkl")) and (tmp_path / "pv" / "doc2vec.safetensors").is_file()
    again = ParagraphVectors.load(tmp_path / "pv")
    np.testing.assert_allclose(again.infer(doc, seed=3), before, atol=1e-6)
    np.testing.assert_array_equal(again.doc_vectors(), pv.doc_vectors())
    assert again.word_vectors().keys == pv.word_vectors().keys


def test_a_trained_document_is_nearest_its_own_inferred_vector(tokens):
    """gensim's sanity check: chance is 1 in 2,000; 20 epochs on 2,000 short sentences get about 12 of 20."""
    cfg = Doc2VecConfig(mode="dbow", dim=32, epochs=20, min_count=2, workers=1, infer_epochs=50)
    pv, _ = train_doc2vec(tokens, cfg, progress=False)
    docs = list(tokens)
    hits = 0
    unit = pv.doc_vectors() / np.linalg.norm(pv.doc_vectors(), axis=1, keepdims=True)
    for i in range(0, 200, 10):
        v = pv.infer(docs[i], seed=0)
        hits += int(np.argmax(unit @ (v / np.linalg.norm(v))) == i)
    assert hits >= 10, f"only {hits} of 20 training documents were nearest their own inferred vector"


def test_load_of_a_folder_without_a_model_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no doc2vec.json"):
        ParagraphVectors.load(tmp_path)


@pytest.mark.parametrize("mode", ["dm", "dbow"])
def test_equals_gensim_called_directly(mode, tokens):
    """The vocabulary and document tags we build from our counts are the ones gensim's scan builds."""
    from gensim.models import Doc2Vec

    from transferlab.vectors.doc2vec import gensim_args

    cfg = Doc2VecConfig(mode=mode, dim=16, epochs=2, min_count=2, workers=1)
    ours, _ = train_doc2vec(tokens, cfg, progress=False)
    direct = Doc2Vec(corpus_file=str(tokens.path), **gensim_args(cfg))
    assert ours.word_vectors().keys == list(direct.wv.index_to_key)
    np.testing.assert_allclose(ours.doc_vectors(), direct.dv.vectors, atol=1e-6)
    np.testing.assert_allclose(ours.word_vectors().vectors, direct.wv.vectors, atol=1e-6)
