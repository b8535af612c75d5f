"""``transferlab curve``: learning curves, every method at every number of labels, and the
sample efficiency they show (ULMFiT, Howard & Ruder 2018, figure 3).

    transferlab curve --task sst2 --sizes 50,100,200,500,1000,2000,all --seeds 3 \\
        --methods scratch,glove,features,ulmfit,minilm

Each method (a table of finetune overrides in ``configs/curve_methods.toml``, or the user's
``--methods-file``) is trained at each size and seed on nested random subsets of the training
set (seed s's 100 examples are inside its 200: :func:`~transferlab.data.tasks.nested_subset`)
and scored on the same test set. A cell is one ``finetune`` run in ``OUT/cells/METHOD-SIZE-SEED``;
its row goes to ``OUT/curve.jsonl`` as soon as it ends, so an interrupted curve resumes where it
stopped (a half-written row is detected and its cell run again; a cell interrupted mid-training
resumes from its checkpoint). The ULMFiT methods share one target-task LM fine-tuning per
curve (``OUT/lm-finetuned-HASH``, one per distinct LM-stage setting); without ``--lm`` a small
PTB language model is pretrained first (``OUT/lm-ptb``, the demo's). Their rows carry the
identity of the pretrained LM's recipe (:func:`lm_identity`), so a curve resumed with another
``--lm`` runs those cells again instead of mixing two language models in one line.

Writes ``OUT/curve.png`` (score against labels, log scale, mean and ±1 std band per method),
``OUT/curve.md`` (the table) and ``OUT/summary.json`` (means, standard deviations, the
sample-efficiency summary: for each method the smallest size at which it reaches what
``scratch`` reaches with all labels, and how many times fewer labels that is).

How long a curve takes (about 45 minutes up to 2,000 labels on SST-2 on 2 CPU cores, hours with
all labels) is measured in ``benchmarks/RESULTS.md`` (the SST-2 learning curve section). Leave
``all`` out of ``--sizes`` for a curve in about an hour; ``--preset tiny`` makes the AWD-LSTM
cells seconds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import shutil
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from transferlab.config import (
    PRESET_DIR,
    ConfigError,
    load_config,
    merge,
    parse_override,
    read_toml,
    to_dict,
    write_json,
)
from transferlab.data.tasks import TaskDataConfig, load_task
from transferlab.encoders.backbone import family
from transferlab.eval import curves
from transferlab.log import log
from transferlab.recipes import finetune
from transferlab.tasks.model import main_metric

METHODS_FILE = PRESET_DIR / "curve_methods.toml"
LM_PLACEHOLDER = "{lm}"
MLM_PLACEHOLDER = "{mlm}"
_PER_CELL = ("train_size", "subset_seed")  # data fields the curve sets for each cell


@dataclass(frozen=True)
class CurveConfig:
    data: TaskDataConfig = field(default_factory=TaskDataConfig)  # the task, as for finetune
    sizes: str = "50,100,200,500,1000,2000,all"  # label counts; all = the whole training set
    seeds: int = 3  # subset (and training) seeds 0 .. seeds-1
    methods: str = "scratch,glove,features,ulmfit,minilm"  # tables of configs/curve_methods.toml
    methods_file: str = ""  # a TOML of more methods (or changes to the packaged ones)
    preset: str = "small"  # the finetune preset of every method that does not name its own
    reference: str = "scratch"  # sample efficiency: what this method reaches with all labels
    min_steps: int = 200  # optimizer steps a cell trains at least (more epochs on few labels); 0 = off
    lm: str = ""  # a `pretrain lm` checkpoint for "{lm}"; "" = pretrain one on PTB in OUT/lm-ptb
    mlm: str = ""  # a `pretrain mlm` checkpoint for "{mlm}" (the mlm method); needed by methods that name it
    # report only, where --lm's checkpoint is not on this machine and the record holds cells of several
    # LMs: the recorded id (a row's lm_id) of the one whose cells to report
    lm_id: str = ""
    finetune: tuple[str, ...] = ()  # finetune overrides for every method ("train.threads=2")
    out: str = "runs/curve"
    record: str = ""  # the JSONL of finished cells; "" = OUT/curve.jsonl (elsewhere: kept apart from OUT)
    keep_checkpoints: bool = False  # else each cell keeps only its results.json and logs
    report_only: bool = False  # train nothing: the chart, table and summary of the cells recorded so far
    progress: bool = True

    def __post_init__(self):
        curves.parse_sizes(self.sizes)
        if self.seeds < 1:
            raise ValueError(f"seeds must be >= 1, got {self.seeds}")
        if self.lm_id and not self.report_only:
            raise ConfigError("lm_id picks recorded cells for --report-only; a curve that trains identifies its LM "
                              "by the --lm checkpoint's config")
        if self.min_steps < 0:
            raise ValueError(f"min_steps must be >= 0, got {self.min_steps}")
        names = method_names(self.methods)
        if len(set(names)) != len(names):
            raise ValueError(f"methods: {self.methods!r} names a method twice")
        for name in _PER_CELL:
            if getattr(self.data, name):
                raise ValueError(f"data.{name} is set for each cell by --sizes and --seeds; leave it out")
        for flag in self.finetune:
            parse_override(flag)


def method_names(text: str) -> list[str]:
    names = [m.strip() for m in text.split(",") if m.strip()]
    if not names:
        raise ValueError("methods: name at least one method, e.g. scratch,ulmfit")
    bad = [m for m in names if not re.fullmatch(r"[A-Za-z0-9_.-]+", m)]
    if bad:
        raise ValueError(f"methods: {bad[0]!r} is not a method name (letters, digits, _ . -)")
    return names


# --- methods -------------------------------------------------------------------------------------

def _nest(table: dict) -> dict:
    """Dotted keys ("train.epochs" = 3) and nested tables ([m.train]) -> one nested dict."""
    out: dict = {}
    for key, value in table.items():
        if isinstance(value, dict):
            value = _nest(value)
        first, *rest = key.split(".")
        for part in reversed(rest):
            value = {part: value}
        out = merge(out, {first: value})
    return out


def _flatten(table: dict, prefix: str = "") -> list[str]:
    """A nested dict -> dotted overrides with TOML-readable (JSON) values."""
    out = []
    for key, value in table.items():
        if isinstance(value, dict):
            out += _flatten(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}={json.dumps(value)}")
    return out


def load_methods(cfg: CurveConfig) -> dict[str, dict]:
    """The chosen methods, each a nested dict of finetune overrides (and maybe ``preset``): the
    packaged table, with ``--methods-file`` merged over it method by method."""
    tables = {name: _nest(m) for name, m in read_toml(METHODS_FILE).items()}
    if cfg.methods_file:
        for name, m in read_toml(cfg.methods_file).items():
            if not isinstance(m, dict):
                raise ConfigError(f"{cfg.methods_file}: {name} must be a table of finetune overrides, got {m!r}")
            tables[name] = merge(tables.get(name, {}), _nest(m))
    names = method_names(cfg.methods)
    unknown = [n for n in names if n not in tables]
    if unknown:
        raise ConfigError(f"--methods: unknown method {unknown[0]!r} (known: {', '.join(tables)}; "
                          f"add your own with --methods-file)")
    for name in names:
        preset = tables[name].get("preset", "")
        if not isinstance(preset, str):
            raise ConfigError(f"method {name}: preset must be a preset name or a .toml path, got {preset!r}")
    return {name: tables[name] for name in names}


def _fill(value, lm: str, mlm: str):
    if isinstance(value, dict):
        return {k: _fill(v, lm, mlm) for k, v in value.items()}
    return value.replace(LM_PLACEHOLDER, lm).replace(MLM_PLACEHOLDER, mlm) if isinstance(value, str) else value


def needs_lm(method: dict) -> bool:
    return LM_PLACEHOLDER in json.dumps(method)


def needs_mlm(method: dict) -> bool:
    return MLM_PLACEHOLDER in json.dumps(method)


def _data_overrides(data: TaskDataConfig) -> list[str]:
    """The curve's data settings that differ from the defaults, for every method's config."""
    default = TaskDataConfig()
    return [f"data.{f.name}={json.dumps(getattr(data, f.name))}" for f in dataclasses.fields(data)
            if f.name not in _PER_CELL and getattr(data, f.name) != getattr(default, f.name)]


def _lm_stage_folder(cfg: CurveConfig, ft: finetune.FinetuneConfig) -> Path:
    """One target-task LM fine-tuning per distinct LM stage (pretrained LM, its settings, the
    task's text); the labeled subset does not enter it, so every size and seed shares it."""
    data = {k: v for k, v in to_dict(ft.data).items()
            if k not in (*_PER_CELL, "batch_size", "eval_batch_size", "max_len")}
    # eval_batch_size changes no weights (and folders named before it existed stay valid)
    lm = {k: v for k, v in to_dict(ft.lm_finetune).items() if k != "eval_batch_size"} | {"out": ""}
    key = json.dumps([str(Path(ft.pretrained).resolve()), lm, to_dict(ft.text), data], sort_keys=True)
    return Path(cfg.out) / f"lm-finetuned-{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def cell_config(cfg: CurveConfig, name: str, method: dict, size: int, seed: int, lm: str) -> finetune.FinetuneConfig:
    """Family defaults, then the method's preset, then its overrides, the curve's data and
    finetune overrides, then the cell's size, seed and folder (``OUT/cells/METHOD-SIZE-SEED``)."""
    method = _fill(dict(method), lm, cfg.mlm or MLM_PLACEHOLDER)
    preset = method.pop("preset", cfg.preset) or None
    # step logs off (the curve's bar shows progress) unless the method or the user turns them on
    overrides = ["train.log_every=0", *_flatten(method), *_data_overrides(cfg.data), *cfg.finetune]
    cell = Path(cfg.out) / "cells" / f"{name}-{size}-{seed}"
    overrides += [f"data.train_size={size}", f"data.subset_seed={seed}", f"train.seed={seed}",
                  f"out={json.dumps(str(cell))}", "train.progress=false", "lm_finetune.train.progress=false"]
    try:
        ft = finetune.load_finetune_config(preset, overrides)
    except ConfigError as e:
        raise ConfigError(f"method {name}: {e}") from None
    if ft.pretrained and family(ft.encoder) == "awd_lstm" and not ft.lm_finetune.out:
        ft = dataclasses.replace(ft, lm_finetune=dataclasses.replace(ft.lm_finetune,
                                                                     out=str(_lm_stage_folder(cfg, ft))))
    return dataclasses.replace(ft, train=at_least(ft.train, size, ft.data.batch_size, cfg.min_steps))


def at_least(train, size: int, batch_size: int, min_steps: int):
    """The cell's training, lengthened to ``min_steps`` optimizer steps where its epochs of
    ``size`` examples give fewer. A recipe's epochs are sized for thousands of labels: 3 epochs
    of 100 examples are 9 steps of BERT fine-tuning, which leaves the model where it started, and
    a curve would then measure the step count rather than the labels. Few-sample fine-tuning
    trains longer (Mosbach et al. 2021, "On the Stability of Fine-tuning BERT"; Zhang et al. 2021,
    "Revisiting Few-sample BERT Fine-tuning"), every method alike here. The epochs grow, so
    epoch-based recipes (gradual unfreezing, the schedules over all steps) keep their shape;
    evaluation (which keeps the best checkpoint) stays at the recipe's count of evaluations,
    spread over the longer run (and checkpoints with them). A fixed ``train.steps`` is left alone."""
    # batches per epoch as finetune makes them: the last partial batch dropped when there are more
    n_batches = size // batch_size if size > batch_size else 1
    steps_per_epoch = math.ceil(n_batches / train.grad_accum)
    if not min_steps or train.steps or train.epochs * steps_per_epoch >= min_steps:
        return train
    epochs = math.ceil(min_steps / steps_per_epoch)
    evals = train.epochs if not train.eval_every else math.ceil(train.epochs * steps_per_epoch / train.eval_every)
    every = math.ceil(epochs * steps_per_epoch / evals)
    # checkpoints with the evaluations, not at each of the many short epochs
    return dataclasses.replace(train, epochs=epochs, eval_every=every, save_every=train.save_every or every)


def _check_lm(cfg: CurveConfig) -> None:
    if cfg.lm and not Path(cfg.lm).is_dir():
        raise FileNotFoundError(f"--lm {cfg.lm}: no such checkpoint folder (a `transferlab pretrain lm` "
                                f"output, e.g. runs/lm/best)")


def _own_lm_config(cfg: CurveConfig):
    """The config of the PTB language model the curve pretrains when no ``--lm`` is given."""
    from transferlab.recipes import pretrain_lm

    out = Path(cfg.out) / "lm-ptb"
    return load_config(pretrain_lm.PretrainLMConfig, "tiny" if cfg.preset == "tiny" else "demo",
                       [f"out={json.dumps(str(out))}", "train.progress=false"], kind="lm")


def pretrained_lm(cfg: CurveConfig) -> str:
    """The curve's ``--lm``, or a PTB language model pretrained like the demo's (reused)."""
    from transferlab.recipes import pretrain_lm

    if cfg.lm:
        _check_lm(cfg)
        return cfg.lm
    own = _own_lm_config(cfg)
    return str(pretrain_lm.reuse_or_run(own, "PTB language model", f"no --lm given: pretraining an AWD-LSTM "
                                                                    f"language model on PTB into {own.out}"))


# Settings that change where or how visibly a model trains, not the model.
_NOT_THE_MODEL = {"out", "progress", "log_every", "threads", "device", "save_every"}


def _model_settings(config):
    if isinstance(config, dict):
        return {k: _model_settings(v) for k, v in config.items() if k not in _NOT_THE_MODEL}
    return config


def lm_identity(cfg: CurveConfig) -> str:
    """What makes two language models the same LM for the curve's record: the resolved config
    they were pretrained with (corpus, sizes, steps, seed...), as a short digest. The weights
    cannot be the key: one recipe run on two machines differs in its last bits (bf16 or fp32,
    the CPU's kernels), and a curve resumed on another machine must not rerun every cell for
    that. A different recipe or corpus is a different LM, and its cells run again."""
    if cfg.lm:
        _check_lm(cfg)
        path = Path(cfg.lm) / "config.json"
        if not path.is_file():
            raise FileNotFoundError(f"--lm {cfg.lm}: no config.json; is it a `transferlab pretrain lm` checkpoint?")
        config = json.loads(path.read_text(encoding="utf-8"))
    else:
        config = to_dict(_own_lm_config(cfg))
    digest = json.dumps(_model_settings(config), sort_keys=True)
    return hashlib.sha1(digest.encode()).hexdigest()[:12]


# --- the curve -----------------------------------------------------------------------------------

def task_name(data: TaskDataConfig) -> str:
    return data.train or data.task


def _clear_checkpoints(folder: Path) -> None:
    for sub in folder.iterdir():
        if sub.is_dir():
            shutil.rmtree(sub)


def run_cell(cfg: CurveConfig, ft: finetune.FinetuneConfig, name: str, size: int, seed: int) -> dict:
    summary = finetune.run(ft)
    test = {k.removeprefix("test_"): v for k, v in summary.items() if k.startswith("test_")}
    metric = main_metric(summary["kind"], test)
    return {"method": name, "size": size, "seed": seed, "metric": metric, "score": float(test[metric]),
            "wall_s": summary["wall_s"], "train_size": summary["train_size"], "task": task_name(cfg.data)}


def recorded_lm_id(rows: list[dict], methods: dict[str, dict], lm: str) -> str | None:
    """For ``--report-only`` when the ``--lm`` folder is not on this machine (a fresh checkout
    keeps the committed record, not the checkpoint): the one LM the recorded cells were run from.
    Cells of several LMs cannot be told apart without the checkpoint's config, and are refused."""
    cells = Counter(r["lm_id"] for r in rows if r["method"] in methods and needs_lm(methods[r["method"]])
                    and "lm_id" in r)
    ids = sorted(cells)
    if len(ids) > 1:
        raise ConfigError(f"--lm {lm}: no checkpoint here, and the record holds cells of {len(ids)} language "
                          f"models ({', '.join(f'{i}: {cells[i]} cells' for i in ids)}); give --lm the "
                          f"checkpoint folder the cells were run from, or --lm_id=ID to report one of them")
    if ids:
        log(f"report only: --lm {lm} is not here; reporting the cells of the one language "
            f"model recorded (id {ids[0]})")
    return ids[0] if ids else None


def mlm_id(mlm: str) -> str:
    return str(Path(mlm).resolve()) if mlm else ""


def _current(row: dict, methods: dict[str, dict], lm_id: str | None, cfg_mlm: str = "") -> bool:
    """Whether a recorded row still stands: a method that starts from the curve's LM (or masked LM)
    must have been run from this one (rows from another stay in the file, left out of this curve)."""
    method = methods.get(row["method"])
    if method is not None and needs_mlm(method) and row.get("mlm") != mlm_id(cfg_mlm):
        return False
    return method is None or not needs_lm(method) or row.get("lm_id") == lm_id


def _describe(cells: list[tuple[str, int, int]]) -> str:
    """Cells grouped by method and size: "minilm 60,614 (seeds 1, 2); ulmfit 2,000 (seed 2)"."""
    seeds: dict[tuple[str, int], list[int]] = {}
    for method, size, seed in cells:
        seeds.setdefault((method, size), []).append(seed)
    return "; ".join(f"{m} {size:,} (seed{'s' if len(s) > 1 else ''} {', '.join(map(str, s))})"
                     for (m, size), s in seeds.items())


def run(cfg: CurveConfig) -> dict:
    from tqdm import tqdm

    start = time.perf_counter()
    out = Path(cfg.out)
    methods = load_methods(cfg)
    for m in methods:  # a bad method config fails now, not hours into the curve
        cell_config(cfg, m, methods[m], 1, 0, cfg.lm or LM_PLACEHOLDER)
        if needs_mlm(methods[m]) and not (cfg.mlm and (cfg.report_only or Path(cfg.mlm).is_dir())):
            raise ConfigError(f"method {m} starts from a masked LM: pass --mlm, a `transferlab pretrain mlm` "
                              f"checkpoint folder (`transferlab pretrain mlm --budget 1h`), not {cfg.mlm!r}")
    if not cfg.report_only:
        _check_lm(cfg)
    n_train = len(load_task(cfg.data)["train"])
    sizes, notes = curves.resolve_sizes(cfg.sizes, n_train)
    for note in notes:
        log(note)
    record = curves.CurveLog.open(Path(cfg.record) if cfg.record else out / "curve.jsonl",
                                  repair=not cfg.report_only)
    for note in record.dropped:
        log(note)
    other = {r.get("task") for r in record.rows} - {task_name(cfg.data)}
    if other:
        raise ValueError(f"{record.path} holds a curve of {', '.join(map(str, sorted(other)))}, not "
                         f"{task_name(cfg.data)}: give this curve its own --out")

    grid = [(m, size, seed) for size in sizes for seed in range(cfg.seeds) for m in methods]
    lm_id = None
    if any(needs_lm(m) for m in methods.values()):
        missing = cfg.report_only and cfg.lm and not Path(cfg.lm).is_dir()
        lm_id = cfg.lm_id or (recorded_lm_id(record.rows, methods, cfg.lm) if missing else lm_identity(cfg))
    current = [r for r in record.rows if _current(r, methods, lm_id, cfg.mlm)]
    stale = {curves.row_key(r) for r in record.rows if not _current(r, methods, lm_id, cfg.mlm)} & set(grid)
    if stale:
        notes.append(f"{len(stale)} cell(s) recorded from another language model than this one (LM id {lm_id}) "
                     f"are left out of the curve and run again")
        log(notes[-1])
    done = {curves.row_key(r) for r in current}
    todo = [c for c in grid if c not in done]
    log(f"curve of {task_name(cfg.data)} ({n_train:,} training examples): {len(methods)} methods x "
        f"{len(sizes)} sizes x {cfg.seeds} seeds = {len(grid)} cells, {len(grid) - len(todo)} already done")
    if cfg.report_only:
        if todo:
            notes.append(f"report only: {len(grid) - len(todo)} of {len(grid)} cells recorded; not yet run: "
                         f"{_describe(todo)}")
            log(notes[-1])
        todo = []
    lm = pretrained_lm(cfg) if any(needs_lm(methods[m]) for m, _, _ in todo) else cfg.lm
    bar = tqdm(total=len(grid), initial=len(grid) - len(todo), desc="curve", unit=" cell",
               disable=not cfg.progress or cfg.report_only, file=sys.stderr, dynamic_ncols=True)
    for name, size, seed in todo:
        bar.set_postfix_str(f"{name} {size:,} labels seed {seed}")
        ft = cell_config(cfg, name, methods[name], size, seed, lm)
        row = run_cell(cfg, ft, name, size, seed)
        if needs_lm(methods[name]):
            row["lm_id"] = lm_id
        if needs_mlm(methods[name]):
            row["mlm"] = mlm_id(cfg.mlm)
        record.append(row)
        current.append(row)
        if not cfg.keep_checkpoints:
            _clear_checkpoints(Path(ft.out))
        bar.update(1)
    bar.close()
    cells = set(grid)
    rows = [r for r in current if curves.row_key(r) in cells]
    return report(cfg, rows, list(methods), sizes, n_train, notes + record.dropped, time.perf_counter() - start)


def report(cfg: CurveConfig, rows: list[dict], methods: list[str], sizes: list[int], n_train: int,
           notes: list[str], wall_s: float) -> dict:
    """The PNG, the table and ``summary.json`` from the recorded rows."""
    out = Path(cfg.out)
    agg_all = curves.aggregate(rows)
    agg = {m: agg_all[m] for m in methods if m in agg_all}
    metric = rows[0]["metric"] if rows else "score"
    efficiency = curves.sample_efficiency(agg, cfg.reference) if cfg.reference in agg else None
    if efficiency is None:
        notes = notes + [f"no sample-efficiency summary: the reference method {cfg.reference!r} is not in "
                         f"--methods (set --reference to another)"]
        log(notes[-1])
    task = task_name(cfg.data)
    spread = f"{cfg.seeds} seeds, mean ± 1 std" if cfg.seeds > 1 else "one seed"
    png = curves.plot_curves(agg, out / "curve.png", metric, title=f"{task}: learning curves ({spread})",
                             efficiency=efficiency)
    table = curves.format_table(agg, metric, efficiency, full_size=n_train)
    (out / "curve.md").write_text(table + "\n", encoding="utf-8")
    print(f"\n{task}: test {metric} by number of labels\n\n{table}\n")
    if efficiency is not None:
        ref = efficiency
        print(f"{ref['reference']} with {ref['reference_size']:,} labels: {metric} {ref['reference_score']:.4f}")
        for m, e in ref["methods"].items():
            print(f"  {m:<12} " + ("never reaches it" if e["reaches_at"] is None else
                                   f"reaches it with {e['reaches_at']:,} labels: "
                                   f"{e['label_savings']:.1f}x fewer"))
    print(f"chart: {png}")
    summary = {"task": task, "metric": metric, "n_train": n_train, "sizes": sizes,
               "seeds": cfg.seeds, "methods": methods, "preset": cfg.preset, "notes": notes,
               "curve": {m: {str(size): s for size, s in by_size.items()} for m, by_size in agg.items()},
               "efficiency": efficiency, "figures": curves.curve_figures(agg, efficiency, metric, n_train),
               "png": str(png), "table": str(out / "curve.md"), "rows": len(rows), "wall_s": wall_s,
               "cells_train_s": sum(float(r.get("wall_s", 0.0)) for r in rows),
               "config": to_dict(cfg)}
    write_json(summary, out / "summary.json")
    return summary
