"""kernels/cpu/gemm_rows.py: mid-size products split by rows over the spinning helpers."""
import numpy as np
import pytest

import nbtorch
from nbtorch.kernels.cpu import blas, gemm_rows, matmul, spin_threads, workers

pytestmark = pytest.mark.skipif(not gemm_rows.SUPPORTED or not gemm_rows.cblas.gemm_address(
    np.float32), reason="needs the spinning helpers and OpenBLAS's cblas GEMM")

SHAPES = [(128, 128, 128), (100, 77, 129), (33, 200, 5), (250, 64, 300), (64, 1, 64),
          (37, 128, 128), (96, 300, 17)]


def _operands(rng, m, k, n, dtype, ta, tb):
    a = rng.standard_normal((k, m) if ta else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k) if tb else (k, n)).astype(dtype)
    return (a.T if ta else a), (b.T if tb else b)


@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_match_one_call_and_do_not_depend_on_who_runs_a_range(ta, tb, dtype,
                                                                  monkeypatch):
    rng = np.random.default_rng(int(ta) * 2 + int(tb))
    tol = 2e-5 if dtype == np.float32 else 1e-12
    for chunks in (2, 3):
        for m, k, n in SHAPES:
            a, b = _operands(rng, m, k, n, dtype, ta, tb)
            outs = []
            for _ in range(3):                  # helpers asleep, then spinning
                out = np.full((m, n), np.nan, dtype)
                assert gemm_rows.matmul(a, b, out, chunks)
                outs.append(out)
            with monkeypatch.context() as patch:
                patch.setattr(workers, "use_helpers", lambda key: False)   # backed off
                here = np.full((m, n), np.nan, dtype)
                assert gemm_rows.matmul(a, b, here, chunks)
            one = blas.one_thread(np.matmul, a, b)
            for out in outs:
                np.testing.assert_array_equal(out, here, err_msg=str((m, k, n)))
            np.testing.assert_allclose(here, one, rtol=tol, atol=tol * np.abs(one).max())


def test_other_products_are_left_to_the_caller():
    f = np.ones((64, 64), np.float32)
    out = np.full((64, 64), np.nan, np.float32)
    assert not gemm_rows.matmul(f, f, out, 1)                       # one thread
    assert not gemm_rows.matmul(f.astype(np.int64), f, out, 2)      # dtypes
    assert not gemm_rows.matmul(f, f.astype(np.float64), out, 2)
    assert not gemm_rows.matmul(f, f, out.T, 2)                     # out not C-contiguous
    assert not gemm_rows.matmul(f[:16], f, out[:16], 2)             # too few rows
    assert not gemm_rows.matmul(f[:, ::2], f[:32], out, 2)          # no unit stride
    assert np.isnan(out).all()                                      # nothing written
    assert gemm_rows.matmul(f, f, out, 2) and np.all(out == 64)


def test_tensor_matmul_takes_the_split_path(monkeypatch):
    calls = []
    original = gemm_rows.matmul

    def spy(*args):
        calls.append(args[0].shape)
        return original(*args)
    monkeypatch.setattr(gemm_rows, "matmul", spy)
    monkeypatch.setattr(workers, "NUM_THREADS", 2)
    nbtorch.manual_seed(0)
    a = nbtorch.randn(128, 128, dtype=nbtorch.float64, requires_grad=True)
    b = nbtorch.randn(128, 96, dtype=nbtorch.float64, requires_grad=True)
    (a @ b).sum().backward()                   # forward and both gradients: 2-D products
    assert len(calls) == 3
    np.testing.assert_allclose((a @ b).detach().numpy(), a.detach().numpy() @ b.detach().numpy(),
                               rtol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), np.ones((128, 96)) @ b.detach().numpy().T,
                               rtol=1e-12)
    assert matmul.SPLIT_ROWS_MIN_WORK <= 128 * 128 * 96 <= blas.SMALL_WORK
    assert spin_threads.SUPPORTED
