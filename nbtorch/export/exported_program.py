"""``ExportedProgram``: an exported model's flat graph, its signature and its state.

Two views of one graph: ``graph_module`` takes the parameters, buffers and tensor
constants as leading inputs (PyTorch's lifted form, described by ``graph_signature``);
``module()`` reads them as attributes and checks every call against what the export
fixed (`InputMeta`: static sizes, dynamic dims' ranges, non-tensor inputs), raising
``AssertionError("Guard failed: x.size()[1] == 3")`` as PyTorch's does. Layers the
flattening keeps whole (recurrent layers, stateful layers in training mode) stay
``call_module`` nodes reading their own weights.
"""
import copy
import math

from .._tensor import Tensor
from ..fx.graph_module import GraphModule
from ..jit._traced import StateInOrder
from ..nn import Module
from .graph_signature import (ConstantArgument, ExportGraphSignature, InputKind, InputSpec,
                              OutputKind, OutputSpec, TensorArgument)

__all__ = ["ExportedProgram", "ExportedModule", "InputMeta", "ValueRanges"]


class ValueRanges:
    """A dynamic dim's inclusive range (``VR[2, 1024]``)."""

    def __init__(self, lower, upper):
        self.lower, self.upper = lower, upper

    def __repr__(self):
        upper = "int_oo" if self.upper == math.inf else self.upper
        return f"VR[{self.lower}, {upper}]"

    def __eq__(self, other):
        return isinstance(other, ValueRanges) and (self.lower, self.upper) == (
            other.lower, other.upper)


def _get(value, keys):
    for k in keys:
        value = value[k]
    return value


def _tensor_leaves(value, path, keys, out):
    if isinstance(value, Tensor):
        out.append((path, keys, tuple(value.shape)))
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _tensor_leaves(v, f"{path}[{i}]", keys + (i,), out)
    elif isinstance(value, dict):
        for k, v in value.items():
            _tensor_leaves(v, f"{path}[{k!r}]", keys + (k,), out)


def _fail(condition):
    raise AssertionError(f"Guard failed: {condition}")


class InputMeta:
    """What an export fixed about its inputs: their names in order, the non-tensor ones'
    values, each tensor's shape, and which dims may vary in which range (by Dim name)."""

    def __init__(self, names, constants, leaves, dynamic):
        self.names = list(names)
        self.constants = dict(constants)
        self.leaves = [(p, tuple(k), tuple(s)) for p, k, s in leaves]
        self.dynamic = {(p, d): tuple(v) for (p, d), v in dynamic.items()}

    @classmethod
    def of(cls, inputs, specs):
        from ._export import _has_tensor
        leaves = []
        for name, value in inputs.items():
            if _has_tensor(value):
                _tensor_leaves(value, name, (name,), leaves)
        constants = {k: v for k, v in inputs.items() if not _has_tensor(v)}
        dynamic = {(s.path, s.dim): (s.name, s.min, s.max) for s in specs}
        return cls(inputs, constants, leaves, dynamic)

    def range_constraints(self):
        out = {}
        for name, lo, hi in self.dynamic.values():
            out[name] = ValueRanges(lo, hi)
        return out

    def to_dict(self):
        return {"names": self.names, "constants": self.constants,
                "leaves": [[p, list(k), list(s)] for p, k, s in self.leaves],
                "dynamic": [[p, d, list(v)] for (p, d), v in self.dynamic.items()]}

    @classmethod
    def from_dict(cls, d):
        return cls(d["names"], d["constants"], d["leaves"],
                   {(p, d_): v for p, d_, v in d["dynamic"]})

    def check(self, args, kwargs):
        """The graph's inputs (the tensor-bearing arguments in order) from a call, after
        checking it against what the export fixed."""
        if len(args) > len(self.names):
            raise TypeError(f"forward() takes {len(self.names)} inputs ({self.names}) but "
                            f"{len(args)} were given")
        bound = dict(zip(self.names, args))
        for k, v in kwargs.items():
            if k not in self.names or k in bound:
                raise TypeError(f"forward() got an unexpected or repeated argument {k!r} "
                                f"(exported inputs: {self.names})")
            bound[k] = v
        missing = [n for n in self.names if n not in bound]
        if missing:
            raise TypeError(f"forward() missing exported inputs {missing}")
        for name, value in self.constants.items():
            got = bound[name]
            if not (got is value or (type(got) is type(value) and got == value)):
                _fail(f"{name} == {value!r}")
        groups = {}
        for path, keys, shape in self.leaves:
            try:
                t = _get(bound, keys)
            except (KeyError, IndexError, TypeError):
                _fail(f"{path} is present, as in the exported inputs")
            t = getattr(t, "value", t) if t.__class__.__name__ == "ConcreteProxy" else t
            if not isinstance(t, Tensor):
                _fail(f"{path} is a Tensor (got {type(t).__name__})")
            if t.dim() != len(shape):
                _fail(f"{path}.dim() == {len(shape)}")
            for d, size in enumerate(t.shape):
                dyn = self.dynamic.get((path, d))
                where = f"{path}.size()[{d}]"
                if dyn is None:
                    if size != shape[d]:
                        _fail(f"{where} == {shape[d]}")
                    continue
                name, lo, hi = dyn
                if size < lo:
                    _fail(f"{where} >= {lo}")
                if size > hi:
                    _fail(f"{where} <= {hi}")
                first = groups.setdefault(name, (where, size))
                if first[1] != size:
                    _fail(f"{where} == {first[0]}")
        return [bound[n] for n in self.names if n not in self.constants]


class ExportedModule(StateInOrder, GraphModule):
    """What ``ExportedProgram.module()`` returns: the flat graph over the model's state,
    its calls checked against the export's input constraints."""

    def __call__(self, *args, **kwargs):
        return super().__call__(*self._export_meta.check(args, kwargs))

    def train(self, mode=True):
        if bool(mode) != self.training:
            raise NotImplementedError(f"Calling {'train' if mode else 'eval'}() is not "
                                      "supported yet: the program was exported in "
                                      f"{'training' if self.training else 'eval'} mode")
        return self


def _install(gm, name, value, buffer=False, persistent=True):
    from ..jit._save import install_tensor
    install_tensor(gm, name, value, buffer, persistent)

def _flatten(traced):
    """The traced module's graph with layers as functional calls reading get_attr weights
    (what jit.save stores), over the traced module's own tensors (not copies)."""
    from ..fx.passes.normalize import normalize
    from ..jit._save import _inline_modules, refuse_hooked_layers
    refuse_hooked_layers(traced, "nbtorch.export")
    flat = GraphModule(traced, copy.deepcopy(traced.graph), type(traced).__name__)
    normalize(flat)
    _inline_modules(flat)
    normalize(flat)
    return flat


class ExportedProgram:
    """An exported model (see the module doc). Call ``module()`` to run it."""

    def __init__(self, flat, meta, parameters, buffers, persistent, example_inputs):
        self._flat, self._meta = flat, meta
        self._parameters, self._buffers = dict(parameters), dict(buffers)
        for name, p in self._parameters.items():
            _install(flat, name, p)
        for name, b in self._buffers.items():
            _install(flat, name, b, buffer=True, persistent=name in persistent)
        self._persistent = set(persistent)
        self.example_inputs = example_inputs
        self.range_constraints = meta.range_constraints()
        self._lift()

    @classmethod
    def from_traced(cls, mod, traced, meta, example_inputs):
        buffers = dict(mod.named_buffers())
        persistent = {k for k in mod.state_dict(keep_vars=True) if k in buffers}
        return cls(_flatten(traced), meta, dict(mod.named_parameters()), buffers, persistent,
                   example_inputs)

    # ---- the lifted graph -------------------------------------------------------------
    def _lift(self):
        g = copy.deepcopy(self._flat.graph)
        attrs = {}
        for n in g.nodes:
            if n.op == "get_attr":
                attrs.setdefault(n.target, []).append(n)
        lifted = [(name, "p_", InputKind.PARAMETER) for name in self._parameters]
        lifted += [(name, "b_", InputKind.BUFFER) for name in self._buffers]
        self.constants = {name: b for name, b in self._buffers.items()
                          if name not in self._persistent}
        for target in attrs:
            if target not in self._parameters and target not in self._buffers:
                lifted.append((target, "c_", InputKind.CONSTANT_TENSOR))
                self.constants[target] = _get_attr(self._flat, target)
        first = next(iter(g.nodes))
        specs = []
        with g.inserting_before(first):
            for target, prefix, kind in lifted:
                ph = g.placeholder(prefix + target.strip("_").replace(".", "_"))
                for n in attrs.pop(target, ()):
                    n.replace_all_uses_with(ph)
                    g.erase_node(n)
                persistent = (target in self._persistent) if kind is InputKind.BUFFER else None
                specs.append(InputSpec(kind, TensorArgument(ph.name), target, persistent))
        placeholders = {n.name: n for n in g.nodes if n.op == "placeholder"}
        for name in self._meta.names:
            if name in self._meta.constants:
                specs.append(InputSpec(InputKind.USER_INPUT,
                                       ConstantArgument(name, self._meta.constants[name]),
                                       None))
            elif name in placeholders:
                specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(name), None))
        out = next(n for n in g.nodes if n.op == "output").args[0]
        outs = []
        for v in _flat_outputs(out):
            arg = TensorArgument(v.name) if hasattr(v, "op") else ConstantArgument("", v)
            outs.append(OutputSpec(OutputKind.USER_OUTPUT, arg, None))
        self.graph_module = GraphModule(self._flat, g, "GraphModule")
        self.graph_signature = ExportGraphSignature(specs, outs)

    @property
    def graph(self):
        return self.graph_module.graph

    @property
    def state_dict(self):
        out = dict(self._parameters)
        out.update((k, v) for k, v in self._buffers.items() if k in self._persistent)
        return out

    def named_parameters(self):
        yield from self._parameters.items()

    def parameters(self):
        yield from self._parameters.values()

    def named_buffers(self):
        yield from self._buffers.items()

    def buffers(self):
        yield from self._buffers.values()

    # ---- running it -------------------------------------------------------------------
    def module(self):
        """A Module running the program (the model's state shared, every call checked)."""
        graph = copy.deepcopy(self._flat.graph)
        root = {**self._parameters, **self._buffers}        # in the model's order
        for node in graph.nodes:
            if node.op in ("get_attr", "call_module") and node.target not in root:
                root[node.target] = _get_attr(self._flat, node.target)
        m = ExportedModule(root, graph, type(self._flat).__name__)
        Module.train(m, self._flat.training)        # (ExportedModule.train refuses)
        for name, p in self._parameters.items():
            _install(m, name, p)
        for name, b in self._buffers.items():
            _install(m, name, b, buffer=True, persistent=name in self._persistent)
        object.__setattr__(m, "_export_meta", self._meta)
        return m

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use "
                           "`exported_program.module()` instead.")

    def run_decompositions(self, decomp_table=None, decompose_custom_triton_ops=False):
        """The program itself: its graph already calls nbtorch's own ops and functions."""
        return self

    def validate(self):
        self.graph.lint()

    def __str__(self):
        code = self.graph_module.print_readable(print_output=False)
        body = "\n".join("    " + ln if ln else ln for ln in code.splitlines())
        return (f"ExportedProgram:\n{body}\nGraph signature: {self.graph_signature}\n"
                f"Range constraints: {self.range_constraints}\n")

    __repr__ = __str__


def _get_attr(root, target):
    for atom in target.split("."):
        root = getattr(root, atom)
    return root


def _flat_outputs(out):
    if isinstance(out, (tuple, list)):
        for v in out:
            yield from _flat_outputs(v)
    elif isinstance(out, dict):
        for v in out.values():
            yield from _flat_outputs(v)
    else:
        yield out
