"""nbtorch.jit.trace: record what a function or module does on example inputs into an fx Graph.

The graph is the same IR `nbtorch.fx` builds (see `_concrete.py` for how the
concrete tracer works); the result runs that graph as generated Python.
"""
import inspect

from ..fx.graph_module import GraphModule
from ..fx.node import Node
from ._check import check_trace as _check_trace
from ._concrete import ConcreteTracer, warn_at_user_line
from ._traced import TracedFunction, TracedModule, module_view

__all__ = ["trace"]

_CONTAINER_MSG = ("Encountering a {} at the output of the tracer might cause the trace to be "
                  "incorrect, this is only valid if the container structure does not change "
                  "based on the module's inputs. Consider using a constant container instead "
                  "(e.g. for `list`, use a `tuple` instead. for `dict`, use a `NamedTuple` "
                  "instead). If you absolutely need this and know the side effects, pass "
                  "strict=False to trace() to allow this behavior.")


def _resolve(func):
    """(module or None, callable to trace, name) for what the user passed."""
    from ..nn import Module
    if isinstance(func, Module):
        return func, func, type(func).__name__
    if inspect.ismethod(func) and isinstance(func.__self__, Module) and \
            func.__name__ == "forward":
        return func.__self__, func.__self__, type(func.__self__).__name__
    if isinstance(func, (TracedFunction,)):
        return None, func, func.name
    if callable(func) and not isinstance(func, type):
        return None, func, getattr(func, "__name__", type(func).__name__)
    raise TypeError(f"nbtorch.jit.trace expects a function or an nn.Module to trace, got "
                    f"{type(func).__name__}")


def _as_args(example_inputs):
    from .._tensor import Tensor
    if example_inputs is None:
        return ()
    if isinstance(example_inputs, (Tensor, dict)):
        return (example_inputs,)
    if isinstance(example_inputs, tuple):
        return example_inputs
    try:
        return tuple(example_inputs)
    except TypeError:
        return (example_inputs,)


def _check_types(args, kwargs):
    from .._tensor import Tensor

    def check(v, where):
        if isinstance(v, Tensor):
            return
        if isinstance(v, (tuple, list)):
            for i, e in enumerate(v):
                check(e, f"{where}[{i}]")
            return
        if isinstance(v, dict):
            for k, e in v.items():
                check(e, f"{where}[{k!r}]")
            return
        raise RuntimeError(f"Type '{type(v).__name__}' cannot be traced (example input "
                           f"{where}). Only Tensors and (possibly nested) Lists, Dicts, and "
                           "Tuples of Tensors can be traced")
    for i, a in enumerate(args):
        check(a, str(i))
    for k, a in kwargs.items():
        check(a, repr(k))


def _check_arity(fn, name, args, kwargs):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        n = len(args) + len(kwargs)
        raise TypeError(f"nbtorch.jit.trace: {name}{sig} cannot take the {n} example "
                        f"input(s) given: {e}") from None


def _check_outputs(graph, strict):
    out = next(n for n in graph.nodes if n.op == "output").args[0]
    if out is None:
        raise RuntimeError("The traced function didn't return any values! Side-effects are "
                           "not captured in traces, so it would be a no-op.")

    def walk(a):
        if isinstance(a, Node):
            return
        if isinstance(a, (list, tuple)):
            if isinstance(a, list) and strict:
                warn_at_user_line(_CONTAINER_MSG.format("list"), outside_nbtorch=True)
            for e in a:
                walk(e)
            return
        if isinstance(a, dict):
            if strict:
                raise RuntimeError(_CONTAINER_MSG.format("dict"))
            for e in a.values():
                walk(e)
            return
        raise RuntimeError("Only tensors, lists, tuples of tensors, or dictionary of tensors "
                           f"can be output from traced functions (got {type(a).__name__} "
                           f"{a!r})")
    walk(out)


_LAYER = "_layer"        # the call_module target of a recurrent layer traced as one call


def _called_whole(module):
    """`module` is recorded as one call_module node even as the root of a trace: recurrent
    layers (traced through, their time loop would be frozen at the example's length)."""
    from ..nn.modules.rnn import RNNBase
    return isinstance(module, RNNBase)


def _layer_call(module):
    """A function calling `module`, with its forward's signature: traced, the module is a
    leaf node called with the placeholders."""
    import functools

    @functools.wraps(module.forward)
    def call(*args, **kwargs):
        return module(*args, **kwargs)
    return call


def _trace_graph(target, args, kwargs, attr_updates=False):
    tracer = ConcreteTracer(attr_updates)
    graph = tracer.trace(target, args, kwargs)
    graph.eliminate_dead_code()       # values only looked at by Python (sizes, bools)
    return tracer, graph


def _build(module, target, name, tracer, graph):
    extras = dict(tracer.constants)
    extras.update(tracer.extra_modules)
    if module is not None and _called_whole(module):
        # the layer itself, reached as a plain attribute: its parameters are the traced
        # module's own (shared), so the state_dict keys stay the layer's
        for node in graph.nodes:
            if node.op == "call_module" and extras.get(node.target) is module:
                node.target = _LAYER
        view = module_view(module, {k: v for k, v in extras.items() if v is not module})
        object.__setattr__(view, _LAYER, module)
        traced = TracedModule(view, graph, name)
        traced._modules.pop(_LAYER, None)           # installed as a child: not one
        object.__setattr__(traced, _LAYER, module)
        return traced
    if module is not None:
        return TracedModule(module_view(module, extras), graph, name)
    root = tracer.root
    for key, value in extras.items():
        setattr(root, key, value)
    return TracedFunction(GraphModule(root, graph, name), name)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True):
    """Trace `func` (a function or nn.Module) on `example_inputs` into an fx graph.

    Python control flow is frozen at the example's values; converting a traced
    tensor to a Python value warns (`TracerWarning`) at that line. Returns a
    `TracedModule` (for modules: shares their parameters, so `state_dict` and
    `load_state_dict` work) or a `TracedFunction`; both have ``.graph`` and
    ``.code``. With `check_trace`, the trace is re-done on `check_inputs` (a
    list of input tuples; the example inputs by default) and compared:
    differing graphs raise `TracingCheckError`, differing outputs warn.

    Example:
        >>> traced = nbtorch.jit.trace(model, nbtorch.randn(8, 4))
        >>> print(traced.code)
        >>> traced(nbtorch.randn(16, 4))
    """
    module, target, name = _resolve(func)
    args = _as_args(example_inputs)
    kwargs = dict(example_kwarg_inputs or {})
    if example_kwarg_inputs is not None and not isinstance(example_kwarg_inputs, dict):
        raise TypeError("nbtorch.jit.trace: example_kwarg_inputs must be a dict of name -> "
                        f"input, got {type(example_kwarg_inputs).__name__}")
    if example_inputs is None and example_kwarg_inputs is None:
        raise RuntimeError("nbtorch.jit.trace: example_inputs or example_kwarg_inputs must be "
                           "given (the trace runs the code on them)")
    _check_types(args, kwargs)
    _check_arity(module.forward if module is not None else target, name, args, kwargs)
    if module is not None and _called_whole(module):
        target = _layer_call(module)
    tracer, graph = _trace_graph(target, args, kwargs)
    _check_outputs(graph, strict)
    traced = _build(module, target, name, tracer, graph)
    if check_trace:
        def retrace(check_args):
            t, g = _trace_graph(target, check_args, kwargs)
            holder = _build(module, target, name, t, g)
            return g, getattr(holder, "graph_module", holder)
        inputs = [_as_args(c) for c in check_inputs] if check_inputs else [args]
        _check_trace(target, traced, retrace, inputs, check_tolerance, kwargs)
    return traced
