"""``transferlab evaluate`` and ``transferlab predict`` on a trained classifier checkpoint."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from transferlab.data.batching import Batches
from transferlab.eval.metrics import classification_metrics
from transferlab.recipes.task_data import label_ids
from transferlab.recipes.ulmfit import load_classifier
from transferlab.tasks.classify import predict_proba


def _probabilities(model, vocab, tok, texts: list[str]):
    ids = [vocab.encode(tok(t)) or [vocab.unk_id] for t in texts]
    return predict_proba(model, Batches(ids, 128, pad_id=vocab.pad_id, shuffle=False))


def evaluate(model_dir: str | Path, examples: list, where: str) -> dict:
    """Accuracy and macro-F1 of a checkpoint on labeled examples; unseen labels are named."""
    model, vocab, labels, tok = load_classifier(model_dir)
    gold = label_ids(labels, examples, where)
    probs = _probabilities(model, vocab, tok, [ex.text for ex in examples])
    return classification_metrics(gold, probs.argmax(-1).tolist()) | {"n": len(examples)}


def predict(model_dir: str | Path, texts: Iterable[str], out) -> int:
    """Write one JSON line per text: its label and every label's probability."""
    model, vocab, labels, tok = load_classifier(model_dir)
    texts = list(texts)
    probs = _probabilities(model, vocab, tok, texts)
    for text, row in zip(texts, probs.tolist()):
        best = max(range(len(labels)), key=row.__getitem__)
        out.write(json.dumps({"text": text, "label": labels[best],
                              "probabilities": dict(zip(labels, row))}) + "\n")
    return len(texts)
