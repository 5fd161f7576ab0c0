"""topk on the CPU is a per-row selection: it must equal the first k of the stable sort
(ties by index, NaN largest), match PyTorch's values, and keep its gradient."""
import numpy as np
import pytest
from harness import dtype_sweep

import nbtorch
from nbtorch.kernels.cpu import sort as S

DTYPES = [np.float32, np.float64, np.int64, np.int32, np.int16, np.int8, np.uint8]


SWEEP = dtype_sweep(DTYPES, 2)


def _stable_first_k(a, k, largest, dim):
    t = nbtorch.from_numpy(np.ascontiguousarray(a))
    v, i = t.sort(dim, descending=largest)
    return v.narrow(dim, 0, k).numpy(), i.narrow(dim, 0, k).numpy()


@pytest.mark.parametrize("dtype", SWEEP)
def test_equals_stable_sort_prefix(dtype):
    rng = np.random.default_rng(0)
    for trial in range(60):
        shape = tuple(int(s) for s in rng.integers(1, 9, rng.integers(1, 4)))
        dim = int(rng.integers(0, len(shape)))
        n = shape[dim]
        if trial % 4 == 0:                   # long rows: the block skip and the heap
            shape = shape[:dim] + (300,) + shape[dim + 1:]
            n = 300
        a = rng.integers(-3, 4, shape).astype(dtype)     # many ties
        if np.issubdtype(dtype, np.floating):
            a[rng.random(shape) < 0.15] = np.nan
        k = int(rng.integers(0, n + 1)) if trial % 3 else min(n, 20)
        largest = bool(trial % 2)
        v, i = nbtorch.from_numpy(a).topk(k, dim, largest=largest)
        rv, ri = _stable_first_k(a, k, largest, dim)
        assert v.shape == rv.shape and i.dtype == nbtorch.int64
        np.testing.assert_array_equal(i.numpy(), ri)
        np.testing.assert_array_equal(v.numpy(), rv)


@pytest.mark.parametrize("k", [1, 5, 16, 17, 40, 128])
def test_heap_and_buffer_sizes(k):
    rng = np.random.default_rng(k)
    for a in (rng.standard_normal((6, 257)), np.sort(rng.standard_normal((6, 257)), 1),
              -np.sort(rng.standard_normal((6, 257)), 1), np.ones((6, 257)),
              rng.integers(0, 5, (6, 257)).astype(np.float64)):
        for largest in (True, False):
            v, i = nbtorch.from_numpy(a).topk(k, 1, largest=largest)
            rv, ri = _stable_first_k(a, k, largest, 1)
            np.testing.assert_array_equal(i.numpy(), ri)
            np.testing.assert_array_equal(v.numpy(), rv)


def test_noncontiguous_bool_and_errors():
    rng = np.random.default_rng(3)
    x = nbtorch.from_numpy(rng.standard_normal((20, 30)).astype(np.float32))
    xt = x.t()[::2]                                       # strided rows
    v, i = xt.topk(4, 1)
    rv, ri = _stable_first_k(xt.numpy(), 4, True, 1)
    np.testing.assert_array_equal(i.numpy(), ri)
    np.testing.assert_array_equal(v.numpy(), rv)
    b = nbtorch.tensor([True, False, True, False])
    assert b.topk(3).indices.tolist() == [0, 2, 1]
    assert b.topk(2, largest=False).indices.tolist() == [1, 3]
    for bad in (-1, 31):
        with pytest.raises(RuntimeError, match=r"selected index k out of range \(k=%d, "
                           r"dim size 30\)" % bad):
            x.topk(bad, 1)
    assert x.topk(0, 1).values.shape == (20, 0)
    assert nbtorch.zeros(3, 0).topk(0, 1).values.shape == (3, 0)
    assert x.topk(30, 1).indices.shape == (20, 30)


def test_nan_order():
    x = nbtorch.tensor([1., float("nan"), 3., float("nan"), -1.])
    assert x.topk(3).indices.tolist() == [1, 3, 2]
    assert x.topk(4, largest=False).indices.tolist() == [4, 0, 2, 1]


def test_gradient():
    x = nbtorch.randn(4, 9, dtype=nbtorch.float64, requires_grad=True)
    assert nbtorch.autograd.gradcheck(lambda t: t.topk(3, 1).values, (x,))
    assert nbtorch.autograd.gradcheck(lambda t: t.topk(2, 0, largest=False).values, (x,))
    y = nbtorch.randn(5, 6, requires_grad=True)
    v, i = y.topk(2, 1)
    v.sum().backward()
    g = np.zeros((5, 6), np.float32)
    np.put_along_axis(g, i.numpy(), 1.0, 1)
    np.testing.assert_array_equal(y.grad.numpy(), g)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    for dtype in (np.float32, np.float64, np.int64, np.uint8):
        for shape, dim in (((16, 700), 1), ((700, 3), 0), ((4, 5, 64), 1)):
            a = rng.standard_normal(shape) * 100
            a = a.astype(dtype)
            if dtype == np.float32:
                a[rng.random(shape) < 0.01] = np.nan
            for k in (1, 5, shape[dim]):
                for largest in (True, False):
                    v, i = nbtorch.from_numpy(a).topk(k, dim, largest=largest)
                    tv, ti = torch.from_numpy(a).topk(k, dim, largest=largest)
                    np.testing.assert_array_equal(v.numpy(), tv.numpy())
                    # PyTorch's tie order is unspecified: indices must point at equal values
                    np.testing.assert_array_equal(
                        np.take_along_axis(a, i.numpy(), dim), tv.numpy())
                    # sorted=False: the same set of values
                    tu = torch.from_numpy(a).topk(k, dim, largest=largest, sorted=False)[0]
                    np.testing.assert_array_equal(np.sort(v.numpy(), dim),
                                                  np.sort(tu.numpy(), dim))


def test_parallel_variant_matches():
    rng = np.random.default_rng(6)
    a = rng.integers(-20, 20, (64, 300)).astype(np.float32)
    for k in (3, 20):
        for largest in (True, False):
            v1, i1 = np.empty((64, k), np.float32), np.empty((64, k), np.int64)
            v2, i2 = np.empty((64, k), np.float32), np.empty((64, k), np.int64)
            S.topk_rows(a, v1, i1, largest)
            S.topk_rows_parallel(a, v2, i2, largest)
            np.testing.assert_array_equal(i1, i2)
            np.testing.assert_array_equal(v1, v2)
