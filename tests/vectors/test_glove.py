"""GloVe training: parity with mittens' numpy GloVe, exact AdaGrad steps, learning, config."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from transferlab.config import ConfigError
from transferlab.vectors import glove
from transferlab.vectors.cooccur import Cooccurrence, count_cooccurrences
from transferlab.vectors.glove import GloVeConfig, fit_corpus, glove_vocab, train_glove


def random_counts(V: int = 30, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.poisson(3, (V, V)) * rng.random((V, V)) * 40  # some cells above x_max, most below
    X[rng.random((V, V)) < 0.4] = 0
    X[5, :] = 0  # a word that never occurs as a word: its row must not move
    return X


def random_init(V: int, D: int, seed: int = 1) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"W": rng.uniform(-0.5, 0.5, (V, D)), "C": rng.uniform(-0.5, 0.5, (V, D)),
            "bw": rng.uniform(-0.5, 0.5, (V, 1)), "bc": rng.uniform(-0.5, 0.5, (V, 1))}


def test_full_batch_matches_mittens():
    from mittens.np_mittens import GloVe

    V, D, iters, lr, x_max = 30, 8, 20, 0.05, 10.0
    X, init = random_counts(V), random_init(V, D)
    ref = GloVe(n=D, max_iter=iters, learning_rate=lr, xmax=x_max, alpha=0.75, display_progress=0, test_mode=True)
    ref_vectors = ref.fit(X, fixed_initialization={k: v.copy() for k, v in init.items()})
    cfg = GloVeConfig(dim=D, epochs=iters, batch_size=0, adagrad_init=0.1, lr=lr, x_max=x_max, device="cpu")
    ours = train_glove(Cooccurrence.from_dense(X), cfg, init=init, progress=False)
    assert len(ours.losses) == iters
    np.testing.assert_allclose(ours.losses, ref.errors, rtol=1e-4)
    assert ours.losses[-1] < 0.5 * ours.losses[0], "the trajectory compared must be one that moves"
    np.testing.assert_allclose(ours.vectors(), ref_vectors, atol=1e-4)
    np.testing.assert_allclose(ours.W, ref.W, atol=1e-4)
    np.testing.assert_allclose(ours.bc, ref.bc.ravel(), atol=1e-4)
    np.testing.assert_array_equal(ours.W[5], init["W"][5].astype(np.float32))


@pytest.mark.parametrize("dense", [True, False])
def test_minibatch_step_is_adagrad_on_the_exact_gradient(dense):
    """One step on a random subset of cells against autograd on J restricted to those cells."""
    V, D, lr, a0 = 40, 6, 0.1, 0.3
    cooc = Cooccurrence.from_dense(random_counts(V, seed=2))
    x = torch.from_numpy(cooc.values)
    cells = glove._cells(cooc, 10.0, 0.75, "cpu")
    index = torch.randperm(cooc.nnz, generator=torch.Generator().manual_seed(0))[:57].sort().values
    start = {k: torch.as_tensor(v, dtype=torch.float32).reshape(V, -1).squeeze(1) for k, v in random_init(V, D).items()}
    params = {k: v.clone() for k, v in start.items()}
    accum = {k: torch.full_like(v, a0) for k, v in start.items()}
    loss = glove._step(params, accum, glove._Batch.prepare(cells, index, V, dense), lr)

    ref = {k: v.double().requires_grad_() for k, v in start.items()}
    r, c = torch.from_numpy(cooc.rows).long()[index], torch.from_numpy(cooc.cols).long()[index]
    diff = (ref["W"][r] * ref["C"][c]).sum(1) + ref["bw"][r] + ref["bc"][c] - x.log()[index]
    fx = (x.clamp(max=10.0) / 10.0).pow(0.75)[index]
    J = 0.5 * (fx * diff**2).sum()
    J.backward()
    assert loss.item() == pytest.approx(J.item(), rel=1e-5)
    for k in glove._PARAMS:
        g = ref[k].grad
        want = ref[k].detach() - lr * g / torch.sqrt(a0 + g**2)
        torch.testing.assert_close(params[k].double(), want, rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(accum[k].double(), a0 + g**2, rtol=1e-5, atol=1e-6)
    untouched = sorted(set(range(V)) - set(r.tolist()))
    assert untouched and torch.equal(params["W"][untouched], start["W"][untouched])


def clustered_corpus(seed: int = 0) -> list[list[int]]:
    """Two groups of words, 0-5 and 6-11, that share sentences only with their own group."""
    rng = np.random.default_rng(seed)
    return [(rng.choice(6, size=8) + 6 * (i % 2)).tolist() for i in range(300)]


def test_minibatch_training_overfits_a_tiny_matrix():
    cooc = count_cooccurrences(clustered_corpus(), 12, window=3, progress=False)
    cfg = GloVeConfig(dim=10, epochs=60, batch_size=16, lr=0.1, x_max=10.0, device="cpu")
    result = train_glove(cooc, cfg, progress=False)
    assert len(result.losses) == 60 and len(result.seconds_per_epoch) == 60
    assert result.losses[-1] < result.losses[0] / 50
    v = result.vectors()
    assert v.shape == (12, 10) and v.dtype == np.float32
    dots = v @ v.T
    same = (np.arange(12)[:, None] // 6) == (np.arange(12)[None, :] // 6)
    off_diagonal = ~np.eye(12, dtype=bool)
    assert dots[same & off_diagonal].min() > dots[~same].max()


def test_compressed_and_dense_batches_train_the_same(monkeypatch):
    # batch_size < V uses the compressed batches, >= V the dense ones; the steps are the same
    cooc = Cooccurrence.from_dense(random_counts(40, seed=3))
    cfg = GloVeConfig(dim=5, epochs=3, batch_size=32, device="cpu")
    compressed = train_glove(cooc, cfg, progress=False)
    original = glove._Batch.prepare
    always_dense = staticmethod(lambda cells, index, V, dense: original(cells, index, V, True))
    monkeypatch.setattr(glove._Batch, "prepare", always_dense)
    dense = train_glove(cooc, cfg, progress=False)
    np.testing.assert_allclose(dense.losses, compressed.losses, rtol=1e-5)
    np.testing.assert_allclose(dense.vectors(), compressed.vectors(), atol=1e-5)


def test_seed_determines_the_run():
    cooc = Cooccurrence.from_dense(random_counts(20))
    cfg = GloVeConfig(dim=4, epochs=3, batch_size=50, device="cpu")
    a, b = train_glove(cooc, cfg, progress=False), train_glove(cooc, cfg, progress=False)
    np.testing.assert_array_equal(a.vectors(), b.vectors())
    assert a.losses == b.losses
    c = train_glove(cooc, GloVeConfig(dim=4, epochs=3, batch_size=50, seed=1, device="cpu"), progress=False)
    assert not np.allclose(a.vectors(), c.vectors())
    # glove.c's start: uniform in [-0.5, 0.5) / dim
    start = train_glove(cooc, GloVeConfig(dim=4, epochs=1, lr=1e-12, device="cpu"), progress=False)
    assert np.abs(start.W).max() <= 0.125 and np.abs(start.bw).max() <= 0.125


@pytest.mark.parametrize("field, value, message", [
    ("x_max", -1, "glove.x_max must be > 0, got -1"), ("dim", 0, "glove.dim must be >= 1"),
    ("batch_size", -5, "glove.batch_size must be >= 0"), ("adagrad_init", 0.0, "glove.adagrad_init must be > 0"),
    ("lr", 0, "glove.lr must be > 0"), ("epochs", 0, "glove.epochs must be >= 1"),
    ("device", "gpu-please", "glove.device must be"),
])
def test_config_validation(field, value, message):
    with pytest.raises(ConfigError, match=message):
        GloVeConfig(**{field: value})


def test_bad_inputs_are_refused():
    cooc = Cooccurrence.from_dense(random_counts(10))
    with pytest.raises(ValueError, match=r"init\['W'\] has shape"):
        train_glove(cooc, GloVeConfig(dim=3, epochs=1), init=random_init(10, 4), progress=False)
    with pytest.raises(ValueError, match="lacks"):
        train_glove(cooc, GloVeConfig(dim=3, epochs=1), init={"W": np.zeros((10, 3))}, progress=False)
    shuffled = Cooccurrence(cooc.rows[::-1].copy(), cooc.cols[::-1].copy(), cooc.values[::-1].copy(), 10)
    with pytest.raises(ValueError, match="sorted"):
        train_glove(shuffled, GloVeConfig(epochs=1), progress=False)


def test_fit_corpus_end_to_end():
    lines = ["the cat sat on the mat", "the dog sat on the log", "a cat and a dog", "rare"] * 5
    assert glove_vocab(lines, min_count=5)[:3] == ["the", "cat", "sat"]  # ties in first-occurrence order
    assert "rare" not in glove_vocab(lines, min_count=6)
    cfg = GloVeConfig(dim=4, epochs=5, min_count=5, window=2, batch_size=0, device="cpu")
    words, result = fit_corpus(lines, cfg, progress=False)
    assert words == glove_vocab(lines, 5)
    assert result.vectors().shape == (len(words), 4)
    assert result.losses[-1] < result.losses[0]


@pytest.mark.gpu
def test_cuda_matches_cpu():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    cooc = count_cooccurrences(clustered_corpus(), 12, window=3, progress=False)
    for batch_size in (0, 16, 4096):
        cpu = train_glove(cooc, GloVeConfig(dim=8, epochs=5, batch_size=batch_size, device="cpu"), progress=False)
        gpu = train_glove(cooc, GloVeConfig(dim=8, epochs=5, batch_size=batch_size, device="cuda"), progress=False)
        if batch_size == 0:  # no shuffle: the same steps
            np.testing.assert_allclose(gpu.losses, cpu.losses, rtol=1e-4)
            np.testing.assert_allclose(gpu.vectors(), cpu.vectors(), atol=1e-4)
        assert gpu.losses[-1] < gpu.losses[0]
