"""Shared test set-up: point TRANSFERLAB_DATA at ../shared when the caller has not."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_default = ROOT.parent / "shared"
if "TRANSFERLAB_DATA" not in os.environ and _default.is_dir():
    os.environ["TRANSFERLAB_DATA"] = str(_default)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The shared data folder; tests that need it are skipped only where it is truly absent."""
    path = Path(os.environ.get("TRANSFERLAB_DATA", _default))
    if not path.is_dir():
        pytest.skip(f"shared data not found at {path} (set TRANSFERLAB_DATA)")
    return path


@pytest.fixture(autouse=True)
def _few_threads():
    import torch

    torch.set_num_threads(2)


@pytest.fixture(scope="session")
def corpus(tmp_path_factory) -> Path:
    """A small text file of 600 lines for language-model tests (a test module may define its own)."""
    words = "the a movie film plot was it good bad great dull fun and of to in".split()
    path = tmp_path_factory.mktemp("lm") / "corpus.txt"
    path.write_text("\n".join(f"line {i} " + " ".join(words[(i * 5 + j) % len(words)] for j in range(8))
                              for i in range(600)) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def make_tiny_bert():
    """``make_tiny_bert(folder, head="BertModel", **config)``: a random 2-layer BERT of hidden size 32
    (the transformers class ``head``: BertModel, BertForMaskedLM ...) saved to ``folder`` with
    minilm-l6's uncased WordPiece vocabulary and tokenizer files; skips without minilm-l6."""
    import shutil

    import torch

    from transferlab.data import catalog

    transformers = pytest.importorskip("transformers")
    try:
        minilm = Path(catalog.resolve("minilm-l6"))
    except Exception as e:  # noqa: BLE001  the catalog says where it looked
        pytest.skip(f"minilm-l6 not available: {e}")

    def make(folder: Path, head: str = "BertModel", **config) -> Path:
        torch.manual_seed(0)
        cfg = transformers.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=64, **config)
        getattr(transformers, head)(cfg).save_pretrained(folder)
        for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(minilm / name, folder / name)
        return folder

    return make
