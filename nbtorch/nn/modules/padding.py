"""Padding layers over `F.pad`: constant/zero, reflection, replication, circular."""
from .. import functional as F
from .module import Module

__all__ = ["ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d",
           "CircularPad2d", "CircularPad3d"]


def _pad_tuple(padding, n):
    """An int pads all 2n sides; a tuple is (left, right, top, bottom, front, back)."""
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(padding)
    if len(padding) != 2 * n:
        raise ValueError(f"expected padding to be an int or a tuple of {2 * n} ints, got "
                         f"{padding}")
    return padding


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _pad_tuple(padding, self._n)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with a constant: ``ConstantPad1d((left, right), value)``."""
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with a constant: padding (left, right, top, bottom).

    Example:
        >>> nn.ConstantPad2d(1, 3.5)(torch.zeros(1, 2, 2)).shape
        torch.Size([1, 4, 4])
    """
    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with a constant."""
    _n = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self):
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros."""
    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last 2 dims with zeros: padding (left, right, top, bottom)."""
    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last 3 dims with zeros."""
    _n = 3


class ReflectionPad1d(_PadNd):
    """Mirror the input at its edges (the edge itself is not repeated)."""
    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Mirror the last 2 dims at their edges."""
    _n, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Mirror the last 3 dims at their edges."""
    _n, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Repeat the edge values of the last dim."""
    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Repeat the edge values of the last 2 dims."""
    _n, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Repeat the edge values of the last 3 dims."""
    _n, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Wrap the last dim around."""
    _n, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Wrap the last 2 dims around."""
    _n, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Wrap the last 3 dims around."""
    _n, _mode = 3, "circular"
