"""Pooling layers over `nn.functional`'s pooling functions."""
from .. import functional as F
from .module import Module

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d"]


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return ("kernel_size={kernel_size}, stride={stride}, padding={padding}, "
                "dilation={dilation}, ceil_mode={ceil_mode}".format(**self.__dict__))


class MaxPool1d(_MaxPoolNd):
    """Max over sliding windows of (N, C, L) inputs; optionally returns the argmax indices."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding,
                            self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Max over sliding windows of (N, C, H, W) inputs.

    Example:
        >>> out, idx = nn.MaxPool2d(2, return_indices=True)(torch.randn(1, 1, 4, 4))
    """

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding,
                            self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class MaxPool3d(_MaxPoolNd):
    """Max over sliding windows of (N, C, D, H, W) inputs.

    Example:
        >>> nn.MaxPool3d(2)(torch.randn(1, 1, 4, 4, 4)).shape
        torch.Size([1, 1, 2, 2, 2])
    """

    def forward(self, input):
        return F.max_pool3d(input, self.kernel_size, self.stride, self.padding,
                            self.dilation, ceil_mode=self.ceil_mode,
                            return_indices=self.return_indices)


class AvgPool1d(Module):
    """Mean over sliding windows of (N, C, L) inputs."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size = _single(kernel_size)
        self.stride = _single(stride if stride is not None else kernel_size)
        self.padding = _single(padding)
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


def _single(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


class AvgPool2d(Module):
    """Mean over sliding windows of (N, C, H, W) inputs.

    Example:
        >>> nn.AvgPool2d(2)(torch.ones(1, 1, 4, 4)).shape
        torch.Size([1, 1, 2, 2])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad
        self.divisor_override = divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool3d(AvgPool2d):
    """Mean over sliding windows of (N, C, D, H, W) inputs.

    Example:
        >>> nn.AvgPool3d(2)(torch.ones(1, 1, 2, 4, 4)).shape
        torch.Size([1, 1, 1, 2, 2])
    """

    def forward(self, input):
        return F.avg_pool3d(input, self.kernel_size, self.stride, self.padding,
                            self.ceil_mode, self.count_include_pad, self.divisor_override)


class _AdaptivePoolNd(Module):
    _fn = None

    def __init__(self, output_size, return_indices=False):
        super().__init__()
        self.output_size = output_size
        if return_indices:
            self.return_indices = return_indices

    def forward(self, input):
        if getattr(self, "return_indices", False):
            return getattr(F, self._fn)(input, self.output_size, True)
        return getattr(F, self._fn)(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_AdaptivePoolNd):
    """Average pooling to a fixed output length."""
    _fn = "adaptive_avg_pool1d"


class AdaptiveAvgPool2d(_AdaptivePoolNd):
    """Average pooling to a fixed (H, W) output size (None keeps that input size).

    Example:
        >>> nn.AdaptiveAvgPool2d((1, 1))(torch.randn(2, 8, 7, 7)).shape
        torch.Size([2, 8, 1, 1])
    """
    _fn = "adaptive_avg_pool2d"

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveMaxPool1d(_AdaptivePoolNd):
    """Max pooling to a fixed output length."""
    _fn = "adaptive_max_pool1d"


class AdaptiveMaxPool2d(_AdaptivePoolNd):
    """Max pooling to a fixed (H, W) output size."""
    _fn = "adaptive_max_pool2d"


class AdaptiveAvgPool3d(_AdaptivePoolNd):
    """Average pooling to a fixed (D, H, W) output size (None keeps that input size)."""
    _fn = "adaptive_avg_pool3d"

    def __init__(self, output_size):
        super().__init__(output_size)


class AdaptiveMaxPool3d(_AdaptivePoolNd):
    """Max pooling to a fixed (D, H, W) output size, optionally with the flat indices."""
    _fn = "adaptive_max_pool3d"
