"""Convolution layers over `F.conv{1,2,3}d`/`F.conv_transpose{1,2,3}d`.

Padding ``'same'`` with an even total padding is passed as a symmetric int
padding; an odd total pads one extra element at the end with `F.pad` first
(what PyTorch does). Non-zero padding modes ('reflect', 'replicate',
'circular') pad with `F.pad` and convolve with padding 0.
"""
import math

from ... import _dtype
from .. import functional as F, init
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_STRINGS = {"same", "valid"}
_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(x, n, name="argument"):
    if isinstance(x, (tuple, list)):
        if len(x) != n:
            raise ValueError(f"{name} must have {n} elements, got {len(x)}")
        return tuple(int(v) for v in x)
    return (int(x),) * n


class _ConvNd(Module):
    _n = 0
    _transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation,
                 output_padding, groups, bias, padding_mode, device=None, dtype=None):
        super().__init__()
        n = self._n
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{_PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, n)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _ntuple(kernel_size, n, "kernel_size")
        self.stride = _ntuple(stride, n, "stride")
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, n, "padding")
        self.dilation = _ntuple(dilation, n, "dilation")
        self.transposed = self._transposed
        self.output_padding = _ntuple(output_padding, n, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        self._explicit_padding = self._resolve_padding()
        if self._transposed:
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        from ... import empty
        dtype = dtype if dtype is not None else _dtype.get_default_dtype()
        self.weight = Parameter(empty(*shape, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _resolve_padding(self):
        """(per-dim symmetric padding, F.pad list or None) for the forward."""
        if self.padding == "valid":
            return (0,) * self._n, None
        if self.padding != "same":
            if self.padding_mode == "zeros":
                return self.padding, None
            pad = []
            for p in reversed(self.padding):
                pad += [p, p]
            return (0,) * self._n, pad
        sym, pad, asym = [], [], False
        for d, k in zip(self.dilation, self.kernel_size):
            total = d * (k - 1)
            left = total // 2
            sym.append(left)
            asym = asym or (total - left != left)
        if not asym and self.padding_mode == "zeros":
            return tuple(sym), None
        for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
            total = d * (k - 1)
            pad += [total // 2, total - total // 2]
        return (0,) * self._n, pad

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _padded(self, input):
        padding, pad = self._explicit_padding
        if pad is not None:
            mode = "constant" if self.padding_mode == "zeros" else self.padding_mode
            input = F.pad(input, pad, mode=mode)
        return input, padding

    def extra_repr(self):
        s = "{in_channels}, {out_channels}, kernel_size={kernel_size}, stride={stride}"
        if self.padding != (0,) * len(self.padding):
            s += ", padding={padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += ", dilation={dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += ", output_padding={output_padding}"
        if self.groups != 1:
            s += ", groups={groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += ", padding_mode={padding_mode}"
        return s.format(**self.__dict__)

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("padding_mode", "zeros")


_OP_NAMES = {"Conv1d": "conv1d", "Conv2d": "conv2d", "Conv3d": "conv3d",
             "ConvTranspose1d": "conv_transpose1d", "ConvTranspose2d": "conv_transpose2d",
             "ConvTranspose3d": "conv_transpose3d"}


def _batched(module, input, expected, run):
    """Check the input's rank and channels; run `run(batched_input)`, unbatching after."""
    if input.dim() not in (expected - 1, expected):
        name = _OP_NAMES.get(type(module).__name__, type(module).__name__.lower())
        raise RuntimeError(
            f"Expected {expected - 1}D (unbatched) or {expected}D (batched) input to "
            f"{name}, but got input of size: {list(input.shape)}")
    channel = input._static_shape[-expected + 1]
    # in_channels, not the weight's shape: reading `weight` would run a parametrization
    # (spectral_norm's power iteration) a second time per forward
    wanted = module.in_channels
    if channel != wanted:
        raise RuntimeError(
            f"Given groups={module.groups}, weight of size {list(module.weight.shape)}, "
            f"expected input{list(input.shape)} to have {wanted} channels, but got "
            f"{channel} channels instead")
    if input.dim() == expected - 1:
        return run(input.unsqueeze(0)).squeeze(0)
    return run(input)


def _conv_forward(self, input, weight, bias):
    """Convolve `input` with the given `weight` and `bias` under this layer's settings (its
    padding mode included): PyTorch's hook for subclasses that transform the weight first
    (weight standardisation, masks) and then call ``self._conv_forward(x, w, self.bias)``."""
    input, padding = self._padded(input)
    conv = (F.conv1d, F.conv2d, F.conv3d)[self._n - 1]
    return conv(input, weight, bias, self.stride, padding, self.dilation, self.groups)


class Conv1d(_ConvNd):
    """1-D convolution over (N, C_in, L) inputs.

    Example:
        >>> nn.Conv1d(16, 33, 3, stride=2)(torch.randn(20, 16, 50)).shape
        torch.Size([20, 33, 24])
    """
    _n = 1
    _conv_forward = _conv_forward

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         0, groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return _batched(self, input, 3, self._forward)

    def _forward(self, input):
        input, padding = self._padded(input)
        return F.conv1d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C_in, H, W) inputs.

    Example:
        >>> nn.Conv2d(16, 33, 3, padding="same")(torch.randn(2, 16, 8, 8)).shape
        torch.Size([2, 33, 8, 8])
    """
    _n = 2
    _conv_forward = _conv_forward

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         0, groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return _batched(self, input, 4, self._forward)

    def _forward(self, input):
        input, padding = self._padded(input)
        return F.conv2d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C_in, D, H, W) inputs.

    Example:
        >>> nn.Conv3d(2, 4, 3, padding=1)(torch.randn(1, 2, 4, 6, 6)).shape
        torch.Size([1, 4, 4, 6, 6])
    """
    _n = 3
    _conv_forward = _conv_forward

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         0, groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        return _batched(self, input, 5, self._forward)

    def _forward(self, input):
        input, padding = self._padded(input)
        return F.conv3d(input, self.weight, self.bias, self.stride, padding, self.dilation,
                        self.groups)


class _ConvTransposeNd(_ConvNd):
    _transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding,
                 output_padding, groups, bias, dilation, padding_mode, device, dtype):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{self.__class__.__name__}")
        if isinstance(padding, str):
            raise ValueError(f"{self.__class__.__name__} does not support string padding")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input, output_size):
        """output_padding, or the one that makes the output `output_size`."""
        if output_size is None:
            return self.output_padding
        n = self._n
        output_size = list(output_size)[-n:]
        spatial = input.shape[-n:]
        min_sizes = [(spatial[d] - 1) * self.stride[d] - 2 * self.padding[d]
                     + self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        max_sizes = [m + self.stride[d] - 1 for d, m in enumerate(min_sizes)]
        if any(not lo <= size <= hi
               for size, lo, hi in zip(output_size, min_sizes, max_sizes)):
            raise ValueError(
                f"requested an output size of {output_size}, but valid sizes range "
                f"from {min_sizes} to {max_sizes} (for an input of {spatial})")
        return tuple(size - lo for size, lo in zip(output_size, min_sizes))


class ConvTranspose1d(_ConvTransposeNd):
    """Transposed 1-D convolution (the gradient of Conv1d with respect to its input)."""
    _n = 1

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, bias, dilation, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return _batched(self, input, 3, lambda x: F.conv_transpose1d(
            x, self.weight, self.bias, self.stride, self.padding, output_padding,
            self.groups, self.dilation))


class ConvTranspose2d(_ConvTransposeNd):
    """Transposed 2-D convolution (upsampling; the gradient of Conv2d w.r.t. its input).

    Example:
        >>> nn.ConvTranspose2d(16, 8, 3, stride=2)(torch.randn(1, 16, 12, 12)).shape
        torch.Size([1, 8, 25, 25])
    """
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, bias, dilation, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return _batched(self, input, 4, lambda x: F.conv_transpose2d(
            x, self.weight, self.bias, self.stride, self.padding, output_padding,
            self.groups, self.dilation))


class ConvTranspose3d(_ConvTransposeNd):
    """Transposed 3-D convolution (the gradient of Conv3d with respect to its input).

    Example:
        >>> nn.ConvTranspose3d(4, 2, 2, stride=2)(torch.randn(1, 4, 2, 3, 3)).shape
        torch.Size([1, 2, 4, 6, 6])
    """
    _n = 3

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding,
                         output_padding, groups, bias, dilation, padding_mode, device, dtype)

    def forward(self, input, output_size=None):
        output_padding = self._output_padding(input, output_size)
        return _batched(self, input, 5, lambda x: F.conv_transpose3d(
            x, self.weight, self.bias, self.stride, self.padding, output_padding,
            self.groups, self.dilation))
