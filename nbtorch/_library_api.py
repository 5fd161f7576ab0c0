"""PyTorch's module-level `torch.library` functions over both kinds of nbtorch custom op.

``impl``, ``register_kernel``, ``register_fake``, ``register_autograd`` and ``define``
with a schema string take an op as PyTorch does (a qualified name, a `CustomOpDef`, or
``torch.ops.ns.op[.overload]``) and route to the op's own method: a `CustomOpDef`
(tensor-level implementations) or nbtorch's `CustomOp` (raw-array kernels).
"""
import threading

from ._library_op import _OPS, CustomOp
from ._library_torch import CustomOpDef, define_schema, device_types_of

__all__ = ["resolve_op", "define", "impl", "register_kernel", "register_fake",
           "register_autograd", "register_autocast", "register_vmap",
           "register_torch_dispatch", "impl_dispatch", "fallthrough_kernel", "OpCheckError",
           "get_ctx", "FakeImplCtx"]


class FakeImplCtx:
    """What `get_ctx()` gives a fake rule (PyTorch's FakeImplCtx). nbtorch has no symbolic
    sizes: fake rules run on real tensors, so a data-dependent size is a stand-in number,
    which `opcheck` accepts for any real size in [min, max]."""

    _next = [257]

    def __init__(self):
        self.dynamic = {}                      # stand-in size -> (min, max)

    def new_dynamic_size(self, *, min=0, max=None):
        n = FakeImplCtx._next[0]
        FakeImplCtx._next[0] = 257 + (n - 255) % 256        # odd stand-ins in [257, 511]
        self.dynamic[n] = (min, max)
        return n


_FAKE = threading.local()                      # .ctx: the ctx of the fake rule opcheck runs


def get_ctx():
    """PyTorch's ``torch.library.get_ctx``, called inside a fake rule (see `FakeImplCtx`)."""
    ctx = getattr(_FAKE, "ctx", None)
    return ctx if ctx is not None else FakeImplCtx()


class OpCheckError(Exception):
    """One of `opcheck`'s tests failed (the cause holds the original error)."""


def resolve_op(op):
    """The custom op that `op` names: a CustomOpDef/CustomOp, 'ns::name[.overload]', or
    an OpOverload / OpOverloadPacket of ``torch.ops``."""
    if isinstance(op, (CustomOpDef, CustomOp)):
        return op
    target = getattr(op, "op", None)                 # an OpOverload
    if isinstance(target, (CustomOpDef, CustomOp)):
        return target
    if hasattr(op, "_qualified_op_name"):            # an OpOverloadPacket
        return resolve_op(op.default)
    if isinstance(op, str):
        found = _OPS.get(op)
        if found is None:
            ns, _, name = op.partition("::")
            raise AttributeError(f"'_OpNamespace' '{ns}' object has no attribute '{name}'")
        return found
    raise TypeError(f"expected a custom op, its qualified name or a torch.ops overload, "
                    f"got {type(op).__name__}")


def define(qualname, schema, *, lib=None, tags=()):
    """PyTorch's ``torch.library.define(qualname, schema)``: a new op without kernels."""
    op = define_schema(qualname, schema)
    if lib is not None:
        lib._ops[op._key.split("::", 1)[1]] = op
    return op


# dispatch keys of `impl` / `Library.impl` and the devices they stand for
_ALL = ("", "default", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")
_IMPLICIT = ("CompositeImplicitAutograd", "Autograd", "AutogradCPU", "AutogradCUDA")


def fallthrough_kernel():
    """PyTorch's marker kernel: registered on a key, it means "skip this key"; nbtorch
    has no dispatch keys to skip, so `impl` ignores it."""
    raise NotImplementedError("fallthrough_kernel() should never be called.")


def impl_dispatch(op, key, fn):
    """Register `fn` on `op` for dispatch key or device `key` (PyTorch's spellings)."""
    if fn is fallthrough_kernel:
        return fn
    if isinstance(op, CustomOp):                     # nbtorch's raw-array kernels
        for d in device_types_of(None if key in _ALL else key.lower()):
            op.register_kernel(d, fn, override=True)
        return fn
    if key in _IMPLICIT:
        op._composite = fn
    elif key == "Meta":
        op.register_fake(fn)
    elif key in _ALL:
        op._push(None, fn, low=True)
    else:
        op._push(key.lower(), fn)
    return fn


def impl(qualname, types, func=None, *, lib=None):
    """PyTorch's ``torch.library.impl``: `func` implements op `qualname` on `types` (a
    device type, dispatch key or a sequence of them); a decorator without `func`.

    ``impl(lib, name, dispatch_key)`` (PyTorch's older form) is a decorator too.
    """
    from .library import Library
    if isinstance(qualname, Library):
        lib_, name, key = qualname, types, func or ""

        def register(f):
            lib_.impl(name, f, key)
            return f
        return register
    op = resolve_op(qualname)
    keys = (types,) if isinstance(types, str) else tuple(types)

    def inner(f):
        for k in keys:
            impl_dispatch(op, k, f)
        return f
    return inner if func is None else inner(func)


def register_kernel(op, device_types, func=None, /, *, lib=None):
    """PyTorch's ``torch.library.register_kernel``: `func` is `op`'s implementation on
    `device_types` (raw-array kernels for an nbtorch-style `CustomOp`)."""
    target = resolve_op(op)
    if isinstance(target, CustomOp):
        def inner(f):
            for d in device_types_of(device_types):
                target.register_kernel(d, f, override=True)
            return f
        return inner if func is None else inner(func)
    return target.register_kernel(device_types, func)


def register_fake(op, func=None, /, *, lib=None, _stacklevel=1, allow_override=False):
    """PyTorch's ``torch.library.register_fake`` (alias ``impl_abstract``)."""
    target = resolve_op(op)
    if isinstance(target, CustomOp):
        raise RuntimeError(f"{target.name} is an nbtorch-style custom op: its meta function "
                           "already gives the output's shape and dtype")
    return target.register_fake(func) if func is not None else target.register_fake


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """PyTorch's ``torch.library.register_autograd``: `backward(ctx, *grads)` returns one
    gradient per input; `setup_context(ctx, inputs, output)` saves what it needs."""
    target = resolve_op(op)
    if isinstance(target, CustomOp):
        target.register_backward(backward, setup_context=setup_context)
    else:
        target.register_autograd(backward, setup_context=setup_context)


def _pytorch_style(op, what):
    target = resolve_op(op)
    if isinstance(target, CustomOp):
        raise RuntimeError(f"{what}: {target.name} is an nbtorch-style custom op (raw-array "
                           "kernels); define it with torch.library.custom_op for this")
    return target


def register_autocast(op, device_type, cast_inputs, /, *, lib=None):
    """PyTorch's ``torch.library.register_autocast`` (see `CustomOpDef.register_autocast`)."""
    _pytorch_style(op, "register_autocast").register_autocast(device_type, cast_inputs)


def register_vmap(op, func=None, /, *, lib=None):
    """PyTorch's ``torch.library.register_vmap``: stored (nbtorch's vmap loops)."""
    return _pytorch_style(op, "register_vmap").register_vmap(func)


def register_torch_dispatch(op, torch_dispatch_class, func=None, /, *, lib=None):
    """PyTorch's ``torch.library.register_torch_dispatch``: stored (nbtorch has no
    TorchDispatchMode to call it)."""
    return _pytorch_style(op, "register_torch_dispatch").register_torch_dispatch(
        torch_dispatch_class, func)
