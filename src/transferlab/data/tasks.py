"""A labeled task from a catalog name or the user's own files: texts, text pairs or tagged words.

``TaskDataConfig(task="sst2")``, ``TaskDataConfig(train="my.tsv", text_col="review",
label_col="stars")``, a pair file with ``text_col="premise", text_b_col="hypothesis"``, or a
CoNLL/CoNLL-U file (``train="ner.conll"``, ``tags="ner"``). Labels are strings, mapped to ids in
sorted order and stored with the model, so a label the model never saw is caught by name at
evaluation time.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from transferlab.data import catalog
from transferlab.data.errors import DataError
from transferlab.data.examples import PairExample, ParsedSentence, QAExample, TaggedSentence, TextExample
from transferlab.log import log

Example = TextExample | PairExample | TaggedSentence | QAExample | ParsedSentence


@dataclass(frozen=True)
class TaskDataConfig:
    task: str = "sst2"  # a catalog name; ignored for the splits given as files below
    train: str = ""  # path to the user's own train file (tsv, csv, jsonl)
    valid: str = ""
    test: str = ""
    text_col: str = "text"  # column name, or a 0-based index written as a string ("0")
    text_b_col: str = ""  # a pair task's second text column (text_col is the first)
    label_col: str = "label"
    tags: str = ""  # tag column of tagging data: conll2003 ner|chunk|pos, ud-ewt upos|xpos|deprels
    columns: str = ""  # a CoNLL file's column names, comma-separated ("word,pos,chunk,ner")
    header: Literal["auto", "yes", "no"] = "auto"
    # a row with more fields than the header (or the first row) is an error, else "ignore" the extra ones
    extra_columns: Literal["error", "ignore"] = "error"
    train_size: int = 0  # number of labeled training examples used; 0 = all
    subset_seed: int = 0  # which random subset; subsets of one seed are nested
    # held out of train when the task has no validation split; and as much again for a test part
    # when it has no test split either, so the test figure is never measured on the validation examples
    valid_fraction: float = 0.1
    valid_size: int = 0  # score at most this many validation examples (a fixed random subset); 0 = all
    batch_size: int = 32
    eval_batch_size: int = 64  # sequences per batch when scoring and predicting
    # tokens kept per text (the model's own limit still applies); None = all. A TOML file or an
    # override, which cannot write None, says 0 for it
    max_len: int | None = None

    def __post_init__(self):
        if self.train_size < 0 or self.valid_size < 0:
            raise ValueError(f"data.train_size and data.valid_size must be >= 0, got {self.train_size}, "
                             f"{self.valid_size}")
        if not 0.0 < self.valid_fraction < 1.0:
            raise ValueError(f"data.valid_fraction must be in (0, 1), got {self.valid_fraction}")
        if self.batch_size < 1 or self.eval_batch_size < 1:
            raise ValueError(f"data.batch_size and data.eval_batch_size must be >= 1, got {self.batch_size}, "
                             f"{self.eval_batch_size}")
        if not self.task and not self.train:
            raise ValueError("give a catalog task (--data.task) or a train file (--data.train)")
        if self.task and not catalog.is_catalog_name(self.task) and Path(self.task).exists():
            raise ValueError(f"data.task takes a catalog name, and {self.task!r} is a file or folder: "
                             f"give your own data as --train {self.task} (data.train)")
        if self.max_len is not None and self.max_len < 0:
            raise ValueError(f"data.max_len must be >= 0 (0 = no limit), got {self.max_len}")
        if self.max_len == 0:
            object.__setattr__(self, "max_len", None)  # one spelling inside: None is no limit


def _header(cfg: TaskDataConfig) -> bool | None:
    return {"auto": None, "yes": True, "no": False}[cfg.header]


def column(value: str) -> str | int:
    """A column flag's value: a 0-based position when it is digits, else a header name."""
    return int(value) if value.isdigit() else value


def _options(cfg: TaskDataConfig, path: str) -> dict:
    tags = {"tags": column(cfg.tags)} if cfg.tags else {}
    if not path:
        return tags
    suffix = Path(path).suffix.lower()
    if suffix == ".conll" or (suffix == ".txt" and cfg.tags):  # CoNLL-2003 itself ships as .txt
        names = {"columns": tuple(c.strip() for c in cfg.columns.split(","))} if cfg.columns else {}
        return tags | names | {"format": "conll"}
    if suffix == ".conllu":
        return tags
    cols = {"label_col": column(cfg.label_col), "header": _header(cfg)}
    if cfg.extra_columns == "ignore":
        cols["ignore_extra"] = True
    if cfg.text_b_col:
        return cols | {"a_col": column(cfg.text_col), "b_col": column(cfg.text_b_col)}
    return cols | {"text_col": column(cfg.text_col)}


def read_examples(cfg: TaskDataConfig, split: str, path: str, parsed: bool = False) -> list[Example]:
    """A split's examples; ``parsed``: a CoNLL-U file's or treebank's dependency trees (ParsedSentence)."""
    trees = {"parsed": True} if parsed else {}
    no_trees = DataError(path or cfg.task, None, None, "parsing needs dependency trees: a CoNLL-U file (.conllu) "
                         "or a catalog treebank (ud-ewt)")
    try:
        examples = list(catalog.load_examples(path or cfg.task, split, **_options(cfg, path), **trees))
    except DataError as e:
        if parsed and e.field == "parsed":  # a catalog dataset that holds no trees
            raise no_trees from None
        raise
    if parsed and examples and not isinstance(examples[0], ParsedSentence):
        raise no_trees
    if path and not examples:
        raise DataError(path, None, None, "no examples: the file is empty or holds only a header line")
    for i, ex in enumerate(examples):
        if not isinstance(ex, (TextExample, PairExample, TaggedSentence, QAExample, ParsedSentence)):
            raise DataError(path or cfg.task, None, None,
                            f"expected texts, text pairs, tagged sentences or questions, got {type(ex).__name__}")
        if not isinstance(ex, (TaggedSentence, QAExample, ParsedSentence)) and ex.label is None:
            raise DataError(path or cfg.task, i + 1, cfg.label_col, "label missing")
    return examples


def task_texts(cfg: TaskDataConfig, split: str, path: str = "") -> Iterable[str]:
    """The texts of a task split (labels unused), streamed: a user's file is read with the
    task's columns, a catalog task through :func:`catalog.corpus`."""
    if path:
        return catalog.corpus(path, split, **{k: v for k, v in _options(cfg, path).items() if k != "label_col"})
    return catalog.corpus(cfg.task, split)


def nested_subset(n_total: int, size: int, seed: int) -> list[int]:
    """The first ``size`` indices of one fixed permutation: smaller subsets nest in larger ones."""
    order = list(range(n_total))
    random.Random(seed).shuffle(order)
    return sorted(order[: size or n_total])


def load_task(cfg: TaskDataConfig, parsed: bool = False) -> dict[str, list[Example]]:
    """Train (subset), valid and test examples; valid is held out of train if absent, and when
    test is absent too a separate test part of the same size (a test file or split given, or a
    validation file without one, keeps the old rule: the validation examples stand in for test).
    ``parsed``: CoNLL-U read as dependency trees, for a parser."""
    splits = catalog.splits(cfg.task) if cfg.task and not cfg.train else ["train"]
    train = read_examples(cfg, "train", cfg.train, parsed)
    no_test = not cfg.test and "test" not in splits
    test = None
    if cfg.valid or "valid" in splits or "dev" in splits:
        valid = read_examples(cfg, "valid" if "valid" in splits else "dev", cfg.valid, parsed)
    else:
        n = max(1, int(len(train) * cfg.valid_fraction))
        two = no_test and len(train) > 2 * n  # room for a test part as well as valid
        order = list(range(len(train)))
        random.Random(12345).shuffle(order)  # valid: the first n of this order (nested_subset's), test the next n
        held_valid, held_test = set(order[:n]), set(order[n:2 * n] if two else ())
        valid = [ex for i, ex in enumerate(train) if i in held_valid]
        if two:
            test = [ex for i, ex in enumerate(train) if i in held_test]
        train = [ex for i, ex in enumerate(train) if i not in held_valid and i not in held_test]
        log(f"valid: {len(valid):,} examples held out of train ({cfg.valid_fraction:.0%}, data.valid_fraction): "
            f"no validation file or split was given")
        if two:
            log(f"test: another {len(test):,} examples held out of train, apart from valid: no test file or split "
                f"was given (data.test)")
    if cfg.test:
        test = read_examples(cfg, "test", cfg.test, parsed)
    elif "test" in splits:
        test = read_examples(cfg, "test", "", parsed)
    elif test is None:
        test = valid
        log("test: no test file or split was given; the validation examples stand in (data.test)")
    if cfg.valid_size and len(valid) > cfg.valid_size:  # (test, when it is valid, stays whole)
        valid = [valid[i] for i in nested_subset(len(valid), cfg.valid_size, seed=54321)]
    if cfg.train_size > len(train):
        raise ValueError(f"data.train_size={cfg.train_size} but the training set has only {len(train)} examples")
    read = len(train)
    train = [train[i] for i in nested_subset(len(train), cfg.train_size, cfg.subset_seed)]
    data = {"train": train, "valid": valid, "test": test}
    describe(data, cfg.task if not cfg.train else cfg.train, read)
    return data


def describe(data: dict[str, list[Example]], name: str, read: int) -> None:
    """Say what was read: examples per split (and how many of train are used), and the labels."""
    used = f" (a subset of {read:,}, data.train_size)" if len(data["train"]) < read else ""
    log(f"{name}: train {len(data['train']):,}{used}, valid {len(data['valid']):,}, test {len(data['test']):,} "
        f"{'sentences' if isinstance(data['train'][0], (TaggedSentence, ParsedSentence)) else 'examples'}"
        if data["train"] else
        f"{name}: no training examples")
    if data["train"] and not isinstance(data["train"][0], (TaggedSentence, QAExample, ParsedSentence)):
        counts = Counter(ex.label for ex in data["train"])
        if len(counts) <= 20:
            log("labels in train: " + ", ".join(f"{label} {n:,}" for label, n in counts.most_common()))
        else:
            log(f"labels in train: {len(counts):,} distinct values")


def label_ids(labels: list[str], examples: list[Example], where: str) -> list[int]:
    """Map string labels to ids; a label outside ``labels`` is an error that names it."""
    index = {label: i for i, label in enumerate(labels)}
    out = []
    for i, ex in enumerate(examples):
        if ex.label not in index:
            raise ValueError(f"{where}, example {i + 1}: label {ex.label!r} was never seen in training "
                             f"(known labels: {', '.join(labels)})")
        out.append(index[ex.label])
    return out


def check_labels(cfg: TaskDataConfig, labels: list[str], data: dict[str, list[Example]]) -> None:
    """A classifier's valid and test labels must be among training's: the first that is not is a
    DataError naming its file and line (or the catalog split and example)."""
    known = set(labels)
    for split, path in (("valid", cfg.valid), ("test", cfg.test)):
        for i, ex in enumerate(data.get(split, ())):
            if ex.label not in known:
                line = _line_of(cfg, path, i) if path else None
                where = path or (f"{cfg.train} (the part held out for {split})" if cfg.train else f"{cfg.task} {split}")
                raise DataError(where, line, cfg.label_col if path else None,
                                f"label {ex.label!r} was never seen in training"
                                + (f" (example {i + 1})" if line is None else "")
                                + f"; the training labels are {', '.join(labels)}")


def _line_of(cfg: TaskDataConfig, path: str, index: int) -> int | None:
    """The line of a table or JSONL file's ``index``-th example (None for CoNLL files)."""
    from transferlab.data.readers import table_rows

    opts = _options(cfg, path)
    if "format" in opts or Path(path).suffix.lower() == ".conllu":
        return None
    roles = {"a": opts["a_col"], "b": opts["b_col"]} if "a_col" in opts else {"text": opts["text_col"]}
    rows = table_rows(path, roles | {"label": opts["label_col"]}, opts["header"],
                      ignore_extra=opts.get("ignore_extra", False))
    return next((number for k, (number, _) in enumerate(rows) if k == index), None)


def all_texts(examples: list[Example]) -> list[str]:
    """Every text of the examples (both of a pair; a tagged sentence's words joined by spaces),
    for building a vocabulary or training a tokenizer on a task."""
    if isinstance(examples[0], PairExample):
        return [t for ex in examples for t in (ex.text_a, ex.text_b)]
    if isinstance(examples[0], (TaggedSentence, ParsedSentence)):
        return [" ".join(ex.tokens) for ex in examples]
    if isinstance(examples[0], QAExample):  # each context once, and every question
        return list(dict.fromkeys(ex.context for ex in examples)) + [ex.question for ex in examples]
    return [ex.text for ex in examples]
