"""scatter_reduce / index_reduce / index_fill / masked_scatter / put (ops/indexing_reduce.py)
against NumPy loops, gradients by gradcheck; value tests run on each device."""
import numpy as np
import pytest

import nbtorch
from nbtorch.autograd import gradcheck

MODES = ("sum", "prod", "mean", "amax", "amin")


def _np_scatter_reduce(x, dim, index, src, reduce, include_self):
    """The reference: a Python loop over index, then the reduction per target."""
    out = x.astype(np.float64).copy()
    groups = {}
    for pos in np.ndindex(*index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        groups.setdefault(tuple(tgt), []).append(src[pos])
    for tgt, vals in groups.items():
        vals = ([x[tgt]] if include_self else []) + vals
        f = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max,
             "amin": np.min}[reduce]
        r = f(np.array(vals, np.float64))
        out[tgt] = np.floor(r) if reduce == "mean" and x.dtype.kind == "i" else r
    return out


@pytest.mark.parametrize("reduce", MODES)
def test_scatter_reduce_values(reduce, device):
    rng = np.random.default_rng(0)
    index = np.array([[0, 2, 0, 1], [1, 1, 1, 0], [2, 0, 2, 2]])
    for dtype in (nbtorch.float32, nbtorch.int64):
        x = rng.integers(-3, 4, (3, 3)).astype(dtype.np)
        src = rng.integers(-3, 4, (3, 5)).astype(dtype.np)         # larger than index
        for include_self in (True, False):
            got = nbtorch.tensor(x, device=device).scatter_reduce(
                1, nbtorch.tensor(index[:, :3], device=device), nbtorch.tensor(src, device=device),
                reduce, include_self=include_self)
            want = _np_scatter_reduce(x, 1, index[:, :3], src, reduce, include_self)
            assert got.dtype is dtype and got.device.type == device
            np.testing.assert_allclose(got.cpu().numpy().astype(np.float64), want, rtol=1e-6)


def test_scatter_reduce_nan_half_bool(device):
    t = lambda a, **k: nbtorch.tensor(a, device=device, **k)     # noqa: E731
    x = t([1.0, 2.0, 3.0])
    got = x.scatter_reduce(0, t([0, 0, 1]), t([float("nan"), 5.0, 1.0]), "amax")
    assert np.isnan(got[0].item()) and got[1:].tolist() == [2.0, 3.0]
    h = t([1.0, 2.0], dtype=nbtorch.float16).scatter_reduce(
        0, t([0, 0]), t([0.5, 0.25], dtype=nbtorch.float16), "sum")
    assert h.dtype is nbtorch.float16 and h.tolist() == [1.75, 2.0]
    b = t([True, False, False])
    src = t([True, True, False, False])
    idx = t([0, 1, 1, 2])
    assert b.scatter_reduce(0, idx, src, "sum").tolist() == [True, True, False]
    assert b.scatter_reduce(0, idx, src, "prod").tolist() == [True, False, False]
    with pytest.raises(NotImplementedError):
        b.scatter_reduce(0, idx, src, "mean")


@pytest.mark.parametrize("reduce", MODES)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_gradcheck(reduce, include_self):
    rng = np.random.default_rng(1)
    x = nbtorch.tensor(rng.uniform(0.5, 2, (3, 4)), requires_grad=True)
    src = nbtorch.tensor(rng.uniform(0.5, 2, (2, 4)), requires_grad=True)
    index = nbtorch.tensor([[0, 1, 2, 0], [2, 1, 0, 0]])
    assert gradcheck(lambda a, b: a.scatter_reduce(0, index, b, reduce,
                                                   include_self=include_self), (x, src))


def test_scatter_reduce_prod_grad_with_zeros():
    x = nbtorch.tensor([2.0, 3.0, 0.0], dtype=nbtorch.float64, requires_grad=True)
    src = nbtorch.tensor([0.0, 4.0, 5.0, 0.0, 0.0], dtype=nbtorch.float64, requires_grad=True)
    index = nbtorch.tensor([0, 0, 1, 2, 2])
    assert gradcheck(lambda a, b: a.scatter_reduce(0, index, b, "prod"), (x, src))


def test_scatter_multiply_and_errors():
    x = nbtorch.ones(3)
    idx = nbtorch.tensor([0, 0])
    assert x.scatter(0, idx, nbtorch.tensor([2.0, 3.0]), reduce="multiply").tolist() == [6, 1, 1]
    x.scatter_(0, idx, 2.0, reduce="multiply")
    assert x.tolist() == [4, 1, 1]
    with pytest.raises(RuntimeError, match="either add or multiply"):
        x.scatter(0, idx, 1.0, reduce="sum")
    with pytest.raises(RuntimeError, match="reduce argument must be"):
        x.scatter_reduce(0, idx, nbtorch.ones(2), "max")
    with pytest.raises(RuntimeError, match="index -1 is out of bounds for dimension 0"):
        x.scatter_reduce(0, nbtorch.tensor([-1]), nbtorch.ones(1), "sum")
    with pytest.raises(RuntimeError, match="self.dtype to be equal to src.dtype"):
        x.scatter_reduce(0, idx, nbtorch.ones(2, dtype=nbtorch.float64), "sum")


def test_index_reduce_and_fill(device):
    t = lambda a, **k: nbtorch.tensor(a, device=device, **k)     # noqa: E731
    x = nbtorch.ones(2, 3, device=device)
    src = nbtorch.arange(1.0, 7.0, device=device).reshape(2, 3)
    got = x.index_reduce(0, t([0, 0]), src, "prod")
    np.testing.assert_array_equal(got.cpu().numpy(), [[4, 10, 18], [1, 1, 1]])
    got = x.index_reduce(1, t([2, 0, 2]), t([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), "mean",
                         include_self=False)
    np.testing.assert_allclose(got.cpu().numpy(), [[2, 1, 2], [5, 1, 5]])
    y = x.clone()
    y.index_fill_(1, t([0, -1]), -2.0)
    np.testing.assert_array_equal(y.cpu().numpy(), [[-2, 1, -2], [-2, 1, -2]])
    with pytest.raises(RuntimeError, match="Expected reduce to be one of"):
        x.index_reduce(0, t([0]), src[:1], "sum")
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_fill(1, t([3]), 0.0)


def test_masked_scatter_and_put(device):
    t = lambda a, **k: nbtorch.tensor(a, device=device, **k)     # noqa: E731
    x = nbtorch.zeros(2, 3, device=device)
    mask = t([True, False, True])
    got = x.masked_scatter(mask, nbtorch.arange(1.0, 10.0, device=device))
    np.testing.assert_array_equal(got.cpu().numpy(), [[1, 0, 2], [3, 0, 4]])
    with pytest.raises(RuntimeError, match="Number of elements of source"):
        x.masked_scatter(mask, nbtorch.ones(3, device=device))
    got = x.put(t([-1, 0, 0]), t([5.0, 6.0, 7.0]), accumulate=True)
    np.testing.assert_array_equal(got.cpu().numpy(), [[13, 0, 0], [0, 0, 5]])
    x.put_(t([4]), t([9.0]))
    assert x[1, 1].item() == 9.0
    with pytest.raises(IndexError, match="out of range: tried to access index 6"):
        x.put_(t([6]), t([1.0]))


def test_gradients_of_fill_scatter_put():
    a = nbtorch.tensor(np.random.default_rng(2).normal(size=(2, 3)), requires_grad=True)
    s = nbtorch.tensor(np.random.default_rng(3).normal(size=(5,)), requires_grad=True)
    mask = nbtorch.tensor([[True, False, True], [False, True, True]])
    assert gradcheck(lambda a, s: a.masked_scatter(mask, s), (a, s))
    idx = nbtorch.tensor([0, 5, 5])
    assert gradcheck(lambda a, s: a.put(idx, s[:3], accumulate=True), (a, s))
    assert gradcheck(lambda a: a.index_fill(1, nbtorch.tensor([1]), 0.5), (a,))
    assert gradcheck(lambda a, s: a.index_reduce(1, nbtorch.tensor([0, 2]), s[:4].reshape(2, 2),
                                                 "amax"), (a, s))
