"""Small helpers shared by the symbolic functions (operands, dims, reductions, shapes)."""
import numbers

import numpy as np

from ._graph import Value

__all__ = ["operand", "out_dtype", "dim_of", "dims_of", "reduce", "shape_of", "shape_slice",
           "INT_MAX", "static_int", "unsqueeze", "squeeze", "static"]

INT_MAX = np.iinfo(np.int64).max


def out_dtype(out):
    """The nbtorch dtype of a concrete result (Python ints count as int64)."""
    import nbtorch
    if isinstance(out, bool):
        return nbtorch.bool
    if isinstance(out, numbers.Integral):
        return nbtorch.int64
    if isinstance(out, numbers.Real):
        return nbtorch.float32
    return out.dtype


def operand(e, x, dtype):
    """The ONNX name of `x` (a Value or a Python number) as a tensor of `dtype`."""
    if isinstance(x, Value):
        name = e.name(x)
        if x.kind != "tensor" or x.dtype != dtype:
            return e.g.cast(name, dtype)
        return name
    return e.name(x, dtype=dtype)


def static(x):
    """True for Python values and Values computed without the model's inputs."""
    return not isinstance(x, Value) or x.static


def static_int(x):
    """The Python int of a static value (a Value's concrete value otherwise)."""
    return int(x.value) if isinstance(x, Value) else int(x)


def dim_of(d, ndim):
    d = static_int(d)
    return d + ndim if d < 0 else d


def dims_of(dim, ndim):
    """A list of non-negative dims from an int, a sequence or None (every dim)."""
    if dim is None:
        return list(range(ndim))
    if isinstance(dim, (tuple, list)):
        return [dim_of(d, ndim) for d in dim]
    return [dim_of(dim, ndim)]


def reduce(e, op, x, axes, keepdims):
    """ReduceXxx over `axes` (an attribute before opset 18, an input from 18; ReduceSum's
    is an input from 13)."""
    if op == "ReduceSum" or e.g.opset >= 18:
        return e.g.op(op, x, e.g.ints(axes), keepdims=int(keepdims))
    return e.g.op(op, x, axes=list(axes), keepdims=int(keepdims))


def shape_of(e, x):
    return e.g.op("Shape", x)


def shape_slice(e, x, start, end=None):
    """x's shape[start:end] as a 1-D int64 tensor."""
    return e.g.op("Shape", x, start=start, end=end)


def unsqueeze(e, x, axes):
    return e.g.op("Unsqueeze", x, e.g.ints(axes))


def squeeze(e, x, axes):
    return e.g.op("Squeeze", x, e.g.ints(axes))
