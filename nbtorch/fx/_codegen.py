"""Turn a Graph back into readable Python: the ``forward`` a GraphModule runs.

The output matches PyTorch fx's code generator line for line: one statement
per node, operators written as operators (``add = x + param``), modules and
attributes through ``self.``, and each value set to None after its last use
(``;  x = param = None``) so intermediate tensors are freed as soon as
possible. ``torch`` in the code is ``nbtorch``.
"""
import builtins
import keyword
import math
import operator

from .node import Node, map_arg
from ._names import qualified_name

__all__ = ["PythonCode", "python_code", "MAGIC_METHODS", "REFLECTABLE_MAGIC_METHODS",
           "INPLACE_METHODS"]

REFLECTABLE_MAGIC_METHODS = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
MAGIC_METHODS = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}",
    "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}",
    **REFLECTABLE_MAGIC_METHODS,
}
INPLACE_METHODS = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}",
    "imod": "{} %= {}", "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}",
    "ipow": "{} **= {}", "irshift": "{} >>= {}", "isub": "{} -= {}", "itruediv": "{} /= {}",
    "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}


class PythonCode:
    """Generated source (`src`) and the global names it needs (`globals`)."""

    def __init__(self, src, globals_):
        self.src, self.globals = src, globals_

    def __repr__(self):
        return f"PythonCode(src={self.src!r})"


def _format_target(base, target):
    r = base
    for elem in target.split("."):
        if elem.isidentifier() and not keyword.iskeyword(elem):
            r = f"{r}.{elem}"
        else:
            r = f'getattr({r}, "{elem}")'
    return r


class _Globals:
    """The names generated code reads besides its arguments; `torch` is nbtorch."""

    def __init__(self, graph):
        import nbtorch
        self.values = {"torch": nbtorch, "inf": math.inf, "nan": math.nan,
                       "NoneType": type(None)}
        self.taken = {n.name for n in graph.nodes} | set(self.values)
        self.by_id = {}

    def add(self, hint, obj):
        if getattr(builtins, hint, None) is obj:
            return hint
        if id(obj) in self.by_id:
            return self.by_id[id(obj)]
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in hint) or "_global"
        if base[0].isdigit():
            base = "_" + base
        name, i = base, 0
        # never another builtin's name: the code reads builtins too (a target named
        # `slice` made the literal slice(None, None, None) call it); operator.abs may be
        # spelt abs
        while name in self.taken or keyword.iskeyword(name) or (
                hasattr(builtins, name) and obj is not getattr(operator, name, None)):
            i += 1
            name = f"{base}_{i}"
        self.taken.add(name)
        self.values[name] = obj
        self.by_id[id(obj)] = name
        return name

    def function(self, fn):
        """How code names a called function: torch.add literally, others as globals."""
        q = qualified_name(fn)
        if q.startswith("torch."):
            return q
        if getattr(builtins, q, None) is fn:
            return q
        hint = q.replace(".", "_") if q.startswith("math.") else getattr(fn, "__name__", q)
        return self.add(hint, fn)

    def type_annotation(self, t):
        from ._names import type_repr
        if isinstance(t, type) and t.__module__ != "builtins":
            r = type_repr(t)
            return r if r.startswith("torch.") else self.add(t.__name__, t)
        if isinstance(t, type):
            return t.__qualname__
        if t is Ellipsis:
            return "..."
        import typing
        r = repr(t)
        args = typing.get_args(t)
        if args and "[" in r and all(isinstance(a, type) or a is Ellipsis or typing.get_args(a)
                                     for a in args):
            # Tuple[torch.Tensor, Optional[torch.Tensor]]: each argument named as code can
            # read it (repr would spell nbtorch._tensor.Tensor, a name the code lacks)
            head = r.split("[", 1)[0]
            head = "typing.Union" if head == "typing.Optional" else head
            r = f"{head}[{', '.join(self.type_annotation(a) for a in args)}]"
        if r.startswith("typing."):
            self.values["typing"] = typing
        return r


def _repr_arg(arg, g):
    """Python source that evaluates to `arg` (nodes by name, others as literals/globals)."""
    if isinstance(arg, Node):
        return arg.name
    if isinstance(arg, tuple) and hasattr(arg, "_fields"):
        return f"{g.add(type(arg).__name__, type(arg))}({', '.join(_repr_arg(a, g) for a in arg)})"
    if isinstance(arg, tuple):
        inner = ", ".join(_repr_arg(a, g) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if isinstance(arg, list):
        return "[" + ", ".join(_repr_arg(a, g) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k!r}: {_repr_arg(v, g)}" for k, v in arg.items()) + "}"
    if isinstance(arg, slice):
        return (f"slice({_repr_arg(arg.start, g)}, {_repr_arg(arg.stop, g)}, "
                f"{_repr_arg(arg.step, g)})")
    if isinstance(arg, float):
        if math.isnan(arg):
            return "float('nan')"
        if math.isinf(arg):
            return "float('inf')" if arg > 0 else "-float('inf')"
        return repr(arg)
    if arg is None or arg is Ellipsis or isinstance(arg, (bool, int, str, complex)):
        return repr(arg)
    from .._dtype import dtype as dtype_cls
    from .._device import device as device_cls
    from .._tensor import Size
    if isinstance(arg, dtype_cls):
        return repr(arg)                          # torch.float32
    if isinstance(arg, device_cls):
        return f"torch.device({str(arg)!r})"
    if isinstance(arg, Size):
        return f"torch.Size({list(arg)!r})"
    if callable(arg) and hasattr(arg, "__name__"):
        return g.function(arg) if not isinstance(arg, type) else g.add(arg.__name__, arg)
    return g.add(f"_{type(arg).__name__.lower()}_constant", arg)


def _format_args(args, kwargs, g):
    parts = [_repr_arg(a, g) for a in args]
    parts += [f"{k} = {_repr_arg(v, g)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def _last_uses(nodes):
    """user node -> the input nodes whose last use it is (fx's order)."""
    seen, to_delete = set(), {}
    for node in reversed(nodes):
        for inp in _inputs_in_order(node):
            if inp not in seen:
                seen.add(inp)
                to_delete.setdefault(node, []).append(inp)
    return to_delete


def _inputs_in_order(node):
    found = []
    map_arg(node.args, lambda n: found.append(n) if n not in found else None)
    map_arg(node.kwargs, lambda n: found.append(n) if n not in found else None)
    return found


def _emit(node, g, root, free_vars, wrapped, ret_annotation):
    """The statement for one node (no newline), or None for a plain placeholder."""
    name = node.name
    ann = "" if node.type is None else f" : {g.type_annotation(node.type)}"
    op, target = node.op, node.target
    if op == "placeholder":
        default = f" = {_repr_arg(node.args[0], g)}" if node.args else ""
        free_vars.append(f"{target}{ann}{default}")
        raw = target.replace("*", "")
        return f"{name} = {raw}" if raw != name else None
    if op == "call_method":
        return (f"{name}{ann} = {_format_target(_repr_arg(node.args[0], g), target)}"
                f"({_format_args(node.args[1:], node.kwargs, g)})")
    if op == "call_function":
        fname = getattr(target, "__name__", "")
        is_operator = getattr(operator, fname, None) is target
        if is_operator and fname in MAGIC_METHODS and not node.kwargs:
            return f"{name}{ann} = " + MAGIC_METHODS[fname].format(
                *(_repr_arg(a, g) for a in node.args))
        if is_operator and fname in INPLACE_METHODS and not node.kwargs:
            stmt = INPLACE_METHODS[fname].format(*(_repr_arg(a, g) for a in node.args))
            return f"{stmt};  {name}{ann} = {_repr_arg(node.args[0], g)}"
        fn = g.function(target)
        if (fn == "getattr" and len(node.args) == 2 and isinstance(node.args[1], str)
                and node.args[1].isidentifier() and not node.kwargs):
            return f"{name}{ann} = {_format_target(_repr_arg(node.args[0], g), node.args[1])}"
        if node.meta.get("is_wrapped", False):
            wrapped.setdefault(fn)
        return f"{name}{ann} = {fn}({_format_args(node.args, node.kwargs, g)})"
    if op == "call_module":
        return (f"{name}{ann} = {_format_target(root, target)}"
                f"({_format_args(node.args, node.kwargs, g)})")
    if op == "get_attr":
        return f"{name}{ann} = {_format_target(root, target)}"
    if op == "output":
        if node.type is not None:
            ret_annotation[0] = f" -> {g.type_annotation(node.type)}"
        return f"return {_repr_arg(node.args[0], g)}"
    raise NotImplementedError(f"node: {op} {target}")


def python_code(graph, root_module="self"):
    """Python source for ``def forward(self, ...)`` that runs `graph` (a `PythonCode`)."""
    g = _Globals(graph)
    nodes = list(graph.nodes)
    last_uses = _last_uses(nodes)
    free_vars, body, wrapped, ret_annotation = [], [], {}, [""]
    for node in nodes:
        stmt = _emit(node, g, root_module, free_vars, wrapped, ret_annotation)
        if node.op == "placeholder":
            if stmt is not None:
                body.append(stmt + "\n")
            continue
        body.append(stmt)
        if node.op == "output":
            body.append("\n")
            continue
        dead = list(last_uses.get(node, []))
        if not node.users:
            dead.append(node)        # kept (impure) but unused: free right away
        body.append(";  " + " = ".join([n.name for n in dead] + ["None"]) + "\n" if dead
                    else "\n")
    if not body:
        body.append("pass\n")
    wrap_stmts = ""
    if wrapped:
        from .tracer import wrap
        wrap_name = g.add("wrap", wrap)
        wrap_stmts = "\n".join(f'{wrap_name}("{n}")' for n in wrapped)
    code = "".join(body).lstrip("\n")
    code = "\n".join("    " + line for line in code.split("\n"))
    header = f"def forward({', '.join([root_module] + free_vars)}){ret_annotation[0]}:"
    src = f"\n{wrap_stmts}\n\n{header}\n{code}"
    return PythonCode(src, g.values)
