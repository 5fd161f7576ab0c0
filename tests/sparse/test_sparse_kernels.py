"""The sparse CPU kernels (kernels/cpu/sparse.py) against NumPy: serial and parallel
variants, float32 and float64, empty rows; every kernel caches on disk (cache=True)."""
import numpy as np
import pytest

from nbtorch.kernels.cpu import sparse as K


def _random_csr(rng, n, m, nnz):
    keys = np.unique(rng.integers(0, n * m, nnz))
    rows, cols = keys // m, keys % m
    crow = np.empty(n + 1, np.int64)
    K.row_pointers(rows, n, crow)
    return rows, cols, crow


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("variant", ["serial", "parallel"])
def test_csr_mm_and_sampled_dot(dtype, variant):
    rng = np.random.default_rng(0)
    n, m, p = 37, 23, 5
    rows, cols, crow = _random_csr(rng, n, m, 200)
    vals = rng.standard_normal(rows.size).astype(dtype)
    dense = rng.standard_normal((m, p)).astype(dtype)
    A = np.zeros((n, m), dtype)
    A[rows, cols] = vals
    out = np.zeros((n, p), dtype)
    getattr(K, f"csr_mm_{variant}")(crow, cols, vals, dense, out)
    np.testing.assert_allclose(out, A @ dense, rtol=1e-5, atol=1e-5)
    g = rng.standard_normal((n, p)).astype(dtype)
    got = np.empty(rows.size, dtype)
    getattr(K, f"sampled_dot_{variant}")(rows, cols, g, dense, got)
    np.testing.assert_allclose(got, (g @ dense.T)[rows, cols], rtol=1e-5, atol=1e-5)


def test_row_pointers_scatter_add_and_launchers(monkeypatch):
    rows = np.array([2, 0, 2, 2], np.int64)          # unsorted, row 1 and 3 empty
    crow = np.empty(5, np.int64)
    K.row_pointers(rows, 4, crow)
    assert crow.tolist() == [0, 1, 1, 4, 4]
    out = np.zeros((3, 2))
    K.scatter_add_rows(np.array([1, 1, 0]), np.array([[1., 2.], [3., 4.], [5., 6.]]), out)
    assert out.tolist() == [[5, 6], [4, 6], [0, 0]]
    monkeypatch.setattr(K, "PARALLEL_MIN_WORK", 8)  # the launchers' parallel branches
    big = np.full((4, 8), np.nan)
    K.csr_mm(np.array([0, 1, 1, 1, 1]), np.array([0]), np.array([2.]), np.ones((1, 8)), big)
    assert big[0].min() == 2 and big[1:].max() == 0          # every row written
    dots = np.empty(1)
    K.sampled_dot(np.array([0]), np.array([0]), np.ones((1, 8)), np.ones((1, 8)), dots)
    assert dots.tolist() == [8.]


def test_every_kernel_caches_on_disk():
    import numba
    kernels = [v for v in vars(K).values() if isinstance(v, numba.core.registry.CPUDispatcher)]
    assert len(kernels) >= 8
    for k in kernels:
        assert k._cache.__class__.__name__ != "NullCache", k.__name__
