"""Quantized activations (``torch.ao.nn.quantized`` Hardswish, ELU, LeakyReLU, Sigmoid,
Dropout and the functional hardswish / elu / leaky_relu / hardtanh / hardsigmoid /
sigmoid / tanh / clamp).

Each dequantizes as fbgemm's vectorised loops do (``fma(scale, q, -zp * scale)``),
applies the float function in float32 and requantizes as ``rint(y / out_scale) +
out_zp`` (the rounding happens before the zero point is added). Clamps (hardtanh,
clamp) work on the integers. sigmoid, tanh and hardsigmoid give PyTorch's fixed output
qparams (1/256 or 2/256 over the dtype's range); leaky_relu and hardtanh keep the
input's, as PyTorch's float API does on quantized tensors.
"""
import numpy as np

from nbtorch import nn
from nbtorch._qtensor import QTensor, quint8, check_qparams

from nbtorch.fx import wrap as _wrap
from .functional import _check_q
from .ops import (quantized_hardswish as _q_hardswish, quantized_elu as _q_elu,
                  quantized_leaky_relu as _q_leaky_relu)

for _name in ("_q_hardswish", "_q_elu", "_q_leaky_relu"):    # one graph node each (ops.py)
    _wrap(_name)

__all__ = ["hardswish", "elu", "celu", "threshold", "leaky_relu", "hardtanh", "hardsigmoid", "sigmoid", "tanh",
           "clamp", "float_activation", "Hardswish", "ELU", "LeakyReLU", "Sigmoid",
           "Softmax", "Dropout"]

_F32 = np.float32


def _dequantize(x):
    """float32 values as fbgemm's vectorised dequantize: one rounding of
    scale * q + float32(-zp * scale)."""
    s, z = x._qparams
    s32 = _F32(s)
    premul = _F32(s32 * _F32(-z))
    q = np.asarray(x._ints(), np.float64)
    return (np.float64(s32) * q + np.float64(premul)).astype(_F32)


def _requantize(y, scale, zero_point, dtype):
    """rint(y * float32(1 / scale)) + zero_point, saturated (PyTorch's Vec::quantize)."""
    inv = _F32(1) / _F32(scale)
    q = np.rint(np.minimum(y.astype(_F32) * inv, _F32(2 ** 31 - 128))) + zero_point
    out = np.clip(q, dtype.qmin, dtype.qmax).astype(dtype.underlying.np)
    return QTensor._from_int(out, dtype, scale, zero_point)


def _float_op(x, fn, scale, zero_point, name):
    x = _check_q(x, f"quantized::{name}")
    scale, zero_point = check_qparams(scale, zero_point, x.dtype)
    with np.errstate(over="ignore"):
        return _requantize(fn(_dequantize(x)), scale, zero_point, x.dtype)


def hardswish(input, scale, zero_point):
    """x * relu6(x + 3) / 6, requantized to (scale, zero_point)."""
    return _float_op(input, lambda x: x * np.minimum(np.maximum(x + _F32(3), _F32(0)),
                                                     _F32(6)) / _F32(6),
                     scale, zero_point, "hardswish")


def elu(input, scale, zero_point, alpha=1.0):
    """x where x >= 0, else (exp(x) - 1) * alpha; requantized to (scale, zero_point)."""
    a = _F32(alpha)
    return _float_op(input, lambda x: np.where(x >= 0, x, (np.exp(x) - _F32(1)) * a),
                     scale, zero_point, "elu")


def celu(input, scale, zero_point, alpha=1.0):
    """x where x >= 0, else (exp(x / alpha) - 1) * alpha; requantized."""
    a = _F32(alpha)
    return _float_op(input, lambda x: np.where(x >= 0, x, (np.exp(x * (_F32(1) / a)) -
                                                           _F32(1)) * a),
                     scale, zero_point, "celu")


def threshold(input, threshold, value):
    """x where x > threshold, else value; the input's qparams."""
    x = _check_q(input, "quantized::threshold")
    t, v = _F32(threshold), _F32(value)
    return _float_op(x, lambda y: np.where(y > t, y, v), *x._qparams, "threshold")


def leaky_relu(input, negative_slope=0.01, inplace=False, scale=None, zero_point=None):
    """x where x > 0, else x * negative_slope; output qparams (scale, zero_point), the
    input's when not given."""
    x = _check_q(input, "quantized::leaky_relu")
    if scale is None:
        scale, zero_point = x._qparams
    slope = _F32(negative_slope)
    return _float_op(x, lambda v: np.where(v > 0, v, v * slope), scale, zero_point,
                     "leaky_relu")


def _fixed_qparams(x, scale, zero_points):
    return scale, zero_points[0] if x.dtype is quint8 else zero_points[1]


def sigmoid(input):
    """1 / (1 + exp(-x)) with PyTorch's fixed output qparams (1/256, 0 or -128)."""
    x = _check_q(input, "quantized::sigmoid")
    scale, zp = _fixed_qparams(x, 1.0 / 256, (0, -128))
    return _float_op(x, lambda v: _F32(1) / (_F32(1) + np.exp(-v)), scale, zp, "sigmoid")


def tanh(input):
    """tanh(x) with PyTorch's fixed output qparams (2/256, 128 or 0)."""
    x = _check_q(input, "quantized::tanh")
    scale, zp = _fixed_qparams(x, 2.0 / 256, (128, 0))
    return _float_op(x, np.tanh, scale, zp, "tanh")


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6 with PyTorch's fixed output qparams (1/256, 0 or -128)."""
    x = _check_q(input, "quantized::hardsigmoid")
    scale, zp = _fixed_qparams(x, 1.0 / 256, (0, -128))
    return _float_op(x, lambda v: np.minimum(np.maximum(v + _F32(3), _F32(0)), _F32(6)) /
                     _F32(6), scale, zp, "hardsigmoid")


def _quantize_bound(v, scale, zero_point, dtype):
    """A float bound as an integer: zp + rint(v * float32(1 / scale)), saturated."""
    q = np.rint(_F32(v) * (_F32(1) / _F32(scale))) + zero_point
    return int(min(max(q, dtype.qmin), dtype.qmax))


def clamp(input, min_, max_):
    """Clamp on the integers (the bounds quantized with the input's qparams)."""
    x = _check_q(input, "quantized::clamp")
    s, z = x._qparams
    lo = x.dtype.qmin if min_ is None else _quantize_bound(min_, s, z, x.dtype)
    hi = x.dtype.qmax if max_ is None else _quantize_bound(max_, s, z, x.dtype)
    out = np.clip(x._ints(), lo, hi).astype(x.dtype.underlying.np)
    return QTensor._from_int(out, x.dtype, s, z)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """clamp(x, min_val, max_val) on the integers, the input's qparams."""
    return clamp(input, min_val, max_val)


def float_activation(kind, input, params):
    """What the float API (F.hardtanh, F.relu6, F.leaky_relu, F.hardsigmoid) does with a
    quantized tensor, as PyTorch's; other activations refuse it with PyTorch's error."""
    if kind == "Hardtanh":
        return hardtanh(input, *params)
    if kind == "LeakyRelu":
        return leaky_relu(input, *params)
    if kind == "Hardsigmoid":
        return hardsigmoid(input)
    raise NotImplementedError(f"Could not run 'aten::{kind.lower()}' with arguments from "
                              "the 'QuantizedCPU' backend (use the quantized module, e.g. "
                              "nnq.Hardswish / nnq.ELU, or dequantize() first)")


class _OutputQParams(nn.Module):
    """An activation with its own output (scale, zero_point) from the observer, saved in
    the state dict as PyTorch's float32 / int64 buffers (so the scale is a float32)."""

    def __init__(self, scale, zero_point):
        super().__init__()
        self.scale, self.zero_point = float(np.float32(scale)), int(zero_point)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        from .modules import _save_qparams
        super()._save_to_state_dict(destination, prefix, keep_vars)
        _save_qparams(destination, prefix, self.scale, self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        from .modules import _pop_qparams
        _pop_qparams(self, state_dict, prefix, missing_keys)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def _get_name(self):
        return "Quantized" + type(self).__name__

    @classmethod
    def _qparams_of(cls, mod):
        from .modules import _output_qparams
        return _output_qparams(mod)


class Hardswish(_OutputQParams):
    """Quantized Hardswish (``nnq.Hardswish(scale, zero_point)``)."""

    def forward(self, input):
        return _q_hardswish(input, self.scale, self.zero_point)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(*cls._qparams_of(mod))


class ELU(nn.Module):
    """Quantized ELU (``nnq.ELU(scale, zero_point, alpha)``; plain attributes, no state,
    as PyTorch's)."""

    def __init__(self, scale, zero_point, alpha=1.0):
        super().__init__()
        self.scale, self.zero_point, self.alpha = scale, zero_point, alpha

    def _get_name(self):
        return "QuantizedELU"

    def extra_repr(self):
        return f"alpha={self.alpha}"

    def forward(self, input):
        return _q_elu(input, self.scale, self.zero_point, self.alpha)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(*_OutputQParams._qparams_of(mod), mod.alpha)


class LeakyReLU(_OutputQParams):
    """Quantized LeakyReLU (``nnq.LeakyReLU(scale, zero_point, negative_slope)``)."""

    def __init__(self, scale, zero_point, negative_slope=0.01, inplace=False):
        super().__init__(scale, zero_point)
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return _q_leaky_relu(input, self.negative_slope, self.scale, self.zero_point)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(*cls._qparams_of(mod), mod.negative_slope, mod.inplace)


class Sigmoid(nn.Module):
    """Quantized Sigmoid with given output qparams (``nnq.Sigmoid``)."""

    def __init__(self, output_scale, output_zero_point):
        super().__init__()
        self.output_scale, self.output_zero_point = output_scale, output_zero_point

    def forward(self, input):
        return _float_op(input, lambda v: _F32(1) / (_F32(1) + np.exp(-v)),
                         self.output_scale, self.output_zero_point, "sigmoid")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        from .modules import _output_qparams
        return cls(*_output_qparams(mod))


class Softmax(nn.Module):
    """Quantized Softmax(dim, scale, zero_point): float softmax of the dequantized input,
    quantized (PyTorch's x86 path)."""

    def __init__(self, dim=None, scale=1.0, zero_point=0):
        super().__init__()
        self.dim, self.scale, self.zero_point = dim, scale, zero_point

    def forward(self, input):
        import nbtorch
        from nbtorch._qtensor import quantize_per_tensor
        x = _check_q(input, "quantized::softmax")
        dim = self.dim if self.dim is not None else (0 if x.dim() in (0, 1, 3) else 1)
        return quantize_per_tensor(nbtorch.softmax(x.dequantize(), dim), self.scale,
                                   self.zero_point, x.dtype)

    def _get_name(self):
        return "QuantizedSoftmax"

    def extra_repr(self):
        return f"dim={self.dim}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        from .modules import _output_qparams
        return cls(mod.dim, *_output_qparams(mod))


class Dropout(nn.Dropout):
    """Dropout of a quantized model: the identity (inference only), as PyTorch's."""

    def forward(self, input):
        return input

    def _get_name(self):
        return "QuantizedDropout"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(mod.p, mod.inplace)

