"""Dynamically quantized Linear (``torch.ao.nn.quantized.dynamic.Linear``): int8 weights
stored once; each call quantizes its float input to uint8 with qparams from the input's
own min/max (7-bit range, as fbgemm's ``linear_dynamic`` with reduce_range), runs the
int8 GEMM and returns float32 ``acc * (s_x * s_w) + bias``."""
import math

import numpy as np

import nbtorch
from nbtorch import nn
from nbtorch._qtensor import qint8

from nbtorch.fx import wrap as _wrap
from .. import functional as qF
from ..ops import quantized_linear_dynamic as _q_linear_dynamic
from ..modules import (_quantize_weight, _save_qparams, _save_packed,
                       _pop_weight_bias)

_wrap("_q_linear_dynamic")      # jit.trace / fx record one call_function (see ../ops.py)

__all__ = ["Linear", "LinearReLU", "Float16Weight", "choose_qparams_dynamic", "linear_dynamic",
           "pack_weight", "packed_from_state"]

_SMALL_SCALE = float(np.float32(6.1e-5))     # C++ SMALL_SCALE_THRESHOLD is a float


def choose_qparams_dynamic(lo, hi, qmin=0, qmax=255, reduce_range=True, float32=True,
                           preserve_sparsity=False):
    """ATen's ChooseQuantizationParams: (scale, zero_point) for values in [lo, hi].

    The range is widened to include 0; the scale is computed in double (returned as
    float32 for fbgemm's dynamic linear, as double for quantize_per_tensor_dynamic:
    `float32`); scales below 6.1e-5 are raised to it (so tiny inputs quantize to the
    zero point, as in PyTorch); the zero point comes from whichever end loses less
    precision, rounded half to even and clamped. `preserve_sparsity` (the fused QAT
    fake-quantize of symmetric schemes) centres the range: scale max(-lo / 128, hi / 127)
    for int8, zero point the middle of [qmin, qmax].
    """
    f32 = np.float32
    if reduce_range:
        qmin, qmax = qmin // 2, qmax // 2
    if preserve_sparsity and lo < 0 < hi:      # float32 arithmetic, as ATen's
        sym_min, sym_max = -((qmax - qmin) // 2 + 1), (qmax - qmin) // 2
        max_scale = float(max(abs(f32(lo) / f32(sym_min)), abs(f32(hi) / f32(sym_max))))
        lo, hi = float(f32(max_scale * sym_min)), float(f32(max_scale * sym_max))
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = (hi - lo) / (qmax - qmin)
    if np.float32(scale) == 0 or math.isinf(1.0 / np.float32(scale)):
        scale = 0.1
    if scale < _SMALL_SCALE:          # in float32, as ATen's (min, max are floats there)
        org = f32(scale)
        scale = _SMALL_SCALE
        if lo == 0.0:
            hi = float(f32(scale) * f32(qmax - qmin))
        elif hi == 0.0:
            lo = float(-f32(scale) * f32(qmax - qmin))
        else:
            amplifier = f32(scale) / org
            lo, hi = float(f32(lo) * amplifier), float(f32(hi) * amplifier)
    zp_min, zp_max = qmin - lo / scale, qmax - hi / scale
    err_min = abs(qmin) - abs(lo / scale)
    err_max = abs(qmax) - abs(hi / scale)
    initial = zp_min if err_min < err_max else zp_max
    if preserve_sparsity and lo < 0 < hi:
        initial = (qmin + qmax) / 2
    zp = qmin if initial < qmin else qmax if initial > qmax else int(np.rint(initial))
    return (float(np.float32(scale)) if float32 else float(scale)), zp


class Float16Weight:
    """A weight kept as float16 (``quantize_dynamic(dtype=torch.float16)``): clamped to
    float16's range and rounded to it, then multiplied in float32, as fbgemm's fp16
    GEMM does. The same interface as `PackedWeight` where the layers use it."""

    dtype = nbtorch.float16

    def __init__(self, weight, bias):
        w = np.asarray(weight.detach()._host(), np.float32)
        self.w = np.clip(w, -65504, 65504).astype(np.float16).astype(np.float32)
        self.shape = self.w.shape
        self.qweight = nbtorch.from_numpy(self.w)       # what weight() gives: float32
        self.has_bias = bias is not None
        self.bias = (np.zeros(self.shape[0], np.float32) if bias is None
                     else np.asarray(bias.detach()._host(), np.float32))


def pack_weight(weight, bias, qconfig):
    """The packed weight `qconfig` asks for: float16 when its weight observer's dtype is
    float16, else int8 quantized by that observer."""
    observer = qconfig.weight()
    if getattr(observer, "dtype", None) is nbtorch.float16:
        return Float16Weight(weight, bias)
    return qF.PackedWeight(_quantize_weight(weight, observer), bias)


def packed_from_state(weight, bias):
    """A packed weight from a state dict's (weight, bias): int8 if the weight is
    quantized, else float16."""
    if getattr(weight, "is_quantized", False):
        return qF.PackedWeight(weight, bias)
    return Float16Weight(weight, bias)


def linear_dynamic(x, packed, reduce_range=True):
    """float x (..., K) @ int8 W^T + b with x quantized on the fly; float32 out (a float16
    weight: a float32 product with its values)."""
    from nbtorch.kernels.cpu import quantized as k
    a = np.ascontiguousarray(x.detach()._host(), np.float32)
    a2 = a.reshape(-1, packed.w.shape[1])
    if isinstance(packed, Float16Weight):
        out = a2 @ packed.w.T + packed.bias
        return nbtorch.from_numpy(np.ascontiguousarray(
            out, np.float32).reshape(a.shape[:-1] + (out.shape[1],)))
    lo, hi = (float(a2.min()), float(a2.max())) if a2.size else (0.0, 0.0)
    scale, zp = choose_qparams_dynamic(lo, hi, reduce_range=reduce_range)
    q = np.empty(a2.shape, np.uint8)
    k.quantize_per_tensor(a2.reshape(-1), q.reshape(-1), scale, zp, 0, 255)
    out = np.empty((a2.shape[0], packed.w.shape[0]), np.float32)
    a_w = (np.float32(scale) * packed.scales.astype(np.float32)).astype(np.float32)
    qF._kernel("quantized_linear_dynamic")(q, zp, packed.w, packed.wp, packed.colsum, a_w,
                                           packed.bias, out)
    return nbtorch.from_numpy(out.reshape(a.shape[:-1] + (out.shape[1],)))


class Linear(nn.Module):
    """Linear with an int8 weight and dynamically quantized input; float in, float out."""

    _version = 4

    def __init__(self, in_features, out_features, bias_=True, dtype=qint8):
        super().__init__()
        if dtype is not qint8 and dtype is not nbtorch.float16:
            raise RuntimeError("Unsupported dtype specified for dynamic quantized Linear!")
        self.in_features, self.out_features = in_features, out_features
        bias = nbtorch.zeros(out_features) if bias_ else None
        if dtype is nbtorch.float16:
            self._packed = Float16Weight(nbtorch.zeros(out_features, in_features), bias)
        else:
            w = nbtorch.quantize_per_tensor(nbtorch.zeros(out_features, in_features), 1.0,
                                            0, qint8)
            self._packed = qF.PackedWeight(w, bias)

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """PyTorch's keys: scale/zero_point (1.0, 0: unused) and the packed weight, bias."""
        super()._save_to_state_dict(destination, prefix, keep_vars)
        _save_qparams(destination, prefix, 1.0, 0)
        _save_packed(destination, prefix, self.weight(), self.bias(), self.dtype)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        wb = _pop_weight_bias(state_dict, prefix)
        if wb is None:
            missing_keys.append(prefix + "_packed_params._packed_params")
        else:
            self._packed = packed_from_state(*wb)
        state_dict.pop(prefix + "scale", None)
        state_dict.pop(prefix + "zero_point", None)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def _get_name(self):
        return "DynamicQuantizedLinear"

    @property
    def dtype(self):
        return getattr(self._packed, "dtype", qint8)

    def weight(self):
        return self._packed.qweight

    def bias(self):
        p = self._packed
        return nbtorch.from_numpy(p.bias) if p.has_bias else None

    def forward(self, x):
        p = self._packed
        if isinstance(p, Float16Weight):
            return linear_dynamic(x, p)
        return _q_linear_dynamic(x, p.qweight, p.bias_tensor)

    def extra_repr(self):
        s = f"in_features={self.in_features}, out_features={self.out_features}, " \
            f"dtype={self.dtype}"
        return s if self.dtype is not qint8 else \
            s + f", qscheme={self._packed.qweight.qscheme()}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """Quantize a float Linear's weight with its qconfig's weight observer (default:
        per-tensor symmetric min/max)."""
        from nbtorch.ao.quantization.qconfig import default_dynamic_qconfig
        qconfig = getattr(mod, "qconfig", None) or default_dynamic_qconfig
        lin = mod[0] if hasattr(mod, "_fused_relu_of") else mod      # nni.LinearReLU
        q = cls(lin.in_features, lin.out_features, lin.bias is not None)
        q._packed = pack_weight(lin.weight, lin.bias, qconfig)
        return q


class LinearReLU(Linear):
    """Dynamically quantized Linear followed by ReLU (``nni.LinearReLU``)."""

    def _get_name(self):
        return "DynamicQuantizedLinearReLU"

    def forward(self, x):
        return nbtorch.relu(Linear.forward(self, x))
