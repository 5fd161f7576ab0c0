"""Convolutions: conv1d/2d/3d, conv_transpose1d/2d/3d, conv_tbc, unfold, fold.

Three autograd Functions cover convolution and all its derivatives, each one
kernel call (``nbtorch.kernels.cpu.conv``: im2col + one BLAS GEMM):

* ``Conv2dFn``           y  = conv(x, w) + b
* ``Conv2dInputGrad``    gx = conv^T(g, w)            (also conv_transpose2d)
* ``Conv2dWeightGrad``   gw = g (x) x                 (correlation of g with x)

Each backward is written with the other two, so ``create_graph=True`` gives
exact higher-order gradients.  The kernels take 1-3 spatial dims directly.
Kernels compute in float32/float64; float16 and bfloat16 are upcast around them.
"""
from .._lazy import kernel_module
from .._registry import get_kernel
from .._tensor import empty
from ..autograd import Function, grad_mode
from ..autograd.function import APPLY_WRAPPERS, renamed
from ._common import check_same_device

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "conv_tbc", "unfold", "fold"]


# ---------------------------------------------------------------- argument helpers

def conv_output_size(size, kernel, stride, padding, dilation):
    """Output length of a convolution along one dim: floor((L+2p-d(k-1)-1)/s)+1."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def _ntuple(value, n, name):
    """An int or a sequence of n ints -> tuple of n ints (ValueError otherwise)."""
    if isinstance(value, (tuple, list)):
        if len(value) == 1:
            value = tuple(value) * n
        if len(value) != n:
            raise ValueError(f"expected {name} to be a single integer value or a list of {n} "
                             f"values to match the convolution dimensions, but got "
                             f"{name}={list(value)}")
        return tuple(int(v) for v in value)
    return (int(value),) * n


def _kernel_dtype(op, t):
    """Kernels run in float32/float64 (float16 upcast); integer inputs are an error."""
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f'"{op}" not implemented for \'{t.dtype}\'')
    return t.dtype.compute


def _raw(t, dtype):
    """The C-contiguous raw array of `t` in `dtype` (no copy when already so)."""
    if t.dtype is not dtype:
        t = t.to(dtype)
    return t.contiguous()._array


def _out(t, dtype):
    """Cast a kernel result back to the caller's dtype (float16/bfloat16 round trip)."""
    return t if t.dtype is dtype else t.to(dtype)


def _size(t):
    return list(t.shape)


# ---------------------------------------------------------------- the three Functions

class _Geometry:
    """stride, top/left padding, dilation, groups and output size of one convolution."""

    __slots__ = ("stride", "padding", "dilation", "groups", "out_hw")

    def __init__(self, stride, padding, dilation, groups, out_hw):
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.groups, self.out_hw = groups, out_hw

    def args(self):
        return self.stride, self.padding, self.dilation, self.groups


class Conv2dFn(Function):
    """y (N, O, *OS) = conv(x (N, C, *S), w (O, C/g, *k)) + b, 2 or 3 spatial dims."""

    _backward_name = "ConvolutionBackward0"

    @staticmethod
    def forward(ctx, x, weight, bias, geom):
        dt = _kernel_dtype("conv2d", x)
        out = empty((x.shape[0], weight.shape[0]) + geom.out_hw, dt, x.device)
        kernel = get_kernel("conv2d", x.device.type)
        args = (_raw(x, dt), _raw(weight, dt), None if bias is None else _raw(bias, dt),
                out._array) + geom.args()
        cols = _kept_columns(kernel, x, weight, geom, dt) if ctx.needs_input_grad[1] else None
        if cols is None:
            kernel(*args)
        else:
            kernel(*args, columns=cols._array)
        ctx.save_for_backward(x, weight)
        ctx.geom, ctx.has_bias, ctx.columns = geom, bias is not None, cols
        return _out(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        need_b = need_b and ctx.has_bias
        if need_x + need_w + need_b > 1:
            # Made contiguous once for its 2-3 readers, not by each of them (`.sum()`'s
            # gradient is one value expanded: 16x64x32x32 1x1 conv fwd+bwd 4.9 -> 4.1 ms)
            grad = grad.contiguous()
        cols, ctx.columns = getattr(ctx, "columns", None), None    # used once, then freed
        both = _both_grads(x, grad, weight, ctx.geom) if need_x and need_w and cols is None \
            else None
        if both is not None:
            gx, gw = both
        else:
            gx = Conv2dInputGrad.apply(grad, weight, ctx.geom, tuple(x.shape[2:])) \
                if need_x else None
            gw = Conv2dWeightGrad.apply(x, grad, ctx.geom, tuple(weight.shape), cols) \
                if need_w else None
        gb = _bias_grad(grad) if need_b else None
        return gx, gw, gb, None


def _both_grads(x, grad, weight, geom):
    """(gx, gw) from one kernel call on the CPU (`conv2d_grad_both`: one pass over the batch,
    the same bits as the two Functions' kernels), or None: recorded (create_graph: the two
    Functions keep the higher derivatives) or watched (graph capture, profiler), another
    device or dtype path, a swapped grad_input/grad_weight kernel, or a call that kernel
    leaves to the two."""
    if grad_mode.is_grad_enabled() or APPLY_WRAPPERS[0] or x.device.type != "cpu":
        return None                     # (a wrapper: graph capture or a profiler watching)
    conv = kernel_module("cpu.conv")
    if (get_kernel("conv2d_grad_input", "cpu") is not conv.conv2d_grad_input
            or get_kernel("conv2d_grad_weight", "cpu") is not conv.conv2d_grad_weight):
        return None
    dt = _kernel_dtype("conv2d", x)
    if grad.dtype is not x.dtype or weight.dtype is not x.dtype or dt is not x.dtype:
        return None
    gx = empty(tuple(x.shape), dt, x.device)
    gw = empty(tuple(weight.shape), dt, x.device)
    if not conv.conv2d_grad_both(_raw(x, dt), _raw(grad, dt), _raw(weight, dt), gx._array,
                                 gw._array, *geom.args()):
        return None
    return gx, gw


def _kept_columns(kernel, x, weight, geom, dt):
    """A tensor for the im2col columns the forward kernel can keep for the weight gradient
    (kernels that offer it have a `columns_shape` attribute), or None."""
    shape_of = getattr(kernel, "columns_shape", None)
    if shape_of is None:
        return None
    shape = shape_of(tuple(x.shape), tuple(weight.shape), geom.stride, geom.padding,
                     geom.out_hw, dt.itemsize)
    return None if shape is None else empty(shape, dt, x.device)


def _bias_grad(grad):
    """sum of grad (N, O, *S) over N and S: one kernel, or ops when differentiating it."""
    if grad_mode.is_grad_enabled():          # create_graph=True: keep it differentiable
        return grad.sum(dim=(0,) + tuple(range(2, grad.dim())))
    dt = _kernel_dtype("conv2d", grad)
    out = empty((grad.shape[1],), dt, grad.device)
    get_kernel("conv2d_bias_grad", grad.device.type)(
        _raw(grad, dt).reshape(grad.shape[0], grad.shape[1], -1), out._array)
    return _out(out, grad.dtype)


class Conv2dInputGrad(Function):
    """gx (N, C, *S) = the convolution's input gradient from g (N, O, *OS); = conv_transpose."""

    @staticmethod
    def forward(ctx, grad, weight, geom, in_hw):
        dt = _kernel_dtype("conv_transpose2d", grad)
        channels = weight.shape[1] * geom.groups
        gx = empty((grad.shape[0], channels) + tuple(in_hw), dt, grad.device)
        get_kernel("conv2d_grad_input", grad.device.type)(
            _raw(grad, dt), _raw(weight, dt), gx._array, *geom.args())
        ctx.save_for_backward(grad, weight)
        ctx.geom = geom
        return _out(gx, grad.dtype)

    @staticmethod
    def backward(ctx, ggx):
        grad, weight = ctx.saved_tensors
        need_g, need_w = ctx.needs_input_grad[:2]
        dg = Conv2dFn.apply(ggx, weight, None, ctx.geom) if need_g else None
        dw = Conv2dWeightGrad.apply(ggx, grad, ctx.geom, tuple(weight.shape)) if need_w else None
        return dg, dw, None, None


class Conv2dWeightGrad(Function):
    """gw (O, C/g, *k) = the convolution's weight gradient from x and g (summed over the batch)."""

    @staticmethod
    def forward(ctx, x, grad, geom, w_shape, columns=None):
        dt = _kernel_dtype("conv2d", x)
        gw = empty(tuple(w_shape), dt, x.device)
        args = (_raw(x, dt), _raw(grad, dt), gw._array) + geom.args()
        kernel = get_kernel("conv2d_grad_weight", x.device.type)
        if columns is None:
            kernel(*args)
        else:                            # the forward's im2col(x), kept by Conv2dFn
            kernel(*args, columns=columns._array)
        ctx.save_for_backward(x, grad)
        ctx.geom = geom
        return _out(gw, x.dtype)

    @staticmethod
    def backward(ctx, ggw):
        x, grad = ctx.saved_tensors
        need_x, need_g = ctx.needs_input_grad[:2]
        dx = Conv2dInputGrad.apply(grad, ggw, ctx.geom, tuple(x.shape[2:])) if need_x else None
        dg = Conv2dFn.apply(x, ggw, None, ctx.geom) if need_g else None
        return dx, dg, None, None, None


# ---------------------------------------------------------------- argument checks

def _check_conv_args(op, x, weight, bias, dims):
    """PyTorch's shape checks for a (possibly unbatched) convolution input."""
    check_same_device(op, x, weight, bias)
    if x.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(f"Expected {dims + 1}D (unbatched) or {dims + 2}D (batched) input "
                           f"to {op}, but got input of size: {_size(x)}")
    if weight.dim() != dims + 2:
        raise RuntimeError(f"Expected {dims + 2}-dimensional weight for {op}, but got "
                           f"{weight.dim()}-dimensional weight of size {_size(weight)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype is not x.dtype:
            raise RuntimeError(f"Input type ({x.dtype}) and {name} type ({t.dtype}) should "
                               "be the same")


def _check_groups(groups, x, weight, bias, transposed):
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    in_ch = weight.shape[0] if transposed else weight.shape[1] * groups
    if x.shape[1] != in_ch:
        what = (f"expected input{_size(x)} to have {in_ch} channels, but got {x.shape[1]} "
                "channels instead")
        raise RuntimeError(f"Given {'transposed=1, ' if transposed else ''}groups={groups}, "
                           f"weight of size {_size(weight)}, {what}")
    if weight.shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size {_size(weight)} instead")
    out_ch = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_ch):
        raise RuntimeError(f"Given weight of size {_size(weight)}, expected bias to be "
                           f"1-dimensional with {out_ch} elements, but got bias of size "
                           f"{_size(bias)} instead")


def _check_positive(stride, dilation, padding):
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")


def _resolve_padding(padding, kernel, stride, dilation):
    """(top/left padding, total padding) per dim for an int/tuple or 'same'/'valid'."""
    n = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * n, (0,) * n
        if padding != "same":
            raise ValueError(f"Invalid padding string '{padding}', should be one of "
                             "{'valid', 'same'}")
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        total = tuple(d * (k - 1) for d, k in zip(dilation, kernel))
        return tuple(t // 2 for t in total), total
    pad = _ntuple(padding, n, "padding")
    return pad, tuple(2 * p for p in pad)


def _conv_nd(op, dims, x, weight, bias, stride, padding, dilation, groups):
    """Shared body of conv1d/2d/3d: checks, unbatched and 1-D views, the Function."""
    _check_conv_args(op, x, weight, bias, dims)
    batched = x.dim() == dims + 2
    if not batched:
        x = x.unsqueeze(0)
    _check_groups(groups, x, weight, bias, False)
    stride, dilation = _ntuple(stride, dims, "stride"), _ntuple(dilation, dims, "dilation")
    kernel = tuple(weight.shape[2:])
    pad, total = _resolve_padding(padding, kernel, stride, dilation)
    _check_positive(stride, dilation, pad)
    sizes = tuple(x.shape[2:])
    eff = tuple(d * (k - 1) + 1 for d, k in zip(dilation, kernel))
    if any(s + t < e for s, t, e in zip(sizes, total, eff)):
        padded = " x ".join(str(s + t) for s, t in zip(sizes, total))
        raise RuntimeError(f"Calculated padded input size per channel: ({padded}). Kernel "
                           f"size: ({' x '.join(map(str, eff))}). Kernel size can't be greater "
                           "than actual input size")
    out = tuple((s + t - e) // st + 1 for s, t, e, st in zip(sizes, total, eff, stride))
    # 1-D too runs as it is (the kernels take 1-3 spatial dims): no unsqueeze/squeeze
    # views and their backward nodes (a tiny conv1d step 211 -> 160 us, as conv2d's)
    y = Conv2dFn.apply(x, weight, bias, _Geometry(stride, pad, dilation, groups, out))
    return y if batched else y.squeeze(0)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) over an (N, C, H, W) or (C, H, W) input.

    Args:
        input: (N, C_in, H, W) or unbatched (C_in, H, W).
        weight: (C_out, C_in / groups, kH, kW).
        bias: optional (C_out,).
        stride, dilation: int or (sH, sW).
        padding: int, (pH, pW), 'valid' or 'same' (stride 1 only; odd totals pad the
            extra element at the bottom/right, as PyTorch does).
        groups: split input and output channels into this many groups.

    Example:
        >>> x = nbtorch.randn(1, 3, 8, 8); w = nbtorch.randn(4, 3, 3, 3)
        >>> F.conv2d(x, w, padding=1).shape
        torch.Size([1, 4, 8, 8])
    """
    return _conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution over an (N, C, L) or (C, L) input; weight (C_out, C_in/groups, k).

    Runs the convolution kernels over one spatial dim.  Arguments as `conv2d`, with ints
    for sizes.

    Example:
        >>> F.conv1d(nbtorch.randn(2, 3, 10), nbtorch.randn(5, 3, 3)).shape
        torch.Size([2, 5, 8])
    """
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution over an (N, C, D, H, W) or (C, D, H, W) input.

    weight (C_out, C_in / groups, kD, kH, kW); the other arguments as `conv2d`,
    with ints or triples. Runs the im2col + BLAS kernels of conv2d over volumes.

    Example:
        >>> F.conv3d(nbtorch.randn(1, 2, 4, 5, 5), nbtorch.randn(3, 2, 3, 3, 3)).shape
        torch.Size([1, 3, 2, 3, 3])
    """
    return _conv_nd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose_nd(op, dims, x, weight, bias, stride, padding, output_padding, groups,
                       dilation):
    """Shared body of conv_transpose1d/2d/3d: the input gradient of a convolution."""
    _check_conv_args(op, x, weight, bias, dims)
    batched = x.dim() == dims + 2
    if not batched:
        x = x.unsqueeze(0)
    _check_groups(groups, x, weight, bias, True)
    stride, dilation = _ntuple(stride, dims, "stride"), _ntuple(dilation, dims, "dilation")
    pad = _ntuple(padding, dims, "padding")
    out_pad = _ntuple(output_padding, dims, "output_padding")
    _check_positive(stride, dilation, pad)
    for op_, s, d in zip(out_pad, stride, dilation):
        if op_ < 0 or (op_ >= s and op_ >= d):
            names = ("depth", "height", "width")[3 - max(dims, 2):]

            def show(what, vals, one):        # conv_transpose1d reports itself as 2-D
                vals = ((one,) if dims == 1 else ()) + tuple(vals)
                return " ".join(f"{what}_{n}: {v}" for n, v in zip(names, vals))
            raise RuntimeError("output padding must be smaller than either stride or dilation, "
                               f"but got {show('output_padding', out_pad, 0)} "
                               f"{show('stride', stride, 1)} {show('dilation', dilation, 1)}")
    kernel, sizes = tuple(weight.shape[2:]), tuple(x.shape[2:])
    out = tuple((s - 1) * st - 2 * p + d * (k - 1) + op_ + 1
                for s, st, p, d, k, op_ in zip(sizes, stride, pad, dilation, kernel, out_pad))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, sizes))}). "
                           f"Calculated output size per channel: ({' x '.join(map(str, out))})"
                           ". Output size is too small")
    y = renamed(Conv2dInputGrad, "ConvolutionBackward0").apply(
        x, weight, _Geometry(stride, pad, dilation, groups, sizes), out)
    if bias is not None:
        y = y + bias.view((1, -1) + (1,) * (y.dim() - 2))
    return y if batched else y.squeeze(0)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """2-D transposed convolution ("deconvolution"): the input gradient of conv2d.

    Args:
        input: (N, C_in, H, W) or unbatched (C_in, H, W).
        weight: (C_in, C_out / groups, kH, kW).
        bias: optional (C_out,).
        output_padding: extra rows/cols at the bottom/right of the output
            (smaller than stride or dilation).

    Output size: (H - 1) * stride - 2 * padding + dilation * (kH - 1) + output_padding + 1.

    Example:
        >>> F.conv_transpose2d(nbtorch.randn(1, 4, 5, 5), nbtorch.randn(4, 2, 3, 3), stride=2).shape
        torch.Size([1, 2, 11, 11])
    """
    return _conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding,
                              output_padding, groups, dilation)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """1-D transposed convolution over (N, C_in, L) or (C_in, L); weight (C_in, C_out/g, k).

    Example:
        >>> F.conv_transpose1d(nbtorch.randn(1, 4, 5), nbtorch.randn(4, 2, 3)).shape
        torch.Size([1, 2, 7])
    """
    return _conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding,
                              output_padding, groups, dilation)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """3-D transposed convolution over (N, C_in, D, H, W) or (C_in, D, H, W).

    weight (C_in, C_out / groups, kD, kH, kW); arguments and output size as
    `conv_transpose2d`, per spatial dim.

    Example:
        >>> F.conv_transpose3d(nbtorch.randn(1, 4, 2, 3, 3), nbtorch.randn(4, 2, 2, 2, 2),
        ...                    stride=2).shape
        torch.Size([1, 2, 4, 6, 6])
    """
    return _conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, stride, padding,
                              output_padding, groups, dilation)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution over a time-batch-channel input (T, B, C_in) with weight
    (k, C_in, C_out) and bias (C_out,), output (T + 2*pad - k + 1, B, C_out).

    Example:
        >>> F.conv_tbc(nbtorch.randn(5, 2, 3), nbtorch.randn(3, 3, 4), nbtorch.zeros(4), 1).shape
        torch.Size([5, 2, 4])
    """
    if bias is None:
        raise TypeError("conv_tbc(): argument 'bias' (position 3) must be Tensor, not NoneType")
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.dim() != 1 or weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    y = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=int(pad))
    return y.permute(2, 0, 1)


# ---------------------------------------------------------------- unfold / fold

class UnfoldFn(Function):
    """cols (N, C*kh*kw, L) = the sliding blocks of x (N, C, H, W); adjoint of FoldFn."""

    @staticmethod
    def forward(ctx, x, geom):
        dt = _kernel_dtype("im2col", x)
        rows = x.shape[1] * geom.kernel[0] * geom.kernel[1]
        out = empty((x.shape[0], rows, geom.blocks[0] * geom.blocks[1]), dt, x.device)
        get_kernel("im2col", x.device.type)(_raw(x, dt), out._array, *geom.args())
        ctx.geom, ctx.in_shape = geom, tuple(x.shape)
        return _out(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return FoldFn.apply(grad, ctx.geom, ctx.in_shape), None


class FoldFn(Function):
    """x (N, C, H, W) = sum of the blocks in cols (N, C*kh*kw, L); adjoint of UnfoldFn."""

    @staticmethod
    def forward(ctx, cols, geom, out_shape):
        dt = _kernel_dtype("col2im", cols)
        out = empty(tuple(out_shape), dt, cols.device)
        get_kernel("col2im", cols.device.type)(_raw(cols, dt), out._array, *geom.args())
        ctx.geom = geom
        return _out(out, cols.dtype)

    @staticmethod
    def backward(ctx, grad):
        return UnfoldFn.apply(grad, ctx.geom), None, None


class _BlockGeometry:
    """kernel, stride, padding, dilation and block grid (OH, OW) of unfold/fold."""

    __slots__ = ("kernel", "stride", "padding", "dilation", "blocks")

    def __init__(self, kernel, stride, padding, dilation, size):
        self.kernel, self.stride, self.padding, self.dilation = kernel, stride, padding, dilation
        for name, vals in (("kernel size", kernel), ("stride", stride), ("dilation", dilation)):
            if any(v <= 0 for v in vals):
                raise RuntimeError(f"{name} should be greater than zero, but got "
                                   f"{name.split()[0]}_height: {vals[0]} {name.split()[0]}"
                                   f"_width: {vals[1]}")
        if any(p < 0 for p in padding):
            raise RuntimeError(f"padding should be non-negative, but got pad_height: "
                               f"{padding[0]} pad_width: {padding[1]}")
        self.blocks = tuple(conv_output_size(s, k, st, p, d)
                            for s, k, st, p, d in zip(size, kernel, stride, padding, dilation))

    def args(self):
        return self.kernel, self.stride, self.padding, self.dilation, self.blocks


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Extract sliding blocks: (N, C, H, W) -> (N, C * kH * kW, L) (im2col).

    Example:
        >>> F.unfold(nbtorch.randn(1, 2, 4, 4), kernel_size=2).shape
        torch.Size([1, 8, 9])
    """
    if input.dim() not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported "
                                  f"(got {input.dim()}D)")
    batched = input.dim() == 4
    x = input if batched else input.unsqueeze(0)
    geom = _BlockGeometry(_ntuple(kernel_size, 2, "kernel_size"), _ntuple(stride, 2, "stride"),
                          _ntuple(padding, 2, "padding"), _ntuple(dilation, 2, "dilation"),
                          tuple(x.shape[2:]))
    if any(b <= 0 for b in geom.blocks):
        raise RuntimeError(f"Given input with spatial size ({x.shape[2]}, {x.shape[3]}), "
                           f"kernel_size={list(geom.kernel)}, dilation={list(geom.dilation)}, "
                           f"padding={list(geom.padding)}, calculated shape of the array of "
                           f"sliding blocks as ({geom.blocks[0]}, {geom.blocks[1]}), but its "
                           "components must be at least one.")
    out = UnfoldFn.apply(x, geom)
    return out if batched else out.squeeze(0)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Combine sliding blocks: (N, C * kH * kW, L) -> (N, C, H, W), summing overlaps (col2im).

    Example:
        >>> F.fold(nbtorch.ones(1, 8, 9), output_size=(4, 4), kernel_size=2).shape
        torch.Size([1, 2, 4, 4])
    """
    if input.dim() not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input "
                                  f"Tensors are supported (got {input.dim()}D)")
    batched = input.dim() == 3
    cols = input if batched else input.unsqueeze(0)
    size = _ntuple(output_size, 2, "output_size")
    geom = _BlockGeometry(_ntuple(kernel_size, 2, "kernel_size"), _ntuple(stride, 2, "stride"),
                          _ntuple(padding, 2, "padding"), _ntuple(dilation, 2, "dilation"), size)
    kk = geom.kernel[0] * geom.kernel[1]
    if cols.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={cols.shape[1]} and "
                           f"kernel_size=({geom.kernel[0]}, {geom.kernel[1]})")
    n_blocks = geom.blocks[0] * geom.blocks[1]
    if geom.blocks[0] <= 0 or geom.blocks[1] <= 0 or cols.shape[2] != n_blocks:
        raise RuntimeError(f"Given output_size=({size[0]}, {size[1]}), kernel_size="
                           f"({geom.kernel[0]}, {geom.kernel[1]}), dilation=({geom.dilation[0]}, "
                           f"{geom.dilation[1]}), padding=({geom.padding[0]}, {geom.padding[1]}),"
                           f" stride=({geom.stride[0]}, {geom.stride[1]}), expected size of "
                           f"input's dimension 2 to match the calculated number of sliding "
                           f"blocks {geom.blocks[0]} * {geom.blocks[1]} = {n_blocks}, but got "
                           f"input.size(2)={cols.shape[2]}.")
    out = FoldFn.apply(cols, geom, (cols.shape[0], cols.shape[1] // kk) + size)
    return out if batched else out.squeeze(0)
