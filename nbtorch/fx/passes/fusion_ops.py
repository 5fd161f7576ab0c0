"""Which lowered nodes fuse, and as what: the classification `fusion.py` groups by.

An `ElementwiseCall` of a body of `kernels/elementwise.py` over supported dtypes is
elementwise; nbtorch's Sum/Mean/Extreme (amax, amin) over the last dim (or every
dim) are reductions; Softmax/LogSoftmax/LayerNorm over the last dim are row
programs the builder decomposes. Half dtypes and user bodies do not fuse.
"""
import numpy as np

from .lowered_ops import ElementwiseCall, FunctionCall
from .shape_prop import TensorMetadata

__all__ = ["FUSABLE_DTYPES", "classify", "meta_of", "dtype_name"]

FUSABLE_DTYPES = frozenset(("bool", "int8", "uint8", "int16", "int32", "int64", "float32",
                            "float64"))
_FLOATS = ("float32", "float64")


def _meta(node):
    m = node.meta.get("tensor_meta") if hasattr(node, "meta") else None
    return m if isinstance(m, TensorMetadata) else None


def _dt(d):
    return d.np.name if hasattr(d, "np") else str(d)


def _elementwise_ok(node):
    from nbtorch.kernels.elementwise import OPS
    t = node.target
    if node.kwargs or t.op not in OPS:
        return False
    dts = t.compute if isinstance(t.compute, tuple) else (t.compute,) * len(node.args)
    if len(dts) != len(node.args):
        return False
    if not all(_dt(d) in FUSABLE_DTYPES for d in dts + (t.out,)):
        return False
    for a in node.args:
        if hasattr(a, "op"):
            m = _meta(a)
            if m is None or _dt(m.dtype) not in FUSABLE_DTYPES:
                return False
        elif not isinstance(a, (bool, int, float, np.bool_, np.number)):
            return False
    return _meta(node) is not None


def _classify(node):
    """'ew', ('reduce', op, keepdim, all_dims), ('softmax'|'log_softmax'|'layer_norm', ...)
    or None."""
    if node.op != "call_function":
        return None
    t = node.target
    if isinstance(t, ElementwiseCall):
        return "ew" if _elementwise_ok(node) else None
    if not isinstance(t, FunctionCall) or node.kwargs:
        return None
    name = t.cls.__name__
    mod = t.cls.__module__
    args = node.args
    x = args[0] if args else None
    mx = _meta(x) if hasattr(x, "op") else None
    mo = _meta(node)
    if mx is None or mo is None or mx.device != mo.device:
        return None
    nd = len(mx.shape)
    if not mod.startswith("nbtorch."):          # classes are matched by name: nbtorch's only
        return None
    if name in ("Sum", "Mean") and len(args) >= 4:
        dims, keepdim, dtype = args[1], args[2], args[3]
        mean = len(args) > 4 and bool(args[4])
        if len(args) > 5 and args[5]:
            return None                                  # nansum
        src, dst = _dt(mx.dtype), _dt(dtype)
        if not (src == dst and src in _FLOATS or src in FUSABLE_DTYPES and
                not src.startswith("float") and dst == "int64" and not mean):
            return None
        return _reduction("mean" if mean else "sum", dims, keepdim, nd)
    if name == "Extreme" and len(args) == 4:
        if args[3] not in ("amax", "amin") or _dt(mx.dtype) not in FUSABLE_DTYPES:
            return None
        if _dt(mx.dtype) == "bool":
            return None
        return _reduction(args[3], args[1], args[2], nd)
    if name in ("Softmax", "LogSoftmax") and len(args) == 2:
        if nd and args[1] == nd - 1 and _dt(mx.dtype) in _FLOATS:
            return ("softmax" if name == "Softmax" else "log_softmax",)
        return None
    if (name == "LayerNorm" and len(args) == 5 and nd and args[3] == mx.shape[-1]
            and _dt(mx.dtype) in _FLOATS):
        for p in args[1:3]:
            if p is not None and (_meta(p) is None or _dt(_meta(p).dtype) != _dt(mx.dtype)):
                return None
        return ("layer_norm",)
    return None


def _reduction(op, dims, keepdim, nd):
    dims = tuple(dims)
    if nd == 0:
        return None
    if dims == (nd - 1,):
        return ("reduce", op, bool(keepdim), False)
    if sorted(dims) == list(range(nd)) and not keepdim:
        return ("reduce", op, False, True)
    return None



meta_of, dtype_name, classify = _meta, _dt, _classify      # the public names
