"""Fixtures for the data tests: the shared data folder, and a catalog that never downloads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared() -> Path:
    """The shared data mirror named by TRANSFERLAB_DATA (skipped only where it is absent)."""
    root = os.environ.get("TRANSFERLAB_DATA")
    if not root:
        pytest.skip("TRANSFERLAB_DATA is not set; point it at the shared data folder to run this test")
    if not (Path(root) / "datasets").is_dir():
        pytest.skip(f"TRANSFERLAB_DATA={root} holds no datasets/ folder")
    return Path(root)


@pytest.fixture(autouse=True)
def _offline_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Every test gets an empty download cache of its own and no hub access."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("TRANSFERLAB_CACHE", str(cache))
    monkeypatch.setenv("TRANSFERLAB_OFFLINE", "1")
    return cache


@pytest.fixture
def write(tmp_path: Path):
    """``write(name, content)`` makes a file in tmp_path from str (UTF-8) or bytes."""

    def _write(name: str, content: str | bytes) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return path

    return _write
