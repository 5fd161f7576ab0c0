"""Models a server runs: an ONNX file (onnxruntime or nbtorch's importer) or a traced
graph saved by ``nbtorch.jit.save``, behind one `ServedModel.predict(arrays)` call."""
import os
import threading

import numpy as np

__all__ = ["ServedModel", "InputSpec", "load_model", "BadInput"]


class BadInput(ValueError):
    """A request's tensors do not fit the model (answered with HTTP 400)."""


class InputSpec:
    """One model input: name, NumPy dtype (None: any float) and shape (None: any size)."""

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, shape

    def describe(self):
        return {"name": self.name, "dtype": None if self.dtype is None else str(self.dtype),
                "shape": None if self.shape is None else
                [d if d is not None else -1 for d in self.shape]}

    def check(self, arr):
        """`arr` as this input's dtype, or BadInput naming what does not fit."""
        if arr.dtype == object or arr.dtype.kind not in "biuf":
            raise BadInput(f"input '{self.name}': expected numbers, got {arr.dtype} data")
        if self.dtype is not None and arr.dtype != self.dtype:
            if not np.can_cast(arr.dtype, self.dtype, casting="same_kind"):
                raise BadInput(f"input '{self.name}': expected dtype {self.dtype}, got "
                               f"{arr.dtype}")
            arr = arr.astype(self.dtype)
        if self.shape is not None:
            if arr.ndim != len(self.shape) or any(
                    want is not None and want != got for want, got in zip(self.shape, arr.shape)):
                raise BadInput(f"input '{self.name}': expected shape "
                               f"{[d if d is not None else -1 for d in self.shape]}, got "
                               f"{list(arr.shape)}")
        return arr


class ServedModel:
    """A named, versioned model: `inputs` (InputSpecs), `output_names`, `predict`."""

    def __init__(self, name, version, inputs, output_names, predict, batchable, kind):
        self.name, self.version = name, str(version)
        self.inputs, self.output_names = inputs, output_names
        self._predict = predict
        self.batchable = batchable      # the first axis of every input is a free batch axis
        self.kind = kind

    def describe(self):
        return {"name": self.name, "version": self.version, "kind": self.kind,
                "inputs": [i.describe() for i in self.inputs], "outputs": self.output_names,
                "dynamic_batching": self.batchable}

    def predict(self, arrays):
        """Run the model on checked input arrays; returns a list of output arrays."""
        return [np.asarray(o) for o in self._predict(arrays)]


def _onnx_dim(d):
    return d if isinstance(d, int) and d >= 0 else None


_ORT_TYPES = {"tensor(float)": np.float32, "tensor(double)": np.float64,
              "tensor(float16)": np.float16, "tensor(int64)": np.int64,
              "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
              "tensor(bool)": np.bool_}


def _load_onnxruntime(path, name, version, threads):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.log_severity_level = 3
    sess = ort.InferenceSession(os.fspath(path), opts, providers=["CPUExecutionProvider"])
    inputs = [InputSpec(i.name, np.dtype(_ORT_TYPES.get(i.type, np.float32)),
                        [_onnx_dim(d) for d in i.shape]) for i in sess.get_inputs()]
    outs = [o.name for o in sess.get_outputs()]

    def predict(arrays):
        return sess.run(None, {i.name: a for i, a in zip(inputs, arrays)})
    batchable = all(i.shape and i.shape[0] is None for i in inputs)
    return ServedModel(name, version, inputs, outs, predict, batchable, "onnx/onnxruntime")


def _load_nbtorch_onnx(path, name, version):
    import onnx
    import nbtorch
    from ..onnx import load
    proto = onnx.load(os.fspath(path))
    module = load(proto)
    from ..onnx._import_ops import to_dtype
    from ._dtypes import np_of
    inits = {t.name for t in proto.graph.initializer}
    inputs = []
    for i in proto.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
        inputs.append(InputSpec(i.name, np_of(to_dtype(t.elem_type)), dims))
    outs = [o.name for o in proto.graph.output]

    def predict(arrays):
        with nbtorch.no_grad():
            r = module(*[nbtorch.from_numpy(np.ascontiguousarray(a)) for a in arrays])
        r = r if isinstance(r, tuple) else (r,)
        return [t.numpy() for t in r]
    batchable = all(i.shape and i.shape[0] is None for i in inputs)
    return ServedModel(name, version, inputs, outs, predict, batchable, "onnx/nbtorch")


def _load_traced(path, name, version):
    import nbtorch
    from ..jit import load
    gm = load(os.fspath(path))
    gm.eval()
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    inputs = []
    for n in placeholders:
        meta = n.meta.get("tensor_meta")
        dtype = None
        if meta is not None and hasattr(meta, "dtype"):
            from ._dtypes import np_of
            dtype = np_of(meta.dtype)
        shape = None if meta is None or not hasattr(meta, "shape") else \
            [None] + list(meta.shape)[1:]
        inputs.append(InputSpec(n.target, dtype, shape))
    lock = threading.Lock()            # a GraphModule's buffers are shared state

    def predict(arrays):
        with lock, nbtorch.no_grad():
            r = gm(*[nbtorch.from_numpy(np.ascontiguousarray(a)) for a in arrays])
        r = r if isinstance(r, (tuple, list)) else (r,)
        return [t.detach().cpu().numpy() for t in r]
    n_out = 1
    return ServedModel(name, version, inputs, [f"output_{i}" if i else "output"
                                               for i in range(n_out)], predict, True,
                       "nbtorch.jit")


def load_model(path, name=None, version="1", runtime="auto", threads=1):
    """A `ServedModel` from `path`: ``.onnx`` (onnxruntime when installed, else nbtorch's
    importer; `runtime` picks) or a traced graph saved with ``nbtorch.jit.save``."""
    if not os.path.isfile(path):
        raise FileNotFoundError(f"nbtorch.serve: no model file at {path}")
    name = name or os.path.splitext(os.path.basename(path))[0]
    if str(path).endswith(".onnx"):
        if runtime in ("auto", "onnxruntime"):
            try:
                return _load_onnxruntime(path, name, version, threads)
            except ImportError:
                if runtime == "onnxruntime":
                    raise
        return _load_nbtorch_onnx(path, name, version)
    return _load_traced(path, name, version)
