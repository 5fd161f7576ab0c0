"""The ONNX graph under construction: nodes, initializers, constants and fresh names.

Symbolic functions talk to an `OnnxGraph` (`g.op('Relu', x)`, `g.const(2.0,
like=x)`); `Value` is what the exporter keeps for each fx node: the ONNX name
of the value, the concrete value the traced model computed (for dtypes and
shapes), and whether it depends on the model's inputs.
"""
import numpy as np

__all__ = ["Value", "OnnxGraph", "UnsupportedOperatorError", "onnx_dtype", "np_dtype"]


class UnsupportedOperatorError(RuntimeError):
    """The traced model uses an op that the ONNX exporter cannot express."""


class Value:
    """One exported value: ONNX `name`, the concrete `value` (Tensor, int or size tuple),
    `static` (computed from weights and constants only) and `kind` ('tensor', 'int',
    'shape': a 0-d or 1-D int64 ONNX tensor standing for Python sizes)."""

    __slots__ = ("name", "value", "static", "kind", "param")

    def __init__(self, name, value, static=False, kind="tensor", param=False):
        self.name, self.value, self.static, self.kind = name, value, static, kind
        self.param = param          # reads a parameter (folded only with do_constant_folding)

    def __repr__(self):
        return f"Value({self.name!r}, {self.kind}, static={self.static})"

    @property
    def dtype(self):
        return self.value.dtype

    @property
    def shape(self):
        return tuple(self.value.shape)

    @property
    def ndim(self):
        return len(self.value.shape)


def onnx_dtype(dtype):
    """The ONNX TensorProto element type of an nbtorch dtype (or NumPy dtype)."""
    from onnx import helper
    npd = np_dtype(dtype)
    return helper.np_dtype_to_tensor_dtype(npd)


def np_dtype(dtype):
    """The NumPy dtype of an nbtorch dtype."""
    if isinstance(dtype, np.dtype):
        return dtype
    if dtype.is_half and dtype.name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(dtype.np)


class OnnxGraph:
    """Collects ONNX nodes and initializers; names every new value uniquely."""

    def __init__(self, opset):
        from onnx import helper, numpy_helper
        self.helper, self.numpy_helper = helper, numpy_helper
        self.opset = opset
        self.nodes, self.initializers = [], []
        self.names = set()
        self._consts = {}

    def fresh(self, hint="v"):
        hint = "".join(c if c.isalnum() or c in "._" else "_" for c in str(hint)) or "v"
        name, i = hint, 0
        while name in self.names:
            i += 1
            name = f"{hint}_{i}"
        self.names.add(name)
        return name

    def op(self, op_type, *inputs, outputs=1, name_hint=None, **attrs):
        """Append one node; returns its output name (a list when `outputs` > 1).

        An input given as None becomes an empty name (an omitted optional input).
        """
        ins = ["" if i is None else (i.name if isinstance(i, Value) else i) for i in inputs]
        while ins and not ins[-1]:
            ins.pop()                   # trailing omitted inputs are left out
        hint = name_hint or op_type.lower()
        outs = [self.fresh(hint) for _ in range(outputs)]
        attrs = {k: v for k, v in attrs.items() if v is not None}
        self.nodes.append(self.helper.make_node(op_type, ins, outs,
                                                name=self.fresh(f"{op_type}_node"), **attrs))
        return outs[0] if outputs == 1 else outs

    def initializer(self, array, name):
        """A named weight (an initializer); returns its name."""
        self.names.add(name)
        data = np.array(array, order="C", copy=True)
        self.initializers.append(self.numpy_helper.from_array(data, name))
        return name

    def const(self, value, dtype=None, like=None):
        """A constant (deduplicated): Python numbers take `dtype` or the dtype of `like`."""
        if like is not None and dtype is None:
            dtype = np_dtype(like.dtype) if not isinstance(like, np.ndarray) else like.dtype
        arr = np.asarray(value, dtype=dtype)
        if arr.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
            arr = arr.astype(np.float32)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        hit = self._consts.get(key)
        if hit is not None:
            return hit
        if arr.size > 16:
            name = self.initializer(arr, self.fresh("const"))
        else:
            name = self.fresh("const")
            self.nodes.append(self.helper.make_node(
                "Constant", [], [name], name=self.fresh("Constant_node"),
                value=self.numpy_helper.from_array(np.array(arr, order="C"), name)))
        self._consts[key] = name
        return name

    def ints(self, values):
        """A 1-D int64 constant (axes, shapes, pads)."""
        return self.const(np.asarray(list(values), dtype=np.int64))

    def cast(self, x, dtype):
        """`x` cast to an nbtorch dtype (nothing emitted when it already has it)."""
        if isinstance(x, Value) and x.kind == "tensor" and x.dtype == dtype:
            return x.name
        return self.op("Cast", x, to=onnx_dtype(dtype))
