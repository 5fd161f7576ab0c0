"""Interpreter runs a GraphModule node by node; Transformer builds a new graph the same way.

Both dispatch each node to a method named after its op (``placeholder``,
``get_attr``, ``call_function``, ``call_method``, ``call_module``,
``output``), so a subclass overrides one kind of node (fx's pattern):

    >>> class NegSigmSwap(Interpreter):
    ...     def call_function(self, target, args, kwargs):
    ...         if target == torch.sigmoid:
    ...             return torch.neg(*args, **kwargs)
    ...         return super().call_function(target, args, kwargs)
"""
import inspect

from .graph import Graph
from .graph_module import GraphModule
from .node import map_aggregate, map_arg
from .proxy import Proxy
from .tracer import Tracer
from ._patch import Patcher, patch_namespaces

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Execute `module.graph` (or `graph`) one node at a time."""

    def __init__(self, module, garbage_collect_values=True, graph=None):
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.user_to_last_uses = {}
        if garbage_collect_values:
            seen = set()
            for node in reversed(self.graph.nodes):
                for n in node.all_input_nodes:
                    if n not in seen:
                        seen.add(n)
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def boxed_run(self, args_list):
        """`run` on the values of list `args_list`, which is emptied first (so that the
        graph may free them as it goes), as PyTorch's."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run(self, *args, initial_env=None, enable_io_processing=True):
        """Run the graph on `args`; returns what its output node returns."""
        self.env = dict(initial_env) if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback and not getattr(e, "_fx_noted", False):
                    msg = f"While executing {node.format_node()}"
                    e.args = (f"{e.args[0]}\n\n{msg}" if e.args and isinstance(e.args[0], str)
                              else msg,) + tuple(e.args[1:])
                    e._fx_noted = True
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    del self.env[to_delete]
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n):
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per op ----------------------------------------------------------
    def placeholder(self, target, args, kwargs):
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but "
                               "one was not passed in!") from None

    def get_attr(self, target, args, kwargs):
        return self.fetch_attr(target)

    def call_function(self, target, args, kwargs):
        return target(*args, **kwargs)

    def call_method(self, target, args, kwargs):
        self_obj, *args_tail = args
        return getattr(self_obj, target)(*args_tail, **kwargs)

    def call_module(self, target, args, kwargs):
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target, args, kwargs):
        return args[0]

    # ---- helpers ----------------------------------------------------------------------
    def fetch_attr(self, target):
        """The attribute at dotted path `target` of the module."""
        obj = self.module
        atoms = target.split(".")
        for i, atom in enumerate(atoms):
            if not hasattr(obj, atom):
                raise RuntimeError("Node referenced nonexistent target "
                                   f"{'.'.join(atoms[:i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n):
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args, n):
        def load(n_arg):
            if n_arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {n_arg}! Run "
                                   "Graph.lint() to diagnose such issues")
            return self.env[n_arg]
        return map_arg(args, load)


class _TransformerTracer(Tracer):
    def __init__(self, graph, root):
        super().__init__()
        self.graph = graph
        self.root = root

    def is_leaf_module(self, m, qualname):
        return True


class Transformer(Interpreter):
    """Re-emit each node into a new graph; override methods to rewrite (fx's Transformer)."""

    def __init__(self, module):
        super().__init__(module)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph, module)

    def placeholder(self, target, args, kwargs):
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target, args, kwargs):
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target, args, kwargs):
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args, kwargs):
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self):
        """Run the transformation; returns a new GraphModule over the same root."""
        with Patcher() as patcher:
            patch_namespaces(patcher)
            result = super().run(enable_io_processing=False)
        if result is not None:
            def strip_proxy(a):
                return a.node if isinstance(a, Proxy) else a
            self.new_graph.output(map_aggregate(result, strip_proxy))
        return GraphModule(self.module, self.new_graph)
