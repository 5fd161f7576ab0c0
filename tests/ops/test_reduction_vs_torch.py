"""Reductions, scans, softmax and sorting against PyTorch itself (skipped without it):
values, dtypes, indices (ties, NaN), error types, and gradients."""
import math

import numpy as np
import pytest

import nbtorch as nb
from nbtorch.ops import reduction_minmax as MM
from nbtorch.ops import reduction_stats as ST
from nbtorch.ops import sorting as SO

torch = pytest.importorskip("torch")

nan, inf = math.nan, math.inf
X = np.array([[1., 3., 3., nan], [2., 2., -1., 0.], [5., 0., 0., 7.]], dtype=np.float32)
Y = np.array([[1., 3., 3., 2.], [2., 2., -1., 0.], [5., 0., 5., 7.]], dtype=np.float32)
I = np.array([[3, 1, 3], [2, 2, 0]])
E = np.zeros((0, 3), np.float32)
S0 = np.array(3.5, np.float32)

# name, input, function of (module namespace, tensor); module namespace: torch or nbtorch
CASES = [
    ("max", Y, lambda m, t: t.max()), ("max nan", X, lambda m, t: t.max()),
    ("max dim", X, lambda m, t: tuple(t.max(1))),
    ("min keepdim", X, lambda m, t: tuple(t.min(0, keepdim=True))),
    ("argmax nan", X, lambda m, t: t.argmax(1)), ("argmax ties", Y, lambda m, t: t.argmax(0)),
    ("argmin all", Y, lambda m, t: t.argmin()), ("amax dims", Y, lambda m, t: t.amax((0, 1))),
    ("max int", I, lambda m, t: tuple(t.max(0))), ("max bool", I, lambda m, t: (t > 1).max()),
    ("sum int", I, lambda m, t: t.sum()), ("sum bool", I, lambda m, t: (t > 1).sum(0)),
    ("mean int", I, lambda m, t: t.mean()), ("prod int32", I, lambda m, t: t.int().prod(1)),
    ("var", Y, lambda m, t: t.var(1)), ("var int", I, lambda m, t: t.var()),
    ("std corr", Y, lambda m, t: t.std(0, correction=0)),
    ("var_mean", Y, lambda m, t: tuple(m.var_mean(t, 1))),
    ("logsumexp", X, lambda m, t: t.logsumexp(1)), ("norm", Y, lambda m, t: t.norm()),
    ("norm p1", Y, lambda m, t: t.norm(1, 1)), ("norm inf", Y, lambda m, t: t.norm(inf)),
    ("norm int", I, lambda m, t: t.norm()), ("softmax int", I, lambda m, t: t.softmax(0)),
    ("softmax", X, lambda m, t: t.softmax(1)), ("log_softmax", Y, lambda m, t: t.log_softmax(0)),
    ("cumsum", Y, lambda m, t: t.cumsum(1)), ("cumsum int", I, lambda m, t: t.cumsum(1)),
    ("cumprod", Y, lambda m, t: t.cumprod(0)), ("cummax", X, lambda m, t: tuple(t.cummax(1))),
    ("cummin", X, lambda m, t: tuple(t.cummin(1))),
    ("sort", X, lambda m, t: tuple(t.sort(dim=1, stable=True))),
    ("sort desc", X, lambda m, t: tuple(t.sort(dim=1, descending=True, stable=True))),
    ("argsort", Y, lambda m, t: t.argsort(dim=0, stable=True)),
    ("kthvalue", Y, lambda m, t: tuple(t.kthvalue(2, 1))), ("median", Y, lambda m, t: t.median()),
    ("median dim", X, lambda m, t: tuple(t.median(1))),
    ("nanmedian dim", X, lambda m, t: tuple(t.nanmedian(1))),
    ("unique", I, lambda m, t: m.unique(t, return_inverse=True, return_counts=True)),
    ("histc", Y, lambda m, t: m.histc(t, 4)), ("all", I, lambda m, t: t.all(1)),
    ("count_nonzero", Y, lambda m, t: t.count_nonzero(0)), ("nansum", X, lambda m, t: t.nansum(1)),
    ("nanmean", X, lambda m, t: t.nanmean(1)),
    ("max empty", E, lambda m, t: t.max()), ("max empty dim0", E, lambda m, t: t.max(0)),
    ("max empty dim1", E, lambda m, t: tuple(t.max(1))), ("amax empty", E, lambda m, t: t.amax(0)),
    ("argmax empty", E, lambda m, t: t.argmax()), ("aminmax empty", E, lambda m, t: m.aminmax(t)),
    ("var empty", E, lambda m, t: t.var(0)), ("median empty", E, lambda m, t: t.median()),
    ("prod empty", E, lambda m, t: t.prod(0)), ("lse empty", E, lambda m, t: t.logsumexp(0)),
    ("sort empty", E, lambda m, t: tuple(t.sort(0))),
    ("kth err", Y, lambda m, t: t.kthvalue(5, 1)),
    ("dim err", Y, lambda m, t: t.sum(3)), ("softmax dim err", Y, lambda m, t: t.softmax(3)),
    ("sum 0d", S0, lambda m, t: t.sum(0)), ("max 0d", S0, lambda m, t: tuple(t.max(0))),
    ("argmax 0d", S0, lambda m, t: t.argmax(0)), ("sort 0d", S0, lambda m, t: tuple(t.sort())),
    ("cumsum 0d", S0, lambda m, t: t.cumsum(0)), ("var 0d", S0, lambda m, t: t.var()),
    ("median 0d", S0, lambda m, t: tuple(t.median(0))), ("amax 0d", S0, lambda m, t: t.amax(0)),
    ("logsumexp 0d", S0, lambda m, t: t.logsumexp(0)), ("norm 0d", S0, lambda m, t: t.norm()),
]


class _NB:
    """nbtorch's namespace for functions not yet re-exported at the top level."""

    def __getattr__(self, name):
        for mod in (nb, MM, ST, SO):
            if hasattr(mod, name):
                return getattr(mod, name)
        raise AttributeError(name)


def _run(mod, make, arr, fn):
    try:
        return _plain(fn(mod, make(arr)))
    except Exception as e:                     # compare error types, not messages
        return ("error", type(e).__name__)


def _plain(r):
    if isinstance(r, (tuple, list)):
        return tuple(_plain(x) for x in r)
    a = np.asarray(r.detach().numpy())
    return (str(r.dtype).replace("torch.", ""), a.shape, a.astype(np.float64))


def _same(a, b):
    if isinstance(a, tuple) and a and isinstance(a[0], str) and a[0] == "error":
        return a == b
    if isinstance(a, tuple) and len(a) == 3 and isinstance(a[0], str):
        return (isinstance(b, tuple) and len(b) == 3 and a[0] == b[0] and a[1] == b[1]
                and np.allclose(a[2], b[2], rtol=1e-6, atol=1e-6, equal_nan=True))
    return isinstance(b, tuple) and len(a) == len(b) and all(map(_same, a, b))


@pytest.mark.filterwarnings("ignore:var\\(\\)")
@pytest.mark.parametrize("name, arr, fn", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, arr, fn):
    want = _run(torch, torch.tensor, arr, fn)
    got = _run(_NB(), nb.tensor, arr, fn)
    assert _same(want, got), f"torch: {want}\nnbtorch: {got}"


GRADS = [
    ("max all ties", Y, lambda t: t.max()), ("min dim", np.array([[1., 1., 2.]]),
                                             lambda t: t.min(1).values),
    ("amax ties", Y, lambda t: t.amax(1)), ("median all ties", Y, lambda t: t.median()),
    ("norm at zero", np.array([[0., 0.], [3., 4.]]), lambda t: t.norm(dim=1)),
    ("norm inf ties", np.array([[-2., 2.], [3., 4.]]), lambda t: t.norm(inf, dim=1)),
    ("std at zero", np.array([[1., 1.], [3., 4.]]), lambda t: t.std(1)),
    ("prod zeros", np.array([[0., 1., 2.], [0., 0., 3.], [1., 2., 3.]]), lambda t: t.prod(1)),
    ("cumprod zeros", np.array([[0., 1., 2.], [2., 0., 3.], [1., 2., 0.]]),
     lambda t: t.cumprod(1)),
    ("cummax", Y, lambda t: t.cummax(1).values),
    ("kthvalue", Y, lambda t: t.kthvalue(2, 1).values),
    ("var", Y, lambda t: t.var(0)), ("logsumexp", Y, lambda t: t.logsumexp(1)),
    ("softmax", Y, lambda t: t.softmax(1) * t), ("log_softmax", Y, lambda t: t.log_softmax(0) * t),
]


@pytest.mark.parametrize("name, arr, fn", GRADS, ids=[g[0] for g in GRADS])
def test_gradients_match_torch(name, arr, fn):
    t = torch.tensor(arr, dtype=torch.float64, requires_grad=True)
    n = nb.tensor(arr, dtype=nb.float64, requires_grad=True)
    fn(t).sum().backward()
    fn(n).sum().backward()
    np.testing.assert_allclose(n.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)
