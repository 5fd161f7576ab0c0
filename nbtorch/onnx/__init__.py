"""nbtorch.onnx: export traced models to ONNX and run/import ONNX models.

``import nbtorch.onnx`` works without the `onnx` package (programs import it
at the top); `export` and `load` raise an ImportError naming the
``nbtorch[onnx]`` extra when it is missing.

Example:
    >>> nbtorch.onnx.export(model, x, "model.onnx", dynamic_axes={"input": {0: "batch"}})
    >>> m = nbtorch.onnx.load("model.onnx")          # a runnable nbtorch Module
    >>> y = m(x)
"""
from ._graph import UnsupportedOperatorError
from .export import TrainingMode, is_in_onnx_export

__all__ = ["export", "load", "TrainingMode", "is_in_onnx_export", "UnsupportedOperatorError",
           "OnnxExporterError", "producer_name"]

producer_name = "nbtorch"
OnnxExporterError = UnsupportedOperatorError


def export(model, args=(), f=None, **kwargs):
    """Export `model` run on `args` to ONNX (see `nbtorch.onnx.export.export`)."""
    from .export import export as _export
    return _export(model, args, f, **kwargs)


def load(f, device=None):
    """An ONNX model (path, bytes or ModelProto) as a runnable nbtorch Module."""
    from .importer import load as _load
    return _load(f, device)
