"""Unpooling, power-average and fractional max pooling layers over `nn.functional`."""
from .. import functional as F
from .module import Module

__all__ = ["MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "FractionalMaxPool2d", "FractionalMaxPool3d"]


def _tuple(value, n):
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n


class _MaxUnpoolNd(Module):
    _n = 0

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = _tuple(kernel_size, self._n)
        self.stride = _tuple(stride if stride is not None else kernel_size, self._n)
        self.padding = _tuple(padding, self._n)

    def forward(self, input, indices, output_size=None):
        return getattr(F, f"max_unpool{self._n}d")(input, indices, self.kernel_size,
                                                   self.stride, self.padding, output_size)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The partial inverse of MaxPool1d: values at their argmax indices, zeros elsewhere."""
    _n = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The partial inverse of MaxPool2d.

    Example:
        >>> out, idx = nn.MaxPool2d(2, return_indices=True)(torch.randn(1, 1, 4, 4))
        >>> nn.MaxUnpool2d(2)(out, idx).shape
        torch.Size([1, 1, 4, 4])
    """
    _n = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The partial inverse of MaxPool3d."""
    _n = 3


class _LPPoolNd(Module):
    _n = 0

    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type = norm_type
        self.kernel_size = kernel_size
        self.stride = stride
        self.ceil_mode = ceil_mode

    def forward(self, input):
        return getattr(F, f"lp_pool{self._n}d")(input, float(self.norm_type), self.kernel_size,
                                                self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """Power-average pooling over (N, C, L): (sum of x^p over the window)^(1/p)."""
    _n = 1


class LPPool2d(_LPPoolNd):
    """Power-average pooling over (N, C, H, W).

    Example:
        >>> nn.LPPool2d(2, 3, stride=2)(torch.randn(1, 1, 7, 7)).shape
        torch.Size([1, 1, 3, 3])
    """
    _n = 2


class LPPool3d(_LPPoolNd):
    """Power-average pooling over (N, C, D, H, W)."""
    _n = 3


class _FractionalMaxPoolNd(Module):
    _n = 0

    def __init__(self, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                 _random_samples=None):
        super().__init__()
        name = type(self).__name__
        self.kernel_size = _tuple(kernel_size, self._n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _tuple(output_size, self._n) if output_size is not None else None
        self.output_ratio = _tuple(output_ratio, self._n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return getattr(F, f"fractional_max_pool{self._n}d")(
            input, self.kernel_size, self.output_size, self.output_ratio, self.return_indices,
            _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling (Graham, 2014): pseudo-random windows per sample and channel.

    Example:
        >>> nn.FractionalMaxPool2d(3, output_ratio=0.5)(torch.randn(1, 2, 10, 10)).shape
        torch.Size([1, 2, 5, 5])
    """
    _n = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling over (N, C, T, H, W)."""
    _n = 3
