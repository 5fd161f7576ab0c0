"""`torch.library.opcheck`: does a custom op keep the promises its registration made?

The checks nbtorch can run, under PyTorch's names (each on fresh copies of the inputs):

- test_schema: inputs not declared in ``mutates_args`` / ``Tensor(a!)`` are unchanged
  after the call, and no output shares memory with an input or another output;
- test_autograd_registration: an op whose inputs require grad has a backward
  (`register_autograd`) or a CompositeImplicitAutograd kernel;
- test_faketensor: a fake rule is registered (for ops that return tensors) and its
  outputs have the real outputs' shapes, dtypes and devices (nbtorch has no FakeTensor:
  the fake rule runs on real tensors, so a fake rule reading data is not caught, and a
  size from ``get_ctx().new_dynamic_size()`` matches any real size in its range);
- test_aot_dispatch_static / _dynamic: the op under `nbtorch.compile` gives the eager
  outputs, and when inputs require grad, backward runs and gives the eager gradients.
"""
import numpy as np

from ._library_api import _FAKE, FakeImplCtx, OpCheckError
from ._tensor import Tensor

__all__ = ["opcheck", "OpCheckError", "DEFAULT_TEST_UTILS"]

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                      "test_aot_dispatch_dynamic")
ALL_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor",
                  "test_aot_dispatch_static", "test_aot_dispatch_dynamic")


def _copy(v):
    """A fresh copy of an argument: tensors cloned (keeping requires_grad), lists copied."""
    if isinstance(v, Tensor):
        return v.detach().clone().requires_grad_(v.requires_grad)
    if isinstance(v, (list, tuple)):
        return type(v)(_copy(e) for e in v)
    if isinstance(v, dict):
        return {k: _copy(e) for k, e in v.items()}
    return v


def _tensors(v):
    if isinstance(v, Tensor):
        return [v]
    if isinstance(v, (list, tuple)):
        return [t for e in v for t in _tensors(e)]
    return []


def _outs(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _values(t):
    return t.detach().cpu().numpy().copy()


def _name(op):
    return f"{op._namespace}.{op._name}.{op._overload or 'default'}"


def check_schema(op, args, kwargs):
    args, kwargs = _copy(args), _copy(kwargs)
    values = op._schema.bind(args, kwargs)
    before = [[_values(t) for t in _tensors(v)] for v in values]
    out = op(*args, **kwargs)
    for a, v, old in zip(op._schema.args, values, before):
        if a.mutable:
            continue
        for t, o in zip(_tensors(v), old):
            if not np.array_equal(_values(t), o, equal_nan=True):
                raise RuntimeError(f"Argument {a.name} is not defined as mutable but was "
                                   "mutated")
    storages = {id(t._storage) for v in values for t in _tensors(v)}
    for o in _outs(out):
        if isinstance(o, Tensor):
            if id(o._storage) in storages:
                raise RuntimeError(f"{_name(op)}: an output aliases an input or another "
                                   "output, which the schema does not declare")
            storages.add(id(o._storage))


def _requires_grad(args, kwargs):
    return any(t.requires_grad for v in (list(args) + list(kwargs.values()))
               for t in _tensors(v))


def check_autograd_registration(op, args, kwargs):
    if not _requires_grad(args, kwargs) or op._composite is not None:
        return
    if op._backward_fn is None and op._defined_by == "define":
        raise AssertionError(
            f"{_name(op)}: at least one input requires grad, but the operator has no "
            "autograd formula: register one with torch.library.register_autograd (or a "
            "CompositeImplicitAutograd kernel)")


def _same_shape(real, fake, dynamic):
    """Shapes equal, a fake size from `new_dynamic_size` matching any real size in range."""
    if len(real) != len(fake):
        return False
    for r, f in zip(real, fake):
        if f in dynamic:
            lo, hi = dynamic[f]
            if r < lo or hi is not None and r > hi:
                return False
        elif r != f:
            return False
    return True


def _meta_mismatch(op, real, fake, dynamic):
    prefix = (f"When comparing the output of {_name(op)} on FakeTensor and concrete Tensors, "
              "found mismatched tensor metadata: ")
    if not _same_shape(real.shape, fake.shape, dynamic):
        return prefix + f"Shapes {real.shape} and {fake.shape} are not equal!"
    if real.dtype is not fake.dtype:
        return prefix + f"Dtypes {real.dtype} and {fake.dtype} are not equal!"
    if real.device != fake.device:
        return prefix + f"Devices {real.device} and {fake.device} are not equal!"
    return None


def check_faketensor(op, args, kwargs):
    if not op._schema.returns:
        return
    if op._abstract_fn is None:
        raise RuntimeError(
            f"There was no fake impl registered for {op!r}. This is necessary for "
            "torch.compile/export/fx tracing to work. Please use "
            f"`{op._name}.register_fake` to add an fake impl.")
    from .autograd import grad_mode
    real = _outs(op(*_copy(args), **_copy(kwargs)))
    ctx = _FAKE.ctx = FakeImplCtx()
    try:
        with grad_mode.no_grad():
            fake = _outs(op._abstract_fn(*_copy(args), **_copy(kwargs)))
    finally:
        _FAKE.ctx = None
    if len(real) != len(fake):
        raise RuntimeError(f"When comparing the output of {_name(op)} on FakeTensor and "
                           f"concrete Tensors, found {len(fake)} fake output(s) but "
                           f"{len(real)} real one(s)")
    for r, f in zip(real, fake):
        if isinstance(r, Tensor) and isinstance(f, Tensor):
            msg = _meta_mismatch(op, r, f, ctx.dynamic)
            if msg:
                raise RuntimeError(msg)


def _grads(op, args, kwargs, fn):
    args, kwargs = _copy(args), _copy(kwargs)
    outs = _outs(fn(*args, **kwargs))
    leaves = [t for v in list(args) + list(kwargs.values()) for t in _tensors(v)
              if t.requires_grad]
    diff = [o for o in outs if isinstance(o, Tensor) and o.requires_grad]
    grads = []
    if leaves and diff:
        from .autograd import grad
        got = grad([o.sum() for o in diff], leaves, allow_unused=True)
        grads = [None if g is None else _values(g) for g in got]
    return [_values(o) if isinstance(o, Tensor) else o for o in outs], grads


def _close(a, b, atol, rtol, what):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if a is None or b is None:
            raise AssertionError(f"{what}: one is None")
        tol = dict(atol=1e-5, rtol=1.3e-6) if a.dtype != np.float64 else \
            dict(atol=1e-7, rtol=1e-7)
        np.testing.assert_allclose(a, b, atol=atol if atol is not None else tol["atol"],
                                   rtol=rtol if rtol is not None else tol["rtol"],
                                   err_msg=what)
    elif a != b:
        raise AssertionError(f"{what}: {a!r} != {b!r}")


def check_aot_dispatch(op, args, kwargs, atol=None, rtol=None):
    from .jit._compile import compile as _compile
    eager_out, eager_grads = _grads(op, args, kwargs, op)
    compiled = _compile(lambda *a, **k: op(*a, **k))
    out, grads = _grads(op, args, kwargs, compiled)
    if compiled.fallback_reasons:
        raise RuntimeError(f"{_name(op)}: nbtorch.compile could not capture the op and ran "
                           f"it eagerly: {compiled.fallback_reasons[0]}")
    for i, (a, b) in enumerate(zip(eager_out, out)):
        _close(a, b, atol, rtol, f"output {i} of {_name(op)}: eager vs compiled")
    for i, (a, b) in enumerate(zip(eager_grads, grads)):
        _close(a, b, atol, rtol, f"gradient {i} of {_name(op)}: eager vs compiled")


_TESTS = {"test_schema": check_schema,
          "test_autograd_registration": check_autograd_registration,
          "test_faketensor": check_faketensor,
          "test_aot_dispatch_static": check_aot_dispatch,
          "test_aot_dispatch_dynamic": check_aot_dispatch}


def opcheck(op, args, kwargs=None, *, test_utils=DEFAULT_TEST_UTILS, raise_exception=True,
            atol=None, rtol=None):
    """PyTorch's ``torch.library.opcheck``: run the checks above on `op` with `args`.

    Returns ``{test name: "SUCCESS"}``, or the exception of a failed test when
    ``raise_exception=False``; otherwise the first failure raises `OpCheckError`.
    """
    from ._library_api import resolve_op
    from ._library_torch import CustomOpDef
    try:
        target = resolve_op(op)
    except (TypeError, AttributeError):
        target = None
    if not isinstance(target, CustomOpDef):
        raise ValueError("opcheck(op, ...): op must be instance of torch._ops.OpOverload, "
                         "e.g. torch.ops.aten.sin.default, got "
                         f"{type(op)} (nbtorch checks ops made with torch.library.custom_op "
                         "or torch.library.define)")
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    if not set(test_utils) <= set(ALL_TEST_UTILS):
        raise ValueError(f"opcheck(op, ..., test_utils={test_utils}), expected test_utils "
                         f"to be subset of {ALL_TEST_UTILS} but it was not")
    kwargs = dict(kwargs or {})
    args = tuple(args)
    results = {}
    for name in test_utils:
        check = _TESTS[name]
        try:
            if check is check_aot_dispatch:
                check(target, args, kwargs, atol, rtol)
            else:
                check(target, args, kwargs)
        except Exception as e:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e} (scroll up "
                                   "for stack trace)") from e
            results[name] = e
            continue
        results[name] = "SUCCESS"
    return results
