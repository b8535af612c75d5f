"""``transferlab evaluate`` and ``transferlab predict`` on a trained task checkpoint."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from transferlab.config import from_dict
from transferlab.data.conll import ConlluReader
from transferlab.data.errors import DataError
from transferlab.data.examples import TextExample
from transferlab.data.treebank import new_sentence, sentence_lines, with_tree
from transferlab.tasks.loading import load_task_model
from transferlab.text.tokenize import TextConfig, tokenizer


def evaluate(model_dir: str | Path, examples: list, where: str) -> dict:
    """The task's metrics of a checkpoint on labeled examples; unseen labels are named."""
    return load_task_model(model_dir).evaluate(examples, where) | {"n": len(examples)}


def predict(model_dir: str | Path, texts: Iterable[str], out) -> int:
    """Write one JSON line per text: its label and every label's probability (or the score of a
    regression model); for a tagger, its tokens (the model's word tokenizer) and their tags; for a
    parser, CoNLL-U instead: one sentence per text, its words and their predicted tree."""
    texts = list(texts)
    for i, text in enumerate(texts):  # training rejects empty text: a label for nothing is no answer
        if not text.strip():
            raise DataError(None, None, None, f"text {i + 1} of {len(texts)}: empty text")
    p = load_task_model(model_dir)
    if p.kind == "qa":
        raise ValueError(f"{model_dir} is an extractive QA model: ask it with --task qa --question ... --context ...")
    if p.pairs:
        raise ValueError(f"{model_dir} is a text-pair model: `predict` takes single texts; use `evaluate` on a file")
    if p.kind == "parse":  # CoNLL-U, a sentence per text: the model's word tokenizer's words and their tree
        tok = tokenizer(from_dict(TextConfig, {**p.config.get("text", {}), "lower": False}, "text."))
        sentences = [tok(t) for t in texts]
        for text, words, (heads, rels) in zip(texts, sentences, p.trees(sentences)):
            out.write("\n".join(new_sentence(words, heads, rels, text)) + "\n\n")
        return len(texts)
    if p.kind == "tag":
        tok = tokenizer(from_dict(TextConfig, {**p.config.get("text", {}), "lower": False}, "text."))
        sentences = [tok(t) for t in texts]
        for text, words, tags in zip(texts, sentences, p.tags(sentences)):
            out.write(json.dumps({"text": text, "tokens": words, "tags": tags}) + "\n")
        return len(texts)
    outputs = p.outputs([TextExample(t) for t in texts])
    rows = outputs.tolist() if p.kind == "regress" else outputs.softmax(-1).tolist()
    for text, probs in zip(texts, rows):
        if p.kind == "regress":
            out.write(json.dumps({"text": text, "score": probs[0]}) + "\n")
            continue
        best = max(range(len(p.labels)), key=probs.__getitem__)
        out.write(json.dumps({"text": text, "label": p.labels[best],
                              "probabilities": dict(zip(p.labels, probs))}) + "\n")
    return len(texts)


def predict_conllu(model_dir: str | Path, path: str | Path, out) -> int:
    """Parse a CoNLL-U file's words with a parser checkpoint and write the file back, each
    sentence's HEAD and DEPREL (columns 7 and 8) predicted, every other line and column as it was."""
    p = load_task_model(model_dir)
    if p.kind != "parse":
        raise ValueError(f"{model_dir} is a {p.kind} model: CoNLL-U input is for a parser "
                         f"(finetune --task-kind parse)")
    sentences = list(ConlluReader(path))
    blocks = list(sentence_lines(path))
    if len(blocks) != len(sentences):  # both skip blocks without words: never, short of a reader bug
        raise DataError(path, None, None, f"{len(sentences)} sentences but {len(blocks)} blocks of lines")
    for lines, (heads, rels) in zip(blocks, p.trees([list(s.tokens) for s in sentences])):
        out.write("\n".join(with_tree(lines, heads, rels)) + "\n\n")
    return len(sentences)
