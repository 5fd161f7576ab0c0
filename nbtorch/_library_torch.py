"""PyTorch's `torch.library.custom_op` on nbtorch: `CustomOpDef`, one autograd Function per op.

A `CustomOpDef` is an op whose implementation works on *tensors* (PyTorch's API), next to
nbtorch's own `CustomOp`, whose kernels work on raw arrays. It holds a `Schema`
(`_library_schema`), one implementation per device type, registered in the device
registry under its qualified name (so `library.ops()`, `library.override`, the profiler
and `kernels.inspect` see it), a fake (shape) rule for `opcheck`, and the backward of
`register_autograd`.

A call binds and type-checks its arguments, then runs a generated `autograd.Function`
(node name ``GeneratedBackwardFor_<ns>_<name>_defaultBackward``, as PyTorch's): the
implementation runs with grad mode off, `setup_context` runs when a node is recorded,
and the backward's gradients are checked with PyTorch's messages
(`_library_torch_autograd`). Graph captures (`nbtorch.compile`, `jit.trace`) record the
call as one node calling the op.
Ops made by `torch.library.define` + `impl` and no `register_autograd` run their kernel
with autograd on instead, warning at backward as PyTorch does.
"""
import contextlib
import sys
import warnings

from . import _registry
from ._library_op import _OPS, _register
from ._library_schema import check_qualname, parse
from ._library_torch_autograd import Lists, backward, forward
from ._tensor import Tensor
from .autograd import grad_mode
from .autograd.function import Function

__all__ = ["CustomOpDef", "custom_op", "define_schema", "device_types_of"]

_ALL_DEVICES = ("cpu", "cuda")
_ALIASING = (" (with implementation in <module '{module}'>): The output of this custom "
             "operator (1) must not also be an input to this custom operator and (2) may not "
             "alias any inputs to this custom operator or other returns. The most common way "
             "to trigger this error is if we have y = custom_op(x) and y and x are the same "
             "Tensor. Please instead return a clone of the offending output tensor(s) (e.g. "
             "return x.clone()) or refactor the custom operator to not return y.")


def device_types_of(device_types):
    """('cpu', ...) from None (every device), a string or a sequence; PyTorch's error for
    an unknown device type."""
    if device_types is None:
        return _ALL_DEVICES
    if isinstance(device_types, str):
        device_types = (device_types,)
    from ._device import device
    return tuple(device(d).type for d in device_types)


class CustomOpDef:
    """An op made by `torch.library.custom_op` / `define` (PyTorch's CustomOpDef).

    Call it like its function; `register_fake`, `register_kernel`, `register_autograd`,
    `register_torch_dispatch`, `set_kernel_enabled` as in PyTorch.
    """

    def __init__(self, namespace, name, schema, fn=None, *, device_types=None,
                 defined_by="custom_op", overload=""):
        self._namespace, self._name, self._overload = namespace, name, overload
        self._qualname = f"{namespace}::{name}"
        self._key = self._qualname + (f".{overload}" if overload else "")
        schema.name, schema.overload = self._qualname, overload
        self._schema = schema
        self._init_fn = fn
        self._init_devices = device_types_of(device_types) if fn is not None else ()
        self._backend_fns = {}               # device type -> [kernels], the last one runs
        self._disabled = set()
        self._abstract_fn = None
        self._backward_fn = self._setup_context_fn = None
        self._torch_dispatch_fns = {}
        self._vmap_fn = None
        self._autocast_dtypes = {}           # device type -> dtype of register_autocast
        self._composite = None               # a CompositeImplicitAutograd kernel (define)
        self._defined_by = defined_by
        self._kinds = tuple("L" if a.type in ("Tensor[]", "Tensor?[]") else
                            "T" if a.type.startswith("Tensor") else None
                            for a in schema.args)
        self._has_lists = "L" in self._kinds
        self._fx_impure = bool(schema.mutable_args)   # graph passes keep a mutating call
        self._returns_list = schema.returns == ["Tensor[]"]
        self.__name__ = name
        self.__qualname__ = self._key
        self.__doc__ = getattr(fn, "__doc__", None)
        self.__module__ = getattr(fn, "__module__", None) or "__main__"
        self.__wrapped__ = fn
        self._function = type(name, (Function,), {
            "__module__": self.__module__, "__qualname__": self._key, "_op": self,
            "_backward_name": f"GeneratedBackwardFor_{namespace}_{name}_"
                              f"{overload or 'default'}Backward",
            "forward": staticmethod(forward), "backward": staticmethod(backward)})
        for d in _ALL_DEVICES:
            self._sync(d)

    # ---- registration -----------------------------------------------------------------
    def register_fake(self, fn, /):
        """Register the fake (meta) rule: same arguments, returns empty tensors of the
        output's shape, dtype and device (`opcheck` compares it with the real output)."""
        self._abstract_fn = fn
        return fn

    def register_kernel(self, device_types, fn=None, /):
        """Use `fn` instead of the implementation on `device_types` ('cpu', 'cuda', a
        sequence, or None for every device); a decorator without `fn`."""
        devices = device_types_of(device_types)         # PyTorch's error at once

        def inner(f):
            self._push(devices, f)
            return f
        return inner if fn is None else inner(fn)

    def _push(self, device_types, fn, low=False):
        """Register kernel `fn` on `device_types`; `low`: below the device's other kernels
        (a CompositeExplicitAutograd kernel yields to a CPU/CUDA one, as in PyTorch)."""
        for d in device_types_of(device_types):
            stack = self._backend_fns.setdefault(d, [])
            if fn in stack:
                stack.remove(fn)
            stack.insert(0, fn) if low else stack.append(fn)
            self._sync(d)

    def register_autograd(self, backward, /, *, setup_context=None):
        """``backward(ctx, *grads)`` returns one gradient per input (None for
        non-tensors); ``setup_context(ctx, inputs, output)`` saves what backward needs.
        Only a functional op (mutates nothing, returns something) takes one, as in PyTorch."""
        if self._schema.mutable_args or not self._schema.returns:
            who = self if self._defined_by == "custom_op" else self._opoverload
            raise RuntimeError(
                f"Cannot register autograd formula for non-functional operator {who} with "
                f"schema {self._schema}. Please create a functional operator and register an "
                "autograd formula for that.")
        self._backward_fn, self._setup_context_fn = backward, setup_context

    def register_torch_dispatch(self, torch_dispatch_class, fn=None, /):
        """Stored for PyTorch compatibility: nbtorch has no TorchDispatchMode to call it."""
        def inner(f):
            self._torch_dispatch_fns[torch_dispatch_class] = f
            return f
        return inner if fn is None else inner(fn)

    def register_vmap(self, func=None, /):
        """Stored for PyTorch compatibility: nbtorch's `func.vmap` loops over the batch, so
        a custom op needs no vmap rule."""
        def inner(f):
            self._vmap_fn = f
            return f
        return inner if func is None else inner(func)

    def register_autocast(self, device_type, cast_inputs):
        """Under autocast on `device_type`, floating-point tensor inputs are cast to
        `cast_inputs` and the op runs with autocast off (PyTorch's rule)."""
        from ._dtype import to_dtype
        self._autocast_dtypes[device_types_of(device_type)[0]] = to_dtype(cast_inputs)

    @contextlib.contextmanager
    def set_kernel_enabled(self, device_type, enabled=True):
        """Within the block, `register_kernel`'s function on `device_type` is (not) used."""
        d = device_types_of(device_type)[0]
        was = d not in self._disabled
        (self._disabled.discard if enabled else self._disabled.add)(d)
        self._sync(d)
        try:
            yield
        finally:
            (self._disabled.discard if was else self._disabled.add)(d)
            self._sync(d)

    def _effective(self, device):
        stack = self._backend_fns.get(device)
        f = stack[-1] if stack else None
        if f is not None and device not in self._disabled:
            return f
        return self._init_fn if device in self._init_devices else None

    def _sync(self, device):
        """Put this op's current kernel on `device` into the device registry."""
        key = (self._key, device)
        while key in _registry._KERNELS:
            _registry.unregister_kernel(self._key, device)
        f = self._effective(device)
        if f is not None:
            _register(self._key, device, f, False)

    def forget(self, fn):
        """Take back every registration of `fn` (kernel, composite or fake rule)."""
        for d, stack in self._backend_fns.items():
            if fn in stack:
                stack.remove(fn)
                self._sync(d)
        if self._composite is fn:
            self._composite = None
        if self._abstract_fn is fn:
            self._abstract_fn = None

    def delete(self):
        """Unregister this op's kernels and name."""
        self._backend_fns.clear()
        self._init_devices = ()
        for d in _ALL_DEVICES:
            self._sync(d)
        if _OPS.get(self._key) is self:
            del _OPS[self._key]

    # ---- queries ----------------------------------------------------------------------
    @property
    def _opoverload(self):
        from ._library_ns import namespace
        packet = getattr(namespace(self._namespace), self._name)
        return getattr(packet, self._overload or "default")

    @property
    def devices(self):
        return tuple(d for d in _ALL_DEVICES if (self._key, d) in _registry._KERNELS)

    def __repr__(self):
        return f"<CustomOpDef({self._key})>"

    def __reduce__(self):                # pickled / deep-copied by name: one op per name
        from .library import get_op
        return (get_op, (self._key,))

    # ---- calling ------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if "nbtorch.fx.proxy" in sys.modules:    # fx / jit.trace / compile: one node
            proxy = _find_proxy(args, kwargs)
            if proxy is not None:
                return proxy.tracer.create_proxy("call_function", self, args, kwargs)
        values = self._schema.bind(args, kwargs)
        if self._autocast_dtypes:
            return self._call_autocast(values)
        return self._call_bound(values)

    def _call_autocast(self, values):
        from .amp import autocast_mode
        device = self._device(values)
        dt = self._autocast_dtypes.get(device)
        if dt is None or not autocast_mode.STATE.enabled[device]:
            return self._call_bound(values)

        def cast(t):
            return t.to(dt) if isinstance(t, Tensor) and t.is_floating_point() else t
        values = [[cast(e) for e in v] if isinstance(v, list) else cast(v) for v in values]
        with autocast_mode.autocast(device, enabled=False):
            return self._call_bound(values)

    def _call_bound(self, values):
        if self._composite is not None:          # traced through by autograd, like PyTorch
            pos, kw = self._schema.split(values)
            return self._composite(*pos, **kw)
        if self._backward_fn is None and self._defined_by == "define":
            return self._run_traced(values)
        if self._has_lists:
            flat, lens = [], []
            for kind, v in zip(self._kinds, values):
                if kind == "L":
                    flat.extend(v)
                    lens.append(len(v))
                else:
                    flat.append(v)
                    lens.append(None)
            out = self._function.apply(*flat, Lists(tuple(lens)))
        else:
            out = self._function.apply(*values)
        return list(out) if self._returns_list else out

    def _device(self, values):
        """The device type of the first tensor argument ('cpu' without one)."""
        first = values[0] if values else None
        if first.__class__ is Tensor:
            return first.device.type
        for kind, v in zip(self._kinds, values):
            t = v if kind == "T" else next((e for e in v if e is not None), None) \
                if kind == "L" else None
            if isinstance(t, Tensor):
                return t.device.type
        return "cpu"

    def _kernel(self, values):
        device = self._device(values)
        try:
            return _registry.get_kernel(self._key, device)
        except NotImplementedError:
            have = [d.upper() for d in self.devices]
            raise NotImplementedError(
                f"Could not run '{self._key}' with arguments from the '{device.upper()}' "
                f"backend. This could be because the operator doesn't exist for this "
                f"backend. '{self._key}' is only available for these backends: "
                f"[{', '.join(have)}].") from None

    def run(self, values, below_autograd=True):
        """Run the device's implementation on bound `values`, check aliasing, bump the
        versions of mutated arguments. Below autograd (PyTorch's view from inside a
        custom op) the implementation sees its tensors detached."""
        fn = self._kernel(values)
        if below_autograd:
            values = [_detached(v) for v in values]
        pos, kw = self._schema.split(values)
        out = fn(*pos, **kw) if kw else fn(*pos)
        if self._defined_by == "custom_op" and out is not None:
            self._check_aliasing(values, out, fn)
        for i in self._schema.mutable_args:
            v = values[i]
            for t in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(t, Tensor):
                    t._bump()
        return out

    def _check_aliasing(self, values, out, fn):
        if out.__class__ is Tensor and len(values) == 1 and values[0].__class__ is Tensor:
            if out._storage is values[0]._storage:      # the common case: one in, one out
                raise RuntimeError(self._name + _ALIASING.format(
                    module=getattr(fn, "__module__", None) or "__main__"))
            return
        outs = out if isinstance(out, (tuple, list)) else (out,)
        seen = set()
        for v in values:
            for t in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(t, Tensor):
                    seen.add(id(t._storage))
        for o in outs:
            if not isinstance(o, Tensor):
                continue
            if id(o._storage) in seen:
                module = getattr(fn, "__module__", None) or "__main__"
                raise RuntimeError(self._name + _ALIASING.format(module=module))
            seen.add(id(o._storage))

    def _run_traced(self, values):
        """An op of `define` + `impl` without autograd: the kernel runs under autograd
        (its ops are recorded) and backward warns, as PyTorch's fallback does."""
        out = self.run(values, below_autograd=False)
        if grad_mode.STATE.enabled:
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for o in outs:
                if isinstance(o, Tensor) and o.requires_grad and o.grad_fn is not None:
                    o.register_hook(self._warn_no_autograd)
        return out

    def _warn_no_autograd(self, grad):
        warnings.warn(
            f"{self._key}: an autograd kernel was not registered to the Autograd key(s) but "
            "we are trying to backprop through it. This may lead to silently incorrect "
            "behavior. This behavior is deprecated and will be removed in a future version "
            "of PyTorch. If your operator is differentiable, please ensure you have "
            "registered an autograd kernel to the correct Autograd key (e.g. "
            "DispatchKey::Autograd, DispatchKey::CompositeImplicitAutograd). If your "
            "operator is not differentiable, or to squash this warning and use the previous "
            "behavior, please register torch::CppFunction::makeFallthrough() to "
            "DispatchKey::Autograd.", UserWarning, stacklevel=2)


def _find_proxy(args, kwargs):
    from .fx._patch import find_proxy
    return find_proxy(args, kwargs)


def _detached(v):
    if isinstance(v, Tensor):
        return v.detach() if v._requires_grad else v
    if isinstance(v, list) and v and any(isinstance(e, Tensor) for e in v):
        return [_detached(e) for e in v]
    return v


# ---- making ops ---------------------------------------------------------------------------

def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None):
    """PyTorch's ``torch.library.custom_op``: `fn` (type-annotated, on tensors) as op `name`.

    Example:
        >>> @torch.library.custom_op("mylib::numpy_sin", mutates_args=())
        ... def numpy_sin(x: torch.Tensor) -> torch.Tensor:
        ...     return torch.from_numpy(np.sin(x.numpy()))
    """
    namespace, opname = check_qualname(name)

    def inner(f):
        if schema is None:
            from ._library_infer import infer     # typing machinery: loaded on first use
            s = infer(f, mutates_args)
        else:
            s = parse(schema, what="custom_op(..., schema=...)")
        old = _OPS.get(name)
        if old is not None:                      # PyTorch 2.13 lets a definition be redone
            old.delete()
        op = _OPS[name] = CustomOpDef(namespace, opname, s, f, device_types=device_types)
        return op
    return inner if fn is None else inner(fn)


def define_schema(qualname, schema):
    """PyTorch's ``torch.library.define``: op `qualname` (``ns::name[.overload]``) with
    `schema` and no implementation yet (add one with `impl` / `register_kernel`)."""
    base = qualname.split(".")[0] if isinstance(qualname, str) else qualname
    namespace, opname = check_qualname(base)
    s = parse(schema, name=qualname)
    key = qualname
    if key in _OPS:
        raise RuntimeError(
            f"Tried to register an operator ({_named(s, qualname)}) "
            "with the same name and overload name multiple times. Each overload's schema "
            "should only be registered with a single call to def().")
    overload = qualname[len(base) + 1:]
    op = _OPS[key] = CustomOpDef(namespace, opname, s, defined_by="define", overload=overload)
    return op


def _named(schema, qualname):
    text = str(schema)
    return qualname + text[text.index("("):] if "(" in text else qualname

