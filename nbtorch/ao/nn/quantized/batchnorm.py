"""Quantized batch norm (``torch.ao.nn.quantized.BatchNorm2d/3d`` and the fused
``BNReLU2d``): what `convert` makes of a BatchNorm left unfused after a conv.

The running statistics, the affine weight and both scales fold into one multiplier and
one offset per channel (fbgemm's arithmetic, computed in float32 as PyTorch does)::

    inv = 1 / sqrt(var + eps)
    alpha = inv * weight * (in_scale / out_scale)
    beta = (bias - mean * inv * weight) / out_scale
    q_out = clamp(rint(alpha * (q_in - in_zp) + beta) + out_zp)
"""
import numpy as np

import nbtorch
from nbtorch import nn
from nbtorch._qtensor import QTensor, check_qparams
from nbtorch.fx import wrap as _wrap
from .ops import (quantized_batch_norm as _q_batch_norm,
                  quantized_batch_norm_relu as _q_batch_norm_relu)

_wrap("_q_batch_norm")          # jit.trace / fx record one call_function (see ops.py)
_wrap("_q_batch_norm_relu")

__all__ = ["batch_norm", "BatchNorm2d", "BatchNorm3d", "BNReLU2d"]

_F32 = np.float32


def _fold(weight, bias, mean, var, eps, in_scale, out_scale, channels):
    """float32 (alpha, beta) per channel, rounded where PyTorch's C++ rounds them."""
    var = np.asarray(var._host(), _F32)
    mean = np.asarray(mean._host(), _F32)
    w = np.ones(channels, _F32) if weight is None else np.asarray(weight.detach()._host(), _F32)
    b = np.zeros(channels, _F32) if bias is None else np.asarray(bias.detach()._host(), _F32)
    inv = (1.0 / np.sqrt(var + _F32(eps)).astype(np.float64)).astype(_F32)
    alpha = ((inv * w).astype(np.float64) * (in_scale / out_scale)).astype(_F32)
    beta = ((b - mean * inv * w).astype(np.float64) / out_scale).astype(_F32)
    return alpha, beta


def batch_norm(x, weight, bias, mean, var, eps, scale, zero_point, relu=False):
    """``torch.ops.quantized.batch_norm2d/3d`` (``batch_norm2d_relu`` with relu=True):
    per-tensor quantized (N, C, ...) in, same dtype out with (scale, zero_point)."""
    if not isinstance(x, QTensor) or len(x._qparams) != 2:
        raise RuntimeError("quantized::batch_norm: expected a per-tensor quantized input")
    scale, zero_point = check_qparams(scale, zero_point, x.dtype)
    q = np.ascontiguousarray(x._ints())
    c = q.shape[1]
    alpha, beta = _fold(weight, bias, mean, var, eps, x._qparams[0], scale, c)
    out = np.empty_like(q)
    from nbtorch.kernels.cpu import quantized as k
    k.qbatch_norm(q.reshape(q.shape[0], c, -1), out.reshape(q.shape[0], c, -1), alpha, beta,
                  x._qparams[1], zero_point, x.dtype.qmin, x.dtype.qmax, relu)
    return QTensor._from_int(out, x.dtype, scale, zero_point)


class _QuantizedBatchNorm:
    """Mixin over a float BatchNorm: its statistics plus the output (scale, zero_point)
    as buffers (PyTorch's state-dict keys)."""

    _DIM = 4
    _RELU = False
    _version = 2                    # PyTorch's
    def _init_qparams(self):
        self.register_buffer("scale", nbtorch.tensor(1.0))
        self.register_buffer("zero_point", nbtorch.tensor(0))

    def _get_name(self):
        return "Quantized" + type(self).__name__

    def forward(self, input):
        if input.dim() != self._DIM:
            dims = "(N, C, H, W)" if self._DIM == 4 else "(N, C, D, H, W)"
            raise ValueError(f"Input shape must be `{dims}`!")
        op = _q_batch_norm_relu if self._RELU else _q_batch_norm
        qp = self._buffers          # the output qparams: constants of a trace, no warning
        return op(input, self.weight, self.bias, self.running_mean, self.running_var,
                  self.eps, float(qp["scale"].item()), int(qp["zero_point"].item()))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """The quantized twin of a prepared float BatchNorm (or BN + ReLU)."""
        from .modules import _output_qparams
        scale, zp = _output_qparams(mod)
        bn = mod[0] if isinstance(mod, nn.Sequential) else mod
        new = cls(bn.num_features, bn.eps)
        new.weight, new.bias = bn.weight, bn.bias
        new.running_mean, new.running_var = bn.running_mean, bn.running_var
        # the observer's (1,)-shaped float32 / int32 tensors, as PyTorch stores them
        new.scale = nbtorch.tensor([scale], dtype=nbtorch.float32)
        new.zero_point = nbtorch.tensor([zp], dtype=nbtorch.int32)
        return new


class BatchNorm2d(_QuantizedBatchNorm, nn.BatchNorm2d):
    """Batch norm of a quantized (N, C, H, W) tensor, in eval mode (running statistics)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, device=None, dtype=None):
        nn.BatchNorm2d.__init__(self, num_features, eps, momentum)
        self._init_qparams()


class BatchNorm3d(_QuantizedBatchNorm, nn.BatchNorm3d):
    """Batch norm of a quantized (N, C, D, H, W) tensor."""

    _DIM = 5

    def __init__(self, num_features, eps=1e-5, momentum=0.1, device=None, dtype=None):
        nn.BatchNorm3d.__init__(self, num_features, eps, momentum)
        self._init_qparams()


class BNReLU2d(BatchNorm2d):
    """BatchNorm2d with the ReLU fused into the requantization (``nni.BNReLU2d``)."""

    _RELU = True

