"""``transferlab evaluate`` and ``transferlab predict`` on a trained task checkpoint."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from transferlab.data.examples import TextExample
from transferlab.recipes.finetune import load_task_model


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
    for text, row in zip(texts, outputs.tolist()):
        if p.kind == "regress":
            out.write(json.dumps({"text": text, "score": row[0]}) + "\n")
            continue
        probs = outputs.new_tensor(row).softmax(-1).tolist()
        best = max(range(len(p.labels)), key=probs.__getitem__)
        out.write(json.dumps({"text": text, "label": p.labels[best],
                              "probabilities": dict(zip(p.labels, probs))}) + "\n")
    return len(texts)
