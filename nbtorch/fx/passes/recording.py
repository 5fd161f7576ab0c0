"""The recorder behind lowering: top-level Function calls, elementwise kernels,
factories and in-place methods of the capturing thread, recorded into an fx Graph.

Values are identified by (storage, version, offset, shape, strides, dtype): a
view with the same geometry is the same value (``detach`` changes nothing), an
in-place write makes a new value. `recording(rec)` installs the hooks for the
duration of a capture only: `Function.apply`, every nbtorch binding of
`run_elementwise`, `inplace_guard` and the tensor factories, and the autograd
engine's zero gradients; other threads pass straight through them.
"""
import dataclasses
import operator
import threading

from ..graph import Graph
from .lowered_ops import (CaptureError, _zeros, elementwise_call, function_call,
                          function_forward, inplace_call, view_of)
from .shape_prop import metadata_of

__all__ = ["Recorder", "recording", "FACTORIES"]


_LOCAL = threading.local()          # .recorder: the recorder of this thread, if any
_PATCH_LOCK = threading.RLock()
_PATCH_DEPTH = [0]
_SAVED = []                         # what the patches replaced, to put back


def _key(t):
    s = t._storage
    return (id(s), s.version, t._offset, t._shape, t._strides, t.dtype)


def _is_tensor(v):
    from ..._tensor import Tensor
    return isinstance(v, Tensor)


class Recorder:
    """Records top-level Function calls and elementwise kernels into `graph`."""

    def __init__(self, graph=None, attrs=None):
        self.graph = graph if graph is not None else Graph()
        self.values = {}            # tensor key -> node
        self.storages = {}          # (storage id, version) -> (a tensor of it, its node)
        self.attrs = {}             # tensor key -> qualified name: a get_attr node on first use
        for name, t in (attrs or {}).items():
            self.attrs.setdefault(_key(t), (name, t))
        self.alive = []             # every tensor seen: keeps their storages' ids unique
        self.depth = 0
        self.elementwise_calls = []         # (inputs, op, compute, out dtype, out=, result)
        self.phase = "forward"

    # ---- values -----------------------------------------------------------------------
    def register(self, tensor, node):
        self.values[_key(tensor)] = node
        s = tensor._storage
        self.storages.setdefault((id(s), s.version), (tensor, node))
        self.alive.append(tensor)
        if "tensor_meta" not in node.meta:
            node.meta["tensor_meta"] = metadata_of(tensor)

    def node_of(self, tensor, what):
        key = _key(tensor)
        node = self.values.get(key)
        if node is None and key in self.attrs:
            name, t = self.attrs.pop(key)
            node = self.graph.get_attr(name)
            self.register(t, node)
        if node is None:
            node = self._raw_view(tensor)
        if node is None:
            raise CaptureError(
                f"{what} reads a tensor of shape {list(tensor.shape)} that was computed "
                "outside the recorded ops (an in-place write, a raw view or data made in "
                "Python): the graph cannot replay it")
        return node

    def _raw_view(self, tensor):
        """A view made without a Function (ops skip autograd's bookkeeping when nothing
        needs a gradient) of a known value: recorded as a `view_of` node."""
        s = tensor._storage
        hit = self.storages.get((id(s), s.version))
        if hit is None:
            return None
        base, node = hit
        view = self.graph.call_function(view_of, (node, tuple(tensor._shape),
                                                  tuple(tensor._strides),
                                                  tensor._offset - base._offset))
        self.register(tensor, view)
        return view

    def on_inplace(self, orig, target, fn_cls, args, raw, kwargs):
        """An in-place Tensor method (x.add_(1), x.copy_(y), x[i] = v): recorded as one
        node that recomputes the new value and writes it into the same tensor."""
        what = f"{fn_cls.__name__} in place ({self.phase})"
        dst = self.node_of(target, what)
        mapped = self.to_arg(args, what)
        mapped_kw = self.to_arg(kwargs or {}, what)
        self.depth += 1
        try:
            out = orig(target, fn_cls, args, raw, kwargs)
        finally:
            self.depth -= 1
        node = self.graph.call_function(inplace_call(fn_cls), (dst,) + tuple(mapped),
                                        mapped_kw)
        self.register(target, node)
        return out

    def to_arg(self, a, what):
        if _is_tensor(a):
            return self.node_of(a, what)
        if isinstance(a, (tuple, list)):
            items = [self.to_arg(e, what) for e in a]
            if hasattr(a, "_fields"):
                return type(a)(*items)
            return tuple(items) if isinstance(a, tuple) else items
        if isinstance(a, dict):
            return {k: self.to_arg(v, what) for k, v in a.items()}
        if dataclasses.is_dataclass(a) and not isinstance(a, type):
            # an output record (a model's dataclass output): rebuilt from its fields
            return self.graph.call_function(type(a), (), {
                f.name: self.to_arg(getattr(a, f.name), what)
                for f in dataclasses.fields(a) if f.init})
        return a

    def record_outputs(self, node, out):
        """Register the tensors of a call's result (tuple results via getitem nodes)."""
        if _is_tensor(out):
            self.register(out, node)
            return
        if isinstance(out, (tuple, list)):
            node.meta["tensor_meta"] = metadata_of(out)
            for i, o in enumerate(out):
                if _is_tensor(o):
                    item = self.graph.call_function(operator.getitem, (node, i))
                    self.register(o, item)

    # ---- the hooks --------------------------------------------------------------------
    def on_apply(self, orig, cls, args, kwargs):
        what = f"{cls.__name__} ({self.phase})"
        # arguments are looked up before the call: an op that updates one in place
        # (BatchNorm's running statistics) changes its version
        mapped, mapped_kw = self.to_arg(args, what), self.to_arg(kwargs, what)
        before = [(a, a._storage.version, m) for a, m in zip(args, mapped) if _is_tensor(a)]
        self.depth += 1
        outer, self.elementwise_calls = self.elementwise_calls, []
        try:
            out = orig(cls, *args, **kwargs)
            calls = self.elementwise_calls
        finally:
            self.depth -= 1
            self.elementwise_calls = outer
        for a, version, m in before:
            if a._storage.version != version:
                # the op updated this argument in place (BatchNorm's running statistics):
                # later reads are of the same tensor, which the replayed node updates too
                # (a BatchNorm used twice in one forward read an unknown value)
                self.values[_key(a)] = m
                self.storages.setdefault((id(a._storage), a._storage.version), (a, m))
        call = _elementwise_of(self, out, calls)
        extras = _ctx_tensors(self, cls, out) if call is None else None
        if call is not None:
            target, operands = call
            node = self.graph.call_function(target, tuple(self.to_arg(o, what)
                                                          for o in operands))
        elif extras:
            # the backward formula reads tensors forward kept on ctx (BatchNorm's batch
            # statistics): the node returns them too, so the graph has them
            names, needs, tensors = extras
            node = self.graph.call_function(function_forward(cls, names, needs), mapped,
                                            mapped_kw)
        else:
            node = self.graph.call_function(function_call(cls), mapped, mapped_kw)
        node.meta["source_fn"] = cls.__name__
        node.meta["aliases_input"] = _aliases(out, args, kwargs)
        if extras:
            result = self.graph.call_function(operator.getitem, (node, 0))
            result.meta["source_fn"] = cls.__name__
            self.record_outputs(result, out)
            for i, t in enumerate(tensors):
                self.register(t, self.graph.call_function(operator.getitem, (node, i + 1)))
        else:
            self.record_outputs(node, out)
        return out

    def on_elementwise(self, orig, op, inputs, compute_dtype, out_dtype, out):
        result = orig(op, inputs, compute_dtype, out_dtype, out)
        if self.depth:
            self.elementwise_calls.append((op, inputs, compute_dtype, out_dtype, out, result))
            return result
        if out is not None:
            raise CaptureError(f"elementwise kernel {op!r} writes into an existing tensor "
                               f"(out=) in {self.phase}: the graph cannot replay it")
        target = elementwise_call(op, compute_dtype, out_dtype or compute_dtype)
        node = self.graph.call_function(target, tuple(self.to_arg(i, op) for i in inputs))
        self.record_outputs(node, result)
        return result

    def on_factory(self, orig, args, kwargs):
        self.depth += 1             # a factory built from factories is one node
        try:
            out = orig(*args, **kwargs)
        finally:
            self.depth -= 1
        if self.depth:
            return out
        what = f"{orig.__name__} ({self.phase})"
        node = self.graph.call_function(orig, self.to_arg(args, what), self.to_arg(kwargs, what))
        self.record_outputs(node, out)
        return out

    def on_zeros(self, shape, dtype, device):
        out = _zeros(shape, dtype, device)
        node = self.graph.call_function(_zeros, (tuple(shape), dtype, device))
        self.record_outputs(node, out)
        return out


def _aliases(out, args, kwargs):
    """True when a result shares memory with a tensor argument (a view, an in-place op)."""
    storages = set()

    def collect(a):
        if _is_tensor(a):
            storages.add(id(a._storage))
        elif isinstance(a, (tuple, list)):
            for e in a:
                collect(e)
        elif isinstance(a, dict):
            for e in a.values():
                collect(e)
    collect(args)
    collect(kwargs)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return any(_is_tensor(o) and id(o._storage) in storages for o in outs)


def _elementwise_of(rec, out, calls):
    """(ElementwiseCall target, operands) when `out` is the fresh result of one elementwise
    kernel whose tensor operands are known values, else None."""
    if not _is_tensor(out) or not calls:
        return None
    for op, inputs, compute, out_dtype, given, result in calls:
        if given is not None or result is not out and _key(result) != _key(out):
            continue
        od = out_dtype or compute
        dts = compute if isinstance(compute, tuple) else (compute,)
        if od.is_half or any(d.is_half for d in dts):
            return None
        for i in inputs:
            if _is_tensor(i) and _key(i) not in rec.values:
                return None
        return elementwise_call(op, compute, od), inputs
    return None


_NODE_FIELDS = frozenset(("next_functions", "needs_input_grad", "metadata"))


def _ctx_tensors(rec, cls, out):
    """(names, needs_input_grad, tensors) of the unknown tensors the recorded node of
    `cls` (out's grad_fn) keeps as ctx attributes, or None."""
    first = out[0] if isinstance(out, (tuple, list)) and out else out
    ctx = getattr(first, "grad_fn", None) if _is_tensor(first) else None
    if ctx is None or getattr(ctx, "_forward_cls", None) is not cls or ctx._dirty:
        return None
    names, tensors = [], []
    for name, v in vars(ctx).items():
        if name.startswith("_") or name in _NODE_FIELDS:
            continue
        items = [(None, v)] if _is_tensor(v) else (
            list(enumerate(v)) if isinstance(v, (tuple, list)) else [])
        for index, t in items:
            if _is_tensor(t) and _key(t) not in rec.values:
                names.append((name, index))
                tensors.append(t)
    if not names:
        return None
    return tuple(names), tuple(ctx.needs_input_grad), tensors


# ---- installing the hooks ------------------------------------------------------------------

def _bindings(functions):
    """{id(fn): [(module dict, name), ...]}: every nbtorch module global bound to one of
    `functions` ({id: fn})."""
    import sys
    found = {i: [] for i in functions}
    for name, mod in list(sys.modules.items()):
        if not name.startswith("nbtorch") or mod is None:
            continue
        d = vars(mod)
        for k, v in list(d.items()):
            hit = found.get(id(v))
            if hit is not None and functions[id(v)] is v:
                hit.append((d, k))
    return found


# Tensor factories recorded as nodes (their results are new values, not computed from
# graph values): torch.rand in dropout, torch.zeros(...) in user code.
FACTORIES = ("rand", "randn", "rand_like", "randn_like", "randint", "zeros", "ones", "full",
             "empty", "zeros_like", "ones_like", "full_like", "empty_like", "arange",
             "linspace", "eye", "tensor", "bernoulli", "randperm", "randint_like", "normal",
             "poisson", "multinomial")
# Tensor methods that make new tensors, recorded as factories (new_tensor: of literals only)
METHOD_FACTORIES = ("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor")
# ...of which these are recorded only when the traced code itself calls them, with Python
# numbers for data (``torch.tensor([1., 2.])``): an array, or a list an op built from a
# tensor's values, may hold data of the graph, which a node would replay as it was (left
# unrecorded, such a result makes the capture fall back)
_LITERAL_ONLY = frozenset(("tensor",))
# Factories of the op layer recorded the same way: (module, name). Masks made on the host
# from sizes alone (tril/triu's, the causal attention bias) are recorded as calls too, so
# the graph remakes them instead of reading a tensor it cannot trace.
FACTORY_FUNCTIONS = (("nbtorch.ops.dropout", "bernoulli_noise"),
                     ("nbtorch.ops.joining", "_tri_mask"),
                     ("nbtorch.nn.functional.attention", "_causal_bias"))


# id(factory) -> its recording wrapper, while the hooks are installed: a graph that calls a
# factory itself (``torch.zeros(3)`` in traced user code holds the function object, not a
# module binding) is run through the wrapper (lower.py's _Runner)
FACTORY_WRAPPERS = {}


def _factory(orig):
    import functools

    literal_only = orig.__name__ in _LITERAL_ONLY

    @functools.wraps(orig)
    def factory(*args, **kwargs):
        rec = getattr(_LOCAL, "recorder", None)
        if rec is None or literal_only and not (args and _literal(args[0])):
            return orig(*args, **kwargs)
        return rec.on_factory(orig, args, kwargs)
    factory.__fx_orig__ = orig
    return factory


def _method_factory(orig):
    import functools

    literal_only = orig.__name__ == "new_tensor"

    @functools.wraps(orig)
    def method(self, *args, **kwargs):
        rec = getattr(_LOCAL, "recorder", None)
        if rec is None or literal_only and not (args and _literal(args[0])):
            return orig(self, *args, **kwargs)
        return rec.on_factory(orig, (self,) + args, kwargs)
    method.__fx_orig__ = orig
    return method


def _literal(data):
    """True for Python numbers and (nested) lists/tuples of them."""
    if isinstance(data, (bool, int, float, complex)):
        return True
    return isinstance(data, (list, tuple)) and all(_literal(d) for d in data)


def _install():
    from ...autograd import engine
    from ...autograd import function
    from ...autograd.function import Function
    from ...ops import _elementwise
    with _PATCH_LOCK:
        _PATCH_DEPTH[0] += 1
        if _PATCH_DEPTH[0] > 1:
            return
        orig_apply = Function.__dict__["apply"].__func__
        orig_run = _elementwise.run_elementwise
        orig_zeros = engine._zeros

        def apply(cls, *args, **kwargs):
            rec = getattr(_LOCAL, "recorder", None)
            if rec is None or rec.depth:
                if rec is not None:
                    rec.depth += 1
                    try:
                        return orig_apply(cls, *args, **kwargs)
                    finally:
                        rec.depth -= 1
                return orig_apply(cls, *args, **kwargs)
            return rec.on_apply(orig_apply, cls, args, kwargs)

        def run_elementwise(op, inputs, compute_dtype, out_dtype=None, out=None):
            rec = getattr(_LOCAL, "recorder", None)
            if rec is None:
                return orig_run(op, inputs, compute_dtype, out_dtype, out)
            return rec.on_elementwise(orig_run, op, inputs, compute_dtype, out_dtype, out)

        def zeros(shape, dtype, device):
            rec = getattr(_LOCAL, "recorder", None)
            if rec is None:
                return orig_zeros(shape, dtype, device)
            return rec.on_zeros(shape, dtype, device)

        from ...ops import _inplace
        orig_guard = _inplace.inplace_guard

        def inplace_guard(self, fn_cls, args, raw, kwargs=None):
            rec = getattr(_LOCAL, "recorder", None)
            if rec is None or rec.depth:
                return orig_guard(self, fn_cls, args, raw, kwargs)
            return rec.on_inplace(orig_guard, self, fn_cls, args, raw, kwargs)

        import nbtorch
        wanted = {id(orig_guard): orig_guard, id(orig_run): orig_run}
        for name in FACTORIES:
            fn = getattr(nbtorch, name)
            wanted[id(fn)] = fn
        import importlib
        for module, name in FACTORY_FUNCTIONS:
            fn = getattr(importlib.import_module(module), name)
            wanted[id(fn)] = fn
        found = _bindings(wanted)
        guard_bindings = found[id(orig_guard)]
        bindings = found[id(orig_run)]
        # every binding of a factory (torch.rand, and `from .random import rand` in ops)
        factories = [(d, k, fn) for i, fn in wanted.items()
                     if fn is not orig_guard and fn is not orig_run
                     and fn.__name__ not in _LITERAL_ONLY
                     for d, k in found[i]]
        from ..._tensor import Tensor
        methods = [(name, Tensor.__dict__[name]) for name in METHOD_FACTORIES]
        _SAVED[:] = [(Function, orig_apply), (bindings, orig_run), (engine, orig_zeros),
                     factories, (guard_bindings, orig_guard), methods]
        for name, fn in methods:
            setattr(Tensor, name, _method_factory(fn))
        for d, k in guard_bindings:
            d[k] = inplace_guard
        wrapped = FACTORY_WRAPPERS
        wrapped.clear()
        for i, fn in wanted.items():     # every factory, bound in a module or not
            if fn is not orig_guard and fn is not orig_run:
                wrapped[i] = _factory(fn)
        for d, k, fn in factories:
            d[k] = wrapped[id(fn)]
        Function.apply = classmethod(apply)
        function.APPLY_WRAPPERS[0] += 1
        for d, k in bindings:
            d[k] = run_elementwise
        engine._zeros = zeros


def _uninstall():
    from ...autograd import function
    from ...autograd.function import Function
    with _PATCH_LOCK:
        _PATCH_DEPTH[0] -= 1
        if _PATCH_DEPTH[0]:
            return
        ((_, orig_apply), (bindings, orig_run), (engine, orig_zeros), factories,
         (guard_bindings, orig_guard), methods) = _SAVED
        from ..._tensor import Tensor
        for name, fn in methods:
            setattr(Tensor, name, fn)
        for d, k in guard_bindings:
            d[k] = orig_guard
        for d, k, fn in factories:
            d[k] = fn
        FACTORY_WRAPPERS.clear()
        Function.apply = classmethod(orig_apply)
        function.APPLY_WRAPPERS[0] -= 1
        for d, k in bindings:
            d[k] = orig_run
        engine._zeros = orig_zeros
        _SAVED.clear()


class recording:
    """``with recording(rec):`` the ops this thread runs are recorded by `rec`."""

    def __init__(self, rec):
        self.rec = rec

    def __enter__(self):
        if getattr(_LOCAL, "recorder", None) is not None:
            raise CaptureError("a capture is already running in this thread")
        _install()
        _LOCAL.recorder = self.rec
        return self.rec

    def __exit__(self, *exc):
        _LOCAL.recorder = None
        _uninstall()


