"""What jit.trace returns: a TracedModule (modules) or a TracedFunction (functions).

A TracedModule is a GraphModule that keeps the whole module hierarchy of the
traced model by reference (every parameter, buffer and submodule, used by the
graph or not), so its `state_dict` has the original's keys and
`load_state_dict` changes what the graph computes; the parameters are the
original's, as with ``torch.jit.trace``.
"""
from ..fx.graph_module import GraphModule
from ..nn import Module

__all__ = ["ScriptModule", "ScriptFunction", "TracedModule", "TracedFunction", "LoadedModule",
           "StateInOrder", "module_view"]


class _Saveable:
    """``.save(f)``, as PyTorch's ScriptModule/ScriptFunction have it: `nbtorch.jit.save`."""

    def save(self, f, _extra_files=None):
        """Save this graph and its weights to path or file `f` (see `nbtorch.jit.save`)."""
        from ._save import save
        return save(self, f, _extra_files)


class ScriptModule(_Saveable, Module):
    """The base of every traced, scripted and loaded module, so ``isinstance(m,
    torch.jit.ScriptModule)`` holds for them as in PyTorch. Subclassed directly (the legacy
    API, with ``@torch.jit.script_method`` methods) it is a Module whose methods run as
    Python."""


class ScriptFunction(_Saveable):
    """The base of traced and scripted functions (``torch.jit.ScriptFunction``)."""


def module_view(root, extras=None):
    """A Module holding `root`'s parameters, buffers and children by reference, plus `extras`.

    The traced module is built from this view, so tracing never adds attributes
    (constants, modules called from outside the hierarchy) to the user's model.
    """
    view = Module()
    view.training = root.training
    view._parameters.update(root._parameters)
    view._buffers.update(root._buffers)
    view._non_persistent_buffers_set.update(root._non_persistent_buffers_set)
    view._modules.update(root._modules)
    for name, value in (extras or {}).items():
        if isinstance(value, Module):
            view.add_module(name, value)
        else:
            object.__setattr__(view, name, value)
    return view


class TracedModule(GraphModule, ScriptModule):
    """A traced nn.Module: ``.graph``, ``.code``, and the original's state (shared)."""

    def _init_attrs(self, root, graph):
        self.training = root.training
        for name, p in root._parameters.items():
            self.register_parameter(name, p)
        for name, b in root._buffers.items():
            self.register_buffer(name, b, persistent=name not in
                                 root._non_persistent_buffers_set)
        for name, m in root._modules.items():
            self.add_module(name, m)
        super()._init_attrs(root, graph)

    @property
    def original_name(self):
        return type(self).__name__

    @property
    def inlined_graph(self):
        return self.graph


class TracedFunction(ScriptFunction):
    """A traced function: call it like the original; ``.graph`` and ``.code`` show the trace."""

    def __init__(self, graph_module, name):
        self.graph_module = graph_module
        self.__name__ = self.name = name

    @property
    def graph(self):
        return self.graph_module.graph

    @property
    def inlined_graph(self):
        return self.graph_module.graph

    @property
    def code(self):
        return self.graph_module.code

    def __call__(self, *args, **kwargs):
        return self.graph_module(*args, **kwargs)

    def __repr__(self):
        return f"<nbtorch.jit.TracedFunction {self.name}>"


class StateInOrder:
    """A GraphModule mixin: built from a dict, it installs every entry in the dict's order
    (the model's), not in the graph's; copied, in the module's own order. So parameters()
    come out as the original model's (an optimizer's state_dict maps to them by position;
    a loaded TransformerEncoderLayer(norm_first=True) listed norm1 first)."""

    def _init_attrs(self, root, graph):
        from ..fx.graph_module import _assign_attr
        if isinstance(root, dict):
            for name, value in root.items():
                _assign_attr(value, self, name)
        else:
            self._parameters.update(root._parameters)
            self._buffers.update(root._buffers)
            self._non_persistent_buffers_set.update(root._non_persistent_buffers_set)
            self._modules.update(root._modules)
        super()._init_attrs(root, graph)


class LoadedModule(StateInOrder, GraphModule, ScriptModule):
    """What `nbtorch.jit.load` returns: the saved graph and weights, no model class needed."""

    def __call__(self, *args, **kwargs):
        guard = self.meta.get("input_guard")
        if guard is not None:
            _check_inputs(guard, args, kwargs)
        return super().__call__(*args, **kwargs)


def _check_inputs(guard, args, kwargs):
    """Refuse inputs of another kind than a saved scripted graph was traced for: its
    shape-dependent branches are fixed to that kind (it would compute something else)."""
    from ._compiled import flatten
    tensors, _ = flatten((args, kwargs))
    seen = [(t.dim(), str(t.dtype), list(t.shape)) for t in tensors]
    bad = len(seen) != len(guard) or any(
        d != gd or dt != gdt or (gs is not None and s != list(gs))
        for (d, dt, s), (gd, gdt, gs) in zip(seen, guard))
    if bad:
        def show(kinds):
            return ", ".join(f"{list(s) if s is not None else f'{d}-D'} "
                             f"{dt.replace('torch.', '')}" for d, dt, s in kinds)
        raise RuntimeError(
            "This graph was saved from nbtorch.jit.script as the trace of one input kind "
            f"({show(guard)}): its shape-dependent control flow is fixed there, so it "
            f"cannot run inputs of another kind ({show(seen)}). Script and save it after a "
            "call on inputs of this kind, or export it with dynamic shapes")
