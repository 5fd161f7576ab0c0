"""Pooling: max/avg pooling and adaptive avg/max pooling over 1, 2 and 3 spatial dims.

Each op is one Numba kernel over (N*C, *S) planes or volumes
(``nbtorch.kernels.cpu.pool``; the kernels run 2-D pooling as 3-D with D = 1,
and 1-D pooling here is 2-D pooling with H = 1).  Every backward is itself a
Function whose backward is the forward again (average pooling and its gradient
are adjoint linear maps; max-pool's gradient scatter has the index gather as
adjoint), so ``create_graph=True`` gives exact higher-order gradients.  Max
indices are flat offsets into one input plane/volume, as PyTorch's.
"""
import numpy as np

from .._device import CPU
from .._lazy import kernel_module
from .._registry import _KERNELS, get_kernel
from .._tensor import Tensor, empty, _LAYOUTS, _layout
from .. import _dtype
from ..autograd import Function, grad_mode
from ..autograd import function as _function
from ..autograd.function import APPLY_WRAPPERS, renamed
from .conv import _kernel_dtype, _ntuple, _out, _raw, _size

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices",
           "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices"]


def pool_output_size(size, kernel, stride, padding, dilation, ceil_mode):
    """PyTorch's pooling output length; with ceil_mode the last window must start inside."""
    span = size + 2 * padding - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1
    return out


def _planes(t, dt):
    """The raw (N*C, *S) array of an (N, C, *S) tensor in kernel dtype `dt`."""
    n, c = t.shape[:2]
    return _raw(t, dt).reshape((n * c,) + tuple(t.shape[2:]))


def _integral_in_float64(x):
    """float64 for an integer (not bool) input, whose max pooling runs in it - exact below
    2**53, as PyTorch pools integer images - else None."""
    d = x.dtype
    if d.is_floating_point or d.is_complex or d is _dtype.bool:
        return None
    return _dtype.float64


def _new(shape, dt, like):
    """A fresh (N, C, *S) kernel output and its (N*C, *S) raw view."""
    shape = tuple(shape)
    t = empty(shape, dt, like.device)
    return t, t._array.reshape((shape[0] * shape[1],) + shape[2:])


# ---------------------------------------------------------------- max: forward, scatter, gather

class MaxPoolFn(Function):
    """(values, int64 indices) of max pooling; geom = (out_size, kernel, stride, padding,
    dilation), or (out_size,) for adaptive pooling."""

    @staticmethod
    def forward(ctx, x, geom):
        dt = _integral_in_float64(x) or _kernel_dtype("max_pool2d", x)
        out, out_k = _new(x.shape[:2] + geom[0], dt, x)
        idx, idx_k = _new(x.shape[:2] + geom[0], _dtype.int64, x)
        if len(geom) == 1:
            get_kernel("adaptive_max_pool2d", x.device.type)(_planes(x, dt), out_k, idx_k)
        else:
            get_kernel("max_pool2d", x.device.type)(_planes(x, dt), out_k, idx_k, *geom[1:])
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(idx)
        ctx.in_shape = tuple(x.shape)
        return _out(out, x.dtype), idx

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        idx, = ctx.saved_tensors
        return IndexScatterFn.apply(grad, idx, ctx.in_shape), None


class IndexScatterFn(Function):
    """gx (N, C, *S): grad (N, C, *OS) added at the flat plane indices (also max_unpool)."""

    @staticmethod
    def forward(ctx, grad, idx, in_shape):
        dt = _kernel_dtype("max_pool2d_backward", grad)
        gx, gx_k = _new(in_shape, dt, grad)
        p = in_shape[0] * in_shape[1]
        get_kernel("max_pool2d_backward", grad.device.type)(
            _raw(grad, dt).reshape(p, -1), idx.contiguous()._array.reshape(p, -1),
            gx_k.reshape(p, -1))
        ctx.save_for_backward(idx)
        return _out(gx, grad.dtype)

    @staticmethod
    def backward(ctx, ggx):
        idx, = ctx.saved_tensors
        return IndexGatherFn.apply(ggx, idx), None, None


class IndexGatherFn(Function):
    """out (N, C, *OS) = x (N, C, *S) picked at the flat plane indices."""

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

class AvgPoolFn(Function):
    """Average pooling; geom = (out_size, kernel, stride, padding, count_include_pad,
    divisor) or (out_size,) for adaptive pooling."""

    @staticmethod
    def forward(ctx, x, geom):
        wide = x.dtype is _dtype.int64 and len(geom) > 1     # PyTorch averages longs too
        dt = _dtype.float64 if wide else _kernel_dtype("avg_pool2d", x)
        out, out_k = _new(x.shape[:2] + geom[0], dt, x)
        if len(geom) == 1:
            get_kernel("adaptive_avg_pool2d", x.device.type)(_planes(x, dt), out_k)
        else:
            get_kernel("avg_pool2d", x.device.type)(_planes(x, dt), out_k, *geom[1:])
        ctx.geom, ctx.in_shape = geom, tuple(x.shape)
        if wide:
            out = out.trunc()                   # the integer division's quotient
        return _out(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return AvgPoolBackwardFn.apply(grad, ctx.geom, ctx.in_shape), None


class AvgPoolBackwardFn(Function):
    """The input gradient of AvgPoolFn (a linear map whose adjoint is the pooling)."""

    @staticmethod
    def forward(ctx, grad, geom, in_shape):
        dt = _kernel_dtype("avg_pool2d_backward", grad)
        gx, gx_k = _new(in_shape, dt, grad)
        if len(geom) == 1:
            get_kernel("adaptive_avg_pool2d_backward", grad.device.type)(_planes(grad, dt), gx_k)
        else:
            get_kernel("avg_pool2d_backward", grad.device.type)(_planes(grad, dt), gx_k,
                                                                 *geom[1:])
        ctx.geom = geom
        return _out(gx, grad.dtype)

    @staticmethod
    def backward(ctx, ggx):
        return AvgPoolFn.apply(ggx, ctx.geom), None, None


# ---------------------------------------------------------------- argument handling

def _rank_error(op, x, dims):
    """PyTorch's message for an input of the wrong rank."""
    if op in ("avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d"):
        return (f"Expected 2 to 3 dimensions, but got {x.dim()}-dimensional tensor for "
                f"argument #1 'self' (while checking arguments for {op})")
    if op == "max_pool1d":
        return (f"max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch "
                f"size for input, but got:{_size(x)}")
    if op.startswith("adaptive"):
        sep = ":" if "max" in op else ""
        return f"{op}(): Expected {dims + 1}D or {dims + 2}D tensor, but got{sep} {_size(x)}"
    return f"non-empty {dims + 1}D or {dims + 2}D (batch mode) tensor expected for input"


def _empty_error(op, x, dims, dim):
    """PyTorch's message for an empty non-batch dim `dim` (of the batched view)."""
    if op.startswith("adaptive"):
        return (f"{op}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {_size(x)} with dimension {dim} being empty")
    if dims == 3:
        return (f"{op}(): Expected input's non-batch dimensions to have positive length, but "
                f"input has a shape of {_size(x)} and non-batch dimension {dim - 1} has length "
                "zero!")
    if op == "max_pool1d":
        return _rank_error(op, x, dims)
    return (f"Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
            f"but got:{_size(x)}")


def as_batched(op, x, dims):
    """View a (N, C, *S) or (C, *S) input with `dims` spatial dims as (N, C, *S') with S' of
    2 or 3 dims (1-D gets H = 1); returns it and the function that undoes the view."""
    if x.dim() not in (dims + 1, dims + 2):
        raise RuntimeError(_rank_error(op, x, dims))
    batched = x.dim() == dims + 2
    xb = x if batched else x.unsqueeze(0)
    for d in range(1, xb.dim()):
        if xb.shape[d] == 0:
            raise RuntimeError(_empty_error(op, xb if batched else x, dims,
                                            d if batched else d - 1))
    if dims == 1:
        xb = xb.unsqueeze(2)

    def undo(t):
        if dims == 1:
            t = t.squeeze(2)
        return t if batched else t.squeeze(0)
    return xb, undo


_AXES = {2: ("H", "W"), 3: ("T", "H", "W")}


def _window_args(op, dims, kernel_size, stride, padding, dilation):
    """Kernel, stride (default: kernel), padding and dilation as 2-D/3-D tuples, checked with
    PyTorch's messages."""
    kernel = _ntuple(kernel_size, dims, "kernel_size")
    stride = kernel if stride is None or (isinstance(stride, (list, tuple)) and not stride) \
        else _ntuple(stride, dims, "stride")
    pad, dil = _ntuple(padding, dims, "padding"), _ntuple(dilation, dims, "dilation")
    if op == "max_pool1d":
        for what, v in (("kernel_size", kernel), ("stride", stride), ("dilation", dil)):
            if v[0] <= 0:
                raise RuntimeError(f"max_pool1d() {what} must be greater than zero, but got "
                                   f"{v[0]}")
        if pad[0] < 0:
            raise RuntimeError(f"max_pool1d() padding must be non-negative, but got {pad[0]}")
        if pad[0] > kernel[0] // 2:
            raise RuntimeError(f"max_pool1d() padding should be at most half of kernel size, "
                               f"but got padding={pad[0]} and kernel_size={kernel[0]}")
    if dims == 1:
        kernel, stride, pad, dil = (1,) + kernel, (1,) + stride, (0,) + pad, (1,) + dil
    axes = _AXES[len(kernel)]
    if any(k <= 0 for k in kernel):
        raise RuntimeError("kernel size should be greater than zero, but got "
                           + " ".join(f"k{a}: {k}" for a, k in zip(axes, kernel)))
    if any(s == 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(s < 0 for s in stride):
        raise RuntimeError("stride should be greater than zero, but got "
                           + " ".join(f"d{a}: {s}" for a, s in zip(axes, stride)))
    if any(d <= 0 for d in dil):
        raise RuntimeError("dilation should be greater than zero, but got "
                           + " ".join(f"dilation{a}: {d}" for a, d in zip(axes, dil)))
    if any(p < 0 for p in pad):
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(pad)}")
    for k, p, d in zip(kernel, pad, dil):
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={d}")
    if any(p > k // 2 for k, p in zip(kernel, pad)):
        if len(kernel) == 3:
            raise RuntimeError(
                f"pad should be smaller than or equal to half of kernel size, but got "
                f"kT: {kernel[0]} kW: {kernel[2]} kH: {kernel[1]} padT: {pad[0]} padW: "
                f"{pad[2]} padH: {pad[1]}")
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but "
                           f"got padW = {pad[1]}, padH = {pad[0]}, kW = {kernel[1]}, kH = "
                           f"{kernel[0]}")
    return kernel, stride, pad, dil


def _pool_out_size(op, xb, kernel, stride, pad, dil, ceil_mode):
    sizes = tuple(xb.shape[2:])
    out = tuple(pool_output_size(s, k, st, p, d, ceil_mode)
                for s, k, st, p, d in zip(sizes, kernel, stride, pad, dil))
    if any(o < 1 for o in out):
        if op == "max_pool1d":
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {out[-1]}")
        c = xb.shape[1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c,) + sizes))}). "
                           f"Calculated output size: ({'x'.join(map(str, (c,) + out))}). "
                           "Output size is too small")
    return out


def _max_pool(op, dims, x, kernel_size, stride, padding, dilation, ceil_mode):
    xb, undo = as_batched(op, x, dims)
    kernel, stride, pad, dil = _window_args(op, dims, kernel_size, stride, padding, dilation)
    out_size = _pool_out_size(op, xb, kernel, stride, pad, dil, ceil_mode)
    fn = renamed(MaxPoolFn, f"MaxPool{dims}DWithIndicesBackward0") if dims > 1 else MaxPoolFn
    out, idx = fn.apply(xb, (out_size, kernel, stride, pad, dil))
    return undo(out), undo(idx)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=True):
    """`max_pool3d` that returns (values, indices)."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling over (N, C, D, H, W) or (C, D, H, W); arguments as `max_pool2d`
    (ints or triples); indices are flat offsets (d * H + h) * W + w.

    Example:
        >>> F.max_pool3d(nbtorch.randn(1, 1, 4, 4, 4), 2).shape
        torch.Size([1, 1, 2, 2, 2])
    """
    out, idx = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


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
    if (input.__class__ is Tensor and padding.__class__ is int and padding == 0
            and dilation.__class__ is int and dilation == 1 and not ceil_mode):
        res = _small_pool(_MAX_CPU, input, kernel_size, stride, bool(return_indices), False)
        if res is not None:
            return res
    if input.is_quantized:          # a QTensor: the max of its integers
        return input.max_pool2d(kernel_size, stride, padding, dilation, ceil_mode,
                                return_indices)
    out, idx = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


# ---------------------------------------------------------------- small unrecorded 2-D pooling
# max_pool2d/avg_pool2d of a small plain C-contiguous (N, C, H, W) float32/float64 CPU
# tensor without padding, dilation, ceil_mode or divisor, with nothing to record or watch:
# every window lies inside the input, so the launchers (kernels/cpu/pool.py) run their
# "inside" loops - `_max_2x2` for the 2x2/2 window, else `_max_inside` / `_avg_inside` -
# serially below SPLIT_MIN_WORK taps. While the registered launcher is that module's
# own, such a call runs that loop straight on the arrays MaxPoolFn/AvgPoolFn would give
# the launcher (geometry cached per shape and arguments; max-pool's indices a bare array
# when not returned), skipping Function.apply, the argument layers and the launcher's
# dispatch: the same loop, so the same values and indices (2x3x8x8 max_pool2d(x, 2)
# ~21 -> ~3.5 us old/new alternated in one process).

_LAUNCHERS = {("max_pool2d", "cpu"): "max_pool2d_forward",
              ("avg_pool2d", "cpu"): "avg_pool2d_forward"}
_MAX_CPU, _AVG_CPU = tuple(_LAUNCHERS)
_POOL_MODULE = [None]   # kernels/cpu/pool.py with its two launchers, as first loaded
_SMALL_POOL = 1 << 16   # input elements
_SIZES, _STRIDES = (int, tuple), (int, tuple, type(None))     # the cached argument kinds
_POOL_GEOMETRY = {}     # (input shape, kernel_size, stride) -> `_pool_geometry`'s answer


def _pool_geometry(shape, kernel_size, stride):
    """(output shape, input planes' shape, output planes' shape, kernel, stride, taps) of
    2-D pooling of a (N, C, H, W) input without padding or dilation, as `_window_args` and
    `_pool_out_size` give them; None where those raise (the general path then does)."""
    key = (shape, kernel_size, stride)
    try:
        geom = _POOL_GEOMETRY.get(key, False)
    except TypeError:                   # a tuple holding a list
        return None
    if geom is not False:
        return geom
    geom = None
    n, c, h, w = shape
    if n and c and h and w:
        try:
            kernel, strides, pad, dil = _window_args("max_pool2d", 2, kernel_size, stride, 0, 1)
            out = _pool_out_size("max_pool2d", _Shape(shape), kernel, strides, pad, dil, False)
        except (RuntimeError, ValueError, TypeError):
            out = None
        if out is not None:
            geom = ((n, c) + out, (n * c, h, w), (n * c,) + out, kernel, strides,
                    n * c * out[0] * out[1] * kernel[0] * kernel[1])
    if len(_POOL_GEOMETRY) >= 256:
        _POOL_GEOMETRY.clear()
    _POOL_GEOMETRY[key] = geom
    return geom


class _Shape:
    """A stand-in input of `shape` for `_pool_out_size` (which reads only .shape)."""

    __slots__ = ("shape",)

    def __init__(self, shape):
        self.shape = shape


def _pool_module():
    """(kernels/cpu/pool.py, its max and avg launchers as its code defines them)."""
    module = kernel_module("cpu.pool")
    found = _POOL_MODULE[0] = (module, module.max_pool2d_forward, module.avg_pool2d_forward)
    return found


def _small_pool(key, x, kernel_size, stride, flag, average=True):
    """max_pool2d (`flag`: return_indices, then (out, indices)) or avg_pool2d (`flag`:
    count_include_pad, which no window inside the input reads) of `x` as the section's
    comment says; None where that does not hold (the general path then does it all,
    errors included)."""
    d = x.dtype
    shape = x._shape
    if (len(shape) != 4 or (d is not _dtype.float32 and d is not _dtype.float64)
            or x.device is not CPU or APPLY_WRAPPERS[0] or _function.TRACE_HOOK[0] is not None
            or grad_mode.STATE.enabled and x._requires_grad):
        return None
    layout = _LAYOUTS.get(shape) or _layout(shape)
    if (x._strides != layout[1] or layout[2] >= _SMALL_POOL
            or kernel_size.__class__ not in _SIZES or stride.__class__ not in _STRIDES):
        return None                     # (lists, tensors: the general path)
    geom = _pool_geometry(shape, kernel_size, stride)
    found = _POOL_MODULE[0] or _pool_module()
    kernel = _KERNELS.get(key)
    if kernel is None:
        kernel = get_kernel(*key)
    if geom is None or kernel is not found[2 if average else 1]:
        return None                     # (a user's kernel runs through the layers)
    out_shape, planes, out_planes, k, st, taps = geom
    module = found[0]
    xa = x._arr
    xa = (x._array if xa is None else xa).reshape(planes)
    out = empty(out_shape, d, CPU)
    o = out._arr.reshape(out_planes)
    serial = taps < module.SPLIT_MIN_WORK
    if average:
        if serial:
            module._avg_inside(xa, o, k + st, k[0] * k[1])
        else:
            kernel(xa, o, k, st, (0, 0), flag, None)
        return out
    if flag:
        idx = empty(out_shape, _dtype.int64, CPU)
        i = idx._arr.reshape(out_planes)
    else:
        idx = None
        i = np.empty(out_planes, np.int64)
    if not serial:
        kernel(xa, o, i, k, st, (0, 0), (1, 1))
    elif k == (2, 2) and st == (2, 2):
        module._max_2x2(xa, o, i)
    else:
        module._max_inside(xa, o, i, k + st + (1, 1))
    return (out, idx) if flag else out


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
    xb, undo = as_batched(op, x, dims)
    kernel, stride, pad, _ = _window_args(op, dims, kernel_size, stride, padding, 1)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if dims == 3 and any(s < k for s, k in zip(xb.shape[2:], kernel)):
        t, h, w = xb.shape[2:]
        raise RuntimeError(f"input image (T: {t} H: {h} W: {w}) smaller than kernel size (kT: "
                           f"{kernel[0]} kH: {kernel[1]} kW: {kernel[2]})")
    out_size = _pool_out_size(op, xb, kernel, stride, pad, (1,) * len(kernel), ceil_mode)
    geom = (out_size, kernel, stride, pad, bool(count_include_pad), divisor_override)
    fn = renamed(AvgPoolFn, f"AvgPool{dims}DBackward0") if dims > 1 else AvgPoolFn
    return undo(fn.apply(xb, geom))


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling over (N, C, D, H, W) or (C, D, H, W); arguments as `avg_pool2d`.

    Example:
        >>> F.avg_pool3d(nbtorch.ones(1, 1, 2, 2, 2), 2)
        tensor([[[[[1.]]]]])
    """
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                     count_include_pad, divisor_override)


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
    if (input.__class__ is Tensor and padding.__class__ is int and padding == 0
            and not ceil_mode and divisor_override is None):
        res = _small_pool(_AVG_CPU, input, kernel_size, stride, bool(count_include_pad))
        if res is not None:
            return res
    if input.is_quantized:          # a QTensor: its quantized kernel (NotImplemented before)
        return input.avg_pool2d(kernel_size, stride, padding, ceil_mode, count_include_pad,
                                divisor_override)
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


def _adaptive_out(op, xb, output_size, dims):
    """Output sizes (2 or 3 of them) with None meaning 'keep the input size'."""
    if isinstance(output_size, (tuple, list)):
        sizes = tuple(output_size)
        if len(sizes) != dims:
            if dims == 1:
                raise RuntimeError(f"{op}() argument 'output_size' should contain one int (got "
                                   f"{len(sizes)})")
            if "max" in op:
                raise RuntimeError(f"{op}(): internal error: output_size.size() must be {dims}")
            raise RuntimeError(f"{op}: output_size must be {dims}")
    else:
        sizes = (output_size,) * dims
    in_sizes = tuple(xb.shape[-dims:])
    out = tuple(int(s) if s is not None else i for s, i in zip(sizes, in_sizes))
    if any(s < 0 for s in out):
        name = op.replace("1d", "2d")
        shown = ((1,) + out) if dims == 1 else out
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{', '.join(map(str, shown))}}}")
    return ((1,) + out) if dims == 1 else out


def _adaptive(op, dims, input, output_size, fn):
    xb, undo = as_batched(op, input, dims)
    result = fn.apply(xb, (_adaptive_out(op, xb, output_size, dims),))
    if isinstance(result, tuple):
        return undo(result[0]), undo(result[1])
    return undo(result)


def adaptive_avg_pool3d(input, output_size):
    """Adaptive average pooling over (N, C, D, H, W) or (C, D, H, W) to `output_size`.

    Example:
        >>> F.adaptive_avg_pool3d(nbtorch.randn(1, 2, 5, 6, 7), (2, None, 3)).shape
        torch.Size([1, 2, 2, 6, 3])
    """
    return _adaptive("adaptive_avg_pool3d", 3, input, output_size,
                     renamed(AvgPoolFn, "AdaptiveAvgPool3DBackward0"))


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed output size (windows floor(i*H/OH) .. ceil((i+1)*H/OH)).

    Example:
        >>> F.adaptive_avg_pool2d(nbtorch.randn(2, 3, 7, 5), (1, 1)).shape
        torch.Size([2, 3, 1, 1])
    """
    if input.is_quantized:          # a QTensor: window means of its integers
        return input.adaptive_avg_pool2d(output_size)
    return _adaptive("adaptive_avg_pool2d", 2, input, output_size,
                     renamed(AvgPoolFn, "AdaptiveAvgPool2DBackward0"))


def adaptive_avg_pool1d(input, output_size):
    """Adaptive average pooling over (N, C, L) or (C, L) to length output_size.

    Example:
        >>> F.adaptive_avg_pool1d(nbtorch.tensor([[[1., 2., 3., 4.]]]), 2)
        tensor([[[1.5000, 3.5000]]])
    """
    return _adaptive("adaptive_avg_pool1d", 1, input, output_size, AvgPoolFn)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=True):
    """`adaptive_max_pool3d` that returns (values, indices)."""
    return _adaptive("adaptive_max_pool3d", 3, input, output_size,
                     renamed(MaxPoolFn, "AdaptiveMaxPool3DBackward0"))


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=True):
    """`adaptive_max_pool2d` that returns (values, indices)."""
    return _adaptive("adaptive_max_pool2d", 2, input, output_size,
                     renamed(MaxPoolFn, "AdaptiveMaxPool2DBackward0"))


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=True):
    """`adaptive_max_pool1d` that returns (values, indices)."""
    return _adaptive("adaptive_max_pool1d", 1, input, output_size, MaxPoolFn)


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """Adaptive max pooling over (N, C, D, H, W) or (C, D, H, W), optional indices.

    Example:
        >>> F.adaptive_max_pool3d(nbtorch.randn(1, 2, 5, 6, 7), 2).shape
        torch.Size([1, 2, 2, 2, 2])
    """
    out, idx = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Max pooling to a fixed output size (PyTorch's adaptive windows), optional indices.

    Example:
        >>> F.adaptive_max_pool2d(nbtorch.randn(2, 3, 7, 5), 2).shape
        torch.Size([2, 3, 2, 2])
    """
    out, idx = adaptive_max_pool2d_with_indices(input, output_size)
    return (out, idx) if return_indices else out


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """Adaptive max pooling over (N, C, L) or (C, L), optional indices.

    Example:
        >>> F.adaptive_max_pool1d(nbtorch.tensor([[[1., 5., 3., 4.]]]), 2)
        tensor([[[5., 4.]]])
    """
    out, idx = adaptive_max_pool1d_with_indices(input, output_size)
    return (out, idx) if return_indices else out
