"""nbtorch.library: define your own ops, and swap the kernel of any op, from a notebook cell.

Every op in nbtorch reaches its kernel through the device registry
(``(op name, device type) -> kernel``, `nbtorch._registry`). Built-in ops
register there at import; this module is the public face of that same
registry, so a custom op is a first-class citizen: device dispatch, the
autograd tape, `gradcheck`, `no_grad`, `nn.Module`s, the profiler and
`nbtorch.kernels.inspect` all treat it like ``nbtorch.add``.

A custom op is three things: a **meta function** (the op's signature and the
shape/dtype of its output), a **kernel per device** and, if it is to be
differentiated, a **backward**::

    import numba, nbtorch
    from nbtorch import library

    @library.custom_op("myops::scaled_add")
    def scaled_add(x, y, alpha=1.0):           # meta: signature + output spec
        return library.TensorSpec(x.shape, x.dtype)

    @scaled_add.register_kernel("cpu")
    @numba.njit
    def _(x, y, alpha, out):                   # raw arrays in, output passed in
        for i in range(out.size):
            out.flat[i] = x.flat[i] + alpha * y.flat[i]

    @scaled_add.register_backward
    def _(ctx, grad):                          # nbtorch ops: double backward works
        return grad, grad * ctx.inputs[2], None   # one per argument

    scaled_add(a, b, alpha=2.0)                # dispatches, records on the tape

Kernel calling convention: the op's arguments in signature order (tensors as
their raw arrays, C-contiguous unless ``contiguous=False``; other arguments
as given), then one preallocated output array per output of the meta rule.
A kernel whose Python signature has no room for the outputs is called without
them and must return its output array(s) instead; those are checked against
the meta rule (shape and dtype) after the call. A ``numba.cuda.jit`` kernel is
launched with a 1-D grid covering the largest array argument (write it as a
grid-stride loop, ``for i in range(cuda.grid(1), out.size, cuda.gridsize(1))``)
unless ``grid=`` says otherwise; any other callable is called as is.

`elementwise(scalar_fn)` builds both the CPU ufunc and the CUDA kernel of an
elementwise op from one scalar function; `override(op, device, fn)` replaces a
built-in kernel (e.g. your own matmul) until the handle is restored.

API at a glance:

- ``custom_op(name, meta)`` / ``define`` / ``Library(ns).define(name, meta)`` -> `CustomOp`
- ``op.register_kernel(device, fn, override=False, grid=None)`` (a decorator too)
- ``op.register_backward(fn, setup_context=None)`` (alias ``register_autograd``)
- ``op(*args)``; ``op.kernel(device)``; ``op.devices``; ``op.delete()``
- ``elementwise(scalar_fn, name=, grads=[...] or backward=fn)`` -> `ElementwiseOp`
- ``override(op, device, fn)`` -> `OverrideHandle` (``.restore()``, ``with``);
  ``restore(op, device)`` undoes every override
- ``ops(device=None)``, ``kernel(op, device)``, ``get_op(name)``
- ``Library(ns)``: ``define``, ``impl``, ``elementwise``, ``override``, ``close()``
  (deletes its ops and undoes its overrides; also a context manager)

Errors: defining an existing op or registering a second kernel on a device
without ``override=True``; a kernel whose returned output disagrees with the
meta rule (shape or dtype); a backward returning the wrong number of gradients
or a gradient of the wrong shape (messages name the op and the argument);
an unknown device type (ValueError) or op. Custom ops show up by name in
``nbtorch.profiler``, ``nbtorch.kernels.inspect(name)`` and the autograd graph
drawing (``nbtorch.autograd.graph.draw``).

Numba's on-disk cache needs a source file to key on: kernels defined in a
notebook cell or ``exec`` are compiled afresh in every process (a fraction of a
second per dtype), which is fine for experiments; move a kernel into a module
(``@numba.njit(cache=True)``) to cache it. ``NUMBA_DISABLE_JIT=1`` runs the CPU
kernels as plain Python, so a debugger can step through them.
"""
from . import _registry
from ._library_op import (DEVICES, CustomOp, Launcher, TensorSpec, _OPS, _check_new_name,
                          check_device)
from ._library_override import OverrideHandle, override, restore
from ._library_elementwise import ElementwiseOp, elementwise

__all__ = ["TensorSpec", "CustomOp", "ElementwiseOp", "Library", "custom_op", "define",
           "elementwise", "override", "restore", "OverrideHandle", "get_op", "ops", "kernel",
           "DEVICES", "Launcher"]


def custom_op(name, meta=None, *, override=False, contiguous=True):
    """Define op `name` ('namespace::op') whose signature and output rule is `meta`.

    Usable as a decorator on the meta function. Returns the `CustomOp`, which
    is called like the op and has `register_kernel`, `register_backward`.

    Example:
        >>> @nbtorch.library.custom_op("myops::double")
        ... def double(x):
        ...     return nbtorch.library.TensorSpec(x.shape, x.dtype)
        >>> double.register_kernel("cpu", numba.njit(lambda x: 2 * x))   # returns its output
    """
    def deco(m):
        _check_new_name(name, override)
        op = _OPS[name] = CustomOp(name, m, contiguous=contiguous)
        return op
    return deco if meta is None else deco(meta)


define = custom_op          # ``library.define("myops::f", meta)`` reads well without a decorator


def get_op(name):
    """The CustomOp called `name`; KeyError listing the defined ops if there is none."""
    try:
        return _OPS[name]
    except KeyError:
        raise KeyError(f"no custom op named '{name}' (defined: "
                       f"{', '.join(sorted(_OPS)) or 'none'})") from None


def ops(device=None):
    """Every op name with a kernel (built-in and custom), on `device` if given."""
    return _registry.registered_ops(None if device is None else check_device(device))


def kernel(op, device="cpu"):
    """The kernel the registry dispatches `op` to on `device` right now."""
    return _registry.get_kernel(op, check_device(device))


# ---- libraries: a namespace of ops --------------------------------------------------

class Library:
    """A namespace of custom ops (PyTorch's ``torch.library.Library``), deletable at once.

    Example:
        >>> lib = nbtorch.library.Library("myops")
        >>> @lib.define("twice")
        ... def twice(x):
        ...     return x.shape
        >>> lib.twice is twice
        True
    """

    def __init__(self, namespace):
        if not namespace or "::" in namespace:
            raise ValueError(f"invalid library namespace '{namespace}'")
        self.namespace = namespace
        self._ops = {}
        self._overrides = []

    def qualify(self, name):
        return name if "::" in name else f"{self.namespace}::{name}"

    def define(self, name, meta=None, *, override=False, contiguous=True):
        """Define op `name` in this namespace (see `custom_op`); usable as a decorator."""
        def deco(m):
            op = custom_op(self.qualify(name), m, override=override, contiguous=contiguous)
            self._ops[op.__name__] = op
            return op
        return deco if meta is None else deco(meta)

    def impl(self, name, fn, device):
        """Register kernel `fn` of op `name` on `device` (PyTorch's `Library.impl`)."""
        return get_op(self.qualify(name)).register_kernel(device, fn, override=True)

    def elementwise(self, scalar_fn=None, *, name=None, **kw):
        """`nbtorch.library.elementwise` with the op named in this namespace."""
        def deco(f):
            op = elementwise(f, name=self.qualify(name or f.__name__), **kw)
            self._ops[op.__name__] = op
            return op
        return deco if scalar_fn is None else deco(scalar_fn)

    def override(self, op, device, fn):
        """`nbtorch.library.override`, undone too by `close()`."""
        h = override(op, device, fn)
        self._overrides.append(h)
        return h

    def close(self):
        """Delete every op this library defined and restore its overrides."""
        for op in self._ops.values():
            op.delete()
        for h in reversed(self._overrides):
            h.restore()
        self._ops.clear()
        self._overrides.clear()

    def __getattr__(self, name):
        ops_ = self.__dict__.get("_ops", {})
        if name in ops_:
            return ops_[name]
        raise AttributeError(f"library '{self.__dict__.get('namespace')}' has no op '{name}'")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<Library {self.namespace}: {', '.join(self._ops) or 'no ops'}>"
