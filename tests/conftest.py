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
