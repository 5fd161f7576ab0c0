"""Observers: modules that watch a tensor's values and choose its (scale, zero_point).

An observer returns its input unchanged and records statistics (running min/max, a
histogram). ``calculate_qparams()`` turns them into quantization parameters with
PyTorch's formulas (`_qparams_from_minmax`), computed in float32 as PyTorch does, so
the same calibration data gives the same scales and zero points. Statistics are kept
in NumPy (one reduction per call); the buffers are tensors so state dicts match
PyTorch's names (``min_val``, ``max_val``, ``histogram``).
"""
import functools
import math
import warnings

import numpy as np

import nbtorch
from nbtorch import nn
from nbtorch._qtensor import (qint8, quint8, qint32, per_tensor_affine, per_channel_affine,
                              per_tensor_symmetric, per_channel_symmetric,
                              per_channel_affine_float_qparams)

__all__ = ["ObserverBase", "UniformQuantizationObserverBase", "MinMaxObserver",
           "MovingAverageMinMaxObserver", "PerChannelMinMaxObserver",
           "MovingAveragePerChannelMinMaxObserver", "HistogramObserver",
           "PlaceholderObserver", "NoopObserver", "default_observer",
           "default_weight_observer", "default_per_channel_weight_observer",
           "default_histogram_observer", "default_dynamic_quant_observer",
           "choose_qparams_from_minmax", "FixedQParamsObserver", "RecordingObserver",
           "ReuseInputObserver", "default_placeholder_observer", "default_debug_observer",
           "default_reuse_input_observer", "default_float_qparams_observer",
           "weight_observer_range_neg_127_to_127",
           "per_channel_weight_observer_range_neg_127_to_127",
           "default_fixed_qparams_range_0to1_observer",
           "default_fixed_qparams_range_neg1to1_observer",
           "default_symmetric_fixed_qparams_observer",
           "default_affine_fixed_qparams_observer"]

_EPS = float(np.finfo(np.float32).eps)
_F32 = np.float32


def _qrange(dtype, reduce_range, quant_min, quant_max):
    """PyTorch's calculate_qmin_qmax: the integer range an observer quantizes to."""
    if quant_min is not None and quant_max is not None:
        lo, hi = quant_min, quant_max
        if not lo <= 0 <= hi:
            raise ValueError("Used-specified quantization range must include 0.")
        if lo >= hi:
            raise ValueError("qmin must be strictly less than qmax for user-specified "
                             "quantization range.")
        return (lo // 2, hi // 2) if reduce_range else (lo, hi)
    if dtype is qint8:
        return (-64, 63) if reduce_range else (-128, 127)
    if dtype is quint8:
        return (0, 127) if reduce_range else (0, 255)
    if dtype is qint32:
        return -(2 ** 31), 2 ** 31 - 1
    raise ValueError(f"observer: unsupported dtype {dtype}")


def _qparams_from_minmax(min_val, max_val, qmin, qmax, qscheme, dtype, eps,
                         customized=False):
    """Scales (float32) and zero points (int64) from min/max arrays (PyTorch's
    _calculate_qparams: the range always includes 0; symmetric schemes centre it)."""
    min_val = np.asarray(min_val, _F32)
    max_val = np.asarray(max_val, _F32)
    if np.any(min_val > max_val):
        raise ValueError(f"min {min_val} should be less than max {max_val}")
    eps = _F32(eps)
    min_neg = np.minimum(min_val, _F32(0))
    max_pos = np.maximum(max_val, _F32(0))
    if qscheme in (per_tensor_symmetric, per_channel_symmetric):
        max_pos = np.maximum(-min_neg, max_pos)
        scale = np.maximum(max_pos / _F32((qmax - qmin) / 2), eps).astype(_F32)
        zp_value = ((qmin + qmax) // 2 if customized else 128) if dtype is quint8 else 0
        zero_point = np.full(scale.shape, zp_value, np.int64)
    elif qscheme is per_channel_affine_float_qparams:
        scale = ((max_val - min_val) / _F32(qmax - qmin)).astype(_F32)
        scale = np.where(scale > eps, scale, _F32(1)).astype(_F32)
        zero_point = -1 * min_val / scale      # float zero points (embedding qparams)
    else:
        scale = np.maximum((max_pos - min_neg) / _F32(qmax - qmin), eps).astype(_F32)
        zero_point = qmin - np.rint(min_neg / scale).astype(np.int64)
        zero_point = np.clip(zero_point, qmin, qmax)
    return scale, zero_point


def choose_qparams_from_minmax(lo, hi, qmin, qmax):
    """(scale, zero_point) as Python numbers for an affine per-tensor range (the dynamic
    quantization of activations)."""
    s, z = _qparams_from_minmax(lo, hi, qmin, qmax, per_tensor_affine, quint8, _EPS)
    return float(s), int(z)


def _host(t):
    return t.detach()._host()


class _PartialWrapper:
    """A class with some constructor arguments bound (``Observer.with_args(...)``)."""

    def __init__(self, p):
        self.p = p

    def __call__(self, *args, **kwargs):
        return self.p(*args, **kwargs)

    def __repr__(self):
        return self.p.__repr__()

    with_args = lambda self, **kw: _PartialWrapper(functools.partial(self.p, **kw))  # noqa


def _with_args(cls_or_self, **kwargs):
    return _PartialWrapper(functools.partial(cls_or_self, **kwargs))


class ObserverBase(nn.Module):
    """Base of all observers: `forward` records, `calculate_qparams` decides."""

    def __init__(self, dtype, is_dynamic=False):
        super().__init__()
        self.dtype = dtype
        self.is_dynamic = is_dynamic

    def forward(self, x):
        raise NotImplementedError

    def calculate_qparams(self, **kwargs):
        raise NotImplementedError

    with_args = classmethod(_with_args)


class UniformQuantizationObserverBase(ObserverBase):
    """Observers with a uniform (affine or symmetric) quantization grid."""

    _version = 3        # PyTorch's: its loader reads older versions' min_vals/max_vals

    def __init__(self, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        super().__init__(dtype, is_dynamic)
        self.qscheme = qscheme
        if reduce_range:
            warnings.warn("Please use quant_min and quant_max to specify the range for "
                          "observers. reduce_range will be deprecated in a future "
                          "release of PyTorch.", stacklevel=2)
        self.reduce_range = reduce_range
        # a buffer, as PyTorch's (its observers' state_dicts carry 'eps')
        self.register_buffer("eps", nbtorch.tensor([float(eps)], dtype=nbtorch.float32))
        if qscheme not in (per_tensor_affine, per_tensor_symmetric, per_channel_affine,
                           per_channel_symmetric, per_channel_affine_float_qparams):
            raise AssertionError("Default Observer only works for per_tensor_affine, "
                                 "per_tensor_symmetric, per_channel_affine, "
                                 "per_channel_symmetric and per_channel_float_qparams "
                                 "quantization scheme")
        if dtype not in (qint8, quint8, qint32):
            raise AssertionError("Default Observer only works for qint8, quint8 and "
                                 "quint4x2 data type")
        self.has_customized_qrange = quant_min is not None and quant_max is not None
        self.quant_min, self.quant_max = _qrange(dtype, reduce_range, quant_min, quant_max)

    def _calculate_qparams(self, min_val, max_val):
        if np.all(np.isinf(min_val)) and np.all(np.isinf(max_val)):
            # no data seen: PyTorch's warning and default qparams (it raised before)
            warnings.warn("must run observer before calling calculate_qparams. Returning "
                          "default values.", stacklevel=3)
            return nbtorch.tensor([1.0]), nbtorch.tensor([0])
        scale, zp = _qparams_from_minmax(min_val, max_val, self.quant_min, self.quant_max,
                                         self.qscheme, self.dtype, float(self.eps[0]),
                                         self.has_customized_qrange)
        if scale.ndim == 0:
            scale, zp = scale.reshape(1), zp.reshape(1)
        if zp.dtype.kind == "i":
            zp = zp.astype(np.int32)    # PyTorch's zero points are int32
        return nbtorch.tensor(scale), nbtorch.tensor(zp)


class MinMaxObserver(UniformQuantizationObserverBase):
    """The running min and max of every value seen."""

    def __init__(self, dtype=quint8, qscheme=per_tensor_affine, reduce_range=False,
                 quant_min=None, quant_max=None, factory_kwargs=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        if qscheme is per_tensor_symmetric and reduce_range and dtype is quint8:
            raise NotImplementedError("Cannot reduce range for symmetric quantization "
                                      "for quint8")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max,
                         factory_kwargs, eps, is_dynamic, **kwargs)
        self.register_buffer("min_val", nbtorch.tensor(float("inf")))
        self.register_buffer("max_val", nbtorch.tensor(float("-inf")))

    def _update(self, lo, hi):
        self.min_val.fill_(min(lo, self.min_val.item()))
        self.max_val.fill_(max(hi, self.max_val.item()))

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        x = _host(x_orig)
        self._update(float(x.min()), float(x.max()))
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(_host(self.min_val), _host(self.max_val))

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"

    def reset_min_max_vals(self):
        self.min_val.fill_(float("inf"))
        self.max_val.fill_(float("-inf"))


class MovingAverageMinMaxObserver(MinMaxObserver):
    """min/max as moving averages: m += c * (batch_min - m) (the first batch sets them)."""

    def __init__(self, averaging_constant=0.01, dtype=quint8, qscheme=per_tensor_affine,
                 reduce_range=False, quant_min=None, quant_max=None, eps=_EPS,
                 is_dynamic=False, **kwargs):
        self.averaging_constant = averaging_constant
        super().__init__(dtype=dtype, qscheme=qscheme, reduce_range=reduce_range,
                         quant_min=quant_min, quant_max=quant_max, eps=eps,
                         is_dynamic=is_dynamic, **kwargs)

    def _update(self, lo, hi):
        cur_lo, cur_hi = self.min_val.item(), self.max_val.item()
        if math.isinf(cur_lo) and math.isinf(cur_hi):
            new_lo, new_hi = lo, hi
        else:
            c = _F32(self.averaging_constant)
            new_lo = float(_F32(cur_lo) + c * (_F32(lo) - _F32(cur_lo)))
            new_hi = float(_F32(cur_hi) + c * (_F32(hi) - _F32(cur_hi)))
        self.min_val.fill_(new_lo)
        self.max_val.fill_(new_hi)


class PerChannelMinMaxObserver(UniformQuantizationObserverBase):
    """min/max per slice along `ch_axis` (weights: one scale per output channel)."""

    def __init__(self, ch_axis=0, dtype=quint8, qscheme=per_channel_affine,
                 reduce_range=False, quant_min=None, quant_max=None, factory_kwargs=None,
                 eps=_EPS, is_dynamic=False, **kwargs):
        if qscheme not in (per_channel_affine, per_channel_symmetric,
                           per_channel_affine_float_qparams):
            raise NotImplementedError("Cannot use per-tensor qscheme with per-channel "
                                      "observers")
        super().__init__(dtype, qscheme, reduce_range, quant_min, quant_max,
                         factory_kwargs, eps, is_dynamic, **kwargs)
        self.ch_axis = ch_axis
        self.register_buffer("min_val", nbtorch.tensor([]))
        self.register_buffer("max_val", nbtorch.tensor([]))

    def _batch_minmax(self, x):
        y = np.moveaxis(x, self.ch_axis, 0).reshape(x.shape[self.ch_axis], -1)
        return y.min(axis=1), y.max(axis=1)

    def _combine(self, lo, hi):
        old_lo, old_hi = _host(self.min_val), _host(self.max_val)
        if old_lo.size == 0:
            return lo, hi
        return np.minimum(old_lo, lo), np.maximum(old_hi, hi)

    def forward(self, x_orig):
        if x_orig.numel() == 0:
            return x_orig
        lo, hi = self._combine(*self._batch_minmax(_host(x_orig).astype(_F32)))
        self.min_val = nbtorch.tensor(lo.astype(_F32))
        self.max_val = nbtorch.tensor(hi.astype(_F32))
        return x_orig

    def calculate_qparams(self):
        return self._calculate_qparams(_host(self.min_val), _host(self.max_val))

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}"


class MovingAveragePerChannelMinMaxObserver(PerChannelMinMaxObserver):
    """Per-channel moving-average min/max (QAT weights)."""

    def __init__(self, averaging_constant=0.01, ch_axis=0, dtype=quint8,
                 qscheme=per_channel_affine, reduce_range=False, quant_min=None,
                 quant_max=None, eps=_EPS, is_dynamic=False, **kwargs):
        super().__init__(ch_axis=ch_axis, dtype=dtype, qscheme=qscheme,
                         reduce_range=reduce_range, quant_min=quant_min,
                         quant_max=quant_max, eps=eps, is_dynamic=is_dynamic, **kwargs)
        self.averaging_constant = averaging_constant

    def _combine(self, lo, hi):
        old_lo, old_hi = _host(self.min_val), _host(self.max_val)
        if old_lo.size == 0:
            return lo, hi
        c = _F32(self.averaging_constant)
        return old_lo + c * (lo - old_lo), old_hi + c * (hi - old_hi)


class PlaceholderObserver(ObserverBase):
    """Records nothing: stands for a dtype (dynamic quantization's activations)."""

    def __init__(self, dtype=nbtorch.float32, custom_op_name="", compute_dtype=None,
                 quant_min=None, quant_max=None, qscheme=None, eps=None,
                 is_dynamic=False):
        super().__init__(dtype, is_dynamic)
        self.qscheme = per_tensor_affine if qscheme is None else qscheme
        self.quant_min, self.quant_max, self.eps = quant_min, quant_max, eps

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for PlaceholderObserver")


class NoopObserver(PlaceholderObserver):
    """Does nothing (float16 weights)."""

    def __init__(self, dtype=nbtorch.float16, custom_op_name=""):
        super().__init__(dtype)


class FixedQParamsObserver(ObserverBase):
    """Observes nothing: fixed (scale, zero_point) for outputs whose range is known
    (sigmoid: [0, 1], tanh: [-1, 1])."""

    def __init__(self, scale, zero_point, dtype=quint8, qscheme=per_tensor_affine,
                 quant_min=0, quant_max=255, is_dynamic=False, **kwargs):
        if is_dynamic:
            raise NotImplementedError("FixedQParamsObserver doesn't support dynamic "
                                      "quantization")
        super().__init__(dtype, is_dynamic)
        self.quant_min, self.quant_max, self.qscheme = quant_min, quant_max, qscheme
        self.register_buffer("scale", nbtorch.tensor([float(scale)], dtype=nbtorch.float32))
        self.register_buffer("zero_point", nbtorch.tensor([int(zero_point)],
                                                          dtype=nbtorch.int32))

    def forward(self, X):
        return X

    def calculate_qparams(self):
        return self.scale, self.zero_point


class RecordingObserver(ObserverBase):
    """Records a copy of every tensor it sees (debugging: ``get_tensor_value()``)."""

    def __init__(self, dtype=quint8):
        super().__init__(dtype, False)
        self.tensor_val = []

    def forward(self, x):
        self.tensor_val.append(x.clone())
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for RecordingObserver")

    def get_tensor_value(self):
        return self.tensor_val


class ReuseInputObserver(ObserverBase):
    """Stands for the observer of the op's input (reshape-like ops; FX mode in PyTorch)."""

    def __init__(self):
        super().__init__(quint8, False)

    def forward(self, x):
        return x

    def calculate_qparams(self):
        raise Exception("calculate_qparams should not be called for ReuseInputObserver")


from .histogram_observer import HistogramObserver  # noqa: E402  (builds on the above)

default_observer = MinMaxObserver.with_args(quant_min=0, quant_max=127)
default_weight_observer = MinMaxObserver.with_args(dtype=qint8, qscheme=per_tensor_symmetric)
default_per_channel_weight_observer = PerChannelMinMaxObserver.with_args(
    dtype=qint8, qscheme=per_channel_symmetric)
default_histogram_observer = HistogramObserver.with_args(quant_min=0, quant_max=127)
default_dynamic_quant_observer = PlaceholderObserver.with_args(
    dtype=quint8, quant_min=0, quant_max=255, is_dynamic=True)
default_placeholder_observer = PlaceholderObserver
default_debug_observer = RecordingObserver
default_reuse_input_observer = ReuseInputObserver
default_float_qparams_observer = PerChannelMinMaxObserver.with_args(
    dtype=quint8, qscheme=per_channel_affine_float_qparams, ch_axis=0)
weight_observer_range_neg_127_to_127 = MinMaxObserver.with_args(
    dtype=qint8, qscheme=per_tensor_symmetric, quant_min=-127, quant_max=127, eps=2 ** -12)
per_channel_weight_observer_range_neg_127_to_127 = PerChannelMinMaxObserver.with_args(
    dtype=qint8, qscheme=per_channel_symmetric, quant_min=-127, quant_max=127, eps=2 ** -12)
default_fixed_qparams_range_0to1_observer = FixedQParamsObserver.with_args(
    scale=1.0 / 256.0, zero_point=0, dtype=quint8, quant_min=0, quant_max=255)
default_fixed_qparams_range_neg1to1_observer = FixedQParamsObserver.with_args(
    scale=2.0 / 256.0, zero_point=128, dtype=quint8, quant_min=0, quant_max=255)
default_symmetric_fixed_qparams_observer = default_fixed_qparams_range_neg1to1_observer
default_affine_fixed_qparams_observer = default_fixed_qparams_range_0to1_observer
