"""gather/scatter/scatter_add along a dim through index.gather_rows / scatter_rows /
scatter_add_rows (one offset per index row, not per element): exact against a NumPy
reference, every layout and width, accumulation in index order, errors before kernels."""
import numpy as np
import pytest
from harness import dtype_sweep, random_array

import nbtorch

SHAPES = [(9,), (6, 7), (3, 4, 5), (2, 3, 4, 5)]
DTYPES = ["float32", "float64", "int64", "int16", "bool", "float16", "complex128"]


SWEEP = dtype_sweep(DTYPES, 3)


_arr = random_array


def _index_shape(shape, dim, n=9):
    return tuple(n if d == dim else max(1, s - 1) for d, s in enumerate(shape))


def _ref_gather(a, dim, idx):
    out = np.empty(idx.shape, a.dtype)
    for pos in np.ndindex(*idx.shape):
        src = list(pos)
        src[dim] = idx[pos]
        out[pos] = a[tuple(src)]
    return out


def _ref_scatter(a, dim, idx, src, add):
    out = a.copy()
    for pos in np.ndindex(*idx.shape):          # row-major order: later writes win / add
        dst = list(pos)
        dst[dim] = idx[pos]
        if add:
            out[tuple(dst)] += src[pos]
        else:
            out[tuple(dst)] = src[pos]
    return out


def _layouts(a):
    x = nbtorch.from_numpy(a.copy())
    yield x, a
    if a.ndim >= 2:
        yield x.transpose(0, -1), np.swapaxes(a, 0, -1)
    yield x[..., ::2], a[..., ::2]


@pytest.mark.parametrize("dtype", SWEEP)
@pytest.mark.parametrize("shape", SHAPES)
def test_gather_matches_reference(shape, dtype):
    rng = np.random.default_rng(0)
    a = _arr(rng, shape, dtype)
    for x, av in _layouts(a):
        np.testing.assert_array_equal(x.numpy(), av)
        for dim in range(x.dim()):
            idx = rng.integers(0, av.shape[dim], _index_shape(av.shape, dim))
            out = x.gather(dim, nbtorch.from_numpy(idx))
            assert out.dtype is x.dtype
            np.testing.assert_array_equal(out.numpy(), _ref_gather(av, dim, idx))
            out = nbtorch.gather(x, dim - x.dim(), nbtorch.from_numpy(idx.astype(np.int64)))
            np.testing.assert_array_equal(out.numpy(), _ref_gather(av, dim, idx))


@pytest.mark.parametrize("dtype", SWEEP)
@pytest.mark.parametrize("shape", SHAPES)
def test_scatter_and_scatter_add_match_reference(shape, dtype):
    rng = np.random.default_rng(1)
    a = _arr(rng, shape, dtype)
    for x, av in _layouts(a):
        for dim in range(x.dim()):
            ishape = _index_shape(av.shape, dim)
            idx = rng.integers(0, av.shape[dim], ishape)          # with repeats
            src = _arr(rng, tuple(n + 1 for n in ishape), dtype)   # larger than the index
            sl = src[tuple(slice(0, n) for n in ishape)]
            I, S = nbtorch.from_numpy(idx), nbtorch.from_numpy(src)
            np.testing.assert_array_equal(x.scatter(dim, I, S).numpy(),
                                          _ref_scatter(av, dim, idx, sl, False))
            if dtype not in ("bool", "float16"):
                np.testing.assert_array_equal(x.scatter_add(dim, I, S).numpy(),
                                              _ref_scatter(av, dim, idx, sl, True))
            np.testing.assert_array_equal(x.numpy(), av)          # input untouched


def test_scatter_value_and_inplace():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((5, 6)).astype(np.float32)
    idx = rng.integers(0, 6, (5, 3))
    x = nbtorch.from_numpy(a.copy())
    np.testing.assert_array_equal(x.scatter(1, nbtorch.from_numpy(idx), 2.5).numpy(),
                                  _ref_scatter(a, 1, idx, np.full(idx.shape, 2.5, np.float32),
                                               False))
    s = rng.standard_normal((5, 3)).astype(np.float32)
    y = nbtorch.from_numpy(a.copy())
    assert y.scatter_add_(1, nbtorch.from_numpy(idx), nbtorch.from_numpy(s)) is y
    np.testing.assert_array_equal(y.numpy(), _ref_scatter(a, 1, idx, s, True))
    z = nbtorch.from_numpy(a.copy()).t()                   # in place into a strided view
    z.scatter_(0, nbtorch.from_numpy(idx.T.copy()), nbtorch.from_numpy(s.T.copy()))
    np.testing.assert_array_equal(z.numpy(), _ref_scatter(a.T, 0, idx.T, s.T, False))


def test_scatter_add_accumulates_in_index_order():
    # many repeats into one float32 cell: the sum must be the sequential one, bit for bit
    rng = np.random.default_rng(3)
    src = (rng.standard_normal((4, 1000)) * 1e3).astype(np.float32)
    idx = np.zeros((4, 1000), np.int64)
    out = nbtorch.zeros(4, 2).scatter_add(1, nbtorch.from_numpy(idx), nbtorch.from_numpy(src))
    ref = np.zeros(4, np.float32)
    for j in range(1000):
        ref += src[:, j]
    np.testing.assert_array_equal(out.numpy()[:, 0], ref)


def test_gather_scatter_grad():
    x = nbtorch.randn(4, 5, dtype=nbtorch.float64, requires_grad=True)
    s = nbtorch.randn(4, 3, dtype=nbtorch.float64, requires_grad=True)
    idx = nbtorch.tensor([[0, 4, 4], [1, 1, 2], [3, 0, 0], [2, 2, 2]])
    assert nbtorch.autograd.gradcheck(lambda z: z.gather(1, idx), (x,))
    assert nbtorch.autograd.gradcheck(lambda z, w: z.scatter_add(1, idx, w), (x, s))
    uniq = nbtorch.tensor([[0, 4, 3], [1, 0, 2], [3, 2, 0], [2, 4, 1]])
    assert nbtorch.autograd.gradcheck(lambda z, w: z.scatter(1, uniq, w), (x, s))


def test_bad_indices_raise_before_kernels():
    x = nbtorch.randn(4, 5)
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with "
                                           "size 5"):
        x.gather(1, nbtorch.tensor([[0, 5]]))
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0 with "
                                           "size 4"):
        x.scatter_add(0, nbtorch.tensor([[0, -1]]), nbtorch.ones(1, 2))
    with pytest.raises(RuntimeError, match="index 100 is out of bounds"):
        x.scatter(1, nbtorch.tensor([[100]]), 1.0)
    with pytest.raises(RuntimeError, match="Index tensor must have the same number of "
                                           "dimensions as input tensor"):
        x.gather(1, nbtorch.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="INDICES element is out of DATA bounds, id=7 "
                                           "axis_dim=5"):
        x.index_select(1, nbtorch.tensor([1, 7]))
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, nbtorch.tensor([9]))


def test_scalar_and_empty_cases():
    x = nbtorch.arange(5.)
    assert x.gather(0, nbtorch.tensor(3)).item() == 3.0
    e = nbtorch.zeros(3, 0, dtype=nbtorch.int64)
    assert nbtorch.randn(3, 4).gather(1, e).shape == (3, 0)
    assert nbtorch.zeros(3, 4).scatter_add(1, e, nbtorch.zeros(3, 0)).sum().item() == 0


def test_vs_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    idx = rng.integers(0, 32, (64, 4))
    s = rng.standard_normal((64, 4)).astype(np.float32)
    np.testing.assert_array_equal(
        nbtorch.from_numpy(a).gather(1, nbtorch.from_numpy(idx)).numpy(),
        torch.from_numpy(a).gather(1, torch.from_numpy(idx)).numpy())
    np.testing.assert_allclose(
        nbtorch.zeros(64, 32).scatter_add(1, nbtorch.from_numpy(idx), nbtorch.from_numpy(s))
        .numpy(),
        torch.zeros(64, 32).scatter_add(1, torch.from_numpy(idx), torch.from_numpy(s)).numpy(),
        rtol=1e-6, atol=1e-6)
