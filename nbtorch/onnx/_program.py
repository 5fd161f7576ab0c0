"""``ONNXProgram``: what ``torch.onnx.export(..., dynamo=True)`` returns, and the
torch.export-style arguments that call takes (an ExportedProgram as the model,
``dynamic_shapes`` instead of ``dynamic_axes``)."""
import inspect
import io
import os

__all__ = ["ONNXProgram", "dynamo_arguments"]


class ONNXProgram:
    """An exported ONNX model: ``model_proto``, ``save(path)``, and calling it runs the
    model (nbtorch's ONNX importer) on nbtorch tensors, returning a list of outputs as
    PyTorch's ONNXProgram does."""

    def __init__(self, model_proto, exported_program=None):
        self.model_proto = model_proto
        self.exported_program = exported_program
        self._runner = None

    def save(self, destination, *, include_initializers=True, keep_initializers_as_inputs=False,
             external_data=None):
        """Write the model to a path or a binary file (atomically for a path)."""
        if not include_initializers:
            raise NotImplementedError("nbtorch.onnx: include_initializers=False")
        data = self.model_proto.SerializeToString()
        if isinstance(destination, (str, os.PathLike)):
            tmp = f"{os.fspath(destination)}.tmp{os.getpid()}"
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, destination)
        else:
            destination.write(data)

    def __call__(self, *args, **kwargs):
        if self._runner is None:
            from .importer import load
            self._runner = load(io.BytesIO(self.model_proto.SerializeToString()))
        out = self._runner(*args, **kwargs)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    def optimize(self):
        """Accepted: the exporter already folds constants."""

    def initialize_inference_session(self, *args, **kwargs):
        """Accepted: calling the program builds its runner on first use."""

    def release(self):
        self._runner = None

    def __repr__(self):
        g = self.model_proto.graph
        return (f"ONNXProgram(graph={g.name!r}, inputs={[i.name for i in g.input]}, "
                f"outputs={[o.name for o in g.output]}, nodes={len(g.node)})")


def _axis_name(value, arg, dim):
    from ..export import Dim, DimHint
    if isinstance(value, Dim):
        return value.__name__
    if isinstance(value, str):
        return value
    if isinstance(value, DimHint):
        return None if value is Dim.STATIC else f"{arg}_dim_{dim}"
    return None


def dynamo_arguments(model, args, kwargs, dynamic_shapes, input_names, dynamic_axes):
    """(model, args, kwargs, input_names, dynamic_axes, exported program) for export(): an
    ExportedProgram runs as its module on its example inputs unless others are given, and
    `dynamic_shapes` (by forward's argument names or position: {dim: Dim, name or hint})
    becomes `dynamic_axes` on inputs named after forward's arguments."""
    from ..export import ExportedProgram
    program = None
    if isinstance(model, ExportedProgram):
        program = model
        if not args and not kwargs and model.example_inputs is not None:
            args, kwargs = model.example_inputs
        model = model.module()
    if dynamic_shapes is None:
        return model, args, kwargs, input_names, dynamic_axes, program
    forward = getattr(model, "forward", model)
    bound = inspect.signature(forward).bind(*args, **(kwargs or {}))
    names = list(bound.arguments)
    specs = (dynamic_shapes if isinstance(dynamic_shapes, dict)
             else dict(zip(names, dynamic_shapes)))
    input_names = list(input_names) if input_names else names
    axes = dict(dynamic_axes or {})
    for position, arg in enumerate(names):
        spec = specs.get(arg)
        if spec is None or position >= len(input_names):
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        dims = {d: _axis_name(v, arg, d) for d, v in items}
        dims = {d: n for d, n in dims.items() if n is not None}
        if dims:
            axes[input_names[position]] = dims
    return model, args, kwargs, input_names, axes, program
