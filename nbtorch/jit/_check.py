"""check_trace: re-trace on check inputs and compare graphs and outputs (as torch.jit does).

For each set of check inputs (the example inputs by default): trace again
and compare the two graphs line by line, and the values of their tensor
constants; warn about nodes that draw random numbers; run the trace and the
original Python code on copies of the inputs and warn where outputs differ.
Graphs that differ (Python control flow or Python values that depend on the
inputs) raise `TracingCheckError` with both graphs' diff.
"""
import dataclasses
import difflib

import numpy as np

from ..fx.node import map_aggregate
from ..fx._impure import is_random_node
from ._concrete import warn_at_user_line

__all__ = ["TracingCheckError", "check_trace", "clone_inputs"]


class TracingCheckError(Exception):
    """A traced graph did not reproduce itself (or its constants) on the check inputs."""

    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            self.message += extra_msg + "\n"
        if graph_diff_error is not None:
            self.message += "ERROR: Graphs differed across invocations!\n"
            self.message += _indent(graph_diff_error) + "\n"
        if tensor_compare_error is not None:
            self.message += ("ERROR: Tensor-valued Constant nodes differed in value across "
                             "invocations. This often indicates that the tracer has "
                             "encountered untraceable code.\n")
            self.message += _indent(tensor_compare_error) + "\n"
        super().__init__(self.message)


def _indent(s):
    return "\n".join("\t" + line for line in s.splitlines())


def clone_inputs(args):
    """Copies of the tensors in `args` (same requires_grad), other values as they are."""
    from .._tensor import Tensor

    def clone(a):
        if isinstance(a, Tensor):
            c = a.detach().clone()
            if a.requires_grad:
                c.requires_grad_(True)
            return c
        return a
    return tuple(_map_values(clone, a) for a in args)


def _clone_kwargs(kwargs):
    kwargs = kwargs or {}
    return dict(zip(kwargs, clone_inputs(tuple(kwargs.values()))))


def _map_values(fn, a):
    if isinstance(a, tuple):
        return tuple(_map_values(fn, e) for e in a)
    if isinstance(a, list):
        return [_map_values(fn, e) for e in a]
    if isinstance(a, dict):
        return {k: _map_values(fn, v) for k, v in a.items()}
    return fn(a)


def _leaves(value):
    out = []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):    # an output record
        value = tuple(getattr(value, f.name) for f in dataclasses.fields(value))
    map_aggregate(value, out.append)
    return out


def _values(t):
    """A tensor's values on the host (a quantized one's dequantized, as assert_close)."""
    t = t.detach()
    return (t.dequantize() if getattr(t, "is_quantized", False) else t)._host()


def _compare_tensors(a, b, tol):
    """None when close, else PyTorch-style 'Tensor-likes are not close!' details."""
    if tuple(a.shape) != tuple(b.shape):
        return f"The values for attribute 'shape' do not match: {a.shape} != {b.shape}."
    if a.dtype is not b.dtype:
        return f"The values for attribute 'dtype' do not match: {a.dtype} != {b.dtype}."
    x = np.asarray(_values(a), dtype=np.float64)
    y = np.asarray(_values(b), dtype=np.float64)
    close = np.isclose(x, y, rtol=tol, atol=tol, equal_nan=True)
    if close.all():
        return None
    diff = np.abs(x - y)
    rel = np.divide(diff, np.abs(y), out=np.where(diff > 0, np.inf, 0.0), where=y != 0)
    ia = np.unravel_index(np.nanargmax(diff), diff.shape) if diff.size else ()
    ir = np.unravel_index(np.nanargmax(rel), rel.shape) if rel.size else ()
    bad = int((~close).sum())
    return ("Tensor-likes are not close!\n\n"
            f"Mismatched elements: {bad} / {close.size} ({100.0 * bad / close.size:.1f}%)\n"
            f"Greatest absolute difference: {diff[ia]} at index {tuple(map(int, ia))} "
            f"(up to {tol} allowed)\n"
            f"Greatest relative difference: {rel[ir]} at index {tuple(map(int, ir))} "
            f"(up to {tol} allowed)")


def _graph_diff(traced_graph, check_graph):
    a, b = str(traced_graph).splitlines(), str(check_graph).splitlines()
    if a == b:
        return None
    diff = "\n".join("\t" + line for line in difflib.ndiff(a, b))
    msg = f"Graph diff:\n{diff}\n"
    tn, cn = list(traced_graph.nodes), list(check_graph.nodes)
    for t, c in zip(tn + [None] * len(cn), cn + [None] * len(tn)):
        ts = t.format_node() if t is not None else ""
        cs = c.format_node() if c is not None else ""
        if ts != cs:
            nd = "\n".join("\t\t" + line for line in difflib.ndiff([ts], [cs]))
            msg += f"First diverging operator:\nNode diff:\n{nd}\n"
            for label, node in (("Trace", t), ("Check", c)):
                where = node.meta.get("stack_trace") if node is not None else None
                if where:
                    msg += f"{label} source location:\n\t{where}\n"
            break
    return msg.rstrip("\n")


def _constant_diff(traced_graph, traced_root, check_graph, check_root):
    from .._tensor import Tensor
    for t, c in zip(traced_graph.nodes, check_graph.nodes):
        if t.op != "get_attr" or not t.target.startswith("_tensor_constant"):
            continue
        tv, cv = _fetch(traced_root, t.target), _fetch(check_root, c.target)
        if isinstance(tv, Tensor) and isinstance(cv, Tensor):
            err = _compare_tensors(cv, tv, 1e-7)
            if err is not None:
                where = t.meta.get("stack_trace", "")
                return (f"Node:\n\t{t.format_node()}\nSource Location:\n\t{where}\n"
                        f"Comparison exception: \t{err}")
    return None


def _fetch(obj, target):
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def check_trace(original, traced, retrace, check_inputs, tolerance, kwargs=None):
    """Re-trace and re-run on each of `check_inputs` (tuples of args); see module docstring.

    `retrace(args)` traces `original` again and returns (graph, module holding its
    constants); `traced` is the traced callable (its `.graph`, its module).
    """
    from ..autograd import no_grad
    from .._tensor import Tensor
    traced_module = getattr(traced, "graph_module", traced)
    for args in check_inputs:
        check_graph, check_root = retrace(clone_inputs(args))
        graph_err = _graph_diff(traced.graph, check_graph)
        const_err = None if graph_err else _constant_diff(traced.graph, traced_module,
                                                           check_graph, check_root)
        random_nodes = [n for n in traced.graph.nodes if is_random_node(n, traced_module)]
        if random_nodes:
            lines = "\n".join("\t" + n.format_node() for n in random_nodes)
            warn_at_user_line("Trace had nondeterministic nodes. Did you forget call .eval() "
                              f"on your model? Nodes:\n{lines}\nThis may cause errors in trace "
                              "checking. To disable trace checking, pass check_trace=False to "
                              "torch.jit.trace()", outside_nbtorch=True)
        with no_grad():
            got = _leaves(traced(*clone_inputs(args), **_clone_kwargs(kwargs)))
            want = _leaves(original(*clone_inputs(args), **_clone_kwargs(kwargs)))
        if len(got) != len(want):
            graph_err = graph_err or (f"the trace returned {len(got)} values but the Python "
                                      f"function returned {len(want)}")
        for i, (g, w) in enumerate(zip(got, want)):
            if isinstance(g, Tensor) and isinstance(w, Tensor):
                err = _compare_tensors(g, w, tolerance)
            else:
                err = None if g == w else f"{g!r} != {w!r}"
            if err is not None:
                warn_at_user_line(f"Output nr {i + 1}. of the traced function does not match "
                                  "the corresponding output of the Python function. Detailed "
                                  f"error:\n{err}", outside_nbtorch=True)
        if graph_err is not None or const_err is not None:
            raise TracingCheckError(graph_err, const_err)
