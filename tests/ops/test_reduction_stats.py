"""var / std / var_mean / std_mean / logsumexp / norm: values, special cases, gradients."""
import math

import numpy as np
import pytest

import nbtorch as torch
from nbtorch.kernels.cpu import reduce as reduce_kernels
from nbtorch.ops import reduction_stats as ST
from harness import ALL_FLOATS, check_grad, check_op

S = (3, 4)
NO_0D = ("contiguous", "noncontig", "broadcast")
inf, nan = math.inf, math.nan


@pytest.mark.filterwarnings("ignore:Degrees of freedom")
@pytest.mark.filterwarnings("ignore:var\\(\\)")
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_var_std(dim, correction, device):
    check_op(lambda t: t.var(dim, correction=correction),
             lambda a: a.var(axis=dim, ddof=correction), S, layouts=NO_0D, grad=False,
             device=device)
    check_op(lambda t: t.std(dim, correction=correction, keepdim=True),
             lambda a: a.std(axis=dim, ddof=correction, keepdims=True), S,
             layouts=("contiguous", "noncontig"), grad=False, device=device)


def test_var_std_grads(device):
    check_grad(lambda t: t.var(1), S, gradgrad=True, device=device)
    check_grad(lambda t: t.var(), S, gradgrad=True, device=device)
    check_grad(lambda t: t.std(0, correction=0), S, gradgrad=True, device=device)
    check_grad(lambda t: ST.var_mean(t, 1), S, gradgrad=True, device=device)
    check_grad(lambda t: ST.std_mean(t, (0, 1), keepdim=True), S, device=device)


@pytest.mark.filterwarnings("ignore:var\\(\\)")
def test_var_legacy_args_and_errors():
    a = np.random.default_rng(0).standard_normal((4, 5))
    x = torch.tensor(a)
    np.testing.assert_allclose(x.var(False).item(), a.var())
    np.testing.assert_allclose(x.var(1, False).numpy(), a.var(1))
    np.testing.assert_allclose(x.std(1, unbiased=True, keepdim=True).numpy(),
                               a.std(1, ddof=1, keepdims=True))
    v, m = ST.var_mean(x, 0)
    np.testing.assert_allclose(v.numpy(), a.var(0, ddof=1))
    np.testing.assert_allclose(m.numpy(), a.mean(0))
    s, m = ST.std_mean(x)
    np.testing.assert_allclose(s.item(), a.std(ddof=1))
    with pytest.raises(RuntimeError, match="floating point"):
        torch.tensor([1, 2]).var()
    with pytest.raises(RuntimeError, match="can't specify both"):
        x.var(0, unbiased=True, correction=1)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        assert np.isnan(torch.tensor([1.0]).var().item())
    assert np.isnan(torch.zeros(0).var().item())
    np.testing.assert_allclose(torch.ones(4, dtype=torch.float16).var().item(), 0.0)


def test_var_parallel_and_column_walk(monkeypatch):
    a = np.random.default_rng(1).standard_normal((50, 60)).astype(np.float32) + 1000
    x = torch.tensor(a)
    for d in (0, 1):
        np.testing.assert_allclose(x.var(d).numpy(), a.astype(np.float64).var(d, ddof=1),
                                   rtol=1e-4)
    monkeypatch.setattr(reduce_kernels, "PARALLEL_MIN_NUMEL", 1)
    for d in (0, 1):
        np.testing.assert_allclose(x.var(d).numpy(), a.astype(np.float64).var(d, ddof=1),
                                   rtol=1e-4)


def _np_lse(a, dim=None, keepdims=False):
    m = np.max(a, axis=dim, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    r = np.log(np.sum(np.exp(a - m), axis=dim, keepdims=True)) + m
    return r if keepdims else np.squeeze(r, axis=dim)


@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_logsumexp(dim, device):
    check_op(lambda t: t.logsumexp(dim), lambda a: _np_lse(a, dim), S, dtypes=ALL_FLOATS,
             layouts=NO_0D, grad=False, device=device)
    check_grad(lambda t: t.logsumexp(dim, keepdim=True), S, gradgrad=True, device=device)


def test_logsumexp_special_rows():
    x = torch.tensor([[0.0, 1000.0], [-inf, -inf], [inf, 1.0], [nan, 1.0], [1e4, 1e4]])
    r = x.logsumexp(1).tolist()
    assert r[0] == 1000.0 and r[1] == -inf and r[2] == inf and np.isnan(r[3])
    assert r[4] == pytest.approx(1e4 + math.log(2))
    assert x.t().logsumexp(0).tolist()[:3] == r[:3]
    assert torch.zeros(0, 3).logsumexp(0).tolist() == [-inf] * 3
    assert torch.tensor([1, 2]).logsumexp(0).dtype is torch.float32


@pytest.mark.parametrize("p", [2, 1, inf, -inf, 0, 3, 0.5, "fro"])
@pytest.mark.parametrize("dim", [None, 1, (0, 1)])
def test_norm_values(p, dim, device):
    pn = 2 if p == "fro" else p

    def ref(a):
        v = np.abs(a)
        if pn == inf:
            return v.max(axis=dim)
        if pn == -inf:
            return v.min(axis=dim)
        if pn == 0:
            return (v != 0).sum(axis=dim).astype(a.dtype)
        return (v ** pn).sum(axis=dim) ** (1.0 / pn)
    check_op(lambda t: t.norm(p, dim), ref, S, layouts=NO_0D, grad=False, rtol=1e-5, device=device)


@pytest.mark.parametrize("p", [2, 1, inf, 3])
def test_norm_grads(p, device):
    check_grad(lambda t: t.norm(p, 1), S, gradgrad=p in (2, 3), device=device)
    check_grad(lambda t: ST.vector_norm(t, p), S, device=device)


def test_norm_specials():
    z = torch.zeros(3, dtype=torch.float64, requires_grad=True)
    z.norm().backward()
    assert z.grad.tolist() == [0.0, 0.0, 0.0]           # masked at a zero norm, as PyTorch
    assert ST.vector_norm(torch.tensor([3.0, 4.0])).item() == 5.0
    assert ST.vector_norm(torch.tensor([3.0, -4.0]), ord=inf).item() == 4.0
    assert ST.vector_norm(torch.tensor([1, 2]), dtype=torch.float64).dtype is torch.float64
    with pytest.raises(RuntimeError, match="floating point"):
        ST.vector_norm(torch.tensor([1, 2]))
    assert torch.ones(2, 2).norm("nuc").item() == pytest.approx(2.0)   # PyTorch's nuclear norm
    with pytest.raises(RuntimeError, match="unsupported p"):
        torch.ones(2, 2).norm("bogus")
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.ones(2, 2).norm(2, 3)
    assert torch.zeros(0).norm().item() == 0.0
