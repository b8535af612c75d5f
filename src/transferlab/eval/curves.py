"""Learning curves and sample efficiency: test score against the number of labels.

The measurement behind figure 3 of ULMFiT (Howard & Ruder 2018, "Universal Language Model
Fine-tuning for Text Classification"): train each method on nested random subsets of the labeled
data (several seeds), plot the test score against the number of labels on a log scale, and read
off how many times fewer labels a transfer method needs to match training from scratch on all of
them ("with only 100 labeled examples, it matches the performance of training from scratch on
100x more data").

Pure logic, no training (:mod:`transferlab.recipes.curve` runs the cells):

- :func:`parse_sizes`, :func:`resolve_sizes`: ``"50,100,all"`` -> label counts, capped at the
  training set's size (reported, never silently repeated), deduplicated, sorted;
- :class:`CurveLog`: the JSONL record, one row per finished (method, size, seed) cell, appended
  with flush + fsync; a half-written or corrupt line is reported and removed so its cell reruns;
- :func:`aggregate`, :func:`sample_efficiency`, :func:`curve_figures`: mean and standard
  deviation per method and size, the smallest size at which each method reaches the reference
  method's score with all labels, and the flat figures a benchmark records;
- :func:`format_table`, :func:`plot_curves`: a markdown table and the PNG.
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

ROW_KEYS = ("method", "size", "seed", "metric", "score")
SHORT_METRIC = {"accuracy": "acc"}  # figure names: scratch_acc_100


# --- sizes ---------------------------------------------------------------------------------------

def parse_sizes(text: str) -> list[int | str]:
    """``"50,100,all"`` -> ``[50, 100, "all"]``; anything else than positive integers and ``all``
    is an error naming ``--sizes``."""
    items = [s.strip().lower() for s in text.split(",") if s.strip()]
    if not items:
        raise ValueError("--sizes must list label counts, e.g. 50,100,200,all")
    out: list[int | str] = []
    for item in items:
        if item == "all":
            out.append("all")
            continue
        try:
            n = int(item)
        except ValueError:
            raise ValueError(f"--sizes: {item!r} is neither a number of labels nor 'all'") from None
        if n < 1:
            raise ValueError(f"--sizes: label counts must be >= 1, got {n}")
        out.append(n)
    return out


def resolve_sizes(text: str, n_train: int) -> tuple[list[int], list[str]]:
    """The label counts of a curve on a training set of ``n_train`` examples, and notes.

    ``all`` is ``n_train``; a size above it is capped to it with a note (a subset cannot be
    larger than the set, and running the full set twice under two names would repeat a cell);
    duplicates are dropped; the result is sorted."""
    if n_train < 1:
        raise ValueError("the training set is empty: no learning curve to draw")
    notes, sizes = [], set()
    for s in parse_sizes(text):
        if s == "all":
            sizes.add(n_train)
        elif s > n_train:
            notes.append(f"--sizes: {s} is more than the {n_train} training examples; capped to {n_train}")
            sizes.add(n_train)
        else:
            sizes.add(s)
    return sorted(sizes), notes


# --- the JSONL record ------------------------------------------------------------------------------

def row_key(row: dict) -> tuple[str, int, int]:
    return row["method"], int(row["size"]), int(row["seed"])


def _valid_row(row: object) -> bool:
    return (isinstance(row, dict) and all(k in row for k in ROW_KEYS) and isinstance(row["method"], str)
            and all(isinstance(row[k], int) and not isinstance(row[k], bool) for k in ("size", "seed"))
            and isinstance(row["score"], (int, float)) and not isinstance(row["score"], bool))


@dataclass
class CurveLog:
    """``curve.jsonl``: one JSON row per finished cell. Open it with :meth:`open`, which drops
    (and reports in ``dropped``) every line that is not a complete row: a last line without its
    newline (the run was interrupted while writing it), invalid JSON, or a row missing a key.
    The file is rewritten without them, so those cells count as not done and run again
    (``repair=False`` only reads: a curve running in another process may be writing the last
    line)."""

    path: Path
    rows: list[dict] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    @classmethod
    def open(cls, path: str | Path, repair: bool = True) -> CurveLog:
        log = cls(Path(path))
        if not log.path.exists():
            return log
        text = log.path.read_text(encoding="utf-8", errors="replace")
        lines = text.split("\n")  # a complete file ends in "\n": the last item is ""
        for i, line in enumerate(lines):
            last = i == len(lines) - 1
            if not line.strip():
                continue
            if last:  # no newline after it: a half-written row
                log.dropped.append(f"{log.path}:{i + 1}: half-written row (no end of line), "
                                   f"its cell runs again: {line[:80]!r}")
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                row = None
            if not _valid_row(row):
                log.dropped.append(f"{log.path}:{i + 1}: not a complete row, its cell runs again: {line[:80]!r}")
                continue
            log.rows.append(row)
        if log.dropped and repair:
            log._rewrite()
        return log

    def _rewrite(self) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in self.rows)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(self.path)

    def done(self) -> set[tuple[str, int, int]]:
        """The (method, size, seed) cells recorded."""
        return {row_key(r) for r in self.rows}

    def append(self, row: dict) -> None:
        """Record one finished cell: one write of the whole line, flushed and fsynced."""
        if not _valid_row(row):
            raise ValueError(f"a curve row needs {', '.join(ROW_KEYS)} (size and seed integers), got {row}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.rows.append(row)


# --- aggregation and sample efficiency ---------------------------------------------------------------

def aggregate(rows: list[dict]) -> dict[str, dict[int, dict]]:
    """``{method: {size: {"mean", "std", "n", "scores"}}}``, sizes ascending; ``std`` is the
    sample standard deviation over seeds (0 with one seed). A cell recorded twice counts once
    (its last row)."""
    latest = {row_key(r): r for r in rows}
    scores: dict[str, dict[int, list[float]]] = {}
    for (method, size, _), r in sorted(latest.items()):
        scores.setdefault(method, {}).setdefault(size, []).append(float(r["score"]))
    return {m: {size: {"mean": statistics.mean(v), "std": statistics.stdev(v) if len(v) > 1 else 0.0,
                       "n": len(v), "scores": v}
                for size, v in sorted(by_size.items())}
            for m, by_size in scores.items()}


def sample_efficiency(agg: dict[str, dict[int, dict]], reference: str = "scratch") -> dict:
    """What the ULMFiT paper's figure 3 claims, measured: the reference score is ``reference``'s
    mean at its largest size; for each method, the smallest size whose mean reaches it
    (``reaches_at``, None if none does) and ``label_savings`` = reference size / that size
    (0 if never reached)."""
    if reference not in agg:
        raise ValueError(f"the reference method {reference!r} has no results "
                         f"(methods with results: {', '.join(agg) or 'none'})")
    ref_size = max(agg[reference])
    ref_score = agg[reference][ref_size]["mean"]
    methods = {}
    for method, by_size in agg.items():
        at = next((size for size, s in by_size.items() if s["mean"] >= ref_score), None)
        methods[method] = {"reaches_at": at, "label_savings": ref_size / at if at else 0.0}
    return {"reference": reference, "reference_size": ref_size, "reference_score": ref_score, "methods": methods}


def curve_figures(agg: dict[str, dict[int, dict]], efficiency: dict | None, metric: str,
                  full_size: int | None = None) -> dict[str, float]:
    """Flat figures: ``METHOD_label_savings`` and ``METHOD_<metric>_<size>`` for every size
    (``acc`` for accuracy), with ``METHOD_<metric>_all`` for the full training set."""
    short = SHORT_METRIC.get(metric, metric)
    out: dict[str, float] = {}
    for method, by_size in agg.items():
        if efficiency is not None:
            out[f"{method}_label_savings"] = efficiency["methods"][method]["label_savings"]
        for size, s in by_size.items():
            out[f"{method}_{short}_{size}"] = s["mean"]
            if size == full_size:
                out[f"{method}_{short}_all"] = s["mean"]
    return out


# --- presenting ----------------------------------------------------------------------------------------

def _size_label(size: int, full_size: int | None) -> str:
    return f"all ({size:,})" if size == full_size else f"{size:,}"


def format_table(agg: dict[str, dict[int, dict]], metric: str, efficiency: dict | None = None,
                 full_size: int | None = None) -> str:
    """A markdown table: one row per method, ``mean ± std`` per size (and the count of seeds
    where a cell has fewer than the others), then the sample efficiency columns when given."""
    sizes = sorted({size for by_size in agg.values() for size in by_size})
    head = ["method", *(_size_label(s, full_size) for s in sizes)]
    if efficiency is not None:
        head += [f"reaches {efficiency['reference']}@{_size_label(efficiency['reference_size'], full_size)} at",
                 "label savings"]
    most = max((s["n"] for by_size in agg.values() for s in by_size.values()), default=0)
    title = f"{metric} (mean ± std over seeds)" if most > 1 else f"{metric} (one seed)"
    lines = [title, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cell(s: dict) -> str:  # a cell with fewer seeds than the others (a curve in progress) says so
        spread = f" ± {s['std']:.3f}" if s["n"] > 1 else ""  # one seed has no spread to show
        return f"{s['mean']:.3f}{spread}" + (f" ({s['n']} of {most} seeds)" if s["n"] < most else "")

    for method, by_size in agg.items():
        cells = [method] + [cell(by_size[s]) if s in by_size else "-" for s in sizes]
        if efficiency is not None:
            e = efficiency["methods"][method]
            cells += ["never" if e["reaches_at"] is None else f"{e['reaches_at']:,}",
                      f"{e['label_savings']:.1f}x" if e["label_savings"] else "0"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def plot_curves(agg: dict[str, dict[int, dict]], path: str | Path, metric: str, title: str = "",
                efficiency: dict | None = None) -> Path:
    """Test ``metric`` against the number of labels (log x), one line with markers and a ±1 std
    band per method, and a dashed line at the reference score when ``efficiency`` is given."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=120)
    for method, by_size in agg.items():
        sizes = list(by_size)
        mean = [by_size[s]["mean"] for s in sizes]
        std = [by_size[s]["std"] for s in sizes]
        (line,) = ax.plot(sizes, mean, marker="o", ms=4, lw=1.5, label=method)
        ax.fill_between(sizes, [m - d for m, d in zip(mean, std)], [m + d for m, d in zip(mean, std)],
                        color=line.get_color(), alpha=0.18, lw=0)
    if efficiency is not None:
        ax.axhline(efficiency["reference_score"], color="grey", lw=1, ls="--",
                   label=f"{efficiency['reference']} with {efficiency['reference_size']:,} labels")
    ax.set_xscale("log")
    ticks = sorted({size for by_size in agg.values() for size in by_size})
    ax.set_xticks(ticks, [f"{t:,}" for t in ticks], fontsize=8)  # the sizes themselves, not powers of 10
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("number of labeled training examples (log scale)")
    ax.set_ylabel(f"test {metric}")
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
