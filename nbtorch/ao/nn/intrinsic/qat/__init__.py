"""``torch.ao.nn.intrinsic.qat``: fused QAT modules."""
from ...qat import LinearReLU, ConvReLU2d, ConvBn2d, ConvBnReLU2d

__all__ = ["LinearReLU", "ConvReLU2d", "ConvBn2d", "ConvBnReLU2d"]
