"""nbtorch.onnx: export traced models to ONNX and run/import ONNX models.

``import nbtorch.onnx`` works without the `onnx` package (programs import it
at the top); `export` and `load` raise an ImportError naming the
``nbtorch[onnx]`` extra when it is missing.

Example:
    >>> nbtorch.onnx.export(model, x, "model.onnx", dynamic_axes={"input": {0: "batch"}})
    >>> m = nbtorch.onnx.load("model.onnx")          # a runnable nbtorch Module
    >>> y = m(x)
"""
import enum

from ._graph import UnsupportedOperatorError
from .export import TrainingMode, is_in_onnx_export

__all__ = ["export", "load", "TrainingMode", "is_in_onnx_export", "UnsupportedOperatorError",
           "OnnxExporterError", "producer_name", "producer_version",
           "register_custom_op_symbolic", "unregister_custom_op_symbolic",
           "OperatorExportTypes", "select_model_mode_for_export"]

producer_name = "nbtorch"
producer_version = "0.1.0"
OnnxExporterError = UnsupportedOperatorError


class OperatorExportTypes(enum.IntEnum):
    """PyTorch's names; nbtorch exports standard ONNX ops only (ONNX)."""
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


def select_model_mode_for_export(model, mode):
    """``with select_model_mode_for_export(model, TrainingMode.EVAL):`` the model in that
    mode (PRESERVE leaves it), restored after."""
    from .export import _mode
    return _mode(model, mode)


def export(model, args=(), f=None, **kwargs):
    """Export `model` run on `args` to ONNX (see `nbtorch.onnx.export.export`)."""
    from .export import export as _export
    return _export(model, args, f, **kwargs)


def load(f, device=None):
    """An ONNX model (path, bytes or ModelProto) as a runnable nbtorch Module."""
    from .importer import load as _load
    return _load(f, device)


def register_custom_op_symbolic(symbolic_name, symbolic_fn, opset_version=None):
    """Export the op `symbolic_name` ('namespace::name' or 'name', as the traced graph names
    it) with `symbolic_fn(e, out, *args, **kwargs)`: `e.g.op('Mul', a, b)` adds ONNX nodes,
    `e.name(v)` gives a value's ONNX name, `out` is the concrete result (dtype, shape).

    PyTorch's symbolic functions take a TorchScript graph instead; nbtorch's take the
    Emitter, which also runs the op for its concrete value. `opset_version` is accepted
    for compatibility (one symbolic serves every opset).
    """
    from ._registry import FUNCTIONS
    FUNCTIONS[symbolic_name.split("::")[-1]] = symbolic_fn


def unregister_custom_op_symbolic(symbolic_name, opset_version=None):
    """Remove a symbolic added by `register_custom_op_symbolic`."""
    from ._registry import FUNCTIONS
    FUNCTIONS.pop(symbolic_name.split("::")[-1], None)
