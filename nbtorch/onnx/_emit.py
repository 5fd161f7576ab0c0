"""The Emitter: walks a traced fx graph, running each node for its concrete value and
writing the ONNX nodes its symbolic function gives.

Every node runs for real (as the trace did), so symbolics know dtypes and
static sizes; sizes read from the model's inputs stay ONNX values
(``Shape``/``Gather``), so dynamic axes follow. A node whose operands are all
constants is folded into one constant (with `do_constant_folding`, operands
read from parameters count as constants too). nn.Modules without a module
symbolic, and nbtorch functions without a symbolic, are traced through: the ops of
their body are emitted in place. A trace that lost the data flow is refused.
"""
import numbers

import numpy as np

from ._graph import UnsupportedOperatorError, Value
from ._registry import FUNCTIONS, MODULES
from ._walk import (check_data_flow, describe, fetch, in_place, int64_dtype, live_nodes,
                    map_args, op_name, python_body, strip_inner, unwrap_default)

__all__ = ["Emitter"]

_RANDOM = frozenset(("rand", "randn", "rand_like", "randn_like", "randint", "bernoulli",
                     "bernoulli_noise", "dropout", "multinomial", "normal", "empty",
                     "empty_like"))


def _is_tensor(v):
    from .._tensor import Tensor
    return isinstance(v, Tensor)


def _unwrap(a):
    if isinstance(a, Value):
        return a.value
    if isinstance(a, tuple):
        t = tuple(_unwrap(x) for x in a)
        return type(a)(*t) if hasattr(a, "_fields") else t
    if isinstance(a, list):
        return [_unwrap(x) for x in a]
    if isinstance(a, dict):
        return {k: _unwrap(v) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(_unwrap(a.start), _unwrap(a.stop), _unwrap(a.step))
    return a


def _values_in(a, found):
    if isinstance(a, Value):
        found.append(a)
    elif isinstance(a, (tuple, list)):
        for x in a:
            _values_in(x, found)
    elif isinstance(a, dict):
        for x in a.values():
            _values_in(x, found)
    elif isinstance(a, slice):
        _values_in((a.start, a.stop, a.step), found)
    return found


class _Wrapper:
    """Calls `module.forward` (not the module: it would be a leaf again) with the
    non-tensor arguments fixed, so ConcreteTracer traces its body."""

    @staticmethod
    def build(module, args, kwargs):
        from ..nn import Module
        slots = []                       # (is_kw, key) of each tensor argument

        def strip(a, key):
            if _is_tensor(a):
                slots.append(key)
                return None
            return a
        fixed_args = [strip(a, (False, i)) for i, a in enumerate(args)]
        fixed_kw = {k: strip(v, (True, k)) for k, v in kwargs.items()}

        class Call(Module):
            def __init__(self):
                super().__init__()
                self.inner = module

            def forward(self, *tensors):
                a, k = list(fixed_args), dict(fixed_kw)
                for (is_kw, key), t in zip(slots, tensors):
                    if is_kw:
                        k[key] = t
                    else:
                        a[key] = t
                return self.inner.forward(*a, **k)
        return Call(), slots


class Emitter:
    """Emits ONNX for fx graphs into `g` (an `OnnxGraph`); see the module docstring."""

    def __init__(self, g, fold_params=True, export_params=True):
        self.g = g
        self.fold_params = fold_params
        self.export_params = export_params
        self.weights = {}            # id(tensor) -> Value of its initializer
        self.param_inputs = []       # (name, tensor) when not export_params
        self.current = None          # the op name being emitted (symbolics shared by names)
        self.module_name = ""        # qualified name of the module a module symbolic emits
        self._inlining = set()       # function bodies being traced through (no recursion)

    # ---- names of values ---------------------------------------------------------
    def name(self, v, like=None, dtype=None):
        """The ONNX name of a Value or Python number (numbers become constants of the dtype
        of `like`, or `dtype`)."""
        if isinstance(v, Value):
            if v.name is None:
                v.name = self.g.const(self._np(v.value))
            return v.name
        if isinstance(v, str):
            return v
        if dtype is None and like is not None:
            return self.g.const(v, like=like)
        if dtype is not None:
            from ._graph import np_dtype
            return self.g.const(v, dtype=np_dtype(dtype))
        return self.g.const(v)

    @staticmethod
    def _np(value):
        if _is_tensor(value):
            return value.detach().cpu().numpy()
        if isinstance(value, (tuple, list)):
            return np.asarray([int(x) for x in value], dtype=np.int64)
        if isinstance(value, bool):
            return np.asarray(value)
        if isinstance(value, numbers.Integral):
            return np.asarray(value, dtype=np.int64)
        return np.asarray(value, dtype=np.float32)

    def int_vector(self, items):
        """A 1-D int64 ONNX tensor from a list of Python ints and 'int' Values; or the
        list itself when every item is static (returned as a constant name)."""
        items = list(items)
        if all(not isinstance(i, Value) or i.static for i in items):
            return self.g.ints([int(_unwrap(i)) for i in items])
        parts = []
        for i in items:
            if isinstance(i, Value) and not i.static:
                if i.kind == "shape":
                    parts.append(i.name)
                else:
                    parts.append(self.g.op("Reshape", self.g.cast(i, int64_dtype()),
                                           self.g.ints([1])))
            else:
                parts.append(self.g.ints([int(_unwrap(i))]))
        return self.g.op("Concat", *parts, axis=0)

    def weight(self, tensor, name, param=True):
        """The Value of a weight or constant tensor (one initializer per tensor)."""
        v = self.weights.get(id(tensor))
        if v is None:
            name = self.g.fresh(name)
            if self.export_params or not param:
                t = tensor.detach().cpu()
                if getattr(t, "is_quantized", False):    # its integers (symbolic_quantized)
                    t = t.int_repr()
                self.g.initializer(t.numpy(), name)
                v = Value(name, tensor, static=True, param=param)
            else:
                self.param_inputs.append((name, tensor))
                v = Value(name, tensor, static=False, param=True)
            self.weights[id(tensor)] = v
        return v

    # ---- running graphs ----------------------------------------------------------
    def run_graph(self, gm, inputs, prefix=""):
        """Emit `gm`'s graph with placeholders bound to `inputs` (Values, in order);
        returns the output structure of Values."""
        graph = gm.graph
        check_data_flow(graph)
        live = live_nodes(graph)
        env, ins = {}, list(inputs)
        for node in graph.nodes:
            if node not in live:
                continue
            if node.op == "placeholder":
                env[node] = ins.pop(0) if ins else unwrap_default(node)
                continue
            args = map_args(node.args, env)
            kwargs = map_args(node.kwargs, env)
            if node.op == "output":
                return args[0]
            if node.op == "get_attr":
                t = fetch(gm, node.target)
                is_param = not node.target.split(".")[-1].startswith("_tensor_constant")
                env[node] = self.weight(t, prefix + strip_inner(node.target), param=is_param) \
                    if _is_tensor(t) else t
            elif node.op == "call_module":
                env[node] = self.module(fetch(gm, node.target),
                                        prefix + strip_inner(node.target), *args, **kwargs)
            else:
                env[node] = self.call(node.target, *args, **kwargs)
                if in_place(node):
                    # later readers of the mutated tensor see the new value (the graph
                    # replays the write; ONNX values are immutable)
                    env[node.args[0]] = env[node]
        raise RuntimeError("graph has no output node")

    def call(self, target, *args, **kwargs):
        """Emit one op (a function or a method name) on Values; returns its Value(s)."""
        out = self._run(target, args, kwargs)
        name = op_name(target)
        folded = self._fold(name, args, kwargs, out)
        if folded is not None:
            return folded
        if name == "getitem" and isinstance(args[0], (tuple, list, dict)):
            return args[0][_unwrap(args[1])]
        if name == "add" and type(out).__name__ == "Size":
            # x.size()[:-1] + (n,): a traced shape joined with other sizes (Concat)
            parts = [self.name(a) if isinstance(a, Value) and a.kind == "shape"
                     else self.int_vector(list(a)) for a in args]
            return self.wrap(out, self.g.op("Concat", *parts, axis=0))
        if name == "getattr" and hasattr(args[0], "_fields"):     # x.max(1).values
            return getattr(args[0], args[1])
        fn = FUNCTIONS.get(name)
        if fn is None:
            body = python_body(target, args)
            if body is not None and body not in self._inlining and \
                    name not in self._inlining:
                return self._inline_function(name, target, body, args, kwargs)
            raise UnsupportedOperatorError(
                f"ONNX export: the op '{name}' has no ONNX equivalent in nbtorch's "
                f"exporter (called as {describe(target)})")
        self.current = name
        res = fn(self, out, *args, **kwargs)
        return self.wrap(out, res)

    def _inline_function(self, name, target, body, args, kwargs):
        """An nbtorch function written with other ops (cosine_similarity, std_mean...):
        its body traced on the concrete arguments and emitted in place."""
        from ..nn import Module
        self._inlining.update((body, name))
        try:
            class Body(Module):
                def forward(self, *a, **k):
                    return body(*a, **k)
            try:
                return self.inline(Body(), "", args, kwargs)
            except Exception as exc:                 # noqa: BLE001 - reported as the op
                raise UnsupportedOperatorError(
                    f"ONNX export: the op '{name}' has no ONNX equivalent in nbtorch's "
                    f"exporter (called as {describe(target)}; tracing its body: "
                    f"{type(exc).__name__}: {str(exc)[:200]})") from None
        finally:
            self._inlining.difference_update((body, name))

    def module(self, mod, qualname, *args, **kwargs):
        """Emit a call of submodule `mod` (its symbolic, or its forward traced through)."""
        out = None
        fn = MODULES.get(type(mod))
        if fn is not None:
            self.module_name = qualname
            out = mod(*_unwrap(args), **_unwrap(kwargs))
            return self.wrap(out, fn(self, mod, out, *args, **kwargs))
        return self.inline(mod, qualname, args, kwargs)

    def inline(self, mod, qualname, args, kwargs):
        """Trace `mod.forward` on the concrete arguments and emit its graph here."""
        from ..jit._concrete import ConcreteTracer
        from ..jit._traced import module_view
        from ..fx.graph_module import GraphModule
        wrapper, slots = _Wrapper.build(mod, _unwrap(args), _unwrap(kwargs))
        tensors = [(kwargs[k] if is_kw else args[k]) for is_kw, k in slots]
        tracer = ConcreteTracer()
        graph = tracer.trace(wrapper, tuple(t.value for t in tensors))
        extras = dict(tracer.constants)
        extras.update(tracer.extra_modules)
        gm = GraphModule(module_view(wrapper, extras), graph, type(mod).__name__)
        prefix = qualname + "." if qualname else ""
        return self.run_graph(gm, tensors, prefix)

    # ---- helpers -----------------------------------------------------------------
    @staticmethod
    def _run(target, args, kwargs):
        a, k = _unwrap(args), _unwrap(kwargs)
        if isinstance(target, str):
            return getattr(a[0], target)(*a[1:], **k)
        return target(*a, **k)

    def _fold(self, name, args, kwargs, out):
        vals = _values_in((args, kwargs), [])
        if name in _RANDOM or any(not v.static for v in vals):
            return None
        if any(v.param for v in vals) and not self.fold_params:
            return None
        if not vals and not _is_tensor(out) and not isinstance(out, (tuple, list)):
            return None                                  # plain Python arithmetic
        return self.wrap(out, None, static=True, param=any(v.param for v in vals))

    def wrap(self, out, res, static=False, param=False):
        """Values shaped like `out` holding the ONNX names in `res` (None: constants)."""
        if isinstance(res, Value):
            return res
        if _is_tensor(out):
            return Value(res, out, static, "tensor", param)
        if isinstance(out, bool) or isinstance(out, numbers.Number):
            if static:
                return out
            return Value(res, out, static, "int", param)
        if isinstance(out, tuple) and all(isinstance(x, numbers.Integral) for x in out) \
                and type(out).__name__ == "Size":
            return Value(res, out, static, "shape", param) if not static else out
        if isinstance(out, (tuple, list)):
            if res is None:
                items = [self.wrap(o, None, static, param) for o in out]
            else:
                items = [self.wrap(o, r, static, param) for o, r in zip(out, res)]
            if hasattr(out, "_fields"):
                return type(out)(*items)
            return type(out)(items) if isinstance(out, list) else tuple(items)
        if out is None:
            return None
        if static:
            return out
        raise UnsupportedOperatorError(
            f"ONNX export: a value of type {type(out).__name__} computed from the inputs "
            "cannot be exported")
