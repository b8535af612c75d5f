"""``transferlab evaluate`` and ``transferlab predict`` on a trained task checkpoint."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from transferlab.config import from_dict
from transferlab.data.errors import DataError
from transferlab.data.examples import TextExample
from transferlab.tasks.loading import load_task_model
from transferlab.text.tokenize import TextConfig, tokenizer


def evaluate(model_dir: str | Path, examples: list, where: str) -> dict:
    """The task's metrics of a checkpoint on labeled examples; unseen labels are named."""
    return load_task_model(model_dir).evaluate(examples, where) | {"n": len(examples)}


def predict(model_dir: str | Path, texts: Iterable[str], out) -> int:
    """Write one JSON line per text: its label and every label's probability (or the score of a
    regression model); for a tagger, its tokens (the model's word tokenizer) and their tags."""
    texts = list(texts)
    for i, text in enumerate(texts):  # training rejects empty text: a label for nothing is no answer
        if not text.strip():
            raise DataError(None, None, None, f"text {i + 1} of {len(texts)}: empty text")
    p = load_task_model(model_dir)
    if p.pairs:
        raise ValueError(f"{model_dir} is a text-pair model: `predict` takes single texts; use `evaluate` on a file")
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
