"""Reading fx graphs for the Emitter: live nodes (with in-place writes), argument
mapping, attribute paths, and the data-flow check on a trace."""
from ._graph import UnsupportedOperatorError

__all__ = ["check_data_flow", "live_nodes", "map_args", "fetch", "strip_inner", "in_place",
           "python_body", "describe", "op_name", "int64_dtype", "unwrap_default"]


def op_name(target):
    """The registry key of a call_function target or call_method name."""
    if isinstance(target, str):
        return target
    return getattr(target, "__name__", type(target).__name__)


_PRIVATE = frozenset(("_shape", "_strides", "_storage", "_offset"))


def check_data_flow(graph):
    """Refuse a trace that lost the data flow: nbtorch internals read a private field of
    a traced value, so a function ran outside the tracer's view and its result was
    recorded as a constant (a silently wrong model otherwise)."""
    for n in graph.nodes:
        if n.op == "call_function" and op_name(n.target) == "getattr" and \
                len(n.args) > 1 and n.args[1] in _PRIVATE:
            where = n.meta.get("stack_trace", "")
            raise UnsupportedOperatorError(
                "ONNX export: the trace lost the data flow: nbtorch code read "
                f"Tensor.{n.args[1]} of a traced value{' at ' + where if where else ''}, "
                "so a function ran outside the tracer's view and its result would be a "
                "constant (e.g. an op function kept in a container on the module, "
                "`self.acts = [F.relu]`): call it as F.relu(x), keep it as a plain "
                "attribute, or use a module such as nn.ReLU()")


def python_body(target, args):
    """The plain Python function behind an nbtorch function or Tensor method, or None
    (builtins, autograd Functions and kernels cannot be traced through)."""
    import inspect
    from .._tensor import Tensor
    fn = getattr(Tensor, target, None) if isinstance(target, str) else target
    fn = inspect.unwrap(fn) if fn is not None else None
    if not inspect.isfunction(fn) or not (fn.__module__ or "").startswith("nbtorch"):
        return None
    return fn


def in_place(node):
    """x.add_(y), F.relu(x, inplace=True): a call that writes its first argument."""
    from ..fx.node import Node
    if not node.args or not isinstance(node.args[0], Node):
        return False
    if node.kwargs.get("inplace") is True:
        return True
    name = op_name(node.target)
    return name.endswith("_") and not name.startswith("_") and not name.endswith("__")


def int64_dtype():
    from .. import int64
    return int64


def describe(target):
    if isinstance(target, str):
        return f"Tensor.{target}"
    mod = getattr(target, "__module__", None) or ""
    return f"{mod}.{op_name(target)}".lstrip(".")


def strip_inner(target):
    if target == "inner":
        return ""
    return target[len("inner."):] if target.startswith("inner.") else target


def fetch(gm, target):
    obj = gm
    for atom in target.split("."):
        obj = getattr(obj, atom)
    return obj


def unwrap_default(node):
    if node.args:
        return node.args[0]
    raise TypeError(f"ONNX export: no input given for placeholder '{node.target}'")


def map_args(a, env):
    from ..fx.node import Node
    if isinstance(a, Node):
        return env[a]
    if isinstance(a, tuple):
        t = tuple(map_args(x, env) for x in a)
        return type(a)(*t) if hasattr(a, "_fields") else t
    if isinstance(a, list):
        return [map_args(x, env) for x in a]
    if isinstance(a, dict):
        return {k: map_args(v, env) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_args(a.start, env), map_args(a.stop, env), map_args(a.step, env))
    return a


def live_nodes(graph):
    """The nodes the output depends on (dead size arithmetic is skipped), with the
    in-place writes into live tensors (they have no users of their own)."""
    from ..fx.node import Node
    nodes = list(graph.nodes)
    live = {n for n in nodes if n.op == "placeholder"}

    def inputs_of(n):
        found = []

        def collect(a):
            if isinstance(a, Node):
                found.append(a)
            elif isinstance(a, (tuple, list)):
                for x in a:
                    collect(x)
            elif isinstance(a, dict):
                for x in a.values():
                    collect(x)
            elif isinstance(a, slice):
                collect((a.start, a.stop, a.step))
        collect((n.args, n.kwargs))
        return found

    def mark(roots):
        stack = list(roots)
        while stack:
            n = stack.pop()
            if n in live and n.op != "placeholder":
                continue
            live.add(n)
            stack.extend(x for x in inputs_of(n) if x not in live)
    mark([n for n in nodes if n.op == "output"])
    changed = True
    while changed:
        writes = [n for n in nodes if n not in live and in_place(n) and n.args[0] in live]
        changed = bool(writes)
        mark(writes)
    return live
