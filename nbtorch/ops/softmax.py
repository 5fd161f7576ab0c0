"""softmax / log_softmax along one dim, numerically stable (max-shifted), any layout.

The kernel (kernels/cpu/softmax.py) reads the input as (outer, n, inner) with
the softmax dim in the middle, without a copy for contiguous inputs.
Backward formulas are nbtorch ops, so second derivatives work.
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, empty, _LAYOUTS, _layout
from .._registry import get_kernel
from ..autograd.function import Function, unrecorded
from .._limited import no_kernel
from ._common import normalize_dim
from .reduction import dtype_label

__all__ = ["softmax", "log_softmax"]


def _along_dim(x, dim):
    """(outer, n, inner) sizes for `dim` of a contiguous x."""
    outer = n = inner = 1
    for i, s in enumerate(x._shape):
        if i < dim:
            outer *= s
        elif i > dim:
            inner *= s
        else:
            n = s
    return outer, n, inner


def _half_log_softmax(x, dim):
    """log_softmax of a half tensor as PyTorch's CPU kernel computes it: in float32, but
    with the row's sum of exponentials and its log rounded to x's dtype."""
    h, work = x.dtype, x.dtype.compute
    x32 = x.to(work)
    shifted = x32 - x32.amax(dim=dim, keepdim=True)
    total = shifted.exp().sum(dim=dim, keepdim=True).to(h).to(work)
    return (shifted - total.log().to(h).to(work)).to(h)


def half_in_float32(formula, dtype, *tensors):
    """`formula(*tensors)` computed in float32 and rounded once to half `dtype` (PyTorch's
    fused CPU kernels); the formula itself otherwise."""
    if not dtype.is_half:
        return formula(*tensors)
    return formula(*(t.to(dtype.compute) for t in tensors)).to(dtype)


def log_softmax_grad(g, out, dim):
    """d log_softmax: g - softmax * sum(g) along `dim`, from the saved output."""
    fused = _rows_grad(g, out, dim, True)
    if fused is not None:
        return fused
    return g - out.exp() * g.sum(dim=dim, keepdim=True)


def _softmax_grad(g, y, dim):
    """d softmax: y * (g - sum(g * y)) along `dim`."""
    fused = _rows_grad(g, y, dim, False)
    if fused is not None:
        return fused
    gy = g * y
    return gy - y * gy.sum(dim=dim, keepdim=True)


_SPLIT_MIN = 1 << 18        # elements; a larger gradient splits its rows over the helpers
_ONE_ROW_MAX = 1 << 20      # one longer row: the sum kernel splits it in chunks (other bits)


def _rows_grad(g, y, dim, log):
    """The gradient in one pass per row (kernels/cpu/softmax_grad.py: the composite's
    bits) when `dim` is the last non-trivial dim of contiguous float32/float64 CPU
    tensors and no graph is being built (create_graph runs the differentiable
    formula); None otherwise. Log-softmax's row sums come from the sum op (an expanded
    g, as a sum's gradient is, sums by its own layout's walk)."""
    from ..autograd import grad_mode
    if (g.device.type != "cpu" or y.device.type != "cpu" or g.dtype is not y.dtype
            or g.dtype not in (_dtype.float32, _dtype.float64) or g._shape != y._shape
            or grad_mode.is_grad_enabled() or not y.is_contiguous() or not g.numel()):
        return None
    outer, n, inner = _along_dim(y, dim)
    if inner != 1 or (outer == 1 and n > _ONE_ROW_MAX):
        return None
    from ..kernels.cpu import softmax_grad, workers
    if log:
        sums = g.sum(dim=dim, keepdim=True)._array.reshape(outer)
        y = y.exp()
    else:
        sums = _NO_SUMS[y.dtype]
    if not g.is_contiguous():
        g = g.contiguous()
    out = empty(y._shape, y.dtype, y.device)
    g2, y2, o2 = (t._array.reshape(outer, n) for t in (g, y, out))
    kernel = softmax_grad.softmax_grad_rows
    if g.numel() < _SPLIT_MIN or outer < 2 or workers.NUM_THREADS < 2:
        kernel(g2, y2, o2, sums, log, 0, outer)
        return out
    chunks = min(outer, 2 * workers.NUM_THREADS)
    bounds = [outer * k // chunks for k in range(chunks + 1)]
    workers.parallel_chunks(
        lambda k: kernel(g2, y2, o2, sums, log, bounds[k], bounds[k + 1]), chunks)
    return out


_NO_SUMS = {d: np.empty(0, d.np) for d in (_dtype.float32, _dtype.float64)}


def softmax_forward(op, x, dim):
    """Run kernel `op` ('softmax'/'log_softmax') over `dim` of x into a new tensor."""
    if x.dtype.limited:
        no_kernel(op + "_lastdim_kernel_impl", x.dtype, _dtype.FLOAT8)
    if op == "log_softmax" and x.dtype.is_half and x.numel():
        return _half_log_softmax(x, dim)
    work = x.dtype.compute
    src = x.to(work) if x.dtype is not work else x
    if not src.is_contiguous():
        src = src.contiguous()
    out = empty(x._shape, work, x.device)
    shape3 = _along_dim(src, dim)
    if shape3[0] * shape3[1] * shape3[2]:
        get_kernel(op, x.device.type)(src._array.reshape(shape3), out._array.reshape(shape3))
    return out if work is x.dtype else out.to(x.dtype)


class Softmax(Function):
    @staticmethod
    def forward(ctx, x, dim):
        out = softmax_forward("softmax", x, dim)
        if True not in ctx.needs_input_grad:
            return out                  # nothing will be recorded: skip the bookkeeping
        ctx.dim = dim
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        y, = ctx.saved_tensors
        return half_in_float32(lambda g, y: _softmax_grad(g, y, ctx.dim), g.dtype, g, y), None


class LogSoftmax(Function):
    @staticmethod
    def forward(ctx, x, dim):
        out = softmax_forward("log_softmax", x, dim)
        if True not in ctx.needs_input_grad:
            return out                  # nothing will be recorded: skip the bookkeeping
        ctx.dim = dim
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        out, = ctx.saved_tensors
        return half_in_float32(lambda g, out: log_softmax_grad(g, out, ctx.dim), g.dtype,
                               g, out), None


def _prepare(op, input, dim, dtype, _stacklevel=None):
    if dim is None:
        raise TypeError(f"{op}() missing required argument 'dim' (implicit dim is "
                        "deprecated in PyTorch; pass dim=...)")
    if dtype is not None:
        input = input.to(_dtype.to_dtype(dtype))
    if input.dtype.limited:
        no_kernel(op + "_lastdim_kernel_impl", input.dtype)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"{op}_kernel_impl\" not implemented for "
                                  f"'{dtype_label(input.dtype)}'")
    return input, normalize_dim(dim, input.dim())


_ROW_DTYPES = (_dtype.float32, _dtype.float64)


def _small_rows(op, x, dim):
    """`op` ('softmax'/'log_softmax') over the last dim of a small C-contiguous float32/
    float64 CPU tensor with nothing to record: `softmax_forward`'s kernel call on the same
    (rows, n, 1) view, without `apply` and its checks (8x16 softmax 4.7 -> 3.7 us);
    None for anything else."""
    shape = x._shape
    nd = len(shape)
    if (x.__class__ is not Tensor or not nd or (dim != -1 and dim != nd - 1)
            or x.device.type != "cpu" or x.dtype not in _ROW_DTYPES or not unrecorded(x)):
        return None
    layout = _LAYOUTS.get(shape) or _layout(shape)
    numel = layout[2]
    if not 0 < numel <= _SMALL_ROWS or x._strides != layout[1] or x._arr is None:
        return None
    out = empty(shape, x.dtype, x.device)
    n = shape[-1]
    get_kernel(op, "cpu")(x._arr.reshape(numel // n, n, 1), out._arr.reshape(numel // n, n, 1))
    return out


_SMALL_ROWS = 1 << 14       # elements: above, the skipped layers are a small part of the call


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`, shifted by the max so large logits do not overflow.

    Example:
        >>> nbtorch.softmax(nbtorch.tensor([1e4, 1e4 + 1.]), dim=0)
        tensor([0.2689, 0.7311])
    """
    if dtype is None:
        out = _small_rows("softmax", input, dim)
        if out is not None:
            return out
    x, d = _prepare("softmax", input, dim, dtype)
    return Softmax.apply(x, d)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """x - logsumexp(x) along `dim`, computed stably.

    Example:
        >>> nbtorch.log_softmax(nbtorch.tensor([0., 0.]), dim=0)
        tensor([-0.6931, -0.6931])
    """
    if dtype is None:
        out = _small_rows("log_softmax", input, dim)
        if out is not None:
            return out
    x, d = _prepare("log_softmax", input, dim, dtype)
    return LogSoftmax.apply(x, d)


Tensor.softmax = softmax
Tensor.log_softmax = log_softmax
