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

PyTorch's own API (``torch.library`` 2.4+) works too, on ops whose implementation
is written with tensors (`CustomOpDef`, nbtorch/_library_torch.py):
``custom_op(name, mutates_args=...)`` (the keyword tells the two forms apart; PyTorch
requires it), ``define(qualname, "(Tensor x) -> Tensor")``, ``impl``,
``register_kernel``, ``register_fake``, ``register_autograd``, ``opcheck``,
``infer_schema``, ``Library(ns, "DEF" | "FRAGMENT" | "IMPL")`` with schema strings, and
``torch.ops.<ns>.<op>`` (nbtorch/_library_ns.py; ``torch.ops.aten.add`` resolves to
``nbtorch.add``). nbtorch has no FakeTensor: fake rules run on real tensors (in
`opcheck`); ``register_torch_dispatch`` and ``register_vmap`` rules are stored, not
used (no dispatch modes; `func.vmap` loops over the batch).

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
from ._library_torch import CustomOpDef
from ._library_api import (OpCheckError, fallthrough_kernel, get_ctx, impl, impl_dispatch,
                           register_autocast,
                           register_autograd, register_fake, register_kernel,
                           register_torch_dispatch, register_vmap, resolve_op)
from . import _library_api, _library_torch

__all__ = ["TensorSpec", "CustomOp", "ElementwiseOp", "Library", "custom_op", "define",
           "elementwise", "override", "restore", "OverrideHandle", "get_op", "ops", "kernel",
           "DEVICES", "Launcher", "CustomOpDef", "impl", "register_kernel", "register_fake",
           "register_autograd", "opcheck", "OpCheckError", "infer_schema", "impl_abstract",
           "get_ctx", "register_autocast", "register_vmap", "register_torch_dispatch",
           "fallthrough_kernel", "triton_op", "wrap_triton"]

_UNSET = object()


def custom_op(name, fn=None, /, *, mutates_args=_UNSET, device_types=None, schema=None,
              tags=None, meta=None, override=False, contiguous=True):
    """Define op `name` ('namespace::op'); two forms, told apart by `mutates_args`.

    - PyTorch's (``mutates_args=`` given): `fn` is the implementation, on tensors, with
      type annotations (the schema); returns a `CustomOpDef` (see `_library_torch`).
      `tags` are accepted and not used.
    - nbtorch's (no `mutates_args`): `fn` is the meta function (signature and output
      rule); returns a `CustomOp`, which takes raw-array kernels (`register_kernel`).

    Usable as a decorator either way.

    Example:
        >>> @nbtorch.library.custom_op("myops::double")
        ... def double(x):
        ...     return nbtorch.library.TensorSpec(x.shape, x.dtype)
        >>> double.register_kernel("cpu", numba.njit(lambda x: 2 * x))   # returns its output
        >>> @nbtorch.library.custom_op("mylib::twice", mutates_args=())
        ... def twice(x: nbtorch.Tensor) -> nbtorch.Tensor:
        ...     return x * 2
    """
    if mutates_args is not _UNSET:
        return _library_torch.custom_op(name, fn, mutates_args=mutates_args,
                                        device_types=device_types, schema=schema)
    if device_types is not None or schema is not None:
        raise TypeError("custom_op() missing 1 required keyword-only argument: "
                        "'mutates_args'")
    fn = meta if fn is None else fn

    def deco(m):
        _check_new_name(name, override)
        op = _OPS[name] = CustomOp(name, m, contiguous=contiguous)
        return op
    return deco if fn is None else deco(fn)


def define(qualname, schema=None, *, lib=None, tags=(), meta=None, override=False,
           contiguous=True):
    """A new op: PyTorch's ``define(qualname, "(Tensor x) -> Tensor")`` with a schema
    string (kernels come from `impl`), or nbtorch's ``define(name, meta)`` (`custom_op`)."""
    if isinstance(schema, str):
        return _library_api.define(qualname, schema, lib=lib, tags=tags)
    return custom_op(qualname, meta=schema if schema is not None else meta,
                     override=override, contiguous=contiguous)


impl_abstract = register_fake          # PyTorch's older name


def infer_schema(prototype_function, /, *, mutates_args, op_name=None, tags=()):
    """PyTorch's ``torch.library.infer_schema``: the schema string of an annotated function."""
    from ._library_infer import infer
    return infer(prototype_function, mutates_args, op_name).text(raw=True)


def opcheck(op, args, kwargs=None, *, test_utils=None, raise_exception=True, atol=None,
            rtol=None):
    """PyTorch's ``torch.library.opcheck``: checks a custom op's registrations on `args`
    (see nbtorch/_library_opcheck.py for what is checked); ``{test: "SUCCESS"}``."""
    from ._library_opcheck import DEFAULT_TEST_UTILS, opcheck as run
    return run(op, args, kwargs, test_utils=test_utils or DEFAULT_TEST_UTILS,
               raise_exception=raise_exception, atol=atol, rtol=rtol)



def triton_op(name, fn=None, /, *, mutates_args, schema=None):
    """PyTorch's ``torch.library.triton_op``: a `custom_op` (its body cannot call Triton
    here: see `wrap_triton`)."""
    return _library_torch.custom_op(name, fn, mutates_args=mutates_args, schema=schema)


def wrap_triton(triton_kernel, /):
    """PyTorch's ``torch.library.wrap_triton``: nbtorch has no Triton."""
    raise NotImplementedError("nbtorch has no Triton: write the kernel with numba.cuda.jit "
                              "(or numba.njit) and call it from a custom op")


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

_DEF_NAMESPACES = set()       # namespaces held by a live Library(ns, "DEF")
_KINDS = ("DEF", "FRAGMENT", "IMPL")


class Library:
    """A namespace of custom ops (PyTorch's ``torch.library.Library``), deletable at once.

    ``Library(ns)`` is nbtorch's form (define with meta functions); ``Library(ns, kind)``
    is PyTorch's, kind "DEF" (one per namespace), "FRAGMENT" or "IMPL" (no defines),
    whose `define` takes schema strings. `close()` deletes the ops it defined and takes
    back the kernels its `impl` registered (PyTorch's ``_destroy``).

    Example:
        >>> lib = nbtorch.library.Library("myops")
        >>> @lib.define("twice")
        ... def twice(x):
        ...     return x.shape
        >>> lib.twice is twice
        True
        >>> lib2 = nbtorch.library.Library("mylib", "FRAGMENT")
        >>> lib2.define("axpy(Tensor x, Tensor y, float a=1.0) -> Tensor")
        'axpy'
        >>> lib2.impl("axpy", lambda x, y, a=1.0: a * x + y, "CompositeExplicitAutograd")
    """

    def __init__(self, namespace, kind=None, dispatch_key=""):
        if not namespace or "::" in namespace:
            raise ValueError(f"invalid library namespace '{namespace}'")
        if kind is not None and kind not in _KINDS:
            raise ValueError(f"Unsupported kind: {kind}")
        if kind == "DEF":
            if namespace in _DEF_NAMESPACES:
                raise RuntimeError(
                    f"Only a single TORCH_LIBRARY can be used to register the namespace "
                    f"{namespace}; please put all of your definitions in a single "
                    "TORCH_LIBRARY block.  If you were trying to specify implementations, "
                    "consider using TORCH_LIBRARY_IMPL (which can be duplicated).  If you "
                    "really intended to define operators for a single namespace in a "
                    "distributed way, you can use TORCH_LIBRARY_FRAGMENT to explicitly "
                    "indicate this.")
            _DEF_NAMESPACES.add(namespace)
        self.namespace = namespace
        self.kind, self.dispatch_key = kind, dispatch_key
        self._ops = {}
        self._overrides = []
        self._impls = []

    @property
    def ns(self):
        """The namespace (PyTorch's attribute name)."""
        return self.namespace

    def qualify(self, name):
        return name if "::" in name else f"{self.namespace}::{name}"

    def define(self, name, meta=None, *, override=False, contiguous=True, alias_analysis="",
               tags=()):
        """Define op `name`: a PyTorch schema string (``"foo(Tensor x) -> Tensor"``,
        returns the op's name) or nbtorch's name + meta function (see `custom_op`; usable
        as a decorator)."""
        if "(" in name:
            opname = name[:name.index("(")].strip()
            if self.kind == "IMPL":
                raise RuntimeError(
                    f'def("{opname}"): Cannot define an operator inside of a '
                    "TORCH_LIBRARY_IMPL block.  All def()s should be placed in the (unique) "
                    "TORCH_LIBRARY block for their namespace.")
            op = _library_api.define(self.qualify(opname), name[name.index("("):])
            self._ops[opname] = op
            return opname.split(".")[0]

        def deco(m):
            op = custom_op(self.qualify(name), meta=m, override=override,
                           contiguous=contiguous)
            self._ops[op.__name__] = op
            return op
        return deco if meta is None else deco(meta)

    def impl(self, name, fn, dispatch_key="", *, with_keyset=False, allow_override=False):
        """Register `fn` for op `name` on a device ('cpu', 'cuda') or PyTorch dispatch key
        ("CPU", "CUDA", "CompositeExplicitAutograd", "CompositeImplicitAutograd", "Meta")."""
        op = resolve_op(self.qualify(name) if isinstance(name, str) else name)
        dispatch_key = getattr(dispatch_key, "type", dispatch_key)    # an nbtorch.device
        if isinstance(op, CustomOp) and dispatch_key in ("cpu", "cuda"):
            return op.register_kernel(dispatch_key, fn, override=True)
        if isinstance(op, CustomOpDef):
            self._impls.append((op, fn))                 # undone by close()
        return impl_dispatch(op, dispatch_key or self.dispatch_key, fn)

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
        for op, fn in reversed(self._impls):
            op.forget(fn)
        self._ops.clear()
        self._overrides.clear()
        self._impls.clear()
        if self.kind == "DEF":
            _DEF_NAMESPACES.discard(self.namespace)

    _destroy = close                  # PyTorch's name

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
        if self.kind is not None:
            return f"Library(kind={self.kind}, ns={self.namespace}, " \
                   f"dispatch_key={self.dispatch_key})>"
        return f"<Library {self.namespace}: {', '.join(self._ops) or 'no ops'}>"
