"""Ops on quantized tensors beyond views (PyTorch's QuantizedCPU kernels): comparisons,
item, copy_/fill_/__setitem__, mean, max/min, topk, sort, torch.cat, and the rebuild
of a quantized tensor from a checkpoint.

Order-based ops (max, min, topk, sort) run on the integers (the affine map is
increasing) and keep the qparams; mean dequantizes, averages in float and quantizes
back with the input's qparams; comparisons compare dequantized values; ``torch.equal``
compares qparams and integers, as PyTorch's.
"""
import numpy as np

from ._qtensor import (QTensor, check_qparams, per_tensor_affine, per_channel_affine,
                       per_channel_affine_float_qparams)
from ._tensor import Tensor, wrap

__all__ = ["install", "quantized_cat", "rebuild_quantized"]


def _per_tensor(q, what):
    if len(q._qparams) != 2:
        raise RuntimeError(f"{what}: only per-tensor quantized tensors are supported")
    return q._qparams


def _ints_of(value, like):
    """`value` (a float, a float tensor or a quantized tensor) as integers in `like`'s
    qparams: a quantized value gives its own integers (PyTorch copies them as they are)."""
    if getattr(value, "is_quantized", False):
        return np.asarray(value._ints())
    from ._qtensor import quantize_per_tensor
    s, z = _per_tensor(like, "copy_")
    if not isinstance(value, Tensor):
        value = wrap(np.asarray(value, np.float32))
    return np.asarray(quantize_per_tensor(value.float(), s, z, like.dtype)._ints())


def item(self):
    """The dequantized value of a one-element tensor."""
    return self.dequantize().item()


def _compare(op):
    def method(self, other):
        other = other.dequantize() if getattr(other, "is_quantized", False) else other
        return getattr(self.dequantize(), op)(other)
    method.__name__ = op
    return method


def equal(self, other):
    """``torch.equal``: same dtype, qscheme, qparams, shape and integers."""
    if not getattr(other, "is_quantized", False) or other.dtype is not self.dtype:
        return False
    a, b = self._qparams, other._qparams
    same = len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))
    return bool(same and self.shape == other.shape and
                np.array_equal(self._ints(), other._ints()))


def copy_(self, src, non_blocking=False):
    """A quantized source's integers and qparams (PyTorch copies its quantizer); a float
    source quantized with this tensor's qparams."""
    self._ints()[...] = _ints_of(src, self)
    if getattr(src, "is_quantized", False):
        self._qparams = src._qparams
    return self


def fill_(self, value):
    """Every element set to quantize(value) in this tensor's qparams."""
    self._ints()[...] = _ints_of(float(value), self)
    return self


def __setitem__(self, index, value):
    ints = self._int_tensor()
    ints[index] = wrap(np.ascontiguousarray(_ints_of(value, self)))


def mean(self, dim=None, keepdim=False, *, dtype=None):
    """Float mean of the dequantized values, quantized with this tensor's qparams."""
    from ._qtensor import quantize_per_tensor
    s, z = _per_tensor(self, "mean")
    f = self.dequantize()
    m = f.mean() if dim is None else f.mean(dim, keepdim)
    return quantize_per_tensor(m, s, z, self.dtype)


def _ordered(name):
    """max/min/amax/amin/topk/sort on the integers; values keep the qparams."""
    def method(self, *args, **kwargs):
        _per_tensor(self, name)
        r = getattr(self._int_tensor(), name)(*args, **kwargs)
        if isinstance(r, Tensor):
            return self._with_ints(r)
        values, indices = r
        return type(r)(self._with_ints(values), indices)     # (values, indices) namedtuple
    method.__name__ = name
    return method


def rebuild_quantized(view, dtype, quantizer_params):
    """A QTensor over the storage of `view` (a plain integer tensor) with PyTorch's pickled
    qparams: (per_tensor_affine, scale, zero_point) or (per_channel_affine, scales,
    zero_points, axis); checked, since they come from a file."""
    scheme = quantizer_params[0] if quantizer_params else None
    if scheme is per_tensor_affine and len(quantizer_params) == 3:
        qparams = check_qparams(quantizer_params[1], quantizer_params[2], dtype)
    elif (scheme in (per_channel_affine, per_channel_affine_float_qparams)
          and len(quantizer_params) == 4):
        _, scales, zps, axis = quantizer_params
        scales = np.asarray(scales._host() if isinstance(scales, Tensor) else scales,
                            np.float64).reshape(-1)
        zps = np.asarray(zps._host() if isinstance(zps, Tensor) else zps).reshape(-1)
        ok = isinstance(axis, int) and 0 <= axis < max(view.dim(), 1)
        if not ok or scales.shape != zps.shape or scales.size != view.shape[axis]:
            raise RuntimeError(f"corrupted checkpoint: per-channel qparams ({scales.size} "
                               f"scales, axis {axis}) do not fit a tensor of size "
                               f"{list(view.shape)}")
        if zps.dtype.kind == "f":           # float zero points (embedding weights)
            qparams = (scales.astype(np.float32), zps.astype(np.float32), axis)
        else:
            for sc, zp in zip(scales, zps):
                check_qparams(sc, zp, dtype)
            qparams = (scales, zps.astype(np.int64), axis)
    else:
        raise RuntimeError(f"unsupported quantization parameters in checkpoint: "
                           f"{quantizer_params!r}")
    q = QTensor.__new__(QTensor)._init(view._storage, view._offset, view._shape,
                                       view._strides, dtype)
    q._qparams = qparams
    return q


def quantized_cat(tensors, dim, out=None):
    """``torch.cat`` of quantized tensors: PyTorch's rule, the first input's qparams for
    the result, the others requantized to them (dequantize, then quantize)."""
    from .ao.nn.quantized.functional import cat
    first = tensors[0]
    for t in tensors:
        if not isinstance(t, QTensor):
            raise RuntimeError("torch.cat(): cannot concatenate quantized and "
                               "non-quantized tensors; dequantize() first")
        if t.dtype is not first.dtype:
            raise RuntimeError("All dtypes must be the same.")
        if len(t._qparams) != 2:
            raise RuntimeError("Only per-tensor quantization is supported in 'cat'!")
    if out is not None:
        raise RuntimeError("torch.cat(): out= is not supported for quantized tensors")
    return cat(tensors, dim)


def install(cls):
    """Put the methods on the QTensor class."""
    cls.item, cls.equal, cls.copy_, cls.fill_, cls.mean = item, equal, copy_, fill_, mean
    cls.__setitem__ = __setitem__
    for op in ("eq", "ne", "lt", "le", "gt", "ge"):
        setattr(cls, op, _compare(op))
        setattr(cls, f"__{op}__", getattr(cls, op))
    cls.__hash__ = Tensor.__hash__
    for name in ("max", "min", "amax", "amin", "topk", "sort"):
        setattr(cls, name, _ordered(name))
