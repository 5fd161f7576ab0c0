"""The small unrecorded CPU paths of max/min/amax/argmax, cumsum/cumprod, var/std/norm,
all/any and layer_norm: the same bits, dtype, shape and strides as the general path
(forced by switching the small paths off), the same answers as PyTorch, and stepping
aside where something is recorded, the layout or dtype differs, or a kernel is replaced."""
import contextlib
import math
import warnings

import numpy as np
import pytest

import nbtorch
import nbtorch.nn.functional as F
from nbtorch import _registry
from nbtorch.ops import normalization, reduction_minmax, reduction_stats, scan

_SMALL = ((reduction_minmax, "_small_extreme"), (reduction_minmax, "_small_with_index"),
          (reduction_stats, "_small_stat"), (scan, "_small_scan"),
          (normalization, "_small_layer_norm"))


@contextlib.contextmanager
def general_path(monkeypatch):
    """Every small path of this file off (they answer None): the general path runs."""
    with monkeypatch.context() as m:
        for module, name in _SMALL:
            m.setattr(module, name, lambda *a, **k: None)
        yield


@contextlib.contextmanager
def counted(monkeypatch):
    """Counts the small paths' answers (not None) by name."""
    hits = {}
    with monkeypatch.context() as m:
        for module, name in _SMALL:
            real = getattr(module, name)

            def spy(*a, _real=real, _name=name, **k):
                out = _real(*a, **k)
                if out is not None:
                    hits[_name] = hits.get(_name, 0) + 1
                return out
            m.setattr(module, name, spy)
        yield hits


def _order_sensitive(shape, dtype=nbtorch.float32, seed=0):
    """Values of mixed magnitudes, whose float sums depend on the order of the terms."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) * 10.0 ** rng.integers(-4, 5, size=shape)
    return nbtorch.tensor(a, dtype=dtype)


def _flat(out):
    return list(out) if isinstance(out, tuple) else [out]


def _same(a, b):
    """The same dtype, shape, strides and bits, NaNs compared by position only: the sign
    of a NaN that inf - inf makes and another NaN meets can differ between two calls of
    one kernel (which operand an instruction propagates depends on the loop version LLVM
    picks for where the output lies: seen once in CI, layer_norm of a row holding both),
    and PyTorch promises no NaN payloads either."""
    for x, y in zip(_flat(a), _flat(b)):
        assert x.dtype is y.dtype and x.shape == y.shape and x.stride() == y.stride()
        xa, ya = x.numpy(), y.numpy()
        if xa.dtype.kind == "f":
            nan = np.isnan(xa)
            assert (nan == np.isnan(ya)).all()
            xa, ya = xa[~nan], ya[~nan]
        assert xa.tobytes() == ya.tobytes()


OPS = {
    "max()": lambda x: x.max(), "min()": lambda x: x.min(),
    "max(-1)": lambda x: x.max(-1), "min(0,keep)": lambda x: x.min(0, keepdim=True),
    "amax(-1)": lambda x: x.amax(-1), "amin(0,keep)": lambda x: x.amin(0, True),
    "amax(())": lambda x: x.amax(), "argmax(-1)": lambda x: x.argmax(-1),
    "argmin(0,keep)": lambda x: x.argmin(0, keepdim=True), "argmax()": lambda x: x.argmax(),
    "argmin(keep)": lambda x: x.argmin(keepdim=True),
    "cumsum(-1)": lambda x: x.cumsum(-1), "cumsum(0)": lambda x: x.cumsum(0),
    "cumprod(-1)": lambda x: x.cumprod(-1), "cumprod(0)": lambda x: x.cumprod(0),
    "std()": lambda x: x.std(), "var(0)": lambda x: x.var(0),
    "std(-1,keep)": lambda x: x.std(-1, keepdim=True), "var()": lambda x: x.var(),
    "norm()": lambda x: x.norm(), "norm(dim=1)": lambda x: x.norm(dim=1),
    "vector_norm(-1)": lambda x: nbtorch.linalg.vector_norm(x, dim=-1, keepdim=True),
    "layer_norm": lambda x: F.layer_norm(x, x.shape[-1:]),
    "layer_norm(2)": lambda x: F.layer_norm(x, x.shape[-2:]),
}


@pytest.mark.parametrize("dtype", [nbtorch.float32, nbtorch.float64])
def test_small_paths_give_the_general_paths_bits(monkeypatch, dtype):
    xs = [_order_sensitive((8, 16), dtype), _order_sensitive((3, 4, 5), dtype, 1)]
    ties = nbtorch.tensor([[1., 3., 3., -0.], [0., -0., 0., -0.], [2., 2., 2., 2.]],
                          dtype=dtype)
    nans = nbtorch.tensor([[1., math.nan, 3., math.nan], [math.inf, 1., -math.inf, 0.]],
                          dtype=dtype)
    with nbtorch.no_grad():
        for x in xs + [ties, nans]:
            with general_path(monkeypatch):
                want = {k: f(x) for k, f in OPS.items()}
            with counted(monkeypatch) as hits:
                got = {k: f(x) for k, f in OPS.items()}
            assert sum(hits.values()) == len(OPS)
            for k in OPS:
                _same(got[k], want[k])


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(2).standard_normal((5, 6)).astype(np.float32)
    a[1, 2] = np.nan
    a[3, :] = 7.0                                      # ties: the first index
    x, t = nbtorch.tensor(a), torch.tensor(a)
    names = [k for k in OPS if "layer_norm(2)" != k]
    with nbtorch.no_grad(), torch.no_grad():
        for k in names:
            f = OPS[k]
            tf = {"vector_norm(-1)": lambda t: torch.linalg.vector_norm(t, dim=-1,
                                                                         keepdim=True),
                  "layer_norm": lambda t: torch.nn.functional.layer_norm(t, t.shape[-1:]),
                  }.get(k, f)
            for mine, theirs in zip(_flat(f(x)), _flat(tf(t))):
                assert str(mine.dtype) == str(theirs.dtype) and tuple(mine.shape) == \
                    tuple(theirs.shape)
                np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=2e-6,
                                           atol=2e-6, equal_nan=True)
        m = x > 0
        for v in (m, m[:0], nbtorch.ones(3, dtype=nbtorch.bool), m.t()):
            tv = torch.tensor(v.numpy())
            assert v.any().item() == tv.any().item() and v.all().item() == tv.all().item()
            assert v.any().dtype is nbtorch.bool and v.all().shape == ()


def test_steps_aside_and_errors_stay(monkeypatch):
    x = _order_sensitive((4, 6))
    cases = [x.t(), x.to(nbtorch.float16), x.to(nbtorch.int64), x[:, ::2],
             nbtorch.tensor(2.5), nbtorch.tensor([3.0])]
    with nbtorch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")                 # std() of one element warns
        for v in cases:
            for k in ("max(-1)", "amax(-1)", "cumsum(-1)", "std()", "norm()", "layer_norm",
                      "argmax(-1)"):
                if k in ("std()", "norm()", "layer_norm") and not v.dtype.is_floating_point:
                    continue
                if v.dim() == 0 and k in ("layer_norm",):
                    continue
                with general_path(monkeypatch):
                    want = OPS[k](v)
                _same(OPS[k](v), want)
    # recorded: the general path, a graph node
    r = x.clone().requires_grad_()
    with counted(monkeypatch) as hits:
        for f in (lambda: r.max(), lambda: r.amax(-1), lambda: r.max(1)[0], lambda: r.std(),
                  lambda: r.norm(), lambda: r.cumsum(1), lambda: F.layer_norm(r, (6,))):
            assert f().grad_fn is not None
    assert not hits
    w = nbtorch.nn.Parameter(nbtorch.ones(6))
    assert F.layer_norm(x, (6,), w).grad_fn is not None
    with nbtorch.no_grad():                             # a parameter is read by its array
        _same(F.layer_norm(x, (6,), w, w * 0.5), F.layer_norm(x, (6,), w.detach(),
                                                               w.detach() * 0.5))
    # errors and warnings come out as before
    e = nbtorch.zeros(0, 3)
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified"):
        e.max()
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be"):
        e.argmax()
    with pytest.raises(IndexError, match="Expected reduction dim 0 to have non-zero size"):
        e.amax(0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.max(2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.cumsum(-3)
    with pytest.raises(RuntimeError, match="Given normalized_shape"):
        F.layer_norm(x, (5,))
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert math.isnan(nbtorch.ones(4, 1).var(1)[0].item())
    assert nbtorch.tensor([3e38]).norm().item() == pytest.approx(3e38)
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape"):
        F.layer_norm(x, (6,), nbtorch.ones(5))


def test_a_replaced_kernel_still_runs(monkeypatch):
    x = _order_sensitive((4, 6))
    with nbtorch.no_grad():
        x.max(), x.argmax(-1), x.cumsum(-1), x.std(), F.layer_norm(x, (6,))
        for op, call in (("amax", lambda: x.max()), ("argmax", lambda: x.argmax(-1)),
                         ("cumsum", lambda: x.cumsum(-1)), ("var", lambda: x.std()),
                         ("norm", lambda: x.norm()),
                         ("layer_norm_forward", lambda: F.layer_norm(x, (6,)))):
            real = _registry._KERNELS[(op, "cpu")]
            seen = []
            monkeypatch.setitem(_registry._KERNELS, (op, "cpu"),
                                lambda *a, _real=real: seen.append(1) or _real(*a))
            call()
            monkeypatch.undo()
            assert seen, op


def test_results_are_fresh_and_writable():
    x = _order_sensitive((4, 6))
    with nbtorch.no_grad():
        for k in ("max()", "max(-1)", "argmax(-1)", "cumsum(-1)", "std()", "layer_norm"):
            out = _flat(OPS[k](x))[0]
            assert out._base is None and out.is_contiguous()
            out.add_(1)
    assert x.numpy().tobytes() == _order_sensitive((4, 6)).numpy().tobytes()
