"""Pooling: max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d, adaptive_max_pool1d/2d.

Each op is one Numba kernel over (N*C, H, W) planes (``nbtorch.kernels.cpu.pool``);
1-D pooling is 2-D pooling with H = 1.  Every backward is itself a Function
whose backward is the forward again (average pooling and its gradient are
adjoint linear maps; max-pool's gradient scatter has the index gather as
adjoint), so ``create_graph=True`` gives exact higher-order gradients.
"""
from .._registry import get_kernel
from .._tensor import empty
from .. import _dtype
from ..autograd import Function
from .conv import _kernel_dtype, _ntuple, _out, _raw, _size

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
           "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d",
           "max_pool1d_with_indices", "max_pool2d_with_indices"]



def pool_output_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's pooling output length; with ceil_mode the last window must start inside."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _planes(t, dt):
    """The raw (N*C, H, W) array of an (N, C, H, W) tensor in kernel dtype `dt`."""
    n, c, h, w = t.shape
    return _raw(t, dt).reshape(n * c, h, w)


def _new(shape, dt, like):
    """A fresh (N, C, H, W) kernel output and its (N*C, H, W) raw view."""
    t = empty(tuple(shape), dt, like.device)
    return t, t._array.reshape(shape[0] * shape[1], shape[2], shape[3])


# ---------------------------------------------------------------- max: forward, scatter, gather

class MaxPool2dFn(Function):
    """(values, int64 indices) of max pooling; indices are flat offsets h*W + w per plane."""

    @staticmethod
    def forward(ctx, x, geom, adaptive):
        dt = _kernel_dtype("max_pool2d", x)
        out, out3 = _new(x.shape[:2] + geom[0], dt, x)
        idx, idx3 = _new(x.shape[:2] + geom[0], _dtype.int64, x)
        if adaptive:
            get_kernel("adaptive_max_pool2d", x.device.type)(_planes(x, dt), out3, idx3)
        else:
            get_kernel("max_pool2d", x.device.type)(_planes(x, dt), out3, idx3, *geom[1:])
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        ctx.in_shape = tuple(x.shape)
        return _out(out, x.dtype), idx

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        idx, = ctx.saved_tensors
        return IndexScatterFn.apply(grad, idx, ctx.in_shape), None, None


class IndexScatterFn(Function):
    """gx (N, C, H, W): grad (N, C, OH, OW) added at the flat plane indices."""

    @staticmethod
    def forward(ctx, grad, idx, in_shape):
        dt = _kernel_dtype("max_pool2d_backward", grad)
        gx, gx3 = _new(in_shape, dt, grad)
        get_kernel("max_pool2d_backward", grad.device.type)(
            _planes(grad, dt), idx.contiguous()._array.reshape(-1, *idx.shape[2:]), gx3)
        ctx.save_for_backward(idx)
        return _out(gx, grad.dtype)

    @staticmethod
    def backward(ctx, ggx):
        idx, = ctx.saved_tensors
        return IndexGatherFn.apply(ggx, idx), None, None


class IndexGatherFn(Function):
    """out (N, C, OH, OW) = x (N, C, H, W) picked at the flat plane indices."""

    @staticmethod
    def forward(ctx, x, idx):
        dt = _kernel_dtype("max_pool2d_backward", x)
        n, c = x.shape[:2]
        out = empty(tuple(idx.shape), dt, x.device)
        get_kernel("take_planes", x.device.type)(
            _raw(x, dt).reshape(n * c, -1), idx.contiguous()._array.reshape(n * c, -1),
            out._array.reshape(n * c, -1))
        ctx.save_for_backward(idx)
        ctx.in_shape = tuple(x.shape)
        return _out(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        idx, = ctx.saved_tensors
        return IndexScatterFn.apply(grad, idx, ctx.in_shape), None


# ---------------------------------------------------------------- average: forward <-> backward

class AvgPool2dFn(Function):
    """Average pooling; geom = (out_hw, kernel, stride, padding, count_include_pad, divisor)
    or (out_hw,) for adaptive pooling."""

    @staticmethod
    def forward(ctx, x, geom):
        dt = _kernel_dtype("avg_pool2d", x)
        out, out3 = _new(x.shape[:2] + geom[0], dt, x)
        if len(geom) == 1:
            get_kernel("adaptive_avg_pool2d", x.device.type)(_planes(x, dt), out3)
        else:
            get_kernel("avg_pool2d", x.device.type)(_planes(x, dt), out3, *geom[1:])
        ctx.geom, ctx.in_shape = geom, tuple(x.shape)
        return _out(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return AvgPool2dBackwardFn.apply(grad, ctx.geom, ctx.in_shape), None


class AvgPool2dBackwardFn(Function):
    """The input gradient of AvgPool2dFn (a linear map whose adjoint is the pooling)."""

    @staticmethod
    def forward(ctx, grad, geom, in_shape):
        dt = _kernel_dtype("avg_pool2d_backward", grad)
        gx, gx3 = _new(in_shape, dt, grad)
        if len(geom) == 1:
            get_kernel("adaptive_avg_pool2d_backward", grad.device.type)(_planes(grad, dt), gx3)
        else:
            get_kernel("avg_pool2d_backward", grad.device.type)(_planes(grad, dt), gx3, *geom[1:])
        ctx.geom = geom
        return _out(gx, grad.dtype)

    @staticmethod
    def backward(ctx, ggx):
        return AvgPool2dFn.apply(ggx, ctx.geom), None, None


# ---------------------------------------------------------------- argument handling

def _as_4d(op, x, dims):
    """View a (N, C, *S) or (C, *S) input as (N, C, H, W); returns it and an undo function."""
    if x.dim() not in (dims + 1, dims + 2) or any(s == 0 for s in x.shape[-dims - 1:]):
        if dims == 2:
            raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
        raise RuntimeError(f"{op}() Expected 2D or 3D input, but got {_size(x)}")
    batched = x.dim() == dims + 2
    x4 = x if batched else x.unsqueeze(0)
    if dims == 1:
        x4 = x4.unsqueeze(2)

    def undo(t):
        if dims == 1:
            t = t.squeeze(2)
        return t if batched else t.squeeze(0)
    return x4, undo


def _window_args(dims, kernel_size, stride, padding, dilation):
    """Kernel, stride (default: kernel), padding and dilation as 2-D tuples, checked."""
    kernel = _ntuple(kernel_size, dims, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else _ntuple(stride, dims, "stride")
    pad, dil = _ntuple(padding, dims, "padding"), _ntuple(dilation, dims, "dilation")
    if dims == 1:
        kernel, stride, pad, dil = (1,) + kernel, (1,) + stride, (0,) + pad, (1,) + dil
    checks = (("kernel size", "kH", "kW", kernel), ("stride", "dH", "dW", stride),
              ("dilation", "dilationH", "dilationW", dil))
    for what, a, b, vals in checks:
        if vals[0] <= 0 or vals[1] <= 0:
            raise RuntimeError(f"{what} should be greater than zero, but got {a}: {vals[0]} "
                               f"{b}: {vals[1]}")
    if pad[0] > kernel[0] // 2 or pad[1] > kernel[1] // 2 or min(pad) < 0:
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"padW = {pad[1]}, padH = {pad[0]}, kW = {kernel[1]}, kH = {kernel[0]}")
    return kernel, stride, pad, dil


def _pool_out_hw(x4, kernel, stride, pad, dil, ceil_mode):
    c, h, w = x4.shape[1:]
    out = tuple(pool_output_size(s, k, st, p, d, ceil_mode)
                for s, k, st, p, d in zip((h, w), kernel, stride, pad, dil))
    if out[0] < 1 or out[1] < 1:
        raise RuntimeError(f"Given input size: ({c}x{h}x{w}). Calculated output size: "
                           f"({c}x{out[0]}x{out[1]}). Output size is too small")
    return out


def _max_pool(op, dims, x, kernel_size, stride, padding, dilation, ceil_mode):
    x4, undo = _as_4d(op, x, dims)
    kernel, stride, pad, dil = _window_args(dims, kernel_size, stride, padding, dilation)
    out_hw = _pool_out_hw(x4, kernel, stride, pad, dil, ceil_mode)
    out, idx = MaxPool2dFn.apply(x4, (out_hw, kernel, stride, pad, dil), False)
    return undo(out), undo(idx)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """`max_pool2d` that returns (values, indices)."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over (N, C, H, W) or (C, H, W).

    Args:
        kernel_size, stride (default: kernel_size), padding (<= kernel/2, implicit -inf),
        dilation: int or (h, w).
        ceil_mode: round the output size up (windows must still start inside the input).
        return_indices: also return the int64 flat index h * W + w of each maximum.

    Example:
        >>> F.max_pool2d(nbtorch.randn(1, 1, 4, 4), 2).shape
        torch.Size([1, 1, 2, 2])
    """
    out, idx = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """`max_pool1d` that returns (values, indices)."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling over (N, C, L) or (C, L); arguments as `max_pool2d`.

    Example:
        >>> F.max_pool1d(nbtorch.tensor([[[1., 3., 2., 5.]]]), 2)
        tensor([[[3., 5.]]])
    """
    out, idx = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


def _avg_pool(op, dims, x, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override):
    x4, undo = _as_4d(op, x, dims)
    kernel, stride, pad, _ = _window_args(dims, kernel_size, stride, padding, 1)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    out_hw = _pool_out_hw(x4, kernel, stride, pad, (1, 1), ceil_mode)
    geom = (out_hw, kernel, stride, pad, bool(count_include_pad), divisor_override)
    return undo(AvgPool2dFn.apply(x4, geom))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling over (N, C, H, W) or (C, H, W).

    Args:
        count_include_pad: count zero padding in the divisor (PyTorch's default True).
        divisor_override: divide every window sum by this instead.

    Example:
        >>> F.avg_pool2d(nbtorch.ones(1, 1, 4, 4), 2)
        tensor([[[[1., 1.],
                  [1., 1.]]]])
    """
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling over (N, C, L) or (C, L); arguments as `avg_pool2d`.

    Example:
        >>> F.avg_pool1d(nbtorch.tensor([[[1., 3., 2., 6.]]]), 2)
        tensor([[[2., 4.]]])
    """
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, None)


def _adaptive_out(op, x4, output_size, dims):
    """Output (OH, OW) with None meaning 'keep the input size'."""
    sizes = output_size if isinstance(output_size, (tuple, list)) else (output_size,) * dims
    if len(sizes) != dims:
        raise ValueError(f"{op}: output_size must be {dims}, but got {len(sizes)}")
    in_sizes = tuple(x4.shape[4 - dims:])
    out = tuple(int(s) if s is not None else i for s, i in zip(sizes, in_sizes))
    if any(s < 0 for s in out):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {list(out)}")
    return ((1,) + out) if dims == 1 else out


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed output size (windows floor(i*H/OH) .. ceil((i+1)*H/OH)).

    Example:
        >>> F.adaptive_avg_pool2d(nbtorch.randn(2, 3, 7, 5), (1, 1)).shape
        torch.Size([2, 3, 1, 1])
    """
    x4, undo = _as_4d("adaptive_avg_pool2d", input, 2)
    return undo(AvgPool2dFn.apply(x4, (_adaptive_out("adaptive_avg_pool2d", x4, output_size, 2),)))


def adaptive_avg_pool1d(input, output_size):
    """Adaptive average pooling over (N, C, L) or (C, L) to length output_size.

    Example:
        >>> F.adaptive_avg_pool1d(nbtorch.tensor([[[1., 2., 3., 4.]]]), 2)
        tensor([[[1.5000, 3.5000]]])
    """
    x4, undo = _as_4d("adaptive_avg_pool1d", input, 1)
    return undo(AvgPool2dFn.apply(x4, (_adaptive_out("adaptive_avg_pool1d", x4, output_size, 1),)))


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed output size (PyTorch's adaptive windows), optional indices.

    Example:
        >>> F.adaptive_max_pool2d(nbtorch.randn(2, 3, 7, 5), 2).shape
        torch.Size([2, 3, 2, 2])
    """
    x4, undo = _as_4d("adaptive_max_pool2d", input, 2)
    out_hw = _adaptive_out("adaptive_max_pool2d", x4, output_size, 2)
    out, idx = MaxPool2dFn.apply(x4, (out_hw,), True)
    return (undo(out), undo(idx)) if return_indices else undo(out)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Adaptive max pooling over (N, C, L) or (C, L), optional indices.

    Example:
        >>> F.adaptive_max_pool1d(nbtorch.tensor([[[1., 5., 3., 4.]]]), 2)
        tensor([[[5., 4.]]])
    """
    x4, undo = _as_4d("adaptive_max_pool1d", input, 1)
    out_hw = _adaptive_out("adaptive_max_pool1d", x4, output_size, 1)
    out, idx = MaxPool2dFn.apply(x4, (out_hw,), True)
    return (undo(out), undo(idx)) if return_indices else undo(out)
