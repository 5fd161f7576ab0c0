"""GraphModule: an nn.Module whose forward is Python code generated from a Graph.

The submodules, parameters and buffers the graph names (``call_module`` /
``get_attr`` targets) are copied by reference from the root, along their
dotted paths, as PyTorch does: ``layer1.conv`` installs an empty ``layer1``
module holding the original ``conv``. So `state_dict` keys match the
original model's and parameters are shared with it. Each GraphModule gets its
own class, so `recompile` can replace ``forward`` without touching others.
"""
import copy
import itertools
import linecache
import os

from ..nn import Module
from .graph import Graph

__all__ = ["GraphModule"]

_COUNTER = itertools.count()


def _exec_with_source(src, globals_):
    """Run generated source, registered with linecache so tracebacks show its lines."""
    key = f"<eval_with_key>.{next(_COUNTER)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)
    return key


def _forward_from_src(src, globals_):
    g = dict(globals_)
    _exec_with_source(src, g)
    return g["forward"]


def _copy_attr(from_module, to_module, target):
    """Install from_module's `target` (a.b.c) on to_module, making empty parents as needed."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return                       # the whole submodule is installed already
        if t is None:
            t = Module()
            t.training = getattr(f, "training", True)
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    _assign(to_module, field, orig,
            persistent=field not in getattr(from_module, "_non_persistent_buffers_set", ()),
            is_buffer=field in getattr(from_module, "_buffers", {}))


def _assign(module, field, value, persistent=True, is_buffer=False):
    from ..nn import Parameter
    from .._tensor import Tensor
    if is_buffer and isinstance(value, Tensor) and not isinstance(value, Parameter):
        module.register_buffer(field, value, persistent=persistent)
    else:
        setattr(module, field, value)


def _assign_attr(value, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    from .._tensor import Tensor
    from ..nn import Parameter
    _assign(to_module, field, value,
            is_buffer=isinstance(value, Tensor) and not isinstance(value, Parameter))


class GraphModule(Module):
    """A Module built from `root` (a Module or a dict of attributes) and a `graph`."""

    _is_graph_module_singleton = False

    def __new__(cls, *args, **kwargs):
        # One class per instance: recompile() sets forward on it.
        if not cls.__dict__.get("_is_graph_module_singleton", False):
            cls = type(cls.__name__, (cls,), {"_is_graph_module_singleton": True})
        return super().__new__(cls)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        self._init_attrs(root, graph)
        self.meta = {}
        self.graph = graph

    def _init_attrs(self, root, graph):
        """Install what the graph's get_attr / call_module nodes name, from `root`."""
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node} referenced target {node.target} but "
                                           "that target was not provided in ``root``!")
                    _assign_attr(root[node.target], self, node.target)
        else:
            raise RuntimeError(f"Unsupported type {type(root).__name__} passed for root! "
                               "(expected an nn.Module or a dict)")

    # ---- the graph and its code -----------------------------------------------------
    @property
    def graph(self):
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph must be a Graph, got {type(g).__name__}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The Python source of ``forward`` generated from the graph."""
        if "_code" not in self.__dict__:
            raise RuntimeError("Code has not been generated! Please report a bug to nbtorch")
        return self.__dict__["_code"]

    def recompile(self):
        """Regenerate ``forward`` from `self.graph` (call after editing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        type(self).forward = _forward_from_src(python_code.src, python_code.globals)
        return python_code

    def print_readable(self, print_output=True):
        """The code as a class definition (submodule GraphModules included)."""
        name = type(self).__name__
        body = self.code.strip("\n").rstrip()
        lines = [f"class {name}(torch.nn.Module):"] + ["    " + ln if ln else ln
                                                      for ln in body.splitlines()]
        for sub_name, sub in self.named_children():
            if isinstance(sub, GraphModule):
                inner = sub.print_readable(print_output=False)
                lines.append("        \n" + "\n".join("    " + ln for ln in
                                                       inner.splitlines()))
        out = "\n".join(lines) + "\n"
        if print_output:
            print(out)
        return out

    def __str__(self):
        return "\n".join([super().__str__(), self.code,
                          "# To see more debug info, please use "
                          "`graph_module.print_readable()`"])

    # ---- submodules -----------------------------------------------------------------
    def add_submodule(self, target, m):
        """Install `m` at dotted path `target`, creating empty parents; False if blocked."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                setattr(mod, item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target):
        """Remove the submodule at `target`; False if there is none."""
        *prefix, field = target.split(".")
        mod = self
        for item in prefix:
            mod = getattr(mod, item, None)
            if not isinstance(mod, Module):
                return False
        if not isinstance(getattr(mod, field, None), Module):
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self):
        """Delete submodules that no call_module / get_attr node reaches."""
        used = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                for i in range(1, len(atoms) + 1):
                    used.add(".".join(atoms[:i]))
                if node.op == "call_module":
                    sub = self.get_submodule(node.target)
                    used.update(f"{node.target}.{n}" for n, _ in sub.named_modules() if n)
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    # ---- copying and saving -----------------------------------------------------------
    def __deepcopy__(self, memo):
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        fake = Module()
        fake.__dict__.update(copy.deepcopy(state, memo))
        base = type(self).__bases__[0] if type(self).__dict__.get(
            "_is_graph_module_singleton") else type(self)
        res = GraphModule.__new__(base)
        memo[id(self)] = res
        GraphModule.__init__(res, fake, copy.deepcopy(self._graph, memo), type(self).__name__)
        _keep_unnamed(res, fake.__dict__)
        return res

    def __reduce__(self):
        """Pickled as its attributes, its graph and its class name (the class is made per
        instance, so pickle could not find it by name)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild_graph_module, (state, self._graph, type(self).__name__))

    def __copy__(self):
        res = GraphModule(self, self._graph, type(self).__name__)
        res.meta = dict(self.meta)
        return res

    def to_folder(self, folder, module_name="FxModule"):
        """Write the module as importable Python (module.py) plus its weights (state.pt)."""
        from ._to_folder import write_folder
        write_folder(self, os.fspath(folder), module_name)


def _rebuild_graph_module(state, graph, class_name):
    """A pickled GraphModule back: a Module with its attributes as the root."""
    root = Module()
    root.__dict__.update(state)
    gm = GraphModule(root, graph, class_name)
    _keep_unnamed(gm, state)
    return gm


def _keep_unnamed(gm, attrs):
    """Add to `gm` the attributes `attrs` (a module's __dict__) holds that its graph does
    not name (GraphModule's init copies only those): a copy keeps all of the original."""
    for k, v in attrs.items():
        if k in ("_parameters", "_buffers", "_modules"):
            for name, val in v.items():
                gm.__dict__[k].setdefault(name, val)
        elif k == "_non_persistent_buffers_set":
            gm.__dict__[k] |= v
        else:
            gm.__dict__.setdefault(k, v)
