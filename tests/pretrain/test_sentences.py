"""Ordered sentences: the rule-based splitter, documents read in order from every kind of corpus, a
split by document hash that never changes, and batches that are a pure function of (seed, epoch)."""

from __future__ import annotations

import pytest
import torch

from transferlab import IGNORE_INDEX
from transferlab.config import ConfigError
from transferlab.pretrain.sentences import (RunBatches, SentenceDataConfig, TripleBatches, document_sentences,
                                            encode_sentences, split_sentences)
from transferlab.text.tokenize import TextConfig, tokenizer

TOK = tokenizer(TextConfig())


@pytest.mark.parametrize("text, expected", [
    ("It rained. Then it stopped! Did it? Yes.", ["It rained.", "Then it stopped!", "Did it?", "Yes."]),
    ("Mr. Smith met Dr. Jones at 5 p.m. on Monday. They spoke.",
     ["Mr. Smith met Dr. Jones at 5 p.m. on Monday.", "They spoke."]),
    ("The U.S. Senate voted. J. R. Smith objected.", ["The U.S. Senate voted.", "J. R. Smith objected."]),
    ('"Stop!" she said. "Why?" he asked.', ['"Stop!" she said.', '"Why?" he asked.']),
    ("So do I. Then we left... And came back.", ["So do I.", "Then we left...", "And came back."]),
    ("see fig. 3 and no. 5. the end", ["see fig. 3 and no. 5. the end"]),  # no capital after: one sentence
    ("  ", []),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def _corpus(tmp_path, n_docs=40):
    """A text file of ``n_docs`` documents (blank line between), document k's sentences 'Doc k says j.'."""
    docs = ["\n".join(f"Doc {k} says {j}. Doc {k} adds {j}." for j in range(3)) for k in range(n_docs)]
    path = tmp_path / "docs.txt"
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    return path


def test_a_text_file_is_documents_in_order_split_by_document_hash(tmp_path):
    path = _corpus(tmp_path)
    seen: dict[str, list] = {}
    for split in ("train", "valid", "test"):
        rows = list(document_sentences(str(path), split, held_out=0.3))
        seen[split] = rows
        for (_, doc), sentence in rows:  # every sentence is its own document's, in order
            assert sentence.startswith(f"Doc {doc} ")
        for doc in {d for (_, d), _ in rows}:
            assert [s for (_, d), s in rows if d == doc] == [f"Doc {doc} {w} {j}." for j in range(3)
                                                           for w in ("says", "adds")]
    docs = {split: {d for (_, d), _ in rows} for split, rows in seen.items()}
    assert docs["train"] | docs["valid"] | docs["test"] == set(range(40))
    assert not (docs["train"] & docs["valid"]) and not (docs["train"] & docs["test"]) and docs["valid"] and docs["test"]
    # the split is a hash of the document number: the same on every run
    assert {d for (_, d), _ in document_sentences(str(path), "valid", held_out=0.3)} == docs["valid"]


def test_a_folder_is_one_document_per_file_and_wrapped_lines_join(tmp_path):
    (tmp_path / "a.txt").write_text("The first line\nwraps here. A second\nsentence.\n\nNew paragraph\n", "utf-8")
    (tmp_path / "b.txt").write_text("Another document.\n", "utf-8")
    rows = [(doc, s) for split in ("train", "valid", "test")
            for (_, doc), s in document_sentences(str(tmp_path), split, held_out=0.01)]
    assert sorted(rows) == [(0, "A second sentence."), (0, "New paragraph"), (0, "The first line wraps here."),
                            (1, "Another document.")]


def test_a_catalog_corpus_of_documents_keeps_each_file_in_order(shared_data):
    d = SentenceDataConfig(corpus="shakespeare", max_documents=2, max_sentences=300, min_len=3)
    vocab, sents = encode_sentences(d, TOK)
    train = sents["train"]
    assert len(train) == 300 and train.n_documents == 1 and set(sents) == {"train", "valid", "test"}
    assert vocab.itos[:4] == ["<pad>", "<unk>", "<bos>", "<eos>"]
    assert all(n >= 3 for n in train.lengths)  # min_len dropped the speaker tags ("KING." is 2 words)
    # all's well that ends well comes first (files in name order); its text in its order
    words = " ".join(" ".join(vocab.decode(train.sentence(i))) for i in range(len(train)))
    assert words.index("all 's well that ends well") < words.index("in delivering my son from me")


def test_encoding_caps_and_vocabulary(tmp_path):
    path = _corpus(tmp_path)
    d = SentenceDataConfig(corpus=str(path), held_out=0.3, max_len=3, max_documents=5)
    vocab, sents = encode_sentences(d, TOK)
    train = sents["train"]
    assert train.n_documents == 5 and len(train) == 5 * 6 and (train.lengths == 3).all()  # "doc k says" cut
    assert {"doc", "says", "adds"} <= set(vocab.itos) and "." not in vocab  # the cut words are never counted
    assert train.doc.tolist() == sorted(train.doc.tolist())
    assert train.triples().tolist() == [i for i in range(1, 29) if i % 6 not in (0, 5)]  # within a document
    with pytest.raises(ConfigError, match="data.held_out"):
        SentenceDataConfig(held_out=0.6)
    with pytest.raises(ConfigError, match="data.min_len"):
        SentenceDataConfig(min_len=10, max_len=5)


def test_triple_batches_are_the_neighbours_and_deterministic(tmp_path):
    vocab, sents = encode_sentences(SentenceDataConfig(corpus=str(_corpus(tmp_path)), held_out=0.3), TOK)
    s = sents["train"]
    specials = {"pad_id": vocab.pad_id, "bos_id": vocab.bos_id, "eos_id": vocab.eos_id}
    batches = list(TripleBatches(s, 7, **specials, seed=1, epoch=2))
    again = list(TripleBatches(s, 7, **specials, seed=1, epoch=2))
    other = list(TripleBatches(s, 7, **specials, seed=1, epoch=3))
    assert all(torch.equal(a["ids"], b["ids"]) for a, b in zip(batches, again))
    assert any(not torch.equal(a["ids"], b["ids"]) for a, b in zip(batches, other))
    sentence_of = {tuple(s.sentence(i)): i for i in range(len(s))}
    centres = []
    for b in batches:
        for row in range(b["ids"].size(0)):
            i = sentence_of[tuple(b["ids"][row][b["mask"][row]].tolist())]
            centres.append(i)
            for side, shift in (("prev", -1), ("next", 1)):
                words = s.sentence(i + shift)
                inputs, labels = b[f"{side}_ids"][row].tolist(), b[f"{side}_labels"][row].tolist()
                assert inputs[: len(words) + 1] == [vocab.bos_id] + words
                assert labels[: len(words) + 1] == words + [vocab.eos_id]
                assert set(labels[len(words) + 1:]) <= {IGNORE_INDEX}
    assert sorted(centres) == s.triples().tolist()


def test_run_batches_are_consecutive_sentences(tmp_path):
    _, sents = encode_sentences(SentenceDataConfig(corpus=str(_corpus(tmp_path)), held_out=0.3), TOK)
    s = sents["train"]
    runs = RunBatches(s, 10, pad_id=0, seed=0, epoch=1).runs()
    assert runs == RunBatches(s, 10, pad_id=0, seed=0, epoch=1).runs() != RunBatches(s, 10, pad_id=0, epoch=2).runs()
    assert sorted(i for r in runs for i in r) == list(range(len(s)))  # every sentence once
    assert all(r.step == 1 and 2 <= len(r) <= 10 for r in runs)
    plain = RunBatches(s, 10, pad_id=0, shuffle=False)
    first = next(iter(plain))
    assert plain.runs()[0] == range(0, 10) and first["doc"].tolist() == s.doc[:10].tolist()
    assert first["ids"][3][first["mask"][3]].tolist() == s.sentence(3)
