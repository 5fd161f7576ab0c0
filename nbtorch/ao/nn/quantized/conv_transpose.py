"""Quantized ConvTranspose2d (``torch.ao.nn.quantized.ConvTranspose2d``): per-tensor int8
weight (in, out / groups, kh, kw), quint8 in and out.

The int32 sums of (x - zx) * (w - zw) are scattered exactly (one strided add per kernel
tap), then requantized as the quantized conv kernels do:
``clamp(rint((float32(acc) + bias / (sx * sw)) * (sx * sw / so))) + zo``."""
import numpy as np

import nbtorch
from nbtorch._qtensor import QTensor, qint8, quint8, check_qparams, per_tensor_affine

from .functional import _check_q, _pair
from .modules import _WeightedQuantized

__all__ = ["ConvTranspose2d", "conv_transpose2d"]

_F32 = np.float32


def conv_transpose2d(x, qweight, bias, stride, padding, output_padding, groups, dilation,
                     scale, zero_point):
    """Quantized transposed 2-D convolution of (N, C, H, W) quint8 `x`."""
    x = _check_q(x, "quantized::conv_transpose2d")
    scale, zero_point = check_qparams(scale, zero_point, quint8)
    (sh, sw), (ph, pw) = _pair(stride), _pair(padding)
    (oph, opw), (dh, dw) = _pair(output_padding), _pair(dilation)
    xi = np.asarray(x._ints(), np.int64) - x._qparams[1]
    sx, (s_w, zw) = x._qparams[0], qweight._qparams
    w = np.asarray(qweight._ints(), np.int64) - zw
    n, cin, h, wd = xi.shape
    cpg, opg, kh, kw = w.shape[0] // groups, w.shape[1], w.shape[2], w.shape[3]
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    full = np.zeros((n, opg * groups, oh + 2 * ph, ow + 2 * pw), np.int64)
    for g in range(groups):
        xg, wg = xi[:, g * cpg:(g + 1) * cpg], w[g * cpg:(g + 1) * cpg]
        for i in range(kh):
            for j in range(kw):
                tap = np.einsum("nchw,co->nohw", xg, wg[:, :, i, j])
                full[:, g * opg:(g + 1) * opg, i * dh:i * dh + (h - 1) * sh + 1:sh,
                     j * dw:j * dw + (wd - 1) * sw + 1:sw] += tap
    acc = full[:, :, ph:ph + oh, pw:pw + ow].astype(np.int32)
    a_w = _F32(_F32(sx) * _F32(s_w))
    mult = _F32(a_w / _F32(scale))
    b = (np.zeros(opg * groups, _F32) if bias is None
         else np.asarray(bias.detach()._host(), _F32))
    bias_q = (b / a_w).astype(_F32).reshape(1, -1, 1, 1)
    v = np.rint((acc.astype(_F32) + bias_q) * mult)
    out = (np.clip(v, -zero_point, 255 - zero_point) + zero_point).astype(np.uint8)
    return QTensor._from_int(out, quint8, scale, zero_point)


class ConvTranspose2d(_WeightedQuantized):
    """Quantized ConvTranspose2d (per-tensor weights, zero padding)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__()
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size, self.stride = _pair(kernel_size), _pair(stride)
        self.padding, self.output_padding = _pair(padding), _pair(output_padding)
        self.dilation, self.groups = _pair(dilation), groups
        self.scale, self.zero_point = 1.0, 0
        w = nbtorch.quantize_per_tensor(
            nbtorch.zeros(in_channels, out_channels // groups, *self.kernel_size), 1.0, 0,
            qint8)
        self._set_weight_bias(w, nbtorch.zeros(out_channels) if bias else None)

    def _set_weight_bias(self, qweight, bias):
        if qweight.qscheme() is not per_tensor_affine:
            raise AssertionError("Per channel weight observer is not supported yet for "
                                 "ConvTranspose{n}d.")
        self._qweight = qweight
        self._bias = None if bias is None else bias.detach().float()

    def weight(self):
        return self._qweight

    def bias(self):
        return self._bias

    def forward(self, x):
        if x.dim() != 4:
            raise ValueError("Input shape must be `(N, C, H, W)`!")
        return conv_transpose2d(x, self._qweight, self._bias, self.stride, self.padding,
                                self.output_padding, self.groups, self.dilation,
                                self.scale, self.zero_point)

    @classmethod
    def _from_float_module(cls, mod):
        return cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride,
                   mod.padding, mod.output_padding, mod.groups, mod.bias is not None,
                   mod.dilation, mod.padding_mode)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        for name, default in (("padding", (0, 0)), ("dilation", (1, 1)),
                              ("output_padding", (0, 0))):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + (", bias=False" if self._bias is None else "")
