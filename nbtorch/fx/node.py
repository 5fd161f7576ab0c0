"""Node: one operation of a Graph, and `map_arg` / `map_aggregate` over its arguments.

A node is one of six kinds (``op``), with PyTorch fx's meanings:

    placeholder    a function input; ``target`` is the argument's name
    get_attr       fetch a parameter, buffer or constant of the owning module
    call_function  ``target(*args, **kwargs)``, target a callable (``torch.add``)
    call_method    ``args[0].<target>(*args[1:], **kwargs)``, target a string
    call_module    ``root.<target>(*args, **kwargs)``, target a submodule path
    output         the graph's return value, ``args[0]``

Nodes keep their users (the nodes that read them) up to date whenever their
``args``/``kwargs`` change, so rewriting passes can ask "who uses this value"
in O(1). ``meta`` is a free dict for passes: ShapeProp and jit.trace put a
`TensorMetadata` (shape, dtype, stride, device, ...) under ``'tensor_meta'``.
"""
from ._names import pretty_target, type_repr

__all__ = ["Node", "map_arg", "map_aggregate", "immutable_list", "immutable_dict",
           "has_side_effect"]


def has_side_effect(fn):
    """Mark `fn` as having side effects: a graph's call of it survives dead-code
    elimination (PyTorch's decorator). Returns `fn`."""
    fn._fx_impure = True
    return fn

OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output",
       "root")


def _no_mutation(self, *args, **kwargs):
    raise NotImplementedError(f"'{type(self).__name__}' object does not support mutation. "
                              "Create a new object instead (node arguments are immutable: "
                              "assign node.args / node.kwargs).")


class immutable_list(list):
    """A list inside a node's arguments: read-only, so users stay consistent."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _no_mutation
    append = extend = insert = pop = remove = reverse = sort = clear = _no_mutation

    def __hash__(self):
        return hash(tuple(self))

    def __reduce__(self):
        return (immutable_list, (list(self),))


class immutable_dict(dict):
    """A dict inside a node's arguments (kwargs): read-only."""

    __setitem__ = __delitem__ = _no_mutation
    clear = pop = popitem = setdefault = update = _no_mutation

    def __hash__(self):
        return hash(tuple(self.items()))

    def __reduce__(self):
        return (immutable_dict, (dict(self),))


def map_aggregate(a, fn):
    """Apply `fn` to every leaf of `a` (tuples, lists, dicts, slices are walked)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(e, fn) for e in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)   # NamedTuples keep their type
    if isinstance(a, list):
        return immutable_list(map_aggregate(e, fn) for e in a)
    if isinstance(a, dict):
        return immutable_dict((k, map_aggregate(v, fn)) for k, v in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """Apply `fn` to every Node inside the argument structure `a`."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _format_arg(arg):
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, tuple):
        return "(" + ", ".join(_format_arg(a) for a in arg) + ("," if len(arg) == 1 else "") + ")"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + arg.name
    return str(arg)


class Node:
    """One operation in a `Graph` (see the module docstring for the six kinds)."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in OPS:
            raise ValueError(f"Node: unknown op '{op}' (expected one of {OPS[:-1]})")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has "
                             f"type {type(target).__name__} but a Callable is expected")
        if op in ("placeholder", "call_method", "call_module", "get_attr") and \
                not isinstance(target, str):
            raise ValueError(f"Node [name = '{name}'] target {target!r} has type "
                             f"{type(target).__name__} but a str is expected for op '{op}'")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.users = {}             # user node -> None (an ordered set)
        self._input_nodes = {}
        self._args, self._kwargs = (), {}
        self._prev = self._next = self
        self._erased = False
        self.meta = {}
        self._update_args_kwargs(args, kwargs)

    # ---- the linked list ------------------------------------------------------------
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x):
        """Move (or insert) node `x` right before this node."""
        if self is x:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        """Move (or insert) node `x` right after this node."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ---- arguments and users --------------------------------------------------------
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self):
        """The distinct nodes among args and kwargs, in order of appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def insert_arg(self, idx, arg):
        args = list(self._args)
        args.insert(idx, arg)
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        self.kwargs = {**self._kwargs, key: arg}

    def _update_args_kwargs(self, new_args, new_kwargs):
        if not isinstance(new_args, tuple):
            raise TypeError(f"Node.args must be a tuple, got {type(new_args).__name__}")
        self._args = map_aggregate(new_args, lambda x: x)
        self._kwargs = map_aggregate(dict(new_kwargs), lambda x: x)
        for old in self._input_nodes:
            old.users.pop(self, None)
        inputs = {}
        map_arg(self._args, lambda n: inputs.setdefault(n))
        map_arg(self._kwargs, lambda n: inputs.setdefault(n))
        self._input_nodes = inputs
        for n in inputs:
            n.users.setdefault(self)

    @property
    def stack_trace(self):
        """Where the traced code created this node (set when the tracer records it)."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *,
                              propagate_meta=False):
        """Make every user of this node read `replace_with` instead; returns those users.

        `replace_with` itself is left alone (PyTorch would make it its own input
        when it reads this node, the usual case right after inserting it).
        """
        if propagate_meta:
            if replace_with.meta:
                raise RuntimeError("Called node.replace_all_uses_with(replace_with, "
                                   "propagate_meta=True), but replace_with already has .meta "
                                   "keys")
            replace_with.meta.update(self.meta)
        changed = []
        for user in list(self.users):
            if user is replace_with or not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    def replace_input_with(self, old_input, new_input):
        """Read `new_input` wherever this node read `old_input`."""
        def swap(n):
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def is_impure(self):
        """True when dead-code elimination must keep this node even without users."""
        from ._impure import node_is_impure
        return node_is_impure(self)

    # ---- printing -------------------------------------------------------------------
    def format_node(self, placeholder_names=None, maybe_return_typename=None):
        """One line of `str(graph)`: ``%add : [num_users=1] = call_function[...](...)``."""
        if self.op == "output":
            if self.type is not None and maybe_return_typename is not None:
                maybe_return_typename[0] = f" -> {type_repr(self.type)}"
            return f"return {self.args[0]}"
        typ = f"{type_repr(self.type)} " if self.type is not None else ""
        head = f"%{self.name} : {typ}[num_users={len(self.users)}] = "
        if self.op == "placeholder":
            if placeholder_names is not None:
                placeholder_names.append(self.target)
            default = f"(default={self.args[0]})" if self.args else ""
            return f"{head}placeholder[target={self.target}]{default}"
        if self.op == "get_attr":
            return f"{head}get_attr[target={pretty_target(self.target)}]"
        return (f"{head}{self.op}[target={pretty_target(self.target)}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def __repr__(self):
        return self.name
