"""What every benchmark writes: ``benchmarks/results/NAME.json`` with machine and date."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
from pathlib import Path

import torch

RESULTS = Path(__file__).parent / "results"


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    gpu = f", {torch.cuda.get_device_name(0)}" if torch.cuda.is_available() else ""
    return f"{os.cpu_count()} cores, {cpu}{gpu}, torch {torch.__version__}, {torch.get_num_threads()} threads"


def write_result(name: str, figures: dict, **extra) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    record = {"benchmark": name, "date": dt.date.today().isoformat(), "machine": machine(), "figures": figures}
    path.write_text(json.dumps(record | extra, indent=2) + "\n")
    print(json.dumps(record, indent=2))
    return path


def append_row(path: Path, row: dict) -> None:
    """One finished cell as a JSON line at the end of a benchmark's ``runs.jsonl`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def finished_rows(path: Path, *key: str) -> dict[tuple, dict]:
    """The rows of a benchmark's ``runs.jsonl`` by ``key`` fields; a half-written last line (an
    interrupted run) is skipped, so that cell runs again."""
    rows = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            rows[tuple(row[k] for k in key)] = row
    return rows
