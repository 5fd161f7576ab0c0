"""nbtorch.jit.save / jit.load: a traced graph and its weights in nbtorch's safe format.

The archive is an ordinary `nbtorch.save` checkpoint (PyTorch's zip format, written
atomically; loading goes through nbtorch's allow-list, which rebuilds tensors and
containers and runs no code) holding:

- ``graph``: the normalised fx graph (`fx.passes.normalize`: leaf modules as
  functional calls reading their weights by ``get_attr``, operators as
  ``torch.*`` calls), one entry per node: op, name, target, arguments;
- ``state``: parameters and buffers by their ``state_dict`` names, and the
  graph's tensor constants;
- the original class name, the ``training`` flag, which entries are buffers.

Call targets are stored by their public names (``torch.add``,
``torch.nn.functional.linear``, ``operator.getitem``, ``math.sqrt``) and
resolved on load against nbtorch's public namespaces, `operator` and `math`
only; method names and attribute names starting with ``_`` are refused, so a
crafted archive cannot reach arbitrary code. The loaded module is a
`GraphModule` (its ``code`` and ``graph`` are readable, it can be traced and
compiled again) that needs no import of the model's own Python class.
"""
import math
import operator
import os
import warnings

from ..fx.graph import Graph
from ..fx.node import Node, map_arg
from ..fx.passes.normalize import substitute

__all__ = ["save", "load"]

_FORMAT = "nbtorch-jit-v1"


def _bad(path, why):
    return RuntimeError(f"{path} is not a valid nbtorch.jit archive: {why}")


# ---- saving --------------------------------------------------------------------------------

def _through_tracer(fixed=None):
    """A concrete tracer that traces through every module (no leaves); `fixed` keyword
    arguments are passed to the traced forward as constants, not graph inputs (flags
    such as MultiheadAttention's need_weights, which its code branches on)."""
    from ._concrete import ConcreteTracer
    fixed = dict(fixed or {})

    class Through(ConcreteTracer):
        def is_leaf_module(self, m, module_qualified_name):
            return False

        def _placeholder(self, name, value):
            # one input given twice (self-attention's query, key and value) is one
            # placeholder: the layer's `query is key` paths hold as in the traced call
            seen = self.__dict__.setdefault("_seen_inputs", {})
            if id(value) not in seen:
                seen[id(value)] = super()._placeholder(name, value)
            return seen[id(value)]

        def create_args_for_root(self, root_fn, is_module, concrete_args=None):
            call, args, kwargs = super().create_args_for_root(root_fn, is_module,
                                                              concrete_args)
            return (lambda *a, **k: call(*a, **k, **fixed)), args, kwargs
    return Through()


def _split_call(sub, node):
    """(example tensor kwargs in forward's parameter order, constant kwargs, the Nodes in
    that order) of call_module `node` of `sub`; None when an argument is neither a
    tensor node nor a constant, or the call does not bind."""
    import inspect
    try:
        bound = inspect.signature(sub.forward).bind(*node.args, **node.kwargs)
    except TypeError:
        return None
    examples, fixed, nodes = {}, {}, []
    shared = {}                     # one example per node (see `_through_tracer`)
    for name, value in bound.arguments.items():
        if isinstance(value, Node):
            if value not in shared:
                shared[value] = _example(value.meta["tensor_meta"])
                nodes.append(value)
            examples[name] = shared[value]
        elif isinstance(value, (tuple, list, dict)) and any(
                isinstance(e, Node) for e in (value.values() if isinstance(value, dict)
                                              else value)):
            return None
        else:
            fixed[name] = value
    return examples, fixed, nodes


def _example(meta):
    """A tensor with `meta`'s shape, dtype and device (zeros: the layers' Python code
    branches on shapes and flags, which is what a trace freezes)."""
    from .. import zeros
    from .._qtensor import _QDtype, quantize_per_tensor
    if isinstance(meta.dtype, _QDtype):             # a pooling layer on quantized values
        qp = getattr(meta, "qparams", None) or {}
        return quantize_per_tensor(zeros(tuple(meta.shape), device=meta.device),
                                   qp.get("scale", 1.0), qp.get("zero_point", 0), meta.dtype)
    return zeros(tuple(meta.shape), dtype=meta.dtype, device=meta.device)


_STATEFUL_IN_TRAINING = ("BatchNorm", "Dropout", "InstanceNorm")   # update or draw


def _inline_modules(work):
    """Replace the call_module nodes `normalize` left (layers without a functional table
    entry: pooling, padding, attention...) by the graph of their forward, traced through
    on examples of their inputs' shapes; returns how many were inlined."""
    from ..nn.modules.rnn import RNNBase
    from ._concrete import TracerWarning
    graph = work.graph
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_module":
            continue
        sub = work.get_submodule(node.target)
        if any(isinstance(m, RNNBase) for m in sub.modules()):
            continue        # loops over time steps: inlined, it would freeze the length
        if type(sub).__name__ in ("ScriptedModule", "FrozenModule"):
            continue        # scripted: inlined, its control flow would be fixed
                            # (normalize made those it can torch.lstm & co.)
        if sub.training and any(type(m).__name__.startswith(_STATEFUL_IN_TRAINING)
                                for m in sub.modules()):
            continue                             # keeps state or draws: refused below
        try:
            split = _split_call(sub, node)
        except (KeyError, AttributeError):
            continue
        if split is None:
            continue
        kwargs, fixed, inputs = split
        tracer = _through_tracer(fixed)
        try:
            with warnings.catch_warnings():
                # a size read as a Python number (a loop over time steps) would freeze the
                # example's shape into the saved graph: not inlined, refused below
                warnings.simplefilter("error", TracerWarning)
                inner = tracer.trace(sub, (), kwargs)
        except Exception:
            continue                             # refused below with the module's name
        prefix = node.target + "."
        for name, value in tracer.constants.items():
            work.register_buffer(f"_inlined_{count}_{name}".replace(".", "_"), value,
                                 persistent=False)
        env = {}
        placeholders = iter(inputs)
        with graph.inserting_before(node):
            for n in inner.nodes:
                if n.op == "placeholder":
                    env[n] = next(placeholders)
                elif n.op == "output":
                    result = map_arg(n.args[0], lambda a: env[a])
                elif n.op == "get_attr":
                    target = (f"_inlined_{count}_{n.target}".replace(".", "_")
                              if n.target in tracer.constants else prefix + n.target)
                    env[n] = graph.get_attr(target)
                    env[n].meta = dict(n.meta)
                else:
                    target = prefix + n.target if n.op == "call_module" else n.target
                    env[n] = graph.create_node(n.op, target, map_arg(n.args, lambda a: env[a]),
                                               map_arg(n.kwargs, lambda a: env[a]))
                    env[n].meta = dict(n.meta)
        if isinstance(result, Node):
            node.replace_all_uses_with(result)
        else:               # a tuple (MultiheadAttention's (output, weights)): its items
            substitute(graph, node, result)
        graph.erase_node(node)
        count += 1
    if count:
        work.recompile()
    return count


def refuse_hooked_layers(gm, what="nbtorch.jit.save"):
    """Raise when a layer the graph calls has a forward hook from user code: the saved
    graph calls the layer's function, so the hook would be dropped (the loaded module
    computed something else, silently)."""
    from ._guards import user_hook
    for node in gm.graph.nodes:
        if node.op != "call_module":
            continue
        for name, sub in gm.get_submodule(node.target).named_modules(prefix=node.target):
            hook = user_hook(sub)
            if hook is not None:
                raise RuntimeError(
                    f"{what}: module {name!r} ({type(sub).__name__}) has a {hook[0]} "
                    f"({hook[1]}) registered by user code, which the saved graph would "
                    "leave out; remove the hook (or apply it in the model's forward) and "
                    "trace again")


def _graph_module_of(m):
    from ..fx.graph_module import GraphModule
    from ._traced import TracedFunction
    if isinstance(m, TracedFunction):
        return m.graph_module
    if isinstance(m, GraphModule):
        return m
    saved_graph = getattr(m, "saved_graph", None)       # frozen / optimized (`_script.py`)
    if saved_graph is not None:
        return saved_graph()
    compiled = getattr(m, "_compiled", None)
    if compiled is not None:
        from ._script import _Scripted
        if isinstance(compiled, _Scripted):
            return _graph_module_of(compiled.saved_trace())
        raise TypeError("nbtorch.jit.save: save the traced module (nbtorch.jit.trace(model, "
                        "example_inputs)), not a nbtorch.compile'd one")
    from ._traced import ScriptModule
    if isinstance(m, ScriptModule):
        raise TypeError(f"nbtorch.jit.save: {type(m).__name__} subclasses ScriptModule (the "
                        "legacy API: its methods run as Python, there is no graph to save); "
                        "save nbtorch.jit.trace(model, example_inputs) instead")
    raise TypeError(f"nbtorch.jit.save expects a traced module or function (nbtorch.jit.trace),"
                    f" got {type(m).__name__}")


def _autocast_nodes():
    """The autocast region nodes a traced graph may hold, by their saved names (PyTorch's
    graphs name them torch.amp._enter_autocast / _exit_autocast)."""
    from ..amp.autocast_mode import _enter_autocast, _exit_autocast
    return {"torch.amp._enter_autocast": _enter_autocast,
            "torch.amp._exit_autocast": _exit_autocast}


def _target_name(fn):
    from ..fx._names import qualified_name
    for name, node_fn in _autocast_nodes().items():
        if fn is node_fn:
            return name
    custom = _custom_op_name(fn)
    if custom is not None:
        return custom
    q = qualified_name(fn)
    if _resolve_target(q) is fn:
        return q
    from ._traced import ScriptFunction
    if isinstance(fn, ScriptFunction):
        raise RuntimeError(f"nbtorch.jit.save: the graph calls the scripted function {q}, "
                           "whose control flow a saved graph cannot keep (nbtorch scripts by "
                           "tracing per input kind); save the state_dict, or trace without "
                           "@jit.script on it (its branches fixed at the example's)")
    raise RuntimeError(f"nbtorch.jit.save: the graph calls {q}, which is not a public nbtorch "
                       "function, an operator or a math function: it cannot be saved safely "
                       "(make it a torch.* call, or save the state_dict instead)")


def _encode_arg(a):
    from .._device import device
    from .._dtype import dtype
    if isinstance(a, Node):
        return {"node": a.name}
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        raise RuntimeError(f"nbtorch.jit.save: a named tuple {type(a).__name__} in the graph "
                           "cannot be saved")
    if isinstance(a, tuple):
        return {"tuple": [_encode_arg(e) for e in a]}
    if isinstance(a, list):
        return {"list": [_encode_arg(e) for e in a]}
    if isinstance(a, dict):
        return {"dict": [[k, _encode_arg(v)] for k, v in a.items()]}
    if isinstance(a, slice):
        return {"slice": [_encode_arg(a.start), _encode_arg(a.stop), _encode_arg(a.step)]}
    if a is Ellipsis:
        return {"ellipsis": True}
    if isinstance(a, dtype):
        return {"dtype": a.name}
    if isinstance(a, device):
        return {"device": str(a)}
    if isinstance(a, float) and not math.isfinite(a):
        return {"float": repr(a)}
    if a is None or isinstance(a, (bool, int, float, str)):
        return {"value": a}
    raise RuntimeError(f"nbtorch.jit.save: cannot store a constant of type "
                       f"{type(a).__name__} in the graph")


def save(m, f, _extra_files=None):
    """Save traced module/function `m` (graph + weights) to path or file `f`; a scripted
    one is saved as the trace of its last call's input signature (with a warning: its
    shape-dependent branches are fixed there), a loaded one as it was loaded.

    Layers with no functional form in `fx.passes.normalize` (pooling, padding,
    attention...) are traced through on examples of their input shapes and saved as
    the functions they call; recurrent layers (a Python loop over time) are refused.

    Example:
        >>> traced = nbtorch.jit.trace(model, x)
        >>> nbtorch.jit.save(traced, "model.nbj")
        >>> loaded = nbtorch.jit.load("model.nbj")     # no model class needed
    """
    from .. import serialization
    archive = archive_of(m, _extra_files)
    serialization.save(archive, os.fspath(f) if isinstance(f, os.PathLike) else f)


def archive_of(m, _extra_files=None):
    """The dict `save` writes for `m` (nbtorch.export.save adds its own entries)."""
    import copy
    from ..fx.passes.normalize import normalize
    from .._tensor import Tensor
    gm = _graph_module_of(m)
    refuse_hooked_layers(gm)
    work = copy.deepcopy(gm)
    normalize(work)
    _inline_modules(work)
    normalize(work)
    nodes = []
    attrs = {}
    for n in work.graph.nodes:
        entry = {"op": n.op, "name": n.name}
        if n.op == "call_module":
            sub = type(work.get_submodule(n.target)).__name__
            raise RuntimeError(f"nbtorch.jit.save: the graph calls module {n.target!r} "
                               f"({sub}), which has no functional form to save (in training "
                               "mode, a recurrent layer with projections or on an unbatched "
                               "input, or not an nbtorch layer); call .eval(), export to ONNX "
                               "(nbtorch.onnx.export) or save the state_dict")
        if n.op == "call_function":
            entry["target"] = _target_name(n.target)
        else:
            entry["target"] = n.target
        if n.op == "get_attr":
            value = work
            for atom in n.target.split("."):
                value = getattr(value, atom)
            if not isinstance(value, Tensor):
                users = ", ".join(sorted({getattr(u.target, "__name__", str(u.target))
                                          for u in n.users}))
                raise RuntimeError(f"nbtorch.jit.save: the graph passes attribute "
                                   f"{n.target!r} (a {type(value).__name__}) to {users}; a "
                                   "saved graph holds tensors only, so it cannot be saved "
                                   "(save the state_dict instead)")
            attrs[n.target] = value
        entry["args"] = _encode_arg(n.args)
        entry["kwargs"] = _encode_arg(n.kwargs)
        nodes.append(entry)
    state = dict(gm.state_dict(keep_vars=True))
    for name, t in attrs.items():
        state.setdefault(name, t)
    buffers = [k for k, _ in gm.named_buffers()]
    params = {k: p.requires_grad for k, p in gm.named_parameters()}
    # a tensor under several names (tied weights: an LM's embedding and output layer) is
    # one tensor again when loaded (the second name was loaded as an untied buffer: no
    # gradient through that use, missing from state_dict)
    aliases, first = {}, {}
    for k, v in state.items():
        if isinstance(v, Tensor):
            canonical = aliases[k] = first.setdefault(id(v), k)
            if canonical == k:
                del aliases[k]
            elif canonical in params:
                params[k] = params[canonical]
            elif canonical in buffers:
                buffers.append(k)
    extra = {str(k): str(v) for k, v in (_extra_files or {}).items()}
    archive = {"format": _FORMAT, "class_name": getattr(m, "original_name", type(m).__name__),
               "training": bool(getattr(gm, "training", False)), "graph": nodes,
               # tensors only: a quantized layer's state_dict also holds its packed
               # params' dtype and (weight, bias) tuple, which the graph's constants carry
               "state": {k: v.detach() for k, v in state.items() if isinstance(v, Tensor)},
               "parameters": params, "buffers": buffers, "extra_files": extra,
               "aliases": aliases}
    if gm.meta.get("input_guard") is not None:      # a scripted module's (`_script.py`)
        archive["input_guard"] = gm.meta["input_guard"]
    return archive


# ---- loading -------------------------------------------------------------------------------

def _custom_op_name(fn):
    """'torch.ops.<ns>.<op>.<overload>' for a registered custom op (torch.library), saved by
    name as PyTorch saves them; None for anything else."""
    from .._library_op import _OPS
    key = next((k for k, op in list(_OPS.items()) if op is fn), None)
    if key is None:
        return None
    base, _, overload = key.partition(".")
    ns, _, name = base.partition("::")
    return f"torch.ops.{ns}.{name}.{overload or 'default'}"


def _resolve_custom_op(q):
    """The custom op a 'torch.ops.<ns>.<op>.<overload>' name stands for; a clear error when
    this process has not defined it (as PyTorch needs the op's library loaded)."""
    from .._library_op import _OPS
    parts = q.split(".")
    if len(parts) != 5 or not all(p.isidentifier() for p in parts[2:]):
        return None
    ns, name, overload = parts[2:]
    key = f"{ns}::{name}" + ("" if overload == "default" else f".{overload}")
    op = _OPS.get(key)
    if op is None:
        raise RuntimeError(f"nbtorch.jit.load: the graph calls the custom op {ns}::{name}, "
                           "which is not defined in this process: import the module that "
                           "defines it (torch.library.custom_op) before loading")
    return op


def _resolve_target(q):
    """The function a stored target name stands for (public namespaces and registered
    custom ops only), or None."""
    import nbtorch
    from nbtorch import linalg
    from nbtorch.nn import functional
    if isinstance(q, str) and q.startswith("torch.amp._"):
        return _autocast_nodes().get(q)
    if isinstance(q, str) and q.startswith("torch.ops."):
        return _resolve_custom_op(q)
    if not isinstance(q, str) or "._" in q or q.startswith("_"):
        return None
    prefix, _, name = q.rpartition(".")
    if prefix == "nbtorch.ao.nn.quantized.ops":        # quantized layers' graph ops
        from nbtorch.ao.nn.quantized import ops
        return getattr(ops, name) if name in ops.__all__ else None
    spaces = {"torch": nbtorch, "torch.nn.functional": functional, "torch.linalg": linalg,
              "operator": operator, "math": math}
    if prefix == "" and name == "getattr":
        return getattr
    mod = spaces.get(prefix)
    if mod is None:
        return None
    fn = getattr(mod, name, None)
    if fn is None or not callable(fn) or isinstance(fn, type):
        return None
    if mod is nbtorch or mod is functional or mod is linalg:
        if not (getattr(fn, "__module__", "") or "").startswith("nbtorch"):
            return None
    return fn


def _decode_arg(a, env, path):
    from .._device import device
    from .._dtype import to_dtype
    if not isinstance(a, dict) or len(a) != 1:
        raise _bad(path, f"bad argument entry {a!r}")
    (kind, v), = a.items()
    if kind == "node":
        if v not in env:
            raise _bad(path, f"node {v!r} used before it is defined")
        return env[v]
    if kind in ("tuple", "list"):
        if not isinstance(v, list):
            raise _bad(path, f"bad {kind}")
        items = [_decode_arg(e, env, path) for e in v]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {k: _decode_arg(e, env, path) for k, e in v}
    if kind == "slice":
        return slice(*(_decode_arg(e, env, path) for e in v))
    if kind == "ellipsis":
        return Ellipsis
    if kind == "dtype":
        from .. import _qtensor
        if v in ("qint8", "quint8", "qint32"):        # quantize_per_tensor's dtype
            return getattr(_qtensor, v)
        return to_dtype(v)
    if kind == "device":
        return device(v)
    if kind == "float":
        return float(v)
    if kind == "value":
        if v is not None and not isinstance(v, (bool, int, float, str)):
            raise _bad(path, f"bad constant {v!r}")
        return v
    raise _bad(path, f"unknown argument kind {kind!r}")


_OWN_PREFIXES = ("_tensor_constant", "_folded_constant", "_inlined_", "_module_")


def _allowed_atom(atom):
    """A public identifier, a Sequential/ModuleList index, or a constant the graph made."""
    if atom.isdigit():
        return True
    return atom.isidentifier() and (not atom.startswith("_") or atom.startswith(_OWN_PREFIXES))


def _check_attr_name(name, path, what):
    if not isinstance(name, str) or not name or not all(
            _allowed_atom(atom) for atom in name.split(".")):
        raise _bad(path, f"refused {what} name {name!r}")


def load(f, map_location=None, _extra_files=None):
    """Load what `save` wrote: a GraphModule with the saved weights (see module doc).

    map_location: as for `nbtorch.load` (None, a device, a dict or a callable).
    """
    from .. import serialization
    path = os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", "<file>")
    archive = serialization.load(f, map_location=map_location)
    if not isinstance(archive, dict) or archive.get("format") != _FORMAT:
        raise _bad(path, "no nbtorch.jit graph in it (an nbtorch.save checkpoint? use "
                         "nbtorch.load)")
    gm = module_from_archive(archive, path)
    if _extra_files is not None:
        _extra_files.update(archive.get("extra_files", {}))
    return gm


def module_from_archive(archive, path):
    """The LoadedModule of a read archive (checked entry by entry: see the module doc)."""
    from ..nn import Parameter
    from ._traced import LoadedModule
    try:
        nodes, state = archive["graph"], archive["state"]
        params, buffers = archive["parameters"], set(archive["buffers"])
    except (KeyError, TypeError) as e:
        raise _bad(path, f"missing entry {e}") from None
    aliases = archive.get("aliases", {})
    if not isinstance(aliases, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k in state and v in state
            and v not in aliases for k, v in aliases.items()):
        raise _bad(path, "bad aliases entry")
    made = {}

    def tensor_for(name):
        """The tensor (a Parameter where saved as one) of state entry `name`, one object
        for all the names of a tied tensor."""
        key = aliases.get(name, name)
        if key not in made:
            made[key] = Parameter(state[key], requires_grad=params[key]) \
                if key in params else state[key]
        return made[key]
    graph = Graph()
    env = {}
    root = {}
    for entry in nodes:
        try:
            op, name, target = entry["op"], entry["name"], entry["target"]
            args = _decode_arg(entry["args"], env, path)
            kwargs = _decode_arg(entry["kwargs"], env, path)
        except (KeyError, TypeError) as e:
            raise _bad(path, f"bad node entry ({e})") from None
        if op == "placeholder":
            node = graph.placeholder(target, default_value=args[0]) if args else \
                graph.placeholder(target)
        elif op == "get_attr":
            _check_attr_name(target, path, "attribute")
            if target not in state:
                raise _bad(path, f"get_attr {target!r} has no saved tensor")
            root[target] = tensor_for(target)
            node = graph.get_attr(target)
        elif op == "call_function":
            fn = _resolve_target(target)
            if fn is None:
                raise _bad(path, f"refused call target {target!r} (not a public nbtorch "
                                 "function, operator or math function)")
            if fn is getattr and (len(args) != 2 or not isinstance(args[1], str)
                                  or args[1].startswith("_")):
                raise _bad(path, f"refused getattr{args[1:]!r}")
            node = graph.call_function(fn, args, kwargs)
        elif op == "call_method":
            _check_attr_name(target, path, "method")
            node = graph.call_method(target, args, kwargs)
        elif op == "output":
            node = graph.output(args[0])
        else:
            raise _bad(path, f"unknown node op {op!r}")
        env[name] = node
    # weights the graph does not read still belong to the module's state_dict
    for name in state:
        if name not in root:
            _check_attr_name(name, path, "state")
            root[name] = tensor_for(name)
    # in the saved state_dict's order: parameters() as the original's (an optimizer's
    # state_dict maps its entries to parameters by position)
    root = {name: root[name] for name in state if name in root}
    gm = LoadedModule(root, graph, str(archive.get("class_name", "LoadedModule")))
    _install_state(gm, root, buffers, params)
    gm.train(bool(archive.get("training", False)))
    guard = archive.get("input_guard")
    if guard is not None:
        if not isinstance(guard, list) or not all(
                isinstance(g, (list, tuple)) and len(g) == 3 and isinstance(g[0], int)
                and isinstance(g[1], str) for g in guard):
            raise _bad(path, "bad input_guard entry")
        gm.meta["input_guard"] = [tuple(g) for g in guard]
    return gm


def _install_state(gm, root, buffers, params):
    """Every saved tensor at its place: parameters, buffers (persistent as saved), and the
    graph's constants as non-persistent buffers (not part of the original state_dict)."""
    for name, value in root.items():
        install_tensor(gm, name, value, buffer=name not in params,
                       persistent=name in buffers)


def install_tensor(gm, name, value, buffer=False, persistent=True):
    """Put `value` at dotted `name` in `gm` as a parameter or a buffer (empty parent
    modules made as needed; what is there already as the same tensor stays)."""
    from ..nn import Module
    *prefix, field = name.split(".")
    mod = gm
    for atom in prefix:
        nxt = mod._modules.get(atom)
        if nxt is None:
            nxt = Module()
            mod.add_module(atom, nxt)
        mod = nxt
    if not buffer:
        if mod._parameters.get(field) is not value:
            setattr(mod, field, value)
        return
    if mod._buffers.get(field) is value and (field in mod._non_persistent_buffers_set) \
            != persistent:
        return
    mod._buffers.pop(field, None)
    mod.__dict__.pop(field, None)
    mod.register_buffer(field, value, persistent=persistent)
