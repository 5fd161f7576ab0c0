"""Fused float modules (``torch.ao.nn.intrinsic``): sequences that `fuse_modules` makes and
that quantize as one (a ReLU becomes the lower bound of the requantization)."""
from nbtorch import nn

__all__ = ["ConvReLU1d", "ConvReLU2d", "LinearReLU", "ConvBn2d", "ConvBnReLU2d", "BNReLU2d"]


class _FusedModule(nn.Sequential):
    """A fused group: runs its members in order."""


class ConvReLU1d(_FusedModule):
    """Conv1d followed by ReLU."""

    _fused_relu_of = "Conv1d"

    def __init__(self, conv, relu):
        super().__init__(conv, relu)


class ConvReLU2d(_FusedModule):
    """Conv2d followed by ReLU."""

    _fused_relu_of = "Conv2d"

    def __init__(self, conv, relu):
        super().__init__(conv, relu)


class LinearReLU(_FusedModule):
    """Linear followed by ReLU."""

    _fused_relu_of = "Linear"

    def __init__(self, linear, relu):
        super().__init__(linear, relu)


class ConvBn2d(_FusedModule):
    """Conv2d followed by BatchNorm2d (kept apart: quantization-aware training)."""

    def __init__(self, conv, bn):
        super().__init__(conv, bn)


class ConvBnReLU2d(_FusedModule):
    """Conv2d, BatchNorm2d, ReLU (kept apart: quantization-aware training)."""

    def __init__(self, conv, bn, relu):
        super().__init__(conv, bn, relu)


class BNReLU2d(_FusedModule):
    """BatchNorm2d followed by ReLU."""

    def __init__(self, bn, relu):
        super().__init__(bn, relu)

from . import quantized  # noqa: E402,F401  (torch.ao.nn.intrinsic.quantized)
from . import qat  # noqa: E402,F401  (torch.ao.nn.intrinsic.qat)
