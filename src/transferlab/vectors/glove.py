"""GloVe: weighted least squares on log co-occurrence counts (Pennington, Socher and Manning 2014,
"GloVe: Global Vectors for Word Representation"), trained with AdaGrad in PyTorch.

The objective over the nonzero cells of the co-occurrence matrix ``X`` is

    J = sum_ij 0.5 * f(X_ij) * (w_i . c_j + bw_i + bc_j - log X_ij)^2,
    f(x) = (x / x_max)^alpha if x < x_max else 1,

with the 0.5 of the reference ``glove.c`` and of mittens (Dingwall and Potts 2018), so that the
gradients carry no factor 2. Each epoch shuffles the nonzero cells (``torch.randperm``) and cuts
them into minibatches; each minibatch computes all four gradients at the current parameters,
sums them per word, and takes one AdaGrad step on the words it touched
(``accum += g^2; p -= lr * g / sqrt(accum)``, the order of mittens). ``batch_size=0`` is the full
batch: one step per epoch over all cells, which is exactly mittens' ``GloVe`` (give it
``adagrad_init=0.1``, mittens' accumulator start; ``glove.c`` starts at 1.0). ``glove.c`` itself
takes one step per cell (Hogwild threads), a minibatch of one, and adds g^2 after its step.

A minibatch is held as two CSR matrices over the words it touches, one by row and one by
column, so the dot products are one sampled matrix product (``sampled_addmm``) and the gradient
sums are two sparse-dense products: no dense ``V x V`` matrix and no per-entry Python. Every
tensor stays on ``cfg.device``, so the same code runs on a GPU. The output is ``W + C``, as in
the paper.
"""

from __future__ import annotations

import sys
import time
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor
from tqdm.auto import tqdm

from transferlab.config import ConfigError
from transferlab.vectors.cooccur import Cooccurrence, count_cooccurrences

__all__ = ["GloVeConfig", "GloVeResult", "fit_corpus", "glove_vocab", "train_glove"]

_PARAMS = ("W", "C", "bw", "bc")


@dataclass(frozen=True)
class GloVeConfig:
    dim: int = 50
    window: int = 10  # co-occurrence window (count_cooccurrences)
    min_count: int = 5  # vocabulary: words seen at least this often (glove_vocab)
    x_max: float = 100.0
    alpha: float = 0.75
    lr: float = 0.05
    epochs: int = 25
    batch_size: int = 65536  # nonzero cells per AdaGrad step; 0 = full batch, one step per epoch
    adagrad_init: float = 1.0  # start of the squared-gradient sums: glove.c 1.0, mittens 0.1
    memory_mb: float = 1024  # working memory of the co-occurrence count
    seed: int = 0
    device: str = "auto"  # "auto" (cuda if available), "cpu", "cuda" or "cuda:N"
    threads: int = 0  # CPU threads; 0 = torch's default

    def __post_init__(self):
        rules = [("dim", self.dim >= 1, ">= 1"), ("window", self.window >= 1, ">= 1"),
                 ("min_count", self.min_count >= 1, ">= 1"), ("x_max", self.x_max > 0, "> 0"),
                 ("alpha", self.alpha >= 0, ">= 0"), ("lr", self.lr > 0, "> 0"),
                 ("epochs", self.epochs >= 1, ">= 1"), ("batch_size", self.batch_size >= 0, ">= 0"),
                 ("adagrad_init", self.adagrad_init > 0, "> 0"), ("memory_mb", self.memory_mb > 0, "> 0"),
                 ("threads", self.threads >= 0, ">= 0")]
        for name, ok, rule in rules:
            if not ok:
                raise ConfigError(f"glove.{name} must be {rule}, got {getattr(self, name)!r}")
        if self.device != "auto":
            try:
                torch.device(self.device)
            except RuntimeError:
                raise ConfigError(f"glove.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', "
                                  f"got {self.device!r}") from None


@dataclass
class GloVeResult:
    """Trained parameters (float32, on the CPU) and the training record.

    ``losses[e]`` is J summed over epoch ``e``'s minibatches, each minibatch's part measured at the
    parameters before its own step (what ``glove.c`` reports, though it divides by the cell
    count). In full-batch mode that is J before the epoch's step: mittens' ``errors[e]``.
    """

    W: np.ndarray  # (V, D) word vectors
    C: np.ndarray  # (V, D) context vectors
    bw: np.ndarray  # (V,)
    bc: np.ndarray  # (V,)
    losses: list[float] = field(default_factory=list)
    seconds_per_epoch: list[float] = field(default_factory=list)

    def vectors(self) -> np.ndarray:
        """W + C: the word representation the paper reports."""
        return self.W + self.C


def glove_vocab(lines: Iterable[str], min_count: int = 5, max_size: int | None = None) -> list[str]:
    """Whitespace-separated words seen ``min_count`` times or more, most frequent first (ties in
    first-occurrence order), at most ``max_size`` of them: ``vocab_count.c``'s vocabulary."""
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(line.split())
    words = [w for w, n in sorted(counts.items(), key=lambda wn: -wn[1]) if n >= min_count]
    if not words:
        raise ValueError(f"glove_vocab: no word occurs min_count={min_count} times in {len(counts)} words")
    return words[:max_size]


def fit_corpus(lines: Iterable[str], cfg: GloVeConfig, progress: bool = True) -> tuple[list[str], GloVeResult]:
    """The whole pipeline on a restartable stream of text lines (read twice): the vocabulary
    (``cfg.min_count``), the co-occurrence counts (``cfg.window``, ``cfg.memory_mb``), training."""
    words = glove_vocab(lines, cfg.min_count)
    stoi = {w: i for i, w in enumerate(words)}
    ids = ([stoi[w] for w in line.split() if w in stoi] for line in lines)
    cooc = count_cooccurrences(ids, len(words), window=cfg.window, memory_mb=cfg.memory_mb, progress=progress)
    return words, train_glove(cooc, cfg, progress=progress)


def train_glove(cooc: Cooccurrence, cfg: GloVeConfig, init: dict[str, np.ndarray] | None = None,
                progress: bool = True) -> GloVeResult:
    """Train on the nonzero cells of ``cooc``; ``init`` (keys W, C, bw, bc) replaces the default
    start, ``glove.c``'s uniform ``(u - 0.5) / dim`` drawn from ``cfg.seed``."""
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    device = torch.device(cfg.device if cfg.device != "auto" else ("cuda" if torch.cuda.is_available() else "cpu"))
    V, D = cooc.vocab_size, cfg.dim
    if cooc.nnz == 0:
        raise ValueError("train_glove: the co-occurrence matrix is empty (nnz 0)")
    keys = cooc.rows.astype(np.int64) * V + cooc.cols
    if not np.all(keys[1:] > keys[:-1]):
        raise ValueError("train_glove: cooc must be sorted by (row, col) without repeats, as "
                         "count_cooccurrences returns it")
    if not np.all(cooc.values > 0):
        raise ValueError("train_glove: cooc.values must be > 0 (only nonzero cells are stored)")
    params = _initial_params(V, D, cfg.seed, init, device)
    accum = {k: torch.full_like(p, cfg.adagrad_init) for k, p in params.items()}
    cells = _cells(cooc, cfg.x_max, cfg.alpha, device)
    nnz = cooc.nnz
    batch = nnz if cfg.batch_size == 0 else min(cfg.batch_size, nnz)
    generator = torch.Generator(device=device).manual_seed(cfg.seed)
    losses, seconds = [], []
    bar = tqdm(range(cfg.epochs), desc="glove", unit="epoch", file=sys.stderr, disable=None if progress else True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        dense = batch >= V  # a batch with as many cells as words touches most of them: see _Batch
        full = _Batch.prepare(cells, None, V, dense) if batch == nnz else None  # the same every epoch
        for _ in bar:
            start = time.perf_counter()
            loss = torch.zeros((), dtype=torch.float64, device=device)
            for part in [full] if full is not None else _minibatches(cells, nnz, batch, V, dense, generator):
                loss += _step(params, accum, part, cfg.lr)
            losses.append(loss.item())  # .item() waits for the device: the timing is honest
            seconds.append(time.perf_counter() - start)
            bar.set_postfix(loss=f"{losses[-1]:.4g}")
    return GloVeResult(*(params[k].cpu().numpy() for k in _PARAMS), losses=losses, seconds_per_epoch=seconds)


def _cells(cooc: Cooccurrence, x_max: float, alpha: float, device) -> Tensor:
    """(nnz, 4) int32: row, col, log X and f(X) (float32 bits) of each cell, packed so that a
    minibatch gathers each cell with one memory access instead of four."""
    x = np.asarray(cooc.values, dtype=np.float64)
    packed = np.empty((len(x), 4), dtype=np.int32)
    packed[:, 0], packed[:, 1] = cooc.rows, cooc.cols
    # both computed in float64 as mittens does, then kept in float32
    packed[:, 2] = np.log(x).astype(np.float32).view(np.int32)
    packed[:, 3] = ((np.minimum(x, x_max) / x_max) ** alpha).astype(np.float32).view(np.int32)
    return torch.from_numpy(packed).to(device)


def _initial_params(V: int, D: int, seed: int, init: dict | None, device) -> dict[str, Tensor]:
    if init is None:
        gen = torch.Generator().manual_seed(seed)  # on the CPU: the same start on every device
        shapes = {"W": (V, D), "C": (V, D), "bw": (V,), "bc": (V,)}
        return {k: ((torch.rand(s, generator=gen) - 0.5) / D).to(device) for k, s in shapes.items()}
    missing = set(_PARAMS) - set(init)
    if missing:
        raise ValueError(f"train_glove: init lacks {sorted(missing)} (needs W, C, bw, bc)")
    out = {}
    for k in _PARAMS:
        value = torch.as_tensor(np.asarray(init[k]), dtype=torch.float32)
        value = value.reshape(-1) if k in ("bw", "bc") else value  # mittens keeps biases as (V, 1)
        want = (V, D) if k in ("W", "C") else (V,)
        if tuple(value.shape) != want:
            raise ValueError(f"train_glove: init[{k!r}] has shape {tuple(value.shape)}, expected {want}")
        out[k] = value.to(device).clone()
    return out


def _minibatches(cells: Tensor, nnz: int, batch: int, V: int, dense: bool,
                 generator: torch.Generator) -> Iterable[_Batch]:
    """A fresh shuffle of the cells into minibatches of ``batch`` (the last one smaller).

    Cell i goes to minibatch ``perm[i] // batch`` (the same partition as slicing a random
    permutation); a stable sort by minibatch keeps each one in (row, col) order, which CSR needs
    and which does not change the step. The sort keys are int16 where they fit: a radix sort.
    """
    perm = torch.randperm(nnz, generator=generator, device=generator.device, dtype=torch.int32)
    n_batches = -(-nnz // batch)
    which = torch.div(perm, batch, rounding_mode="floor").to(torch.int16 if n_batches < 2**15 else torch.int32)
    order = torch.sort(which, stable=True).indices  # (nnz,) the cells, minibatch after minibatch
    for start in range(0, nnz, batch):
        yield _Batch.prepare(cells, order[start:start + batch], V, dense)


@dataclass
class _Batch:
    """B cells as CSR matrices over the rows and the columns they touch.

    Compressed (``row_ids`` and ``col_ids`` given): R touched rows and K touched columns, so a
    step costs O(B + (R + K) D) however large V is. Dense (both None): R = K = V, every row
    updated in place; rows the batch does not touch have a zero gradient and stay exactly as
    they are, so both give the same step. Dense is cheaper when a batch touches most words.
    """

    rows: Tensor  # (B,) word ids, sorted
    cols: Tensor  # (B,) context ids, sorted within each row
    fx: Tensor  # (B,) f(X_ij)
    by_row: Tensor  # CSR (R, K) holding log X_ij, one row per touched word
    row_ids: Tensor | None  # (R,) the touched word ids; None = all V
    row_of: Tensor  # (B,) each cell's row in by_row
    col_ids: Tensor | None  # (K,) the touched context ids; None = all V
    col_of: Tensor  # (B,) each cell's column in by_row
    col_order: Tensor  # (B,) the cells in (col, row) order
    crow_by_col: Tensor  # (K + 1,) CSR row pointers of the transposed batch
    row_by_col: Tensor  # (B,) its column indices: row_of in (col, row) order

    @staticmethod
    def prepare(cells: Tensor, index: Tensor | None, V: int, dense: bool) -> _Batch:
        """``cells`` from ``_cells``; ``index``: the cells' positions, ascending (so rows are
        sorted); None = all cells."""
        packed = cells if index is None else cells.index_select(0, index)  # (B, 4)
        rows, cols = packed[:, 0].long(), packed[:, 1].contiguous()  # cols int32: a faster sort
        logx, fx = (packed[:, k].contiguous().view(torch.float32) for k in (2, 3))
        sorted_cols, col_order = torch.sort(cols, stable=True)  # stable: rows stay sorted per column
        if dense:
            row_ids = col_ids = None
            row_of, col_of = rows, cols.long()
            row_counts, col_counts = torch.bincount(rows, minlength=V), torch.bincount(cols, minlength=V)
        else:
            row_ids, row_counts = torch.unique_consecutive(rows, return_counts=True)
            col_ids, col_counts = torch.unique_consecutive(sorted_cols.long(), return_counts=True)
            row_of = torch.repeat_interleave(torch.arange(len(row_ids), device=rows.device), row_counts)
            col_of = torch.empty_like(rows)
            col_of.index_copy_(0, col_order, torch.repeat_interleave(torch.arange(len(col_ids), device=cols.device),
                                                                     col_counts))
        by_row = torch.sparse_csr_tensor(_pointers(row_counts), col_of, logx, (len(row_counts), len(col_counts)),
                                         check_invariants=False)
        return _Batch(rows, cols, fx, by_row, row_ids, row_of, col_ids, col_of, col_order, _pointers(col_counts),
                      row_of.index_select(0, col_order))


def _pointers(counts: Tensor) -> Tensor:
    out = torch.zeros(len(counts) + 1, dtype=torch.int64, device=counts.device)
    torch.cumsum(counts, 0, out=out[1:])
    return out


def _step(params: dict[str, Tensor], accum: dict[str, Tensor], batch: _Batch, lr: float) -> Tensor:
    """One AdaGrad step on ``batch``; returns its loss (float64) at the parameters before it."""
    W, C, bw, bc = (params[k] for k in _PARAMS)
    W_u = W if batch.row_ids is None else W.index_select(0, batch.row_ids)  # (R, D)
    C_u = C if batch.col_ids is None else C.index_select(0, batch.col_ids)  # (K, D)
    # w_i . c_j - log X_ij on the batch's cells, in CSR order: (B,)
    pred = torch.sparse.sampled_addmm(batch.by_row, W_u, C_u.t(), beta=-1.0).values()
    diff = pred + bw.index_select(0, batch.rows) + bc.index_select(0, batch.cols)
    fdiff = batch.fx * diff  # (B,)
    loss = 0.5 * torch.dot(fdiff, diff).double()
    R, K = len(W_u), len(C_u)
    by_row = torch.sparse_csr_tensor(batch.by_row.crow_indices(), batch.col_of, fdiff, (R, K), check_invariants=False)
    by_col = torch.sparse_csr_tensor(batch.crow_by_col, batch.row_by_col, fdiff.index_select(0, batch.col_order),
                                     (K, R), check_invariants=False)
    grads = {"W": by_row @ C_u,  # (R, D): sum_j fdiff_ij c_j
             "C": by_col @ W_u,  # (K, D): sum_i fdiff_ij w_i
             "bw": torch.zeros(R, device=W.device).index_add_(0, batch.row_of, fdiff),
             "bc": torch.zeros(K, device=W.device).index_add_(0, batch.col_of, fdiff)}
    for k in _PARAMS:  # every gradient above was taken before any parameter moves
        ids = batch.row_ids if k in ("W", "bw") else batch.col_ids
        _adagrad(params[k], accum[k], ids, grads[k], lr)
    return loss


def _adagrad(param: Tensor, accum: Tensor, ids: Tensor | None, grad: Tensor, lr: float) -> None:
    """accum[ids] += g^2; param[ids] -= lr * g / sqrt(accum[ids]) (``ids`` unique; None = all)."""
    if ids is None:
        accum.addcmul_(grad, grad)
        param.addcdiv_(grad, accum.sqrt(), value=-lr)
        return
    acc = accum.index_select(0, ids).addcmul_(grad, grad)
    accum.index_copy_(0, ids, acc)
    param.index_add_(0, ids, grad.div_(acc.sqrt_()), alpha=-lr)
