"""nbtorch.onnx.load: an ONNX model as a runnable nbtorch Module (ONNX import).

The file is parsed and checked before anything runs: a malformed or
truncated file, or a graph using an op outside nbtorch's table
(`_import_ops.OPS`), is a clear error naming what is wrong. Weights become
the module's buffers (``state_dict`` keys are the initializer names); the
graph runs node by node on nbtorch's ops, on CPU or CUDA.
"""
import os

import numpy as np

from ..nn import Module
from .export import require_onnx

__all__ = ["load", "OnnxModule", "OnnxImportError"]


class OnnxImportError(ValueError):
    """The ONNX model cannot be loaded (malformed, truncated, or uses unsupported ops)."""


def _parse(f):
    onnx = require_onnx()
    from google.protobuf.message import DecodeError
    if isinstance(f, onnx.ModelProto):
        return f
    if isinstance(f, (bytes, bytearray)):
        data, where = bytes(f), "the given bytes"
    elif isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            data = fh.read()
        where = os.fspath(f)
    else:
        data, where = f.read(), "the given file"
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, RuntimeError, ValueError) as exc:
        raise OnnxImportError(f"nbtorch.onnx.load: {where} is not a valid ONNX model "
                              f"(malformed or truncated: {exc})") from None
    if not model.graph.node and not model.graph.output:
        raise OnnxImportError(f"nbtorch.onnx.load: {where} holds no ONNX graph (empty, "
                              "truncated or not an ONNX file)")
    _external_data(onnx, model, f)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise OnnxImportError(f"nbtorch.onnx.load: {where} fails the ONNX checker: "
                              f"{str(exc).splitlines()[0]}") from None
    return model


def _external_data(onnx, model, f):
    """Weights stored beside the file (external data) are read from its folder; onnx
    refuses locations outside that folder."""
    from onnx import TensorProto
    if not any(t.data_location == TensorProto.EXTERNAL for t in model.graph.initializer):
        return
    if not isinstance(f, (str, os.PathLike)):
        raise OnnxImportError("nbtorch.onnx.load: this model keeps its weights in external "
                              "files: load it from its path")
    try:
        onnx.external_data_helper.load_external_data_for_model(
            model, os.path.dirname(os.path.abspath(f)))
    except Exception as exc:                     # noqa: BLE001 - reported as a load error
        raise OnnxImportError(f"nbtorch.onnx.load: cannot read the external weights of "
                              f"{os.fspath(f)}: {exc}") from None


def _check_ops(model):
    from . import _import_nn, _import_reduce  # noqa: F401 - register their ops
    from ._import_ops import OPS
    domains = {o.domain for o in model.opset_import}
    missing = sorted({n.op_type for n in model.graph.node
                      if n.domain not in ("", "ai.onnx") or n.op_type not in OPS})
    if missing:
        raise OnnxImportError(
            f"nbtorch.onnx.load: the model uses ONNX ops nbtorch cannot run: "
            f"{', '.join(missing)} (domains {sorted(domains)})")


def _attrs(node):
    from onnx import helper

    def text(v):
        if isinstance(v, bytes):
            return v.decode()
        if isinstance(v, list):
            return [text(x) for x in v]
        return v
    return {a.name: text(helper.get_attribute_value(a)) for a in node.attribute}


class OnnxModule(Module):
    """Runs an ONNX graph with nbtorch ops. ``forward`` takes the graph inputs in order
    (or by name as keywords) and returns one tensor or a tuple of them."""

    def __init__(self, model, device=None):
        super().__init__()
        from onnx import numpy_helper
        import nbtorch
        graph = model.graph
        self.opset = next((o.version for o in model.opset_import
                           if o.domain in ("", "ai.onnx")), 0)
        inits = {t.name for t in graph.initializer}
        self.input_names = [i.name for i in graph.input if i.name not in inits]
        self.output_names = [o.name for o in graph.output]
        self._keys = {}
        for i, t in enumerate(graph.initializer):
            arr = numpy_helper.to_array(t)
            key = f"w{i}_" + "".join(c if c.isalnum() else "_" for c in t.name)[:60]
            self.register_buffer(key, nbtorch.tensor(np.array(arr), device=device))
            self._keys[t.name] = key
        self._device = device
        self._nodes = [(n.op_type, list(n.input), list(n.output), _attrs(n), n.name)
                       for n in graph.node]

    def forward(self, *args, **kwargs):
        from . import _import_nn, _import_reduce  # noqa: F401
        from ._import_ops import OPS
        import nbtorch
        env = {name: getattr(self, key) for name, key in self._keys.items()}
        if len(args) > len(self.input_names):
            raise TypeError(f"OnnxModule takes {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(args)}")
        for name, a in zip(self.input_names, args):
            env[name] = a
        env.update(kwargs)
        for name in self.input_names:
            if name not in env:
                raise TypeError(f"OnnxModule: missing input '{name}'")
            if not isinstance(env[name], nbtorch.Tensor):
                env[name] = nbtorch.as_tensor(env[name])
        for op, ins, outs, attrs, node_name in self._nodes:
            values = [env[i] if i else None for i in ins]
            self._op, self._n_out = op, len(outs)
            try:
                result = OPS[op](self, values, attrs)
            except Exception as exc:
                raise type(exc)(f"ONNX node {node_name or op} ({op}): {exc}") from exc
            if not isinstance(result, (tuple, list)):
                result = (result,)
            for o, r in zip(outs, result):
                if o:
                    env[o] = r
        outs = tuple(env[o] for o in self.output_names)
        return outs[0] if len(outs) == 1 else outs


def load(f, device=None):
    """An ONNX model (a path, bytes, a binary file or an onnx.ModelProto) as an nbtorch
    Module that runs it with nbtorch's kernels (on `device`, CPU by default).

    Example:
        >>> m = nbtorch.onnx.load("model.onnx")
        >>> y = m(nbtorch.randn(1, 3, 32, 32))
    """
    model = _parse(f)
    _check_ops(model)
    return OnnxModule(model, device).eval()
