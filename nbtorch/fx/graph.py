"""Graph: the IR every nbtorch graph tool reads and writes (fx's `Graph`).

Nodes live in a doubly linked list (a sentinel `root` node closes the ring),
in execution order. New nodes go to the current insertion point (the end,
unless inside ``with graph.inserting_before(n)`` / ``inserting_after(n)``).
``str(graph)`` prints one line per node; `python_code` (see `_codegen.py`)
turns the graph back into the ``forward`` that `GraphModule` runs.

Example:
    >>> g = Graph()
    >>> x = g.placeholder("x")
    >>> g.output(g.call_function(nbtorch.relu, (x,)))
    >>> print(g)
    graph():
        %x : [num_users=1] = placeholder[target=x]
        %relu : [num_users=1] = call_function[target=torch.relu](args = (%x,), kwargs = {})
        return relu
"""
import builtins
import copy
import inspect
import keyword
import re

from .node import Node, map_arg

__all__ = ["Graph"]

_NAME_RE = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_ILLEGAL = set(keyword.kwlist) | set(dir(builtins)) | {"torch", "inf", "nan", "NoneType",
                                                        "self"}


def _snake_case(s):
    """'reluFooBar' -> 'relu_foo_bar' (how fx names nodes after camel-case targets)."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", s).lower()


class _NodeList:
    """`graph.nodes`: a live view in order; erasing the current node while iterating is safe."""

    def __init__(self, graph, reverse=False):
        self._graph, self._reverse = graph, reverse

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        step = "_prev" if self._reverse else "_next"
        cur = getattr(root, step)
        while cur is not root:
            nxt = getattr(cur, step)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return iter(_NodeList(self._graph, not self._reverse))

    def __repr__(self):
        return f"[{', '.join(n.name for n in self)}]"


class _InsertPoint:
    def __init__(self, graph, insert):
        self.graph, self.insert = graph, insert

    def __enter__(self):
        self.orig, self.graph._insert = self.graph._insert, self.insert

    def __exit__(self, *exc):
        self.graph._insert = self.orig


class Graph:
    """A list of `Node`s with PyTorch fx's API (see the module docstring)."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "root", "", (), {})
        self._used_names = set()
        self._base_count = {}
        self._insert = self._root.prepend        # append at the end
        self._len = 0
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras

    @property
    def nodes(self):
        return _NodeList(self)

    def find_nodes(self, *, op, target=None):
        """The nodes of kind `op` (and `target`, when given), in order."""
        return [n for n in self.nodes
                if n.op == op and (target is None or n.target == target)]

    # ---- naming ---------------------------------------------------------------------
    def _target_to_str(self, target):
        if callable(target) and not isinstance(target, str):
            name = getattr(target, "__name__", type(target).__name__)
        else:
            name = str(target)
            if name.startswith("__") and name.endswith("__"):
                name = name[2:-2]
        return _snake_case(name.replace(".", "_"))

    def _unique_name(self, candidate):
        candidate = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = "_" + candidate
        base, num = _NAME_RE.match(candidate).group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if candidate in _ILLEGAL:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        return candidate

    # ---- creating nodes -------------------------------------------------------------
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Add a node at the insertion point; `name` defaults to one made from `target`."""
        target = getattr(target, "__fx_orig__", target)     # a patched namespace function
        args = () if args is None else tuple(args)
        kwargs = {} if kwargs is None else kwargs
        name = self._unique_name(name if name is not None else self._target_to_str(target))
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_function", the_function, args, kwargs,
                                type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def inserting_before(self, n=None):
        """``with graph.inserting_before(n):`` new nodes go right before `n` (None: the start)."""
        if n is None:
            return self.inserting_after(self._root)
        self._check_own(n)
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n=None):
        """``with graph.inserting_after(n):`` new nodes go right after `n` (None: the end).

        As in PyTorch, each new node goes directly after `n`, so several nodes
        created in one block end up in reverse order; use `inserting_before`
        on the node after `n` to keep them in creation order.
        """
        if n is None:
            return self.inserting_before(self._root)
        self._check_own(n)
        return _InsertPoint(self, n.append)

    def _check_own(self, n):
        if n.graph is not self:
            raise RuntimeError(f"Node {n} does not belong to this Graph: cannot insert "
                               "relative to it")

    def erase_node(self, to_erase):
        """Remove a node that nothing uses any more."""
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: "
                               f"{dict(to_erase.users)}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})     # no longer a user of its inputs

    # ---- copying --------------------------------------------------------------------
    def node_copy(self, node, arg_transform=lambda x: x):
        """Copy `node` (from any graph) here; `arg_transform` maps its input nodes."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = copy.copy(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False, return_output_values=True):
        """Copy every node of `g` but its output here; `val_map` maps g's nodes to ours.
        Returns the value g outputs, in our nodes (with g's output node too, as PyTorch's,
        when `return_output_node`)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return (None, None) if return_output_node else None

    def __reduce__(self):
        """Pickled as its nodes in order (a linked list of nodes would pickle recursively,
        one level per node), rebuilt by `_rebuild_graph`."""
        def ref(a):
            return _NodeRef(a.name) if isinstance(a, Node) else a
        specs = [(n.op, n.name, n.target, map_arg(n.args, ref), map_arg(n.kwargs, ref),
                  n.type, dict(n.meta)) for n in self.nodes]
        return (_rebuild_graph, (specs, self._tracer_cls, self._tracer_extras))

    def __deepcopy__(self, memo=None):
        g = Graph(tracer_cls=self._tracer_cls, tracer_extras=self._tracer_extras)
        out = g.graph_copy(self, {}, return_output_values=True)
        old_out = next((n for n in reversed(self.nodes) if n.op == "output"), None)
        if old_out is not None:
            g.output(out, type_expr=old_out.type).meta = copy.copy(old_out.meta)
        return g

    # ---- passes ---------------------------------------------------------------------
    def eliminate_dead_code(self, is_impure_node=None):
        """Erase nodes whose value nobody uses (keeping impure ones); True if any went."""
        self.lint()
        impure = is_impure_node or (lambda n: n.is_impure())
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    def lint(self):
        """Check the graph's invariants; a RuntimeError names the first broken one."""
        from ._lint import lint_graph
        lint_graph(self)

    # ---- output ---------------------------------------------------------------------
    def python_code(self, root_module="self", *, verbose=False):
        """Python source of ``forward`` (`.src`) and the global names it reads (`.globals`)."""
        from ._codegen import python_code
        return python_code(self, root_module)

    def __str__(self):
        placeholder_names, return_type = [], [""]
        lines = [n.format_node(None, return_type) for n in self.nodes]
        return "\n    ".join([f"graph(){return_type[0]}:"] + lines)

    def print_tabular(self):
        """Print the nodes as a table (opcode, name, target, args, kwargs)."""
        from ._lint import tabular
        print(tabular(self))


class _NodeRef:
    """A node named in a pickled graph's arguments (see `Graph.__reduce__`)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __reduce__(self):
        return (_NodeRef, (self.name,))


def _resolve_refs(a, env):
    if isinstance(a, _NodeRef):
        return env[a.name]
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return type(a)(*(_resolve_refs(e, env) for e in a))
    if isinstance(a, (tuple, list)):
        return type(a)(_resolve_refs(e, env) for e in a)
    if isinstance(a, dict):
        return {k: _resolve_refs(v, env) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(_resolve_refs(a.start, env), _resolve_refs(a.stop, env),
                     _resolve_refs(a.step, env))
    return a


def _rebuild_graph(specs, tracer_cls, tracer_extras):
    g = Graph(tracer_cls=tracer_cls, tracer_extras=tracer_extras)
    env = {}
    for op, name, target, args, kwargs, type_expr, meta in specs:
        node = g.create_node(op, target, _resolve_refs(args, env), _resolve_refs(kwargs, env),
                             name, type_expr)
        node.meta = meta
        env[name] = node
    return g
