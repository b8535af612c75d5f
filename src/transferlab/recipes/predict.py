"""``transferlab evaluate`` and ``transferlab predict`` on a trained task checkpoint."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from transferlab.data.examples import TextExample
from transferlab.tasks.loading import load_task_model


def evaluate(model_dir: str | Path, examples: list, where: str) -> dict:
    """The task's metrics of a checkpoint on labeled examples; unseen labels are named."""
    return load_task_model(model_dir).evaluate(examples, where) | {"n": len(examples)}


def predict(model_dir: str | Path, texts: Iterable[str], out) -> int:
    """Write one JSON line per text: its label and every label's probability (or the score of a
    regression model)."""
    p = load_task_model(model_dir)
    if p.kind == "tag" or p.pairs:
        what = "a tagger" if p.kind == "tag" else "a text-pair model"
        raise ValueError(f"{model_dir} is {what}: `predict` takes single texts; use `evaluate` on a file")
    texts = list(texts)
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
