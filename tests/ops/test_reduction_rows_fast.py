"""Row sums and row softmax split over the spinning helpers (split_rows.run_rows_split):
the split is by whole rows, so values equal the serial row kernels bit for bit."""
import numpy as np
import pytest

import nbtorch
from nbtorch.kernels.cpu import reduce as R, softmax as S, workers


def _force_split(monkeypatch):
    monkeypatch.setattr(workers, "use_helpers", lambda key: True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1024, 512), (257, 300), (64, 4099)])
@pytest.mark.parametrize("force", [False, True])
def test_row_sum_split_matches_serial(monkeypatch, dtype, shape, force):
    if force:
        _force_split(monkeypatch)
    a = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    a[3, 5] = np.nan
    x = nbtorch.tensor(a)
    for _ in range(3):
        s, m, ns = x.sum(1), x.mean(1), x.nansum(1)
    ref = np.empty((shape[0], 1), dtype)
    R.sum_rows(a, ref, np.float64(0), np.float64(1), False)
    np.testing.assert_array_equal(s.numpy(), ref[:, 0])
    R.sum_rows(a, ref, np.float64(0), np.float64(1), True)
    np.testing.assert_array_equal(ns.numpy(), ref[:, 0])
    a64 = a.astype(np.float64)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(np.delete(m.numpy(), 3), np.delete(a64.mean(1), 3),
                               rtol=tol, atol=tol)
    assert np.isnan(s.numpy()[3])
    # transposed: Xt.sum(0) reads the rows of X
    np.testing.assert_array_equal(x.t().sum(0).numpy(), s.numpy())


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("force", [False, True])
def test_row_softmax_split_matches_serial(monkeypatch, dtype, log, force):
    if force:
        _force_split(monkeypatch)
    a = (np.random.default_rng(1).standard_normal((300, 257)) * 10).astype(dtype)
    x = nbtorch.tensor(a)
    for _ in range(3):
        y = x.log_softmax(1) if log else x.softmax(1)
    ref = np.empty_like(a)
    S.softmax_rows(a, ref, log)
    np.testing.assert_array_equal(y.numpy(), ref)
    a64 = a.astype(np.float64)
    ls = a64 - a64.max(1, keepdims=True)
    ls = ls - np.log(np.exp(ls).sum(1, keepdims=True))
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(y.numpy(), ls if log else np.exp(ls), rtol=tol, atol=tol)


def test_against_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(2).standard_normal((1024, 512)).astype(np.float32)
    x, t = nbtorch.tensor(a), torch.tensor(a)
    np.testing.assert_allclose(x.sum(1).numpy(), t.sum(1).numpy(), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(x.t().mean(1).numpy(), t.t().mean(1).numpy(), rtol=1e-5,
                               atol=1e-6)
    np.testing.assert_allclose(x.log_softmax(1).numpy(), t.log_softmax(1).numpy(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.softmax(1).numpy(), t.softmax(1).numpy(), rtol=1e-5,
                               atol=1e-7)


def test_gradcheck_row_sum_softmax():
    x = nbtorch.randn(5, 9, dtype=nbtorch.float64, requires_grad=True)   # backward formulas only
    assert nbtorch.autograd.gradcheck(lambda v: v.sum(1), (x,))
    assert nbtorch.autograd.gradcheck(lambda v: v.log_softmax(1), (x,))
