"""Quantized tensors: ``qint8``/``quint8``/``qint32`` values with an affine map to floats.

A quantized tensor stores integers ``q`` and reads as ``(q - zero_point) * scale``,
with one (scale, zero_point) for the whole tensor (``per_tensor_affine``) or one
per slice along ``axis`` (``per_channel_affine``). `QTensor` is a `Tensor` whose
storage holds the integers (so shape, strides, views and `save` work as for any
tensor) and whose ``__dict__`` holds the quantization parameters. Views (flatten,
reshape, indexing) keep them; arithmetic is the quantized modules' job, as in
PyTorch, where most float ops refuse a quantized input.

Quantizing rounds half to even after multiplying by ``1 / scale`` in float32 and
saturates to the dtype's range, as PyTorch's x86 (fbgemm) kernels do (8-bit: one
rounding of ``x * inv + zp``, an FMA; qint32: the product and the sum rounded apart).
"""
import math

import numpy as np

from . import _dtype
from ._qtensor_channels import (channel_qparams as _channel_qparams,
                                dequantize_float_qparams, float_zero_points as
                                _float_zero_points, quantize_float_qparams)
from ._tensor import Tensor, Size, wrap

__all__ = ["qint8", "quint8", "qint32", "qscheme", "per_tensor_affine", "per_channel_affine",
           "per_tensor_symmetric", "per_channel_symmetric", "per_channel_affine_float_qparams",
           "quantize_per_tensor", "quantize_per_channel", "dequantize", "QTensor",
           "quantize_per_tensor_dynamic", "q_scale", "q_zero_point", "q_per_channel_scales",
           "q_per_channel_zero_points", "q_per_channel_axis", "int_repr",
           "fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine"]


class _QDtype(_dtype.dtype):
    """A quantized dtype: its storage is `np_int`, its values read as floats."""

    __slots__ = ("qmin", "qmax", "underlying")

    def __init__(self, name, underlying):
        super().__init__(name, underlying.np, _dtype._INT)
        self.is_signed = underlying.is_signed
        self.underlying = underlying
        info = np.iinfo(underlying.np)
        self.qmin, self.qmax = int(info.min), int(info.max)

    def __reduce__(self):
        return (_qdtype_by_name, (self.name,))

    def __deepcopy__(self, memo):
        return self


qint8 = _QDtype("qint8", _dtype.int8)
quint8 = _QDtype("quint8", _dtype.uint8)
qint32 = _QDtype("qint32", _dtype.int32)
_QDTYPES = {d.name: d for d in (qint8, quint8, qint32)}


def _qdtype_by_name(name):
    return _QDTYPES[name]


class qscheme:
    """A quantization scheme (``nbtorch.per_tensor_affine`` ...)."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_qscheme_by_name, (self.name,))

    def __deepcopy__(self, memo):
        return self


per_tensor_affine = qscheme("per_tensor_affine")
per_channel_affine = qscheme("per_channel_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")
_QSCHEMES = {s.name: s for s in (per_tensor_affine, per_channel_affine, per_tensor_symmetric,
                                 per_channel_symmetric, per_channel_affine_float_qparams)}


def _qscheme_by_name(name):
    return _QSCHEMES[name]


def _kernels():
    from .kernels.cpu import quantized
    return quantized


class QTensor(Tensor):
    """A quantized tensor (see the module docstring); made by `quantize_per_tensor`,
    `quantize_per_channel` or a quantized module."""

    __slots__ = ()

    is_quantized = True

    @classmethod
    def _from_int(cls, ints, dtype, scale=None, zero_point=None, scales=None,
                  zero_points=None, axis=None):
        """Wrap a NumPy array of integers (dtype.underlying) with its qparams (no copy)."""
        base = wrap(np.require(ints, requirements='C'))
        q = cls.__new__(cls)._init(base._storage, base._offset, base._shape, base._strides,
                                   dtype, base._arr)
        if scales is None:
            q._qparams = (float(scale), int(zero_point))
        elif _float_zero_points(zero_points):      # per_channel_affine_float_qparams
            q._qparams = (np.asarray(scales, np.float32), np.asarray(zero_points, np.float32),
                          int(axis))
        else:
            q._qparams = (np.asarray(scales, np.float64), np.asarray(zero_points, np.int64),
                          int(axis))
        return q

    def _view(self, shape, strides, offset=None):
        offset = self._offset if offset is None else offset
        qparams = self._qparams
        if len(qparams) == 3:           # per channel: which channel each element of the
            qparams = _channel_qparams(self, tuple(shape), tuple(strides), offset)  # view is
        v = QTensor.__new__(QTensor)._init(self._storage, offset, Size(shape),
                                           tuple(strides), self.dtype)
        v._base = self if self._base is None else self._base
        v._qparams = qparams
        return v

    def _int_tensor(self):
        """A plain integer tensor viewing the same elements: what shape ops run on."""
        return Tensor.__new__(Tensor)._init(self._storage, self._offset, self._shape,
                                            self._strides, self.dtype.underlying)

    def _with_ints(self, ints):
        """`ints` (an op's result on `_int_tensor()`) as a quantized tensor: a view of
        the same storage is a view of this tensor (its channels found as `_view` finds
        them); a copy keeps these per-tensor qparams (PyTorch refuses copies of
        per-channel tensors, with this message)."""
        if ints._storage is self._storage:
            return self._view(ints._shape, ints._strides, ints._offset)
        if len(self._qparams) != 2:
            raise RuntimeError("Setting strides is possible only on uniformly quantized "
                               "tensor")
        q = QTensor.__new__(QTensor)._init(ints._storage, ints._offset, ints._shape,
                                           ints._strides, self.dtype)
        q._qparams = self._qparams
        return q

    def __getitem__(self, index):
        """Basic indexing gives a quantized view, advanced indexing a quantized copy
        (same qparams), as PyTorch's."""
        return self._with_ints(self._int_tensor()[index])

    def flip(self, *dims, **kwargs):
        return self._with_ints(self._int_tensor().flip(*dims, **kwargs))

    def _ints(self):
        """The stored integers as a NumPy array (a view)."""
        return Tensor._array.fget(self).view(self.dtype.underlying.np)

    @property
    def _array(self):
        # float kernels read a tensor's raw array here: a quantized one must not reach them
        raise NotImplementedError(
            f"Could not run this operator with arguments from the 'QuantizedCPU' backend "
            f"({self.dtype}): quantized tensors support dequantize(), int_repr(), views, "
            f"relu/max_pool2d and the quantized modules (nbtorch.ao.nn.quantized); call "
            f".dequantize() for float math")

    # ---- quantization parameters ---------------------------------------------------
    def qscheme(self):
        if len(self._qparams) == 2:
            return per_tensor_affine
        return (per_channel_affine_float_qparams if _float_zero_points(self._qparams[1])
                else per_channel_affine)

    def _per_tensor(self, what):
        if len(self._qparams) != 2:
            raise RuntimeError(f"Expected quantizer->qscheme() == kPerTensorAffine to be "
                               f"true, but got false.  ({what} of a per-channel tensor)")
        return self._qparams

    def q_scale(self):
        return self._per_tensor("q_scale")[0]

    def q_zero_point(self):
        return self._per_tensor("q_zero_point")[1]

    def _per_channel(self):
        if len(self._qparams) != 3:
            raise RuntimeError("Expected quantizer->qscheme() == kPerChannelAffine to be "
                               "true, but got false.")
        return self._qparams

    def q_per_channel_scales(self):
        return wrap(self._per_channel()[0].copy())

    def q_per_channel_zero_points(self):
        return wrap(self._per_channel()[1].copy())

    def q_per_channel_axis(self):
        return self._per_channel()[2]

    # ---- conversions ---------------------------------------------------------------
    def int_repr(self):
        """The stored integers as an uint8/int8/int32 tensor (a copy)."""
        return wrap(np.array(self._ints(), copy=True))

    def dequantize(self):
        """The float32 values ``(q - zero_point) * scale``."""
        q = np.asarray(self._ints(), order="C")
        out = np.empty(q.shape, np.float32)
        k = _kernels()
        if len(self._qparams) == 2:
            k.dequantize_per_tensor(q.reshape(-1), out.reshape(-1), *self._qparams)
        else:
            scales, zps, axis = self._qparams
            if _float_zero_points(zps):        # float32 (q - zp) * scale, as PyTorch's
                out[...] = dequantize_float_qparams(q, scales, zps, axis)
            else:
                k.dequantize_per_channel(q, out, scales, zps, axis)
        return wrap(out)

    def clone(self, memory_format=None):
        q = QTensor._from_int(np.array(self._ints(), copy=True), self.dtype, 1.0, 0)
        q._qparams = self._qparams
        return q

    def contiguous(self, memory_format=None):
        return self if self.is_contiguous() else self.clone()

    def detach(self):
        """A quantized view of the same integers (a plain Tensor of quint8 before)."""
        return self._view(self._shape, self._strides)

    # ---- the ops float code reaches (F.relu, F.max_pool2d, F.adaptive_avg_pool2d) ------
    def relu(self):
        from .ao.nn.quantized import functional as qF
        return qF.relu(self)

    def adaptive_avg_pool2d(self, output_size):
        from .ao.nn.quantized import functional as qF
        return qF.adaptive_avg_pool2d(self, output_size)

    def avg_pool2d(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                   count_include_pad=True, divisor_override=None):
        from .ao.nn.quantized import functional as qF
        return qF.avg_pool2d(self, kernel_size, stride, padding, ceil_mode,
                             count_include_pad, divisor_override)

    def max_pool2d(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                   return_indices=False):
        from .ao.nn.quantized import functional as qF
        return qF.max_pool2d(self, kernel_size, stride, padding, dilation, ceil_mode,
                             return_indices)

    def numpy(self, *args, **kwargs):
        raise TypeError("Got unsupported ScalarType " + self.dtype.name.capitalize())

    def __repr__(self):
        from ._qtensor_str import qtensor_repr
        return qtensor_repr(self)

    def __reduce_ex__(self, protocol):
        return (_rebuild_q, (np.array(self._ints(), copy=True), self.dtype.name,
                             self._qparams))

    def __deepcopy__(self, memo):
        return self.clone()

    def _refuse(self, *args, **kwargs):
        return QTensor._array.fget(self)

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _refuse
    __matmul__ = _refuse


def _rebuild_q(ints, dtype_name, qparams):
    q = QTensor._from_int(ints, _QDTYPES[dtype_name], 1.0, 0)
    q._qparams = qparams
    return q


# ---- creation ------------------------------------------------------------------------

def _check_qdtype(dtype, fn):
    if not isinstance(dtype, _QDtype):
        raise RuntimeError(f"{fn}(): Expected a quantized dtype (torch.qint8, torch.quint8 "
                           f"or torch.qint32), but got {dtype}")
    return dtype


def check_qparams(scale, zero_point, dtype):
    """PyTorch's checks on one (scale, zero_point) pair for `dtype`."""
    scale = float(scale)
    if not (scale > 0 and math.isfinite(scale)):
        raise RuntimeError(f"quantize: scale must be a positive finite number, got {scale}")
    zero_point = int(zero_point)
    if not dtype.qmin <= zero_point <= dtype.qmax:
        raise RuntimeError(f"quantize: zero_point {zero_point} is out of range "
                           f"[{dtype.qmin}, {dtype.qmax}] for {dtype}")
    return scale, zero_point


def _float_input(x, fn):
    if not isinstance(x, Tensor) or not x.dtype.is_floating_point:
        got = x.dtype if isinstance(x, Tensor) else type(x).__name__
        raise RuntimeError(f"{fn}(): Quantize only works on Float Tensor, got {got}")
    return np.asarray(x.detach()._host(), dtype=np.float32, order="C")   # keeps 0-d


def quantize_per_tensor(input, scale, zero_point, dtype):
    """Quantize a float tensor with one scale and zero point (``torch.quantize_per_tensor``).

    Example:
        >>> q = nbtorch.quantize_per_tensor(nbtorch.tensor([-1.0, 0.5]), 0.1, 10, nbtorch.quint8)
        >>> q.int_repr()
        tensor([ 0, 15], dtype=torch.uint8)
    """
    if isinstance(input, (list, tuple)):
        return [quantize_per_tensor(t, s, z, dtype) for t, s, z in zip(input, scale, zero_point)]
    dtype = _check_qdtype(dtype, "quantize_per_tensor")
    if isinstance(scale, Tensor):
        scale = scale.item()
    if isinstance(zero_point, Tensor):
        zero_point = zero_point.item()
    scale, zero_point = check_qparams(scale, zero_point, dtype)
    x = _float_input(input, "quantize_per_tensor")
    out = np.empty(x.shape, dtype.underlying.np)
    # qint32 takes fbgemm's scalar path: two float32 roundings, not the 8-bit loop's FMA
    kernel = _kernels().quantize_per_tensor_int32 if dtype is qint32 else \
        _kernels().quantize_per_tensor
    kernel(x.reshape(-1), out.reshape(-1), scale, zero_point, dtype.qmin, dtype.qmax)
    return QTensor._from_int(out, dtype, scale, zero_point)


def quantize_per_tensor_dynamic(input, dtype, reduce_range):
    """Quantize with qparams chosen from the tensor's own min and max (uint8/int8), by
    ATen's ChooseQuantizationParams (a double scale of at least 6.1e-5: values much
    smaller than that quantize to the zero point, as in PyTorch)."""
    from .ao.nn.quantized.dynamic.linear import choose_qparams_dynamic
    dtype = _check_qdtype(dtype, "quantize_per_tensor_dynamic")
    if dtype is qint32:
        raise RuntimeError("dtype QInt32not supported")     # PyTorch's words
    x = _float_input(input, "quantize_per_tensor_dynamic")
    if x.size == 0:
        raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    scale, zp = choose_qparams_dynamic(float(x.min()), float(x.max()), dtype.qmin,
                                       dtype.qmax, bool(reduce_range), float32=False)
    return quantize_per_tensor(input, scale, zp, dtype)


def quantize_per_channel(input, scales, zero_points, axis, dtype):
    """Quantize with one (scale, zero point) per slice along `axis`
    (``torch.quantize_per_channel``)."""
    dtype = _check_qdtype(dtype, "quantize_per_channel")
    x = _float_input(input, "quantize_per_channel")
    s = np.asarray(scales._host() if isinstance(scales, Tensor) else scales, np.float64)
    z = np.asarray(zero_points._host() if isinstance(zero_points, Tensor) else zero_points)
    if not 0 <= axis < max(x.ndim, 1):
        raise RuntimeError(f"Channel axis out of range in per channel affine quantization. "
                           f"Got: {axis}Expected: < {x.ndim}")
    if s.shape != (x.shape[axis],) or z.shape != s.shape:
        raise RuntimeError(f"length of scales must equal to channel, expected "
                           f"{x.shape[axis]} got, {s.size}")
    if _float_zero_points(z):          # per_channel_affine_float_qparams (embeddings)
        if dtype is not quint8:
            raise RuntimeError("Expected dtype to be quint8 or quint4x2 for float qparams, "
                               f"got {dtype}")
        s, z = s.astype(np.float32), z.astype(np.float32)
        out = quantize_float_qparams(x, s, z, axis, dtype.qmin, dtype.qmax)
        return QTensor._from_int(out.astype(dtype.underlying.np), dtype, scales=s,
                                 zero_points=z, axis=axis)
    z = z.astype(np.int64)
    for sc, zp in zip(s, z):
        check_qparams(sc, zp, dtype)
    out = np.empty(x.shape, dtype.underlying.np)
    _kernels().quantize_per_channel(x, out, s, z, axis, dtype.qmin, dtype.qmax)
    return QTensor._from_int(out, dtype, scales=s, zero_points=z, axis=axis)


def dequantize(tensor):
    """``torch.dequantize``: float32 values of a quantized tensor (a float tensor: itself)."""
    if isinstance(tensor, (list, tuple)):
        return [dequantize(t) for t in tensor]
    return tensor.dequantize()


def _dequantize_method(self):
    """``Tensor.dequantize``: a float tensor is returned as it is."""
    if self.dtype is _dtype.float32:
        return self
    raise RuntimeError(f"dequantize() expects a quantized or float32 tensor, got {self.dtype}")


_QUANTIZED_ONLY = ("q_scale", "q_zero_point", "q_per_channel_scales",
                   "q_per_channel_zero_points", "q_per_channel_axis", "qscheme", "int_repr")


def _quantized_only(name):
    def method(self, *args, **kwargs):
        raise NotImplementedError(f"Could not run 'aten::{name}' with arguments from the "
                                  f"'{self.device.type.upper()}' backend (a {self.dtype} "
                                  f"tensor: it is not quantized)")
    method.__name__ = name
    return method


def _function(name):
    def fn(input):
        return getattr(input, name)()
    fn.__name__ = name
    fn.__doc__ = f"``torch.{name}(x)``: ``x.{name}()`` of a quantized tensor."
    return fn


q_scale, q_zero_point, q_per_channel_scales, q_per_channel_zero_points, \
    q_per_channel_axis, int_repr = (_function(n) for n in _QUANTIZED_ONLY if n != "qscheme")


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max):
    """``torch.fake_quantize_per_tensor_affine`` (straight-through gradient)."""
    from .ao.quantization import fake_quantize as fq
    return fq.fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max)


def fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min, quant_max):
    """``torch.fake_quantize_per_channel_affine`` (straight-through gradient)."""
    from .ao.quantization import fake_quantize as fq
    return fq.fake_quantize_per_channel_affine(input, scale, zero_point, axis, quant_min,
                                               quant_max)


def install():
    """Tensor.is_quantized / dequantize and the quantized-only methods for plain tensors
    (which refuse, as PyTorch's)."""
    Tensor.is_quantized = False
    Tensor.dequantize = _dequantize_method
    for name in _QUANTIZED_ONLY:
        setattr(Tensor, name, _quantized_only(name))


install()
from . import _qtensor_ops  # noqa: E402  (comparisons, copy_, mean, max, topk ...)
from ._qtensor_ops import quantized_cat, rebuild_quantized  # noqa: E402,F401
_qtensor_ops.install(QTensor)
