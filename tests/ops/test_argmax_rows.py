"""argmax/argmin and max/min(dim) along contiguous rows (kernels/cpu/reduce.py
arg_rows): the first extreme, the first NaN, as the walking kernel and PyTorch."""
import numpy as np
import pytest
from harness import dtype_sweep

import nbtorch
from nbtorch.kernels.cpu import reduce as R


@pytest.mark.parametrize("dtype", dtype_sweep([np.float32, np.int64, np.float64, np.int8,
                                                np.uint8, np.bool_], 2))
def test_rows_match_walking_kernel(dtype):
    rng = np.random.default_rng(0)
    for trial in range(150):
        rows, n = int(rng.integers(1, 10)), int(rng.integers(1, 600))
        a = rng.integers(-3, 4, (rows, n, 1)).astype(dtype)
        if np.issubdtype(dtype, np.floating):
            if trial % 3 == 0:
                a[rng.random(a.shape) < 0.01] = np.nan
            if trial % 5 == 0:
                a[rng.random(a.shape) < 0.05] = np.inf
            if trial % 7 == 0:
                a[rng.random(a.shape) < 0.05] = -np.inf
        for launcher, want_max in ((R.argmax, True), (R.argmin, False)):
            v1, i1 = np.empty((rows, 1), dtype), np.empty((rows, 1), np.int64)
            v2, i2 = np.empty((rows, 1), dtype), np.empty((rows, 1), np.int64)
            launcher(a, v1, i1)
            R.arg_reduce(R.ordered(a), R.ordered(v2), i2, want_max)
            np.testing.assert_array_equal(i1, i2)
            np.testing.assert_array_equal(v1, v2)
            v3, i3 = np.empty((rows, 1), dtype), np.empty((rows, 1), np.int64)
            R.arg_rows_parallel(R.ordered(a).reshape(rows, n), R.ordered(v3), i3, want_max)
            np.testing.assert_array_equal(i3, i2)


def test_semantics():
    nan = float("nan")
    x = nbtorch.tensor([[1., 3., 3., 0.], [2., nan, 5., nan], [-0., 0., -1., -1.]])
    assert x.argmax(1).tolist() == [1, 1, 0]
    assert x.argmin(1).tolist() == [3, 1, 2]
    v, i = x.max(1)
    assert i.tolist() == [1, 1, 0] and v[0].item() == 3 and v[1].item() != v[1].item()
    assert x.min(1, keepdim=True).indices.tolist() == [[3], [1], [2]]
    assert nbtorch.tensor([4, 9, 9, 1]).argmax().item() == 1
    long = np.zeros(5000, np.float32)
    long[[777, 4000]] = 2.0
    assert nbtorch.from_numpy(long).argmax().item() == 777
    assert nbtorch.from_numpy(-long).argmin().item() == 777


def test_max_dim_gradient():
    x = nbtorch.randn(5, 9, dtype=nbtorch.float64, requires_grad=True)
    assert nbtorch.autograd.gradcheck(lambda t: t.max(1).values, (x,))
    assert nbtorch.autograd.gradcheck(lambda t: t.min(-1, keepdim=True).values, (x,))


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64, np.int32, np.uint8):
        a = (rng.integers(-5, 5, (64, 1000)) if dtype != np.float64 else
             rng.standard_normal((64, 1000))).astype(dtype)
        if dtype == np.float32:
            a[rng.random(a.shape) < 0.002] = np.nan
        x, t = nbtorch.from_numpy(a), torch.from_numpy(a)
        for name in ("argmax", "argmin"):
            np.testing.assert_array_equal(getattr(x, name)(1).numpy(),
                                          getattr(t, name)(1).numpy())
        for name in ("max", "min"):
            v, i = getattr(x, name)(1)
            tv, ti = getattr(t, name)(1)
            np.testing.assert_array_equal(v.numpy(), tv.numpy())
            np.testing.assert_array_equal(i.numpy(), ti.numpy())
