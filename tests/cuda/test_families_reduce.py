"""Reductions, softmax and scans on CUDA against the CPU result (simulator or GPU)."""
import numpy as np
import pytest

import nbtorch

pytestmark = pytest.mark.cuda


def _pair(shape, dtype=np.float32, seed=0, transform=None):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        a = rng.standard_normal(shape).astype(dtype)
    elif np.dtype(dtype) == np.bool_:
        a = rng.random(shape) < 0.5
    else:
        a = rng.integers(-4, 5, shape).astype(dtype)
    x = nbtorch.tensor(a)
    if transform:
        x = transform(x)
    return x, x.to("cuda")


def _same(c, g, tol=1e-5):
    c, g = (c if isinstance(c, tuple) else (c,)), (g if isinstance(g, tuple) else (g,))
    for u, v in zip(c, g):
        assert v.device.type == "cuda"
        assert u.shape == v.shape and u.dtype == v.dtype
        np.testing.assert_allclose(v.cpu().numpy(), u.numpy(), rtol=tol, atol=tol)


# rows walk (reduce the last dim), columns walk (dim 0), several dims, keepdim, a transpose
CASES = [(lambda x: x, {"dim": 1}), (lambda x: x, {"dim": 0}),
         (lambda x: x, {"dim": (0, 2), "keepdim": True}), (lambda x: x, {}),
         (lambda x: x.transpose(0, 2), {"dim": 1})]


@pytest.mark.parametrize("op", ["sum", "mean", "prod", "amax", "amin", "var", "std",
                                "logsumexp", "nansum"])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_float_reductions_match_cpu(op, case):
    transform, kw = CASES[case]
    if op == "logsumexp" and "dim" not in kw:
        kw = {"dim": (0, 1, 2)}
    x, xg = _pair((2, 5, 3), transform=transform)
    _same(getattr(nbtorch, op)(x, **kw), getattr(nbtorch, op)(xg, **kw))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.bool_])
def test_integer_and_bool_reductions(dtype):
    x, xg = _pair((3, 4), dtype)
    for name in ("sum", "amax", "amin", "count_nonzero", "any", "all"):
        fn = getattr(nbtorch, name)
        _same(fn(x, 1), fn(xg, 1))
        _same(fn(x, 0), fn(xg, 0))
    if dtype != np.bool_:
        _same(nbtorch.prod(x, 0), nbtorch.prod(xg, 0))


def test_arg_and_max_with_ties_and_nan():
    a = np.array([[1, 3, 3, 0, 3], [2, np.nan, 1, np.nan, 5], [0, 0, 0, 0, 0]], np.float32)
    x, xg = nbtorch.tensor(a), nbtorch.tensor(a).to("cuda")
    for fn in (nbtorch.argmax, nbtorch.argmin):
        _same(fn(x, 1), fn(xg, 1))
        _same(fn(x, 0), fn(xg, 0))
        _same(fn(x), fn(xg))
    _same(tuple(nbtorch.max(x, 1)), tuple(nbtorch.max(xg, 1)))
    _same(nbtorch.amax(x, 1), nbtorch.amax(xg, 1))
    _same(nbtorch.amin(x, 0), nbtorch.amin(xg, 0))


@pytest.mark.parametrize("p", [2, 1, 0, 3, float("inf"), float("-inf")])
def test_norm(p):
    x, xg = _pair((3, 5))
    _same(nbtorch.norm(x, p, dim=1), nbtorch.norm(xg, p, dim=1))
    _same(nbtorch.norm(x, p, dim=0), nbtorch.norm(xg, p, dim=0))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_and_log_softmax(dim):
    x, xg = _pair((3, 4, 5))
    _same(nbtorch.softmax(x, dim), nbtorch.softmax(xg, dim))
    _same(nbtorch.log_softmax(x, dim), nbtorch.log_softmax(xg, dim))


@pytest.mark.parametrize("dim", [0, 1])
def test_scans(dim):
    x, xg = _pair((3, 4))
    _same(nbtorch.cumsum(x, dim), nbtorch.cumsum(xg, dim))
    _same(nbtorch.cumprod(x, dim), nbtorch.cumprod(xg, dim))
    _same(tuple(nbtorch.cummax(x, dim)), tuple(nbtorch.cummax(xg, dim)))
    _same(tuple(nbtorch.cummin(x, dim)), tuple(nbtorch.cummin(xg, dim)))
    xi, xig = _pair((3, 4), np.int64)
    _same(nbtorch.cumsum(xi, dim), nbtorch.cumsum(xig, dim))


def test_reduction_gradient_on_cuda():
    x, xg = _pair((3, 4), np.float64)
    xg.requires_grad_(True)
    nbtorch.log_softmax(xg, 1).sum().backward()
    x.requires_grad_(True)
    nbtorch.log_softmax(x, 1).sum().backward()
    _same(x.grad, xg.grad, 1e-10)


@pytest.mark.parametrize("n", [40, 43])
def test_long_rows_split_into_parts(n):
    """Few long rows: partial reductions of row parts, then a second pass (sim: n >= 8)."""
    x, xg = _pair((2, n), seed=5)
    for op in ("sum", "amax", "amin", "prod", "count_nonzero"):
        _same(getattr(nbtorch, op)(x, 1), getattr(nbtorch, op)(xg, 1), 1e-4)
    _same(x.sum(), xg.sum(), 1e-4)
    xi, xig = _pair((n,), np.int64)
    _same(xi.sum(), xig.sum())
    a = np.arange(n, dtype=np.float32)
    a[n // 2] = np.nan
    _same(nbtorch.tensor(a).amax(), nbtorch.tensor(a).to("cuda").amax())


def test_few_outputs_long_columns_get_a_block_each():
    x, xg = _pair((9, 2, 1))
    for op in ("sum", "amax", "var", "logsumexp", "softmax"):
        _same(getattr(nbtorch, op)(x, 0), getattr(nbtorch, op)(xg, 0))
    _same(nbtorch.argmax(x, 0), nbtorch.argmax(xg, 0))


@pytest.mark.parametrize("reverse", [False, True])
def test_long_scans_run_as_chained_block_scans(reverse):
    """One long axis (a block per column, chunks of blockDim chained by a carry)."""
    x, xg = _pair((2, 11), np.float64)
    if reverse:
        x, xg = x.flip(1), xg.flip(1)
    _same(nbtorch.cumsum(x, 1), nbtorch.cumsum(xg, 1), 1e-12)
    _same(nbtorch.cumprod(x, 1), nbtorch.cumprod(xg, 1), 1e-12)
    xi, xig = _pair((13,), np.int64)
    _same(nbtorch.cumsum(xi, 0), nbtorch.cumsum(xig, 0))
    g = nbtorch.ones(2, 11, dtype=nbtorch.float64, device="cuda")
    xg.requires_grad_(True)
    nbtorch.cumsum(xg, 1).backward(g)          # reverse cumsum on the device
    np.testing.assert_allclose(xg.grad.cpu().numpy()[0], np.arange(11, 0, -1))


def test_empty_and_zero_dim():
    for a in (np.float32(2.5), np.zeros((0, 3), np.float32), np.zeros((2, 0), np.float32)):
        x = nbtorch.tensor(a)
        xg = x.to("cuda")
        for fn in (lambda t: t.sum(), lambda t: t.sum(-1), lambda t: t.prod(-1),
                   lambda t: nbtorch.softmax(t, -1), lambda t: nbtorch.cumsum(t, -1),
                   lambda t: t.mean(-1)):
            _same(fn(x), fn(xg))
    x = nbtorch.tensor(np.float32(-1.5))
    _same(x.amax(), x.to("cuda").amax())
    _same(nbtorch.argmax(x), nbtorch.argmax(x.to("cuda")))


@pytest.mark.parametrize("p", [2, 1, 0, 3, float("inf"), float("-inf")])
def test_norm_of_long_rows_in_parts(p):
    x, xg = _pair((43,), np.float64, seed=7)
    _same(nbtorch.norm(x, p), nbtorch.norm(xg, p), 1e-12)
    x, xg = _pair((2, 40), np.float64, seed=8)
    _same(nbtorch.norm(x, p, dim=1), nbtorch.norm(xg, p, dim=1), 1e-12)
