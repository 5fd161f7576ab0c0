"""``torch.ao.nn.intrinsic.quantized``: the quantized fused modules (they live beside the
other quantized modules in `nbtorch.ao.nn.quantized`)."""
from nbtorch.ao.nn.quantized import LinearReLU, ConvReLU1d, ConvReLU2d, BNReLU2d

__all__ = ["LinearReLU", "ConvReLU1d", "ConvReLU2d", "BNReLU2d"]
