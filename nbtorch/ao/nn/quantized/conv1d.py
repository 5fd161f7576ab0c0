"""Quantized Conv1d and ConvReLU1d (``torch.ao.nn.quantized.Conv1d``): a Conv2d over a
height of one, as fbgemm computes it; the weight is (out, in / groups, kernel) in the
state dict and from ``weight()``, as PyTorch's."""
from nbtorch.fx import wrap as _wrap
from .modules import Conv2d
from .ops import quantized_conv2d as _q_conv2d, quantized_conv2d_relu as _q_conv2d_relu

for _name in ("_q_conv2d", "_q_conv2d_relu"):     # one graph node each (see ops.py)
    _wrap(_name)

__all__ = ["Conv1d", "ConvReLU1d"]


def _single(v):
    return v[0] if isinstance(v, (tuple, list)) else v


class Conv1d(Conv2d):
    """Quantized 1-D convolution (zero padding; groups too)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros"):
        k, st, p, d = (_single(v) for v in (kernel_size, stride, padding, dilation))
        super().__init__(in_channels, out_channels, (1, k), (1, st), (0, p), (1, d), groups,
                         bias, padding_mode)
        self.kernel_size, self.stride, self.padding, self.dilation = (k,), (st,), (p,), (d,)

    def _set_weight_bias(self, qweight, bias):
        super()._set_weight_bias(qweight.unsqueeze(2) if qweight.dim() == 3 else qweight,
                                 bias)

    def weight(self):
        return self._packed.qweight.squeeze(2)

    @classmethod
    def _from_float_module(cls, mod):
        if isinstance(mod.padding, str):
            raise NotImplementedError("quantized Conv1d: string padding is not implemented")
        return cls(mod.in_channels, mod.out_channels, mod.kernel_size, mod.stride,
                   mod.padding, mod.dilation, mod.groups,
                   mod.bias is not None or hasattr(mod, "folded_weight_bias"),
                   mod.padding_mode)

    def forward(self, x):
        if x.dim() != 3:
            raise ValueError("Input shape must be `(N, C, L)`!")
        op = _q_conv2d_relu if self._FUSED_RELU else _q_conv2d
        p = self._packed
        y = op(x.unsqueeze(2), p.qweight, p.bias_tensor, (1, self.stride[0]),
               (0, self.padding[0]), (1, self.dilation[0]), self.groups, self.scale,
               self.zero_point)
        return y.squeeze(2)

    def extra_repr(self):
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}, scale={self.scale}, zero_point={self.zero_point}")
        for name, default in (("padding", (0,)), ("dilation", (1,))):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        return s + (", bias=False" if not self._packed.has_bias else "")


class ConvReLU1d(Conv1d):
    """Quantized Conv1d with the ReLU fused into the requantization."""
    _FUSED_RELU = True
