"""Concrete tracing: fx tracing where every Proxy also carries the real value.

`ConcreteTracer` is an fx `Tracer` whose proxies (`ConcreteProxy`) hold the
value the traced code would have seen. Each recorded node runs for real
(leaf modules and nbtorch functions on unwrapped values, with the tracing
patches switched off while they run), so Python control flow in the user's
code follows the example inputs and is frozen into the graph, as in
``torch.jit.trace``. Where the code turns a traced tensor into a Python value
(``.item()``, ``bool(t)``, ``.tolist()``, ``.numpy()``, ``len(t)``...) a
`TracerWarning` names the line. Shapes stay traced: ``x.size(0)`` and
``x.shape`` become nodes, so ``x.view(x.size(0), -1)`` follows the batch size;
``x.dim()``, ``x.dtype`` and ``x.device`` are static, as in PyTorch.
Every node gets ``meta['tensor_meta']`` (shape, dtype, stride, device).
"""
import dataclasses
import inspect
import operator
import threading
import warnings

import numpy as np

from ..autograd import grad_mode
from ..fx._frames import describe_line, user_frame
from ..fx.node import Node, map_arg
from ..fx.passes.shape_prop import metadata_of
from ..fx._patch import RECORDING
from ..fx.proxy import Proxy
from ..fx.tracer import Tracer
from ._guards import ABSENT, SCALARS, guardable as _guardable, user_hook

__all__ = ["TracerWarning", "ConcreteProxy", "ConcreteTracer", "is_tracing"]

_STATE = threading.local()         # .depth: nested jit.trace calls in this thread
_PLAIN_VALUES = frozenset((int, float, bool))


def is_tracing():
    """True while `nbtorch.jit.trace` runs the traced code (in this thread)."""
    return getattr(_STATE, "depth", 0) > 0


def compiling():
    """True while nbtorch.compile's trace runs the code (in this thread)."""
    tracer = getattr(RECORDING, "tracer", None)
    return tracer is not None and getattr(tracer, "attr_updates", None) is not None


class TracerWarning(Warning):
    """The trace may not generalise: a traced value was turned into a Python constant."""


_CONSTANT_MSG = ("Converting a tensor to a {} might cause the trace to be incorrect. We can't "
                 "record the data flow of Python values, so this value will be treated as a "
                 "constant in the future. This means that the trace might not generalize to "
                 "other inputs!")
_LEN_MSG = ("Using len to get tensor shape might cause the trace to be incorrect. Recommended "
            "usage would be tensor.shape[0]. Passing a tensor of different shape might lead "
            "to errors or silently give incorrect results.")


def warn_at_user_line(message, outside_nbtorch=False):
    """Emit a TracerWarning located at the traced code's line (as PyTorch's do).

    With `outside_nbtorch`, at the first frame outside nbtorch (the jit.trace call).
    """
    frame = user_frame(skip_nbtorch=outside_nbtorch)
    if frame is None:
        warnings.warn(message, TracerWarning, stacklevel=3)
        return
    g = frame.f_globals
    where = (message, TracerWarning, frame.f_code.co_filename, frame.f_lineno,
             g.get("__name__", "<traced>"), g.setdefault("__warningregistry__", {}))
    try:
        warnings.warn_explicit(*where, module_globals=g)
    except ImportError:     # a loader that has no source to show (`python -c`'s __main__)
        warnings.warn_explicit(*where)


def record_conversions():
    """``with record_conversions() as events:`` every traced value the code turns into a
    Python value in this thread, as (what, data, value, where, witness): `data` is True when a
    tensor's data was read (``bool(t)``, ``t.item()``), False for a size or another Python
    value the trace carried (``int(x.shape[0])``, ``if n > 4``). nbtorch.export refuses
    the first kind and checks that the second does not depend on a dynamic dim."""
    import contextlib

    @contextlib.contextmanager
    def scope():
        prev = getattr(_STATE, "conversions", None)
        events = _STATE.conversions = []
        try:
            yield events
        finally:
            _STATE.conversions = prev
    return scope()


def _note_conversion(what, source, value, node=None):
    events = getattr(_STATE, "conversions", None)
    if events is None:
        return
    # the Python values the converted one was computed from (`n > 4`: n and 4), so that a
    # comparison reads as depending on a size even where its outcome does not change
    witness = None if node is None else tuple(
        a.meta.get("value") if isinstance(a, Node) else a for a in node.args)
    events.append((what, _is_tensor(source), value,
                   describe_line(user_frame(skip_nbtorch=False)) or "<unknown line>",
                   witness))


def _is_tensor(v):
    from .._tensor import Tensor
    return isinstance(v, Tensor)


def unwrap(a):
    """The real values inside an argument structure (proxies replaced by their values)."""
    if isinstance(a, ConcreteProxy):
        return a.value
    if isinstance(a, tuple):
        t = tuple(unwrap(e) for e in a)
        return type(a)(*t) if hasattr(a, "_fields") else t
    if isinstance(a, list):
        return [unwrap(e) for e in a]
    if isinstance(a, dict):
        return {k: unwrap(v) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(unwrap(a.start), unwrap(a.stop), unwrap(a.step))
    return a


# Tensor metadata a trace treats as static (PyTorch does too); read from the value.
_STATIC_ATTRS = frozenset(("dtype", "device", "ndim", "is_cuda", "is_cpu", "layout",
                           "requires_grad", "is_leaf", "is_sparse", "is_quantized", "itemsize",
                           "grad_fn", "is_meta", "_static_shape"))
_STATIC_METHODS = frozenset(("dim", "ndimension", "is_floating_point", "is_complex",
                             "is_contiguous", "element_size", "get_device"))
# Read from the value too when the caller specialises the trace to the input shapes
# (nbtorch.compile and jit.script guard on them): `static_shapes()`.
_SHAPE_ATTRS = frozenset(("shape", "size", "numel", "nelement", "stride"))


def static_shapes():
    """``with static_shapes():`` traces in this thread read sizes as Python ints (no size
    nodes, no TracerWarning for control flow on them): for callers that guard shapes."""
    import contextlib

    @contextlib.contextmanager
    def scope():
        prev = getattr(_STATE, "static_shapes", False)
        _STATE.static_shapes = True
        try:
            yield
        finally:
            _STATE.static_shapes = prev
    return scope()


_PROXY_FIELDS = frozenset(("node", "tracer", "value", "root", "attr", "_node"))


class ConcreteProxy(Proxy):
    """A Proxy with the real value (``.value``) the traced code would have seen."""

    _carries_value = True       # isinstance in traced code answers for the value (fx._patch)

    def __init__(self, node, tracer, value):
        self.node = node
        self.tracer = tracer
        self.value = value

    def __repr__(self):
        return f"ConcreteProxy({self.node.name})"

    def __setattr__(self, name, value):
        if name in _PROXY_FIELDS:
            object.__setattr__(self, name, value)
        elif self.tracer.attr_updates is not None:      # nbtorch.compile
            # (``p.grad = None`` on a traced weight set an attribute of the proxy: lost)
            raise RuntimeError(f"setting .{name} of a tensor inside compiled code cannot be "
                               "recorded (a graph replays tensor ops): do it outside")
        else:                       # jit.trace: on the tensor, once, as PyTorch's tracer does
            setattr(self.value, name, value)

    def __getattr__(self, k):
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        if k in _STATIC_ATTRS or k in _STATIC_METHODS:
            return getattr(self.value, k)
        if k in _SHAPE_ATTRS and getattr(_STATE, "static_shapes", False) and \
                _is_tensor(self.value):
            return getattr(self.value, k)
        if k == "grad" and self.tracer.attr_updates is not None and _is_tensor(self.value):
            raise RuntimeError("a tensor's .grad is read inside compiled code: a graph cannot "
                               "take gradients as inputs (backward makes new ones). Run "
                               "gradient clipping, scaling and manual updates outside it")
        return ConcreteAttribute(self, k)

    # ---- values leaving the trace: warn, then give the concrete value ----------------
    def __bool__(self):
        _note_conversion("Python boolean", self.value, bool(self.value), self.node)
        warn_at_user_line(_CONSTANT_MSG.format("Python boolean"))
        return bool(self.value)

    def __len__(self):
        if _is_tensor(self.value) and not getattr(_STATE, "static_shapes", False):
            _note_conversion("len", None, len(self.value))     # a size, not data
            warn_at_user_line(_LEN_MSG)
        return len(self.value)

    def __iter__(self):
        value = self.value
        if isinstance(value, dict):
            return iter(value)
        return (self[i] for i in range(len(value)))

    def _convert(self, what, fn):
        result = fn(self.value)
        _note_conversion(what, self.value, result, self.node)
        if _is_tensor(self.value):
            warn_at_user_line(_CONSTANT_MSG.format(what))
        return result

    def __int__(self):
        return self._convert("Python integer", int)

    def __float__(self):
        return self._convert("Python float", float)

    def __complex__(self):
        return self._convert("Python complex", complex)

    def __index__(self):
        return self._convert("Python index", operator.index)

    def __array__(self, dtype=None, copy=None):
        import numpy as np
        return self._convert("NumPy array", lambda v: np.asarray(v, dtype=dtype))

    def item(self):
        return self._convert("Python number", lambda v: v.item())

    def tolist(self):
        return self._convert("Python list", lambda v: v.tolist())

    def numpy(self, *args, **kwargs):
        return self._convert("NumPy array", lambda v: v.numpy(*args, **kwargs))

    def keys(self):
        return self.value.keys()


def _install_inplace_operators():
    """x += y on a traced tensor is in place (operator.iadd), as in eager mode."""
    for name in ("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "iand",
                 "ior", "ixor", "ilshift", "irshift", "imatmul"):
        def scope(target):
            def impl(self, other):
                return self.tracer.create_proxy("call_function", target, (self, other), {})
            return impl
        setattr(ConcreteProxy, f"__{name}__", scope(getattr(operator, name)))


_install_inplace_operators()


_APPLY = {}


def function_apply(cls):
    """``cls.apply`` as a graph target: looked up per call, so that a capture's recorder
    sees the Function itself (one node, its backward the user's)."""
    fn = _APPLY.get(cls)
    if fn is None:
        def fn(*args, **kwargs):
            return cls.apply(*args, **kwargs)
        fn.__name__ = f"{cls.__name__}_apply"
        fn.__qualname__ = f"{cls.__qualname__}.apply"
        fn.__module__ = cls.__module__
        fn._nbtorch_function = cls
        _APPLY[cls] = fn
    return fn


def run_without_grad(method, obj, *args, **kwargs):
    """``obj.method(*args)`` under no_grad: a traced in-place call made inside a no_grad()
    block keeps it when the graph runs."""
    with grad_mode.no_grad():
        return getattr(obj, method)(*args, **kwargs)


run_without_grad._fx_impure = True     # it writes: dead-code elimination keeps it


class ConcreteAttribute(ConcreteProxy):
    """``proxy.attr``: a method call when called, else a getattr node (made on first use)."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def value(self):
        return getattr(self.root.value, self.attr)

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        if self.attr == "type" and not args and not kwargs:
            return self.root.value.type()       # the type's name: static, as dtype is
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


_ASSIGN_MSG = ("Assigning a traced tensor to the module attribute '{}' is not recorded: the "
               "traced module will not update it (it holds the value of this trace). "
               "nbtorch.compile replays such assignments")
_MISSING = object()
_RECORDED = frozenset(SCALARS + (tuple,))   # attribute classes the guards may bake in


_ENABLE_GRAD_MSG = ("Gradients are enabled inside code traced under no_grad(): the graph, "
                    "specialised to the call's grad mode, records no backward, so its results "
                    "would not require grad")
_BACKWARD_MSG = ("backward() (or autograd.grad) inside traced code cannot be recorded: a "
                 "graph records the forward computation. Trace or compile the model (or the "
                 "function computing the loss) and call backward() and optimizer.step() "
                 "outside it, as torch.compile breaks its graph there")


_GRAD_HOOKS = frozenset(("register_hook", "retain_grad", "register_post_accumulate_grad_hook"))


def _is_backward(kind, target):
    if kind == "call_method":
        return target == "backward"
    return (kind == "call_function" and getattr(target, "__name__", None) in ("backward", "grad")
            and getattr(target, "__module__", "").startswith("nbtorch.autograd"))


def _forward_hooked(module):
    """True when calling `module` runs forward (pre-)hooks, its own or global ones."""
    from ..nn.modules import _global_hooks as g
    d = module.__dict__
    return bool(d.get("_forward_pre_hooks") or d.get("_forward_hooks")
                or g._global_forward_pre_hooks or g._global_forward_hooks)


def _through_builtin(tracer, cls, args, kwargs):
    """nbtorch's own Function `cls` on traced values (GRUCell's gate split), traced through
    with grad mode as it is: its forward is a composition of ops the graph records and
    differentiates. Run as `apply` runs an unrecorded forward (under no_grad), its results
    were detached in the graph: a traced GRUCell gave its weights no gradient. A forward
    that computes on the host (fake quantization's NumPy code) is one node instead, as a
    user's Function is: traced through, its results were constants of the graph."""
    ctx = cls._unrecorded_cls()
    ctx.needs_input_grad = (False,) * len(args)
    events = getattr(_STATE, "conversions", None)
    seen = None if events is None else len(events)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", TracerWarning)
            return cls.forward(ctx, *args, **kwargs)
    except TracerWarning:
        if events is not None:
            del events[seen:]           # conversions of the abandoned run
    return tracer.create_proxy("call_function", function_apply(cls), args, kwargs)


class ConcreteTracer(Tracer):
    """A Tracer that runs what it records (see the module docstring).

    A traced value the code assigns to a module attribute or buffer (``self.avg = ...``,
    ``self.n += 1``, ``self.last = y``) is, with `attr_updates` a dict (nbtorch.compile),
    collected there as (module, name, proxy) and seen by the rest of the trace, the module
    itself left unchanged; without (jit.trace), the module gets the concrete value and a
    TracerWarning says the trace will not replay it.
    """

    proxy_buffer_attributes = True

    def __init__(self, attr_updates=False):
        super().__init__()
        self.constants = {}         # qualified name -> tensor captured as a constant
        self.extra_modules = {}     # qualified name -> module called but not under the root
        self._placeholder_values = []
        self.attr_updates = {} if attr_updates else None   # (id, name) -> (module, name, proxy)
        # Python values (numbers, flags, strings) read from modules' attributes: constants
        # of the graph, which nbtorch.compile guards; (id, name) -> (module, name, value)
        self.attr_reads = {} if attr_updates else None
        self._attr_restore = {}     # (id, name) -> (module, name, where, the value before)
        self._assigned = {}         # jit.trace: (id, name) -> (module, name, value, setattr)
        self._grad_at_start = False

    # ---- module attributes the traced code assigns -----------------------------------
    def _module_patches(self, patcher):
        super()._module_patches(patcher)
        from ..nn import Module
        orig_setattr = Module.__setattr__
        tracer, thread = self, threading.get_ident()
        # attributes the code assigns (weight_norm's hook sets `weight` every call): their
        # reads after that are of a value the graph computes, not of an input to guard
        written = set()

        def module_setattr(mod, name, value):
            d = mod.__dict__
            if threading.get_ident() != thread:
                return orig_setattr(mod, name, value)
            if tracer.attr_reads is not None:
                written.add((id(mod), name))
            if tracer._executing:
                return orig_setattr(mod, name, value)
            if (isinstance(value, ConcreteProxy) and name not in d.get("_parameters", ())
                    and name not in d.get("_modules", ())):
                return tracer._assign(mod, name, value, orig_setattr)
            if (tracer.attr_updates is not None and isinstance(value, (bool, int, float, str))
                    and name not in d.get("_buffers", ()) and d.get(name, _MISSING) != value):
                # self.calls += 1: compiled calls would never change it again
                raise RuntimeError(f"the code sets {type(mod).__name__}.{name} = {value!r}, a "
                                   "Python value a graph cannot replay")
            return orig_setattr(mod, name, value)
        patcher.patch_method(Module, "__setattr__", module_setattr)
        self._function_patch(patcher, thread)
        self._member_patches(patcher, thread)
        if self.attr_reads is None:
            return
        traced_call = Module.__call__

        def checked_call(mod, *args, **kwargs):
            if threading.get_ident() == thread:
                hook = user_hook(mod)
                if hook is not None:        # before it runs: its effects happen once, eagerly
                    raise RuntimeError(
                        f"{type(mod).__name__} has a {hook[0]} ({hook[1]}) registered by user "
                        "code: a hook runs Python each call, which a graph cannot replay "
                        "(remove it while compiling, or run the model eagerly)")
            return traced_call(mod, *args, **kwargs)
        patcher.patch_method(Module, "__call__", checked_call)
        reads, get = self.attr_reads, object.__getattribute__
        class_reads = self.class_reads = {}     # (class, name) -> (class, name, value)

        def module_getattribute(mod, name):
            value = get(mod, name)
            if ((value.__class__ in _RECORDED or _guardable(value)) and name != "training"
                    and threading.get_ident() == thread and name in get(mod, "__dict__")
                    and (id(mod), name) not in written):
                reads[(id(mod), name)] = (mod, name, value)     # the instance's own
            elif name == "forward" and threading.get_ident() == thread:
                # the class's: an instance forward set later (a monkeypatch) must be seen
                reads.setdefault((id(mod), name), (mod, name, ABSENT))
            elif (value.__class__ in _RECORDED and not name.startswith("_")
                  and threading.get_ident() == thread and name not in get(mod, "__dict__")):
                # a class constant (``SCALE = 2.0`` in the class body): baked in too
                for klass in type(mod).__mro__:
                    if name in klass.__dict__:
                        class_reads.setdefault((klass, name), (klass, name, value))
                        break
            return value
        patcher.patch_method(Module, "__getattribute__", module_getattribute)
        found_getattr = Module.__getattr__

        def missing_getattr(mod, name):
            try:
                return found_getattr(mod, name)
            except AttributeError:
                # getattr(self, "temperature", 1.0), hasattr(self, "extra"): the attribute's
                # absence is baked in too (set later, the graph ignored it)
                if threading.get_ident() == thread and not name.startswith("__"):
                    reads.setdefault((id(mod), name), (mod, name, ABSENT))
                raise
        patcher.patch_method(Module, "__getattr__", missing_getattr)

    def _member_patches(self, patcher, thread):
        """``module.parameters()`` / ``named_parameters()`` / ``buffers()`` /
        ``named_buffers()`` called by the traced code yield get_attr proxies, as
        ``self.weight`` does: the real tensors made what the code computed from them (an L2
        penalty, an EMA update) constants of the graph or left it out."""
        import sys
        from ..nn import Module
        tracer, cache = self, {}
        named = {"parameters": Module.named_parameters, "buffers": Module.named_buffers}

        def traced(kind, with_names):
            orig = getattr(Module, (("named_" + kind) if with_names else kind))
            orig_named = named[kind]

            def members(mod, *args, **kwargs):
                caller = sys._getframe(1).f_globals.get("__name__", "")
                if (tracer._executing or threading.get_ident() != thread
                        or caller.startswith("nbtorch")):
                    return orig(mod, *args, **kwargs)
                return proxies(mod, orig_named, with_names, *args, **kwargs)
            return members

        def proxies(mod, orig_named, with_names, prefix="", recurse=True,
                    remove_duplicate=True):
            base = tracer.path_of_module(mod)
            for name, _ in list(orig_named(mod, recurse=recurse,
                                           remove_duplicate=remove_duplicate)):
                qual = f"{base}.{name}" if base else name
                proxy = cache.get(qual)
                if proxy is None:
                    proxy = cache[qual] = tracer.create_proxy("get_attr", qual, (), {})
                yield ((f"{prefix}.{name}" if prefix else name), proxy) if with_names else proxy
        for kind in ("parameters", "buffers"):
            patcher.patch_method(Module, kind, traced(kind, False))
            patcher.patch_method(Module, "named_" + kind, traced(kind, True))

    def _function_patch(self, patcher, thread):
        """A user's autograd.Function applied to traced values is one node (PyTorch's
        tracer records a PythonOp): traced through, its forward's ops replaced its backward
        (a straight-through round() gave zero gradients, a gradient reversal none at all)."""
        from ..autograd import function
        from ..fx._patch import find_proxy
        tracer = self

        def hook(cls, args, kwargs):
            if (tracer._executing or threading.get_ident() != thread
                    or find_proxy(args, kwargs) is None):
                return NotImplemented
            if cls.__module__.startswith("nbtorch."):
                return _through_builtin(tracer, cls, args, kwargs)
            return tracer.create_proxy("call_function", function_apply(cls), args, kwargs)
        patcher.patch(vars(function), "TRACE_HOOK", [hook])

    def _assign(self, mod, name, proxy, orig_setattr):
        key = (id(mod), name)
        buffers = mod.__dict__.get("_buffers")
        where = "buffer" if buffers is not None and name in buffers else "attr"
        if key not in self._attr_restore:
            old = buffers[name] if where == "buffer" else mod.__dict__.get(name, _MISSING)
            self._attr_restore[key] = (mod, name, where, old)
        if self.attr_updates is None:
            # jit.trace: the rest of the trace reads the traced value (weight_norm's hook
            # sets `weight`, forward reads it: read as the concrete value, the graph froze
            # the weight of the trace); the module gets the concrete value afterwards
            warn_at_user_line(_ASSIGN_MSG.format(name))
            self._assigned[key] = (mod, name, proxy.value, orig_setattr)
        else:
            self.attr_updates[key] = (mod, name, proxy)
        if where == "buffer":
            buffers[name] = proxy       # later reads in the trace see the new value
        else:
            mod.__dict__[name] = proxy

    def _restore_attrs(self):
        for mod, name, where, old in self._attr_restore.values():
            if where == "buffer":
                mod._buffers[name] = old
            elif old is _MISSING:
                mod.__dict__.pop(name, None)
            else:
                mod.__dict__[name] = old
        self._attr_restore.clear()
        for mod, name, value, orig_setattr in self._assigned.values():
            orig_setattr(mod, name, value)          # as an eager call leaves it
        self._assigned.clear()

    # ---- values ------------------------------------------------------------------
    def _fetch(self, target):
        if target in self.constants:
            return self.constants[target]
        obj = self.root
        self._executing += 1                 # plain attribute reads, not get_attr proxies
        try:
            for atom in target.split("."):
                obj = getattr(obj, atom)
        finally:
            self._executing -= 1
        return obj

    def _run(self, kind, target, args, kwargs):
        if kind == "placeholder":
            return self._placeholder_values.pop(0)
        a, k = unwrap(args), unwrap(kwargs)
        self._executing += 1
        try:
            if kind == "call_function":
                return target(*a, **k)
            if kind == "call_method":
                return getattr(a[0], target)(*a[1:], **k)
            if kind == "call_module":
                return self._orig_module_call(self._fetch(target), *a, **k)
            if kind == "get_attr":
                return self._fetch(target)
            return a[0]
        finally:
            self._executing -= 1

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        if _is_backward(kind, target):
            raise RuntimeError(_BACKWARD_MSG)     # before it runs: no gradients, no steps
        if kind == "call_method" and target in _GRAD_HOOKS:
            raise RuntimeError(f"{target}() on a tensor inside traced code cannot be "
                               "recorded: the graph's backward is one node, in which the hook "
                               "would never run (register it outside, on an input or a "
                               "parameter, or run the code eagerly)")
        if kind == "call_method" and target == "requires_grad_" and self.attr_updates is not None:
            raise RuntimeError("requires_grad_() inside compiled code makes a new leaf tensor, "
                               "which a graph's outputs cannot be (its .grad would stay None): "
                               "call it outside the compiled code")
        value = self._run(kind, target, args, kwargs)
        if value.__class__ is np.ndarray and kind in ("call_method", "call_function"):
            # host data read from a traced tensor by a private method or attribute (fake
            # quantization's `_host()`, `_array`): a constant from here on, as `.numpy()`
            # makes one, and warned as it is (it went silently into the graph's constants)
            _note_conversion("NumPy array", unwrap(args[0]) if args else None, value)
            warn_at_user_line(_CONSTANT_MSG.format("NumPy array"))
            return value
        if (not self._grad_at_start and grad_mode.is_grad_enabled() and _is_tensor(value)
                and kind != "placeholder" and not self._warned_grad):
            self._warned_grad = True            # enable_grad() inside code called under
            warn_at_user_line(_ENABLE_GRAD_MSG)   # no_grad(): the graph has no backward
        if (kind == "call_method" and target.endswith("_") and self._grad_at_start
                and not grad_mode.is_grad_enabled()):
            # an in-place method under no_grad() in the traced code (a weight clamped in
            # forward): the graph runs with gradients, so the node keeps the region
            kind, target, args = "call_function", run_without_grad, (target,) + tuple(args)
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr,
                                     lambda node: ConcreteProxy(node, self, value))
        meta = metadata_of(value)
        if meta is not None:
            proxy.node.meta["tensor_meta"] = meta
        proxy.node.meta["type"] = type(value)
        if value.__class__ in _PLAIN_VALUES:
            proxy.node.meta["value"] = value        # a size or a number: record_conversions
        frame = user_frame()
        if frame is not None:
            proxy.node.meta["stack_trace"] = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        if value is None and kind != "placeholder":
            # no data flows through None (MultiheadAttention's weights without need_weights:
            # `w is None` must hold); the node stays for what it did (x[i] = 0)
            return None
        if (kind in ("call_function", "call_method", "call_module") and _is_tensor(value)
                and self._grad_at_start and not grad_mode.is_grad_enabled()):
            # made under no_grad() inside the traced code: the graph, run with gradients,
            # must not differentiate through it
            made = proxy.node.meta.get("tensor_meta")
            proxy = super().create_proxy("call_method", "detach", (proxy,), {}, None, None,
                                         lambda node: ConcreteProxy(node, self, value))
            if made is not None:
                proxy.node.meta["tensor_meta"] = made
        return proxy

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        if kind == "get_attr" and "tensor_meta" not in node.meta:
            meta = metadata_of(self._fetch(target))
            if meta is not None:
                node.meta["tensor_meta"] = meta
        return node

    def is_leaf_module(self, m, module_qualified_name):
        """A layer whose weights were replaced for the call (``func.functional_call``:
        traced values, or tensors that are no Parameters) is traced through: a call_module
        node runs the layer with its own weights (compiled, the replacement was ignored:
        other values, no gradients)."""
        from ..nn import Parameter
        d = m.__dict__
        for v in (d.get("_parameters") or {}).values():
            if v is not None and not isinstance(v, Parameter):
                return False
        for v in (d.get("_buffers") or {}).values():
            if isinstance(v, ConcreteProxy):
                return False
        if type(m).__module__.startswith("nbtorch.ao.nn"):
            return False        # traced into its quantized graph ops (see call_module)
        if self.attr_updates is None and type(m).__name__ in ("ScriptedModule",
                                                                "FrozenModule"):
            return True         # a scripted submodule keeps its control flow (_script.py)
        return super().is_leaf_module(m, module_qualified_name)

    def call_module(self, m, forward, args, kwargs):
        """nbtorch's own modules that are traced through (quantized ones, observers) but
        compute on the host (a dynamic quantized LSTM's NumPy loop: a TracerWarning) are
        one call_module node instead, run for real at each call: traced through, the
        example's result became a constant of the graph (the module ignored its input)."""
        from ..nn import Sequential
        from ..nn.modules.container import ModuleDict, ModuleList
        if (not type(m).__module__.startswith("nbtorch.")
                or isinstance(m, (Sequential, ModuleList, ModuleDict))
                or self.is_leaf_module(m, self.path_of_module(m))):
            return super().call_module(m, forward, args, kwargs)
        events = getattr(_STATE, "conversions", None)
        seen = None if events is None else len(events)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", TracerWarning)
                return forward(*args, **kwargs)
        except TracerWarning:
            if events is not None:
                del events[seen:]           # conversions of the abandoned run
        return self.create_proxy("call_module", self.path_of_module(m), args, kwargs)

    # ---- where things live ---------------------------------------------------------
    def _store_constant(self, qualname, tensor):
        self.constants[qualname] = tensor

    def _fresh_qualname(self, prefix):
        i = 0
        while hasattr(self.root, f"{prefix}{i}") or f"{prefix}{i}" in self.constants:
            i += 1
        return f"{prefix}{i}"

    def path_of_module(self, mod):
        try:
            return super().path_of_module(mod)
        except NameError:
            # A module from outside the traced hierarchy (a function calling a model):
            # installed under the root while tracing (undone after), kept by the result.
            name = f"_module_{len(self.extra_modules)}"
            self.extra_modules[name] = mod
            self._patcher.patch(self.root._modules, name, mod)
            self._module_paths = None
            return name

    # ---- the trace -----------------------------------------------------------------
    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        fn = inspect.unwrap(root_fn)
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1:] if is_module else list(sig.parameters.values())
        bound = inspect.Signature(params).bind(*self._example_args, **self._example_kwargs)
        args, kwargs = [], {}
        skipped = False
        for p in params:
            if p.name not in bound.arguments:
                skipped = True                       # a default: a constant of the trace
                continue
            value = bound.arguments[p.name]
            if p.kind is p.VAR_POSITIONAL:
                for i, v in enumerate(value):
                    args.append(self._placeholder(f"{p.name}_{i}", v))
            elif p.kind is p.VAR_KEYWORD:
                for k, v in value.items():
                    kwargs[k] = self._placeholder(k, v)
            elif p.kind is p.KEYWORD_ONLY or (skipped and p.kind is p.POSITIONAL_OR_KEYWORD):
                # after a parameter left at its default, by name (forward(x, scale=1.0,
                # bias=None) traced with x and bias: bias was passed as scale)
                kwargs[p.name] = self._placeholder(p.name, value)
            else:
                args.append(self._placeholder(p.name, value))
        call = (lambda *a, **k: root_fn(self.root, *a, **k)) if is_module else root_fn
        if is_module and _forward_hooked(self.root):
            # the root's forward (pre-)hooks are part of what calling it computes (as in
            # PyTorch's trace): they were left out, silently
            call = (lambda *a, **k: self.root._call_with_hooks(a, k))
        return call, args, kwargs

    def _placeholder(self, name, value):
        self._placeholder_values.append(value)
        return self.create_proxy("placeholder", name, (), {})

    def trace(self, root, example_args=(), example_kwargs=None):
        """Run `root` on the example inputs and record the graph of what ran."""
        self._example_args = tuple(example_args)
        self._example_kwargs = dict(example_kwargs or {})
        self._grad_at_start = grad_mode.is_grad_enabled()
        self._warned_grad = False
        _STATE.depth = getattr(_STATE, "depth", 0) + 1
        outer = getattr(RECORDING, "tracer", None)
        RECORDING.tracer = self
        try:
            graph = super().trace(root)
            out = next(n for n in reversed(graph.nodes) if n.op == "output")
            out.meta["tensor_meta"] = map_arg(out.args[0], lambda n: n.meta.get("tensor_meta"))
            return graph
        finally:
            self._restore_attrs()
            RECORDING.tracer = outer
            _STATE.depth -= 1

    def create_arg(self, a):
        if isinstance(a, ConcreteAttribute):
            return a.node
        if dataclasses.is_dataclass(a) and not isinstance(a, type):
            # a dataclass holding traced values (a model's output record): a node that
            # builds it from its fields
            fields = {f.name: self.create_arg(getattr(a, f.name))
                      for f in dataclasses.fields(a) if f.init}
            return self.create_node("call_function", type(a), (), fields)
        if isinstance(a, np.generic):       # x * np.float32(s): the number, as eager takes it
            return a.item()
        if isinstance(a, np.ndarray):       # host data: a constant of the graph, as it is
            qualname = self._fresh_qualname("_array_constant")
            self._store_constant(qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)
