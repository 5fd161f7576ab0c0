"""Padding and resizing: pad (constant/reflect/replicate/circular) and interpolate.

Both are separable, so they are built from two resampling primitives applied
one axis at a time (``nbtorch.kernels.cpu.pool``): an index gather (padding,
nearest) and a two-tap linear gather (linear/bilinear/trilinear).  Each
primitive's backward is its adjoint (scatter-add), whose backward is the
primitive again, so higher-order gradients are exact.  ``mode='area'`` is
adaptive average pooling, as in PyTorch; bicubic and the antialiased filters are
sums of two-tap gathers (`resampling_taps.py`).
"""
import numpy as np

from .. import _dtype
from .._device import CPU
from .._registry import get_kernel
from .._scalars import checked
from .._tensor import Tensor, empty
from ..autograd import Function, function as _function
from ..autograd.function import unrecorded
from .conv import _out, _raw, _size
from .pointwise_select import fresh_select
from .pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d
from .resampling_index import gather_dims
from .resampling_taps import antialias_taps, apply_taps, cubic_taps

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear"]



def _compute_dtype(t):
    """Kernels run in the input's dtype, float16 and bfloat16 upcast to float32."""
    return t.dtype.compute


def _split(shape, dim):
    """(A, L, B) sizes of `shape` around axis `dim`."""
    a = int(np.prod(shape[:dim], dtype=np.int64))
    return a, shape[dim], int(np.prod(shape[dim + 1:], dtype=np.int64))


def _axis_out(x, dim, m, dt):
    """A fresh tensor shaped like x with axis `dim` of size m, and its (A, m, B) raw view."""
    shape = tuple(x.shape[:dim]) + (m,) + tuple(x.shape[dim + 1:])
    t = empty(shape, dt, x.device)
    a, _, b = _split(shape, dim)
    return t, t._array.reshape(a, m, b)


def _axis_in(x, dim, dt):
    return _raw(x, dt).reshape(_split(tuple(x.shape), dim))


# ---------------------------------------------------------------- the two primitive pairs

class GatherAxisFn(Function):
    """out[..., m, ...] = x[..., index[m], ...] along `dim`, `fill` where index[m] < 0."""

    @staticmethod
    def forward(ctx, x, dim, index, fill):
        dt = _compute_dtype(x)
        out, out3 = _axis_out(x, dim, len(index), dt)
        get_kernel("gather_axis", x.device.type)(_axis_in(x, dim, dt), index, fill, out3)
        ctx.dim, ctx.index, ctx.size = dim, index, x.shape[dim]
        return _out(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return ScatterAxisFn.apply(grad, ctx.dim, ctx.index, ctx.size), None, None, None


class ScatterAxisFn(Function):
    """gx[..., index[m], ...] += g[..., m, ...] along `dim` (the adjoint of GatherAxisFn)."""

    @staticmethod
    def forward(ctx, grad, dim, index, size):
        dt = _compute_dtype(grad)
        gx, gx3 = _axis_out(grad, dim, size, dt)
        get_kernel("gather_axis_backward", grad.device.type)(_axis_in(grad, dim, dt), index, gx3)
        ctx.dim, ctx.index = dim, index
        return _out(gx, grad.dtype)

    @staticmethod
    def backward(ctx, ggx):
        return GatherAxisFn.apply(ggx, ctx.dim, ctx.index, 0.0), None, None, None


class LerpAxisFn(Function):
    """out[..., m, ...] = w0[m] x[..., i0[m], ...] + w1[m] x[..., i1[m], ...] along `dim`."""

    @staticmethod
    def forward(ctx, x, dim, taps):
        dt = _compute_dtype(x)
        out, out3 = _axis_out(x, dim, len(taps[0]), dt)
        get_kernel("lerp_axis", x.device.type)(_axis_in(x, dim, dt), *_typed(taps, dt), out3)
        ctx.dim, ctx.taps, ctx.size = dim, taps, x.shape[dim]
        return _out(out, x.dtype)

    @staticmethod
    def backward(ctx, grad):
        return LerpAxisBackwardFn.apply(grad, ctx.dim, ctx.taps, ctx.size), None, None


class LerpAxisBackwardFn(Function):
    """The adjoint of LerpAxisFn: each output gradient split back onto its two taps."""

    @staticmethod
    def forward(ctx, grad, dim, taps, size):
        dt = _compute_dtype(grad)
        gx, gx3 = _axis_out(grad, dim, size, dt)
        get_kernel("lerp_axis_backward", grad.device.type)(
            _axis_in(grad, dim, dt), *_typed(taps, dt), gx3)
        ctx.dim, ctx.taps = dim, taps
        return _out(gx, grad.dtype)

    @staticmethod
    def backward(ctx, ggx):
        return LerpAxisFn.apply(ggx, ctx.dim, ctx.taps), None, None, None


def _typed(taps, dt):
    """(i0, i1, w0, w1) with the weights in the kernel dtype."""
    i0, i1, w0, w1 = taps
    return i0, i1, w0.astype(dt.np, copy=False), w1.astype(dt.np, copy=False)


# ---------------------------------------------------------------- pad

def _pad_index(size, lo, hi, mode):
    """Source index of every output position of one padded axis (-1: the fill value)."""
    src = np.arange(-lo, size + hi, dtype=np.int64)
    if mode == "constant":
        return np.where((src >= 0) & (src < size), src, -1)
    if mode == "reflect":
        src = np.abs(src)
        return np.where(src >= size, 2 * (size - 1) - src, src)
    if mode == "replicate":
        return np.clip(src, 0, size - 1)
    # circular: a negative side crops first, and the wrap reads the cropped span (PyTorch's)
    start, length = max(0, -lo), size + min(lo, 0) + min(hi, 0)
    return (np.arange(-max(lo, 0), length + max(hi, 0), dtype=np.int64) % length) + start


def _check_pad_mode(input, pad, mode, value):
    """PyTorch's checks of the reflect/replicate/circular modes, in its order and words."""
    n_dims = len(pad) // 2
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode == "constant":
        return
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    nd = input.dim()
    if n_dims > 3 or nd not in (n_dims + 1, n_dims + 2):
        raise NotImplementedError(
            f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
            f"(got {nd}D input and {len(pad)} padding values for mode {mode!r})")
    shape = tuple(input.shape)
    if mode != "circular" and 0 in shape[nd - n_dims - 1:]:
        raise RuntimeError(f"Expected {n_dims + 1}D or {n_dims + 2}D (batch mode) tensor with "
                           f"possibly 0 batch size and other non-zero dimensions for input, "
                           f"but got: {_size(input)}")
    outs = []
    for i in range(n_dims):
        dim = nd - 1 - i
        size, lo, hi = shape[dim], pad[2 * i], pad[2 * i + 1]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"Argument #{4 + 2 * i}: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) "
                               f"at dimension {dim} of input {_size(input)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        outs.append(size + lo + hi)
    if mode == "circular":
        if min(outs) < 0:
            raise RuntimeError("Negative padding value is resulting in an empty dimension")
    elif max(outs) < 1:             # PyTorch refuses only when every padded dim is empty
        ins = shape[nd - n_dims:]
        names = "DHW"[3 - n_dims:]
        gap = " " if mode == "replicate" and n_dims == 2 else ""
        given = ", ".join(f"{n}: {v}" for n, v in zip(names, ins))
        if n_dims == 3:
            given = f"D: {ins[0]} H: {ins[1]}, W: {ins[2]}"
        got = " ".join(f"{n}: {v}" for n, v in zip(names, outs[::-1]))
        raise RuntimeError(f"input ({given}{gap}) is too small. Calculated output {got}")


def pad(input, pad, mode="constant", value=None):
    """Pad the last len(pad) // 2 dims: pad = (left_last, right_last, left_prev, ...).

    Args:
        mode: 'constant' (any dims, negative values crop), 'reflect' (mirror
            without repeating the edge), 'replicate' (repeat the edge) or
            'circular' (wrap around); the last three pad the last 1-3 dims.
        value: fill value of 'constant' mode (default 0).

    Example:
        >>> F.pad(nbtorch.tensor([[1., 2., 3.]]), (2, 1), mode="reflect")
        tensor([[3., 2., 1., 2., 3., 2.]])
    """
    if mode == "constant" and input.__class__ is Tensor:
        out = _small_constant_pad(input, pad, value)        # nothing to record
        if out is not None:
            return out
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input "
                           f"dimension but got padding length {len(pad)} and input of dimension "
                           f"{input.dim()}")
    _check_pad_mode(input, pad, mode, value)
    if input.dtype.limited:             # uint16-64, float8: padded exactly in a wider dtype
        return _pad_limited(input, pad, mode, value)
    from .._scalars import checked
    fill = 0.0 if value is None else checked(float(value), input.dtype)   # a float, as PyTorch
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        size = input.shape[dim]
        if size + lo + hi < 0:
            raise RuntimeError(f"The input size {size}, plus negative padding {lo} and {hi} "
                               f"resulted in a negative output size, which is invalid. Check "
                               f"dimension {dim} of your input.")
    if mode == "constant" and _constant_fast(input, pad):
        return _pad_constant(input, pad, fill)
    steps = []
    for i in range(len(pad) // 2):
        dim = input.dim() - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo or hi:
            steps.append((dim, _pad_index(input.shape[dim], lo, hi, mode)))
    if mode != "constant":                  # the last 1-3 dims: one pass on the CPU
        return gather_dims(input, steps)
    out = input
    for dim, index in steps:
        out = GatherAxisFn.apply(out, dim, index, fill)
    return out if out is not input else input.clone()


_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _constant_fast(x, pad):
    """Constant padding of at most 3 dims of a CPU tensor with 1-8 byte items: one copy
    kernel (ConstantPadFn); other devices and complex128 go through the axis gathers."""
    return (x.device.type == "cpu" and len(pad) <= 6 and x.dtype.np.itemsize in _BITS
            and not x.is_quantized)


def _pad_constant(x, pad, fill):
    """Crop the negative sides (views), then pad the rest with `fill` in one kernel."""
    widths = []
    for i in range(len(pad) // 2):
        dim = x.dim() - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo < 0 or hi < 0:
            x = x.narrow(dim, max(-lo, 0), x.shape[dim] - max(-lo, 0) - max(-hi, 0))
        widths.append((max(lo, 0), max(hi, 0)))
    if not any(lo or hi for lo, hi in widths):
        return x.clone()
    return ConstantPadFn.apply(x, tuple(widths), fill)


_SMALL_PAD = 1 << 14         # result elements up to which `_small_constant_pad` serves
_ZERO_FILLS = {}            # dtype -> its 0-d zero, the fill of value=None


def _small_constant_pad(x, pad, value):
    """Constant padding by a tuple or list of 2-6 non-negative Python ints of a plain CPU
    tensor (not a half, complex or limited dtype) with nothing to record or watch, of at
    most `_SMALL_PAD` result elements and a value of None or a Python number: the result
    filled with the value as ConstantPadFn stores it (`checked`, then NumPy's cast) and x's
    bits copied into its middle, both by NumPy, without the layers (8x16 float32 padded
    by (1, 1): 19 -> 3.1 us; PyTorch 3.0). The same bits, shape and strides as
    ConstantPadFn's; None where any of that does not hold or a width is zero everywhere
    (the general path then runs, and raises its errors)."""
    if pad.__class__ not in (tuple, list):
        return None
    k = len(pad)
    shape = x._shape
    nd = len(shape)
    d = x.dtype
    if (not 2 <= k <= 6 or k & 1 or k > 2 * nd or x.device is not CPU or d.is_half
            or d.is_complex or d.limited or _function.TRACE_HOOK[0] is not None
            or not unrecorded(x)):
        return None
    out_shape = list(shape)
    inner = [Ellipsis]
    widths = 0
    for i in range(k // 2):
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if lo.__class__ is not int or hi.__class__ is not int or lo < 0 or hi < 0:
            return None
        dim = nd - 1 - i
        size = shape[dim]
        out_shape[dim] = size + lo + hi
        inner.insert(1, slice(lo, lo + size))
        widths |= lo | hi
    if not widths:              # no width anywhere: the general path's clone
        return None
    numel = 1
    for s in out_shape:
        numel *= s
    if numel > _SMALL_PAD:
        return None
    if value is None:
        fill = _ZERO_FILLS.get(d)
        if fill is None:
            fill = _ZERO_FILLS[d] = np.array(0.0, d.np)
    elif value.__class__ in (float, int):
        try:
            fill = np.array(checked(float(value), d), d.np)
        except (RuntimeError, OverflowError):
            return None
    else:
        return None
    # copies within one dtype move the bits (NaN payloads too), as the kernel's words do
    data = np.empty(out_shape, d.np)
    data.fill(fill)
    data[tuple(inner)] = x._array
    return fresh_select(data, d)


def _fill_bits(fill, dtype, bits):
    """`fill` as the old path stored it (in the compute dtype, then cast), as bits."""
    if dtype.is_half:
        from .creation import full
        arr = full((1,), fill, dtype=dtype.compute).to(dtype)._array
    else:
        arr = np.array([fill], dtype=dtype.np)
    return arr.view(bits)[0]


class ConstantPadFn(Function):
    """out = x with widths[i] = (lo, hi) >= 0 of `fill` around dim -1-i (at most 3 dims):
    CPU constant padding as one copy (pad_flip.pad_constant: 32x64x28x28 padded by 1 3.4 ms
    through two axis gathers -> ~0.3). Its backward is the slice of the gradient."""

    @staticmethod
    def forward(ctx, x, widths, fill):
        from ..kernels.cpu.pad_flip import pad_constant
        shape = list(x.shape)
        for i, (lo, hi) in enumerate(widths):
            shape[len(shape) - 1 - i] += lo + hi
        out = empty(tuple(shape), x.dtype, x.device)
        ctx.widths, ctx.in_shape = widths, tuple(x.shape)
        if out.numel():
            k = len(widths)
            bits = _BITS[x.dtype.np.itemsize]
            lead = (1,) * (3 - k)
            inner = tuple(x.shape[len(shape) - k:])
            a = int(np.prod(shape[:len(shape) - k], dtype=np.int64))
            starts = (0,) * (3 - k) + tuple(lo for lo, _ in reversed(widths))
            src = x.contiguous()._array.view(bits).reshape((a,) + lead + inner)
            dst = out._array.view(bits).reshape((a,) + lead + tuple(shape[len(shape) - k:]))
            from ..kernels.cpu.pool import _over_planes
            _over_planes(pad_constant, a, out.numel(), src, dst,
                         starts + (_fill_bits(fill, x.dtype, bits),))
        return out

    @staticmethod
    def backward(ctx, grad):
        n = len(ctx.in_shape)
        for i, (lo, _) in enumerate(ctx.widths):
            dim = n - 1 - i
            grad = grad.narrow(dim, lo, ctx.in_shape[dim])
        return grad, None, None


def _pad_limited(input, widths, mode, value):
    from .._limited import wide
    return pad(input.to(wide(input.dtype)), widths, mode, value).to(input.dtype)


# ---------------------------------------------------------------- interpolate

_LINEAR_MODES = {"linear": 1, "bilinear": 2, "trilinear": 3}
_TAP_MODES = ("bilinear", "bicubic", "lanczos")       # the modes antialias applies to


def _output_sizes(input, size, scale_factor, dims):
    """Output spatial sizes and the per-dim scale factors PyTorch uses for indexing."""
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    in_sizes = tuple(input.shape[2:])
    if size is not None:
        sizes = tuple(size) if isinstance(size, (tuple, list)) else (size,) * dims
        if len(sizes) != dims:
            raise ValueError(f"Input and output must have the same number of spatial dimensions,"
                             f" but got input with spatial dimensions of {list(in_sizes)} and "
                             f"output size of {list(sizes)}. Please provide input tensor in "
                             "(N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                             "format.")
        return tuple(int(s) for s in sizes), (None,) * dims
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) \
        else (scale_factor,) * dims
    if len(scales) != dims:
        raise ValueError(f"Input and scale_factor must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of {list(in_sizes)}"
                         f" and scale_factor of shape {list(scales)}. Please provide input tensor"
                         " in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK)"
                         " format.")
    return tuple(int(np.floor(float(s) * float(f))) for s, f in zip(in_sizes, scales)), scales


def _scale(in_size, out_size, scale, ftype):
    """PyTorch's compute_scales_value: 1/scale_factor when given, else in/out."""
    if scale is not None and scale > 0:
        return ftype(1.0 / scale)
    return ftype(in_size) / ftype(out_size)


def _nearest_index(in_size, out_size, scale, exact, shortcuts=True):
    """Source index of each output position (float32 arithmetic, as PyTorch's CPU kernel).
    `shortcuts`: equal and doubled sizes map directly, whatever the scale factor (PyTorch's
    2-D kernel does; its 1-D and 3-D ones apply a given scale_factor: 4 -> 4 at 1.2 reads
    0, 0, 1, 2)."""
    dst = np.arange(out_size, dtype=np.int64)
    if shortcuts and not exact and out_size == in_size:
        return dst
    if shortcuts and not exact and out_size == 2 * in_size:
        return dst >> 1
    s = _scale(in_size, out_size, scale, np.float32)
    pos = (dst.astype(np.float32) + np.float32(0.5 if exact else 0.0)) * s
    return np.minimum(np.floor(pos).astype(np.int64), in_size - 1)


def _linear_taps(in_size, out_size, scale, align_corners, ftype):
    """(i0, i1, w0, w1) of linear interpolation along one axis (area_pixel rules)."""
    dst = np.arange(out_size).astype(ftype)
    if align_corners:
        s = ftype(in_size - 1) / ftype(out_size - 1) if out_size > 1 else ftype(0)
        src = s * dst
    else:
        s = _scale(in_size, out_size, scale, ftype)
        src = np.maximum(s * (dst + ftype(0.5)) - ftype(0.5), ftype(0))
    i0 = src.astype(np.int64)
    w1 = np.clip(src - i0.astype(ftype), 0, 1).astype(ftype)
    i1 = i0 + (i0 < in_size - 1)
    return i0, i1, (ftype(1) - w1).astype(ftype), w1


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Resize an (N, C, *spatial) input with 1-3 spatial dims.

    Args:
        size: output spatial size (int or tuple), or
        scale_factor: multiplier(s) of the input size (output = floor(in * s)).
        mode: 'nearest', 'nearest-exact', 'linear' (3-D input), 'bilinear' (4-D),
            'bicubic' (4-D), 'trilinear' (5-D), 'area' (adaptive average pooling)
            or 'lanczos' (4-D, antialias only). uint8 input (images) in bilinear/bicubic
            modes is resized in float32 per axis and rounded back (within 1 of PyTorch's
            fixed-point uint8 kernels).
        align_corners: interpolating modes only; True maps corner pixels onto corner pixels.
        recompute_scale_factor: True indexes with in/out instead of 1/scale_factor.
        antialias: bilinear/bicubic/lanczos on 4-D input: when downscaling, each output
            averages the input under the filter widened by the scale (as PIL does).

    Example:
        >>> F.interpolate(nbtorch.tensor([[[1., 2.]]]), scale_factor=2, mode="linear")
        tensor([[[1.0000, 1.2500, 1.7500, 2.0000]]])
    """
    dims = input.dim() - 2
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")
    if antialias and not (mode in _TAP_MODES and dims == 2):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos "
                         "modes and requires a 4-D tensor as input")
    if mode in _LINEAR_MODES and dims in (1, 2, 3):
        if _LINEAR_MODES[mode] != dims:
            raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs "
                                      f"{_LINEAR_MODES[mode] + 2}D input")
    elif not (mode in ("nearest", "nearest-exact", "area") and dims in (1, 2, 3)
              or mode in _TAP_MODES and dims == 2):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported "
                                  f"(got {input.dim()}D) for the modes: nearest | linear | "
                                  f"bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    if mode == "lanczos" and align_corners:
        raise ValueError("Lanczos mode does not support align_corners=True")
    if mode == "lanczos" and not antialias:
        raise ValueError("Lanczos mode requires antialias=True")
    out_sizes, scales = _output_sizes(input, size, scale_factor, dims)
    if recompute_scale_factor:
        scales = (None,) * dims
    if any(s <= 0 for s in out_sizes):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(map(str, input.shape[2:]))}) and output "
                           f"({', '.join(map(str, out_sizes))})")
    if mode == "area":
        return (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dims - 1](
            input, out_sizes)
    if input.is_quantized:          # nearest on its integers, as PyTorch's quantized kernel
        if mode not in ("nearest", "nearest-exact"):
            raise NotImplementedError(f"quantized interpolate: mode '{mode}' is not "
                                      "implemented in nbtorch (nearest is)")
        return input._with_ints(interpolate(input._int_tensor(), size, scale_factor, mode,
                                            align_corners, recompute_scale_factor))
    ftype = np.float64 if input.dtype is _dtype.float64 else np.float32
    integral = not (input.dtype.is_floating_point or input.dtype.is_complex)
    if integral and mode not in ("nearest", "nearest-exact"):
        if input.dtype is not _dtype.uint8 or mode not in _TAP_MODES:
            raise NotImplementedError(f'"upsample_{mode}" not implemented for '
                                      f"'{_dtype.type_name(input.dtype)}'")
    if mode in ("nearest", "nearest-exact"):
        return gather_dims(input, _nearest_steps(input, out_sizes, scales, mode))
    out = input
    for d in reversed(range(dims)):          # last axis first, as PyTorch's bilinear sums
        if integral and mode not in ("nearest", "nearest-exact"):
            # uint8 images (PyTorch's bilinear/bicubic take them): each pass in float32,
            # rounded back to uint8 as PyTorch's separable uint8 kernels do between passes
            out = _uint8_pass(out, d + 2, input.shape[d + 2], out_sizes[d], scales[d],
                              align_corners, mode, antialias)
            continue
        dim, n_in, n_out = d + 2, input.shape[d + 2], out_sizes[d]
        if antialias:
            out = apply_taps(out, dim, *antialias_taps(n_in, n_out, scales[d],
                                                       bool(align_corners), mode, ftype))
        elif mode == "bicubic":
            out = apply_taps(out, dim, *cubic_taps(n_in, n_out, scales[d], bool(align_corners),
                                                   ftype))
        elif mode in _LINEAR_MODES:
            taps = _linear_taps(n_in, n_out, scales[d], bool(align_corners), ftype)
            out = LerpAxisFn.apply(out, dim, taps)
    return out if out is not input else input.clone()


def _nearest_steps(input, out_sizes, scales, mode):
    """(dim, index) of each resampled axis of a nearest resize, last axis first."""
    dims = input.dim() - 2
    steps = []
    for d in reversed(range(dims)):
        n_in, n_out = input.shape[d + 2], out_sizes[d]
        if n_in != n_out or mode == "nearest-exact" or (dims != 2 and scales[d]):
            steps.append((d + 2, _nearest_index(n_in, n_out, scales[d], mode == "nearest-exact",
                                                shortcuts=dims == 2)))
    return steps


def _uint8_pass(x, dim, n_in, n_out, scale, align_corners, mode, antialias):
    """One axis of a uint8 bilinear/bicubic resize: in float32, rounded and clamped."""
    f = x.to(_dtype.float32)
    if antialias:
        f = apply_taps(f, dim, *antialias_taps(n_in, n_out, scale, bool(align_corners), mode,
                                               np.float32))
    elif mode == "bicubic":
        f = apply_taps(f, dim, *cubic_taps(n_in, n_out, scale, bool(align_corners),
                                           np.float32))
    else:
        f = LerpAxisFn.apply(f, dim, _linear_taps(n_in, n_out, scale, bool(align_corners),
                                                  np.float32))
    return f.round().clamp(0, 255).to(_dtype.uint8)


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated alias of `interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated alias of ``interpolate(..., mode='nearest')``."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated alias of ``interpolate(..., mode='bilinear', align_corners=True)``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)
