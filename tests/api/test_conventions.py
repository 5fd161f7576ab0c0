"""PyTorch's argument conventions (nbtorch/_conventions.py): axis= for dim=, out= where
PyTorch has it, dtype= on reductions, keepdim everywhere, size= in factories. The
standalone tests pin the behaviour; with PyTorch installed, its operator schemas say
which functions must take which arguments."""
import inspect
import warnings

import pytest

import nbtorch
from nbtorch._conventions import OUT_FUNCTIONS, PYTHON_REFUSES_OUT


def test_axis_alias_and_keepdim():
    x = nbtorch.arange(6.0).reshape(2, 3)
    assert nbtorch.sum(x, axis=1).tolist() == [3.0, 12.0]
    assert x.sum(axis=0, keepdim=True).shape == (1, 3)
    assert x.cumsum(axis=1)[1].tolist() == [3.0, 7.0, 12.0]
    assert nbtorch.amax(x, axis=0).tolist() == [3.0, 4.0, 5.0]
    assert x.softmax(axis=1).shape == (2, 3)
    assert nbtorch.mean(x, axis=1, dtype=nbtorch.float64).dtype is nbtorch.float64
    with pytest.raises(TypeError, match="multiple values for argument 'dim'"):
        nbtorch.sum(x, dim=0, axis=1)


def test_out_argument():
    x = nbtorch.arange(6.0).reshape(2, 3)
    out = nbtorch.empty(0)
    assert nbtorch.sum(x, 1, out=out) is out and out.tolist() == [3.0, 12.0]
    v, i = nbtorch.empty(2), nbtorch.empty(2, dtype=nbtorch.int64)
    r = nbtorch.max(x, 1, out=(v, i))
    assert v.tolist() == [2.0, 5.0] and i.tolist() == [2, 2] and r.values is v
    z = nbtorch.empty(3, dtype=nbtorch.float64)
    nbtorch.zeros(3, out=z)
    assert z.tolist() == [0.0, 0.0, 0.0] and z.dtype is nbtorch.float64
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        nbtorch.sum(x, 1, out=nbtorch.empty(2, dtype=nbtorch.int64))
    big = nbtorch.ones(2, 2)
    with pytest.warns(UserWarning, match="was resized"):
        nbtorch.cat([x, x], out=big)
    assert big.shape == (4, 3) and big[3].tolist() == [3.0, 4.0, 5.0]
    w = nbtorch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        nbtorch.mul(w, 2, out=nbtorch.empty(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")               # a 0-element out resizes silently
        nbtorch.add(x, 1, out=nbtorch.empty(0))


def test_size_keyword_and_wrappers_keep_metadata():
    assert nbtorch.zeros(size=(2, 3)).shape == (2, 3)
    assert nbtorch.empty(size=(1,)).shape == (1,)
    assert nbtorch.sum.__name__ == "sum" and "dim" in inspect.signature(nbtorch.sum).parameters


def _schemas(torch, name):
    try:
        return torch._C._jit_get_schemas_for_operator("aten::" + name)
    except Exception:
        return []


def _accepts(fn, name):
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True
    return name in params or any(p.kind == p.VAR_KEYWORD for p in params.values()) or \
        (name == "axis" and getattr(fn, "__nbtorch_conventions__", False))


def test_pytorch_schemas_are_honoured():
    """For every nbtorch function and Tensor method PyTorch also has: the arguments its
    schemas name (dim, keepdim, dtype) are accepted, axis wherever dim is, and out= is
    handled wherever PyTorch has an out overload."""
    torch = pytest.importorskip("torch")
    problems = []
    for holder, t_holder in ((nbtorch, torch), (nbtorch.Tensor, torch.Tensor)):
        for name in dir(t_holder):
            if name.startswith("_") or not hasattr(holder, name):
                continue
            schemas = _schemas(torch, name)
            args = {a.name for s in schemas for a in s.arguments}
            fn = getattr(holder, name)
            if not callable(fn) or inspect.isclass(fn):
                continue
            for kw in ("dim", "keepdim", "dtype"):
                if kw in args and not _accepts(fn, kw) and not (kw == "dtype" and
                                                                name == "view"):
                    problems.append(f"{name}: no {kw}=")
            if "dim" in args and _accepts(fn, "dim") and not _accepts(fn, "axis"):
                problems.append(f"{name}: no axis=")
            if holder is nbtorch and any(a.name == "out" and a.kwarg_only
                                         for s in schemas for a in s.arguments):
                if name not in OUT_FUNCTIONS and name not in PYTHON_REFUSES_OUT:
                    problems.append(f"{name}: out= missing from OUT_FUNCTIONS")
    assert not problems, "; ".join(problems)


def test_plain_out_of_elementwise_ops_is_written_in_place(monkeypatch):
    from nbtorch import _conventions
    copies = []
    original = _conventions.write_out
    monkeypatch.setattr(_conventions, "write_out",
                        lambda *a: copies.append(a[0]) or original(*a))
    a, b = nbtorch.rand(4, 3), nbtorch.rand(4, 3)
    out = nbtorch.empty(4, 3)
    version = out._version
    assert nbtorch.add(a, b, alpha=2, out=out) is out and nbtorch.equal(out, a + 2 * b)
    assert nbtorch.exp(a, out=out) is out and nbtorch.equal(out, a.exp())
    assert nbtorch.mul(out, 0.5, out=out) is out and nbtorch.equal(out, a.exp() * 0.5)
    assert not copies and out._version > version            # written, version bumped
    nbtorch.add(a, b[0], out=out)                             # broadcast: the general rule
    nbtorch.div(a, b, rounding_mode="floor", out=out)         # a string argument
    nbtorch.add(a.double(), b.double(), out=out)              # another dtype
    assert copies == ["add", "div", "add"]
    with pytest.warns(UserWarning, match="resized"):
        nbtorch.add(a, b, out=nbtorch.empty(2))               # resized, as PyTorch
    w = nbtorch.rand(4, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        nbtorch.add(w, b, out=out)


@pytest.mark.parametrize("name", ["copysign", "atan2", "xlogy", "logaddexp", "hypot",
                                  "remainder", "fmod", "pow", "maximum", "minimum", "fmax",
                                  "fmin", "exp", "tanh", "sigmoid", "sqrt"])
def test_plain_out_of_more_elementwise_ops_equals_the_fresh_result(name, monkeypatch):
    from nbtorch import _conventions
    copies = []
    original = _conventions.write_out
    monkeypatch.setattr(_conventions, "write_out",
                        lambda *a: copies.append(a[0]) or original(*a))
    fn = getattr(nbtorch, name)
    a, b = nbtorch.randn(5, 2, dtype=nbtorch.float64), nbtorch.rand(5, 2, dtype=nbtorch.float64)
    a = a.abs() + 0.1 if name in ("sqrt", "pow") else a
    args = (a,) if name in ("exp", "tanh", "sigmoid", "sqrt") else (a, b + 0.5)
    out = nbtorch.empty(5, 2, dtype=nbtorch.float64)
    assert fn(*args, out=out) is out
    assert nbtorch.equal(out, fn(*args)) and not copies
