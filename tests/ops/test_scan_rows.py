"""Scans along the last dim run row kernels (kernels/cpu/scan.py, inner == 1): the same
bits as the (outer, n, inner) walk, PyTorch's values, working gradients."""
import numpy as np
import pytest

import nbtorch
from nbtorch.kernels.cpu import scan as S


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("rows", [1, 3, 4, 5, 9])
def test_rows_bit_identical_to_walk(dtype, rows):
    rng = np.random.default_rng(rows)
    for n in (1, 2, 7, 100):
        a = (rng.standard_normal((rows, n, 1)) * 3).astype(dtype)
        if dtype != np.int64:
            a[rng.random(a.shape) < 0.1] = np.nan
        for launcher, walk, init in ((S.cumsum, S.cumsum_scan, 0), (S.cumprod, S.cumprod_scan, 1)):
            for reverse in (False, True):
                o1, o2 = np.empty_like(a), np.empty_like(a)
                launcher(a, o1, reverse)
                walk(a, o2, S._acc(a.dtype, init), reverse)
                np.testing.assert_array_equal(o1, o2)
        for want_max in (True, False):
            v1, i1 = np.empty_like(a), np.empty(a.shape, np.int64)
            v2, i2 = np.empty_like(a), np.empty(a.shape, np.int64)
            S._cumextreme(a, v1, i1, want_max)
            S.cumextreme_scan(a, v2, i2, want_max)
            np.testing.assert_array_equal(v1, v2)
            np.testing.assert_array_equal(i1, i2)
        if dtype != np.int64:
            o1, o2 = np.empty_like(a), np.empty_like(a)
            S.logcumsumexp(a, o1)
            S.logcumsumexp_scan(a, o2)
            np.testing.assert_array_equal(o1, o2)


def test_ops_along_last_dim_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((6, 5, 33))
    x = nbtorch.from_numpy(a)
    np.testing.assert_allclose(x.cumsum(-1).numpy(), np.cumsum(a, -1), rtol=1e-12)
    np.testing.assert_allclose(x.cumprod(2).numpy(), np.cumprod(a, 2), rtol=1e-12)
    np.testing.assert_array_equal(x.cummax(-1).values.numpy(), np.maximum.accumulate(a, -1))
    np.testing.assert_array_equal(x.cummin(-1).values.numpy(), np.minimum.accumulate(a, -1))
    np.testing.assert_allclose(x.logcumsumexp(-1).numpy(),
                               np.logaddexp.accumulate(a, -1), rtol=1e-12)
    xt = x.transpose(1, 2)                                # non-contiguous input
    np.testing.assert_allclose(xt.cumsum(2).numpy(), np.cumsum(a.transpose(0, 2, 1), 2),
                               rtol=1e-12)
    ints = nbtorch.tensor([[1, 2, 3], [4, 5, 6]], dtype=nbtorch.int32)
    assert ints.cumsum(1).tolist() == [[1, 3, 6], [4, 9, 15]]
    assert ints.cumsum(1).dtype == nbtorch.int64
    b = nbtorch.tensor([[True, False, True]])
    assert b.cumsum(1).tolist() == [[1, 1, 2]]


def test_float32_accumulates_in_float64():
    a = np.full((3, 20000), 0.1, np.float32)
    out = nbtorch.from_numpy(a).cumsum(1).numpy()
    np.testing.assert_array_equal(out, np.cumsum(a.astype(np.float64), 1).astype(np.float32))


def test_gradients():
    x = nbtorch.randn(4, 7, dtype=nbtorch.float64, requires_grad=True)
    assert nbtorch.autograd.gradcheck(lambda t: t.cumsum(1), (x,))
    assert nbtorch.autograd.gradcheck(lambda t: t.cumprod(1), (x,))
    assert nbtorch.autograd.gradcheck(lambda t: t.logcumsumexp(1), (x,))
    assert nbtorch.autograd.gradcheck(lambda t: t.cummax(1).values, (x,))


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 300)).astype(np.float32)
    a[3, 10] = np.nan
    a[5, 7:9] = 2.0                                       # ties for cummax/cummin
    x, t = nbtorch.from_numpy(a), torch.from_numpy(a)
    np.testing.assert_allclose(x.cumsum(1).numpy(), t.cumsum(1).numpy(), rtol=1e-5, atol=1e-5)
    for name in ("cummax", "cummin"):
        v, i = getattr(x, name)(1)
        tv, ti = getattr(t, name)(1)
        np.testing.assert_array_equal(v.numpy(), tv.numpy())
        np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_allclose(x.logcumsumexp(1).numpy(), t.logcumsumexp(1).numpy(),
                               rtol=1e-5)
    small = a[:4, :20]
    np.testing.assert_allclose(nbtorch.from_numpy(small).cumprod(1).numpy(),
                               torch.from_numpy(small).cumprod(1).numpy(), rtol=1e-5)
