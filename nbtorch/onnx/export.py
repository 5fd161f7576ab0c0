"""nbtorch.onnx.export: a model traced into nbtorch's fx graph, written as an ONNX model.

The model is traced with `nbtorch.jit.trace` (the one graph IR every exporter
reads); the `Emitter` turns each node into ONNX nodes through the symbolic
functions, the graph is checked by ``onnx.checker.check_model(full_check=True)``
and written to `f`.
"""
import contextlib
import enum
import io
import os
import threading
import warnings

from ._graph import OnnxGraph, UnsupportedOperatorError, Value, onnx_dtype

__all__ = ["export", "TrainingMode", "is_in_onnx_export", "DEFAULT_OPSET", "MIN_OPSET",
           "MAX_OPSET", "require_onnx"]

DEFAULT_OPSET, MIN_OPSET, MAX_OPSET = 17, 17, 23
_STATE = threading.local()


class TrainingMode(enum.IntEnum):
    """PyTorch's export modes: EVAL (the default), PRESERVE (as the model is), TRAINING."""
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def is_in_onnx_export():
    """True while `export` runs the model (in this thread)."""
    return getattr(_STATE, "exporting", False)


def require_onnx():
    """Import the `onnx` package, or raise an ImportError naming nbtorch's extra."""
    try:
        import onnx
    except ImportError as exc:
        raise ImportError("nbtorch.onnx needs the 'onnx' package (and 'onnxruntime' to run "
                          "models): pip install 'nbtorch[onnx]'") from exc
    return onnx


def _load_symbolics():
    from . import (symbolic_attention, symbolic_elementwise, symbolic_index,  # noqa: F401
                   symbolic_nn, symbolic_quantized, symbolic_reduce, symbolic_rnn,
                   symbolic_shape)


@contextlib.contextmanager
def _mode(model, training):
    from ..nn import Module
    if not isinstance(model, Module) or training == TrainingMode.PRESERVE:
        yield
        return
    was = model.training
    model.train(training == TrainingMode.TRAINING)
    try:
        yield
    finally:
        model.train(was)


def _split_args(args, kwargs):
    from .._tensor import Tensor
    if isinstance(args, Tensor):
        args = (args,)
    args = tuple(args)
    if args and isinstance(args[-1], dict) and kwargs is None:
        args, kwargs = args[:-1], args[-1]
    return args, dict(kwargs or {})


def _traced(model, args, kwargs):
    from ..fx.graph_module import GraphModule
    from ..jit import trace
    from ..jit._traced import TracedFunction
    if isinstance(model, TracedFunction):
        return model.graph_module
    if isinstance(model, GraphModule):
        return model
    from ._registry import MODULES
    if type(model) in MODULES:
        model = _Root(model)      # a call_module node, so the module symbolic applies
    traced = trace(model, args if args else None, check_trace=False,
                   example_kwarg_inputs=kwargs or None)
    return traced.graph_module if isinstance(traced, TracedFunction) else traced


def _tracer_warning():
    from ..jit import TracerWarning
    return TracerWarning


def _Root(model):
    from ..nn import Module

    class Root(Module):
        def __init__(self):
            super().__init__()
            self.inner = model          # the Emitter strips 'inner.' from names

        def forward(self, *args, **kwargs):
            return self.inner(*args, **kwargs)
    return Root()


def _prune(g, output_names):
    """Drop nodes and initializers no output depends on (folded weights' originals)."""
    needed = set(output_names)
    kept = []
    for node in reversed(g.nodes):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
    g.nodes[:] = kept[::-1]
    g.initializers[:] = [t for t in g.initializers if t.name in needed]


def _flatten(out, found):
    if isinstance(out, (tuple, list)):
        for o in out:
            _flatten(o, found)
    elif isinstance(out, dict):
        for o in out.values():
            _flatten(o, found)
    elif out is not None:
        found.append(out)
    return found


def _dims(shape, dynamic, name):
    """Shape entries for a value_info: ints, or dim_param names for dynamic axes."""
    axes = dynamic.get(name)
    if axes is None:
        return list(shape)
    if not isinstance(axes, dict):
        axes = {int(a): f"{name}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
    return [axes.get(i, axes.get(i - len(shape), d)) for i, d in enumerate(shape)]


def _check_opset(opset_version):
    opset = DEFAULT_OPSET if opset_version is None else int(opset_version)
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"nbtorch.onnx.export supports opset_version {MIN_OPSET} to "
                         f"{MAX_OPSET}, got {opset}")
    return opset


def build_model(model, args=(), kwargs=None, *, input_names=None, output_names=None,
                dynamic_axes=None, opset_version=None, do_constant_folding=True,
                export_params=True, keep_initializers_as_inputs=False,
                training=TrainingMode.EVAL):
    """The ONNX ModelProto of `model` run on `args` (see `export`); not checked, not saved."""
    onnx = require_onnx()
    from onnx import helper
    _load_symbolics()
    from ._emit import Emitter
    opset = _check_opset(opset_version)
    args, kwargs = _split_args(args, kwargs)
    dynamic = dict(dynamic_axes or {})
    _STATE.exporting = True
    try:
        with _mode(model, training), warnings.catch_warnings():
            # size checks inside nbtorch's own layers are not the user's trace problems
            warnings.filterwarnings("ignore", category=_tracer_warning(), module=r"nbtorch\.")
            gm = _traced(model, args, kwargs)
            g = OnnxGraph(opset)
            emitter = Emitter(g, fold_params=do_constant_folding, export_params=export_params)
            tensors = list(args) + list(kwargs.values())
            flat_in = _flatten(tensors, [])
            names = list(input_names or [])
            inputs = []
            for i, t in enumerate(flat_in):
                name = names[i] if i < len(names) else f"input_{i}" if i else "input"
                g.names.add(name)
                inputs.append(Value(name, t))
            result = emitter.run_graph(gm, _restructure(tensors, inputs))
    finally:
        _STATE.exporting = False
    outs = _flatten(result, [])
    out_names = list(output_names or [])
    graph_outputs = []
    for i, v in enumerate(outs):
        if not isinstance(v, Value):
            raise UnsupportedOperatorError(f"ONNX export: output {i} is not a tensor "
                                           f"({type(v).__name__})")
        name = out_names[i] if i < len(out_names) else (f"output_{i}" if i else "output")
        src = emitter.name(v)
        g.names.add(name)
        g.nodes.append(helper.make_node("Identity", [src], [name], name=g.fresh("output")))
        shape = _dims(v.value.shape, dynamic, name) if name in dynamic or not dynamic \
            else [None] * v.value.ndim    # inferred below from the dynamic inputs
        graph_outputs.append(helper.make_tensor_value_info(
            name, onnx_dtype(v.value.dtype), shape))
    _prune(g, [o.name for o in graph_outputs])
    graph_inputs = [helper.make_tensor_value_info(v.name, onnx_dtype(v.value.dtype),
                                                  _dims(v.value.shape, dynamic, v.name))
                    for v in inputs]
    for name, t in emitter.param_inputs:
        graph_inputs.append(helper.make_tensor_value_info(name, onnx_dtype(t.dtype),
                                                          list(t.shape)))
    if keep_initializers_as_inputs:
        for init in g.initializers:
            graph_inputs.append(helper.make_tensor_value_info(init.name, init.data_type,
                                                              list(init.dims)))
    graph = helper.make_graph(g.nodes, type(model).__name__, graph_inputs, graph_outputs,
                              initializer=g.initializers)
    opsets = [helper.make_opsetid("", opset)]
    proto = helper.make_model(graph, opset_imports=opsets, producer_name="nbtorch",
                              producer_version=_version())
    proto.ir_version = helper.find_min_ir_version_for(opsets)
    if dynamic:
        _infer_output_shapes(onnx, proto)
    return proto


def _infer_output_shapes(onnx, proto):
    """Output shapes left open are filled by ONNX shape inference (symbolic batch dims)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:                    # noqa: BLE001 - the checker reports real errors
        return
    by_name = {o.name: o for o in inferred.graph.output}
    for out in proto.graph.output:
        dims = out.type.tensor_type.shape.dim
        open_ = all(not d.HasField("dim_value") and not d.HasField("dim_param") for d in dims)
        got = by_name.get(out.name)
        if open_ and got is not None and got.type.tensor_type.HasField("shape") and \
                len(got.type.tensor_type.shape.dim) == len(dims):
            out.type.CopyFrom(got.type)


def _restructure(tensors, inputs):
    """The example inputs' structure with each tensor replaced by its input Value."""
    it = iter(inputs)

    def walk(a):
        if isinstance(a, (tuple, list)):
            return type(a)(walk(x) for x in a)
        if isinstance(a, dict):
            return {k: walk(v) for k, v in a.items()}
        return next(it) if a is not None else None
    return [walk(t) for t in tensors]


def _version():
    try:
        from importlib.metadata import version
        return version("nbtorch")
    except Exception:                    # noqa: BLE001 - not installed as a distribution
        return "0"


def export(model, args=(), f=None, *, kwargs=None, export_params=True, verbose=None,
           training=TrainingMode.EVAL, input_names=None, output_names=None,
           operator_export_type=None, opset_version=None, do_constant_folding=True,
           dynamic_axes=None, keep_initializers_as_inputs=False, custom_opsets=None,
           export_modules_as_functions=False, dynamo=False, external_data=True,
           dynamic_shapes=None, check=True, **unused):
    """Export `model` (an nn.Module, a function, or a traced graph) run on `args` to ONNX.

    The model is traced with ``nbtorch.jit.trace`` (control flow frozen at the
    example), each op becomes ONNX nodes, and the result is checked with
    ``onnx.checker.check_model(full_check=True)``. `dynamic_axes` names the axes
    that may vary (``{'input': {0: 'batch'}, 'output': [0]}``). Writes to `f` (a
    path or a binary file object) when given; returns the ``onnx.ModelProto``.
    An op ONNX cannot express raises `UnsupportedOperatorError` naming it.
    With ``dynamo=True`` (PyTorch 2.13's default; nbtorch's default stays False, so the
    ModelProto keeps being returned) the result is an `ONNXProgram` (``.save(path)``,
    ``.model_proto``, callable); `model` may be an ``nbtorch.export.ExportedProgram`` and
    `dynamic_shapes` (torch.export's form) names the varying dims instead of dynamic_axes.

    Example:
        >>> nbtorch.onnx.export(model, nbtorch.randn(1, 3, 32, 32), "model.onnx",
        ...                     input_names=["x"], dynamic_axes={"x": {0: "batch"}})
    """
    onnx = require_onnx()
    if export_modules_as_functions:
        raise NotImplementedError("nbtorch.onnx.export: export_modules_as_functions")
    from ._program import ONNXProgram, dynamo_arguments
    model, args, kwargs, input_names, dynamic_axes, program = dynamo_arguments(
        model, args, kwargs, dynamic_shapes, input_names, dynamic_axes)
    proto = build_model(model, args, kwargs, input_names=input_names,
                        output_names=output_names, dynamic_axes=dynamic_axes,
                        opset_version=opset_version, do_constant_folding=do_constant_folding,
                        export_params=export_params,
                        keep_initializers_as_inputs=keep_initializers_as_inputs,
                        training=training)
    if check:
        onnx.checker.check_model(proto, full_check=True)
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if f is not None:
        data = proto.SerializeToString()
        if isinstance(f, (str, os.PathLike)):
            tmp = f"{os.fspath(f)}.tmp{os.getpid()}"
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, f)
        elif isinstance(f, io.IOBase) or hasattr(f, "write"):
            f.write(data)
        else:
            raise TypeError(f"nbtorch.onnx.export: f must be a path or a binary file, got "
                            f"{type(f).__name__}")
    return ONNXProgram(proto, program) if dynamo else proto
