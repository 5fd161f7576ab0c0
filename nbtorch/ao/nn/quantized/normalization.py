"""Quantized LayerNorm, GroupNorm and InstanceNorm1d/2d/3d (``torch.ao.nn.quantized``).

PyTorch's x86 kernels give what normalizing the dequantized input in float and
quantizing the result gives, so each module does exactly that with the float module it
extends; the output (scale, zero_point) are float32 / int64 buffers, as PyTorch's (so
the scale a model reports is a float32)."""
import nbtorch
from nbtorch import nn
from nbtorch._qtensor import quantize_per_tensor

__all__ = ["LayerNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _QuantizedNorm:
    """Mixin: affine parameters given, output qparams as buffers, float math between a
    dequantize and a quantize."""

    def _init_quantized(self, weight, bias, scale, zero_point):
        self.weight = None if weight is None else nn.Parameter(weight.detach())
        self.bias = None if bias is None else nn.Parameter(bias.detach())
        self.register_buffer("scale", nbtorch.tensor(float(scale), dtype=nbtorch.float32))
        self.register_buffer("zero_point", nbtorch.tensor(int(zero_point)))

    def _get_name(self):
        return "Quantized" + type(self).__name__

    def forward(self, input):
        if not input.is_quantized:
            raise NotImplementedError(f"Could not run 'quantized::{type(self).__name__}' "
                                      "with arguments from the 'CPU' backend: expected a "
                                      "quantized tensor")
        with nbtorch.no_grad():
            out = self._float_forward(input.dequantize())
        return quantize_per_tensor(out, float(self.scale.item()),
                                   int(self.zero_point.item()), input.dtype)

    @classmethod
    def _qparams_of(cls, mod):
        from .modules import _output_qparams
        return _output_qparams(mod)


class LayerNorm(_QuantizedNorm, nn.LayerNorm):
    """Quantized LayerNorm(normalized_shape, weight, bias, scale, zero_point, eps)."""

    def __init__(self, normalized_shape, weight, bias, scale, zero_point, eps=1e-5,
                 elementwise_affine=True, device=None, dtype=None):
        nn.LayerNorm.__init__(self, normalized_shape, eps, elementwise_affine)
        self._init_quantized(weight, bias, scale, zero_point)

    _float_forward = nn.LayerNorm.forward

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(mod.normalized_shape, mod.weight, mod.bias, *cls._qparams_of(mod),
                   mod.eps, mod.elementwise_affine)


class GroupNorm(_QuantizedNorm, nn.GroupNorm):
    """Quantized GroupNorm(num_groups, num_channels, weight, bias, scale, zero_point)."""

    def __init__(self, num_groups, num_channels, weight, bias, scale, zero_point, eps=1e-5,
                 affine=True, device=None, dtype=None):
        nn.GroupNorm.__init__(self, num_groups, num_channels, eps, affine)
        self._init_quantized(weight, bias, scale, zero_point)

    _float_forward = nn.GroupNorm.forward

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        return cls(mod.num_groups, mod.num_channels, mod.weight, mod.bias,
                   *cls._qparams_of(mod), mod.eps, mod.affine)


def _instance_norm(float_cls):
    class InstanceNorm(_QuantizedNorm, float_cls):
        __doc__ = (f"Quantized {float_cls.__name__}(num_features, weight, bias, scale, "
                   "zero_point); the weight and bias apply when given, as PyTorch's.")
        _version = 2

        def __init__(self, num_features, weight, bias, scale, zero_point, eps=1e-5,
                     momentum=0.1, affine=False, track_running_stats=False, device=None,
                     dtype=None):
            float_cls.__init__(self, num_features, eps, momentum, affine,
                               track_running_stats)
            self._init_quantized(weight, bias, scale, zero_point)

        def _float_forward(self, x):
            return nn.functional.instance_norm(x, None, None, self.weight, self.bias,
                                               True, 0.0, self.eps)

        @classmethod
        def from_float(cls, mod, use_precomputed_fake_quant=False):
            return cls(mod.num_features, mod.weight, mod.bias, *cls._qparams_of(mod),
                       mod.eps, mod.affine)

    InstanceNorm.__name__ = InstanceNorm.__qualname__ = float_cls.__name__
    return InstanceNorm


InstanceNorm1d = _instance_norm(nn.InstanceNorm1d)
InstanceNorm2d = _instance_norm(nn.InstanceNorm2d)
InstanceNorm3d = _instance_norm(nn.InstanceNorm3d)
