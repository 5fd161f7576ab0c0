"""``torch._dynamo``'s public corner for code written against it: `reset`, `config`,
`mark_dynamic`/`maybe_mark_dynamic`/`mark_static`, `graph_break`, `explain`, `disable`,
`allow_in_graph`, `assume_constant_result`, `is_compiling`, `list_backends` (see
nbtorch.compile; nbtorch traces the ops that run instead of Python bytecode).
"""
from ..compiler import (allow_in_graph, assume_constant_result, disable, is_compiling,
                        list_backends)
from ..jit._compile import MARKED, config, reset

__all__ = ["reset", "config", "mark_dynamic", "maybe_mark_dynamic", "mark_static",
           "graph_break", "explain", "disable", "allow_in_graph", "assume_constant_result",
           "is_compiling", "list_backends", "ExplainOutput"]


def _dims(t, index):
    dims = index if isinstance(index, (list, tuple)) else [index]
    n = t.dim()
    for d in dims:
        if not -n <= d < n:
            raise IndexError(f"mark_dynamic: dim {d} out of range for a {n}-d tensor")
    return {d % n for d in dims}


def mark_dynamic(t, index, *, min=None, max=None):
    """Mark dims of input `t` as dynamic. nbtorch.compile (with dynamic=None) then treats a
    marked dim 0 - the batch - as dynamic=True does: one graph per batch size, no kernel
    recompiled. Other dims: each size gets its own graph (correct, only not shared)."""
    t._dynamo_dynamic_indices = getattr(t, "_dynamo_dynamic_indices", set()) | _dims(t, index)
    MARKED[0] += 1


def maybe_mark_dynamic(t, index):
    """`mark_dynamic` as a hint (PyTorch may still specialise; so may nbtorch)."""
    mark_dynamic(t, index)


def mark_static(t, index=None):
    """Undo `mark_dynamic` for `index` (every dim when None)."""
    marked = getattr(t, "_dynamo_dynamic_indices", None)
    if marked:
        t._dynamo_dynamic_indices = set() if index is None else marked - _dims(t, index)


def graph_break():
    """Break the graph here: nbtorch.compile does not split graphs, so the function runs
    eagerly, with this as the reason (fullgraph=True: CompileError)."""
    if is_compiling():
        from ..jit._concrete import TracerWarning
        import warnings
        warnings.warn("torch._dynamo.graph_break() called", TracerWarning, stacklevel=2)


class ExplainOutput:
    """What `explain` found: one graph or none, and why not."""

    def __init__(self, graph_count, break_reasons, ops_per_graph, compile_times=""):
        self.graph_count = graph_count
        self.graph_break_count = len(break_reasons)
        self.break_reasons = break_reasons
        self.ops_per_graph = ops_per_graph
        self.op_count = sum(len(ops) for ops in ops_per_graph)
        self.compile_times = compile_times

    def __str__(self):
        lines = [f"Graph Count: {self.graph_count}",
                 f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}"]
        if self.break_reasons:
            lines.append("Break Reasons:")
            lines += [f"  Break Reason {i + 1}:\n    Reason: {r}"
                      for i, r in enumerate(self.break_reasons)]
        if self.ops_per_graph:
            lines.append("Ops per Graph:")
            for i, ops in enumerate(self.ops_per_graph):
                lines.append(f"  Ops {i + 1}:")
                lines += [f"    {op}" for op in ops]
        return "\n".join(lines)

    __repr__ = __str__


def explain(f, *extra_args, **extra_kwargs):
    """``explain(fn)(*args)``: compile `fn` for these arguments and report whether it made
    a graph (nbtorch makes one or runs the function eagerly) and, if not, why."""
    import warnings

    def inner(*args, **kwargs):
        from ..jit._compile import compile
        compiled = compile(f)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled(*args, **kwargs)
        wrapper = getattr(compiled, "_compiled", compiled)
        reasons = list(wrapper.fallback_reasons)
        ops = []
        entries = []
        for entry in wrapper._cache.values():
            entries += entry.values() if isinstance(entry, dict) else [entry]
        for entry in entries:
            graph = getattr(getattr(entry, "cg", None), "forward_gm", None)
            if graph is not None:
                ops.append([str(n.target) for n in graph.graph.nodes
                            if n.op in ("call_function", "call_method", "call_module")])
        return ExplainOutput(0 if reasons else max(len(ops), 1), reasons, ops)
    if extra_args or extra_kwargs:
        return inner(*extra_args, **extra_kwargs)
    return inner
