"""``add_graph``: a model traced by `nbtorch.jit.trace`, as the GraphDef TensorBoard draws.

The trace is an fx graph (placeholder / call_module / call_function /
call_method / get_attr / output nodes). Each becomes one ``NodeDef``:

    input/<name>                      IO Node     a used graph input
    <Model>/<Cls>[<attr>]/.../<node>  op          a call, named by its module's scope
    <Model>/<Cls>[<attr>]/<param>     Parameter   a weight or buffer of a called module
    output/output.<i>                 IO Node     a returned value

with its input edges and its output shapes (``_output_shapes``), so the
Graphs tab groups each submodule and shows its weights, as PyTorch's does.
The op of a module call is the module's class, of a function call its
qualified name (``torch.flatten``); ``attr`` holds the module's extra_repr or
the call's non-tensor arguments. The trace inlines the forward of a model's
own modules (a residual block's ``out + identity``); forward hooks on every
submodule note which nodes each call made, so those ops keep their scope.
"""
import contextlib

from tensorboard.compat.proto.attr_value_pb2 import AttrValue
from tensorboard.compat.proto.config_pb2 import RunMetadata
from tensorboard.compat.proto.graph_pb2 import GraphDef
from tensorboard.compat.proto.node_def_pb2 import NodeDef
from tensorboard.compat.proto.step_stats_pb2 import DeviceStepStats, StepStats
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.compat.proto.versions_pb2 import VersionDef

from nbtorch.fx._names import pretty_target
from nbtorch.fx._patch import RECORDING
from nbtorch.fx.node import Node, map_arg


def node_proto(name, op="UnSpecified", input=None, outputsize=None, attributes=""):  # noqa: A002
    """A ``NodeDef``: `outputsize` is one shape or a list of shapes (``_output_shapes``)."""
    attr = {"attr": AttrValue(s=attributes.encode("utf_8"))}
    if outputsize is not None:
        shapes = outputsize if outputsize and isinstance(outputsize[0], (list, tuple)) \
            else [outputsize]
        attr["_output_shapes"] = AttrValue(list=AttrValue.ListValue(shape=[
            TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(d)) for d in shape])
            for shape in shapes]))
    return NodeDef(name=name, op=op, input=list(input or []), attr=attr)


def _shapes(meta):
    """The output shapes in a node's ``tensor_meta`` (one, or nested for tuple outputs)."""
    if meta is None:
        return []
    if hasattr(meta, "shape"):
        return [list(meta.shape)]
    if isinstance(meta, (list, tuple)):
        return [s for m in meta for s in _shapes(m)]
    return []


def submodule(root, path):
    """The module at dotted `path` under `root`, or None (a traced module also holds
    modules the code called from outside the model, as plain attributes)."""
    obj = root
    for part in path.split(".") if path else ():
        obj = getattr(obj, part, None)
    return obj


class _Scopes:
    """Module paths to TensorBoard name scopes: ``seq.0`` -> ``Net/Sequential[seq]/ReLU[0]``."""

    def __init__(self, root, name, model=None):
        self.root_module, self.root, self.model = root, name, model
        self._cache = {"": name}

    def of(self, path):
        if path not in self._cache:
            parent, _, attr = path.rpartition(".")
            module = submodule(self.root_module, path)
            kind = type(module).__name__ if module is not None else "Module"
            # a recurrent layer traced on its own is one call of itself: the top scope
            self._cache[path] = (self.root if module is not None and module is self.model
                                 else f"{self.of(parent)}/{kind}[{attr}]")
        return self._cache[path]


def _attributes(node):
    """The call's non-tensor arguments as one string (TensorBoard shows it as ``attr``)."""
    args = [a for a in node.args if not isinstance(a, Node)]
    consts = map_arg((tuple(args), dict(node.kwargs)), lambda n: f"%{n.name}")
    return "" if consts == ((), {}) else f"args={consts[0]}, kwargs={consts[1]}"


def parse(graph, root=None, name="Function", node_scopes=None, model=None):
    """The ``NodeDef`` list of an fx `graph` whose modules live under `root` (the traced
    module; None for a function) and whose top scope is `name`; `node_scopes` maps node
    names to the module path whose call made them; `model` is the module traced."""
    scopes = _Scopes(root, name, model)
    node_scopes = node_scopes or {}
    names, nodes, weights = {}, [], set()
    for node in graph.nodes:
        if node.op == "placeholder":
            if not node.users:                  # unused inputs are left out, as in PyTorch
                continue
            names[node] = f"input/{node.name}"
            nodes.append(node_proto(names[node], "IO Node", [],
                                    _shapes(node.meta.get("tensor_meta"))))
            continue
        if node.op == "output":
            returned = [n for n in _flat_nodes(node.args[0])]
            for i, value in enumerate(returned):
                nodes.append(node_proto(f"output/output.{i + 1}", "IO Node", [names[value]],
                                        _shapes(value.meta.get("tensor_meta"))))
            continue
        inputs = [names[n] for n in node.all_input_nodes if n in names]
        shapes = _shapes(node.meta.get("tensor_meta"))
        if node.op == "call_module":
            scope = scopes.of(node.target)
            module = submodule(root, node.target)
            owned = (() if module is None else
                     (("Parameter", module.named_parameters()), ("Buffer", module.named_buffers())))
            for kind, tensors in owned:
                for pname, tensor in tensors:
                    pnode = f"{scope}/{pname}"
                    if pnode not in weights:        # a module called twice: one node each
                        weights.add(pnode)
                        nodes.append(node_proto(pnode, kind, [], list(tensor.shape)))
                    inputs.append(pnode)
            names[node] = f"{scope}/{node.name}"
            nodes.append(node_proto(names[node], type(module).__name__, inputs, shapes,
                                    module.extra_repr() if module is not None else ""))
        elif node.op == "get_attr":
            owner, _, attr = node.target.rpartition(".")
            names[node] = f"{scopes.of(owner)}/{attr}"
            if names[node] not in weights:
                weights.add(names[node])
                nodes.append(node_proto(names[node], "prim::GetAttr", [], shapes))
        else:
            op = (f"Tensor.{node.target}" if node.op == "call_method"
                  else pretty_target(node.target))
            names[node] = f"{scopes.of(node_scopes.get(node.name, ''))}/{node.name}"
            nodes.append(node_proto(names[node], op, inputs, shapes, _attributes(node)))
    return nodes


def _flat_nodes(value):
    """The Nodes in a (nested) return value, in order."""
    found = []
    map_arg(value, found.append)
    return found


@contextlib.contextmanager
def _recording_scopes(model, node_scopes):
    """While tracing, fill `node_scopes` (node name -> path of the innermost submodule
    whose forward made it) from forward pre-hooks and hooks on every submodule."""
    marks, handles = [], []             # per open call: the graph's last node at its start

    def graph_nodes():
        tracer = getattr(RECORDING, "tracer", None)
        return tracer.graph.nodes if tracer is not None else ()

    def enter(module, args):
        marks.append(next(iter(reversed(graph_nodes())), None))

    def leave(path):
        def hook(module, args, output):
            mark = marks.pop() if marks else None
            for node in reversed(graph_nodes()):        # the nodes made since `enter`
                if node is mark:
                    break
                node_scopes.setdefault(node.name, path)     # inner calls left first: they win
        return hook

    if model is not None:
        for path, module in model.named_modules():
            if path:
                handles.append(module.register_forward_pre_hook(enter))
                handles.append(module.register_forward_hook(leave(path)))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def _eval_mode(model):
    """Trace in eval mode (dropout off, batch-norm running stats), then restore."""
    training = getattr(model, "training", None)
    if training is not None:
        model.train(False)
    try:
        yield
    finally:
        if training is not None:
            model.train(training)


def graph(model, args, verbose=False, use_strict_trace=True):
    """(GraphDef, RunMetadata) of `model` traced on the example inputs `args`."""
    import nbtorch
    module = model if isinstance(model, nbtorch.nn.Module) else None
    node_scopes = {}
    with _eval_mode(model), _recording_scopes(module, node_scopes):
        try:
            traced = nbtorch.jit.trace(model, args, strict=use_strict_trace, check_trace=False)
        except RuntimeError as err:
            print(err)
            print("Error occurs, No graph saved")
            raise
    fx_graph = traced.graph
    if verbose:
        print(fx_graph)
    name = type(model).__name__ if module is not None else getattr(model, "__name__", "Function")
    root = traced if module is not None else getattr(traced, "graph_module", None)
    nodes = parse(fx_graph, root, name, node_scopes, module)
    stepstats = RunMetadata(step_stats=StepStats(dev_stats=[
        DeviceStepStats(device="/device:CPU:0")]))
    return GraphDef(node=nodes, versions=VersionDef(producer=22)), stepstats
