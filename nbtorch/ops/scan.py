"""Scans along a dim: cumsum, cumprod (exact gradient with zeros), cummax, cummin,
logcumsumexp.

Kernels (kernels/cpu/scan.py) walk an (outer, n, inner) view of a contiguous
input, so a scan over any dim needs no permute. Backward formulas are nbtorch
ops (a reverse cumsum is itself a scan), so second derivatives work.
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor, empty
from .._registry import _KERNELS, get_kernel
from ..autograd.function import Function
from .._limited import no_kernel
from ._common import normalize_dim, selection_grad
from .pointwise_select import where
from .reduction_minmax import _around, _fast_array
from . import _return_types as rt

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


def scan_shape(x, dim):
    """(outer, n, inner) of a contiguous x scanned along `dim`."""
    outer = inner = 1
    for s in x._shape[:dim]:
        outer *= s
    for s in x._shape[dim + 1:]:
        inner *= s
    return outer, (x._shape[dim] if x.dim() else 1), inner


def run_scan(op, x, dim, out_dtypes, *args):
    """Kernel `op` over contiguous x along dim into new tensors of `out_dtypes`."""
    src = x.contiguous()
    outs = [empty(x._shape, d, x.device) for d in out_dtypes]
    if x.numel():
        shape3 = scan_shape(src, dim)
        get_kernel(op, x.device.type)(src._array.reshape(shape3),
                                      *(o._array.reshape(shape3) for o in outs), *args)
    return outs


def _work_dtype(dtype):
    if dtype.is_complex:
        return dtype
    return dtype.compute if dtype.is_floating_point else _dtype.int64


def _accumulating_scan(op, x, dim, reverse, dtype):
    if dtype.is_complex and op == "cumsum":     # (real, imag) pairs through the real kernel
        from .._complex_views import as_complex, as_real
        if x.dim() == 0:                        # as_real's pair dim would be dim 0
            return _accumulating_scan(op, x.reshape(1), 0, reverse, dtype).reshape(())
        return as_complex(_accumulating_scan(op, as_real(x.to(dtype).contiguous()), dim,
                                             reverse, dtype.to_real()))
    work = _work_dtype(dtype)
    src = x if x.dtype is work else x.to(work)
    out, = run_scan(op, src, dim, (work,), reverse)
    return out if work is dtype else out.to(dtype)


def _small_scan(op, x, dim, identity):
    """cumsum/cumprod ('op') along int `dim` of a plain small C-contiguous float32/float64
    CPU tensor with nothing to record: the registered kernel on the (outer, n, inner) view
    `run_scan` gives it, so the same bits, without Function.apply and the dtype layers
    (8x16 cumsum(-1) ~12.7 -> ~3.3 us on a loaded machine). For rows, the launcher's own
    serial loop (`_rows_loop`, the one it picks) when it is nbtorch's. None for anything
    else."""
    a = _fast_array(x, True)
    kernel = _KERNELS.get((op, "cpu"))
    if a is None or kernel is None or a.size >= _SMALL_SCAN:
        return None
    oni = _around(x._shape, dim)
    if oni is None:
        return None
    outer, n, inner = oni
    out = empty(x._shape, x.dtype, x.device)
    loop = _ROWS_LOOP.get(kernel) if inner == 1 else None
    if loop is None and inner == 1:
        loop = _rows_loop(kernel)
    if loop is not None:
        loop(a.reshape(outer, n), out._arr.reshape(outer, n), identity, False, op == "cumprod")
    else:
        kernel(a.reshape(outer, n, inner), out._arr.reshape(outer, n, inner), False)
    return out


_SMALL_SCAN = 1 << 15   # elements: beyond, the skipped layers are a small part of a call
_ROWS_LOOP = {}         # nbtorch's own cumsum/cumprod launcher -> its rows loop


def _rows_loop(kernel):
    """`kernels/cpu/scan.accumulate_rows` when `kernel` is that module's cumsum or cumprod
    launcher (which calls it for rows), else None."""
    if getattr(kernel, "__module__", None) != "nbtorch.kernels.cpu.scan" or \
            getattr(kernel, "__name__", None) not in ("cumsum", "cumprod"):
        return None
    import sys
    loop = _ROWS_LOOP[kernel] = sys.modules[kernel.__module__].accumulate_rows
    return loop


_ZERO, _ONE = np.float64(0), np.float64(1)      # the launchers' float accumulators


# ---- cumsum ---------------------------------------------------------------------------

class Cumsum(Function):
    @staticmethod
    def forward(ctx, x, dim, reverse, dtype):
        ctx.dim, ctx.reverse = dim, reverse
        return _accumulating_scan("cumsum", x, dim, reverse, dtype)

    @staticmethod
    def backward(ctx, g):
        return Cumsum.apply(g, ctx.dim, not ctx.reverse, g.dtype), None, None, None


def _scan_dtype(x, dtype):
    if dtype is not None:
        return _dtype.to_dtype(dtype)
    return x.dtype if x.dtype.is_floating_point or x.dtype.is_complex else _dtype.int64


def cumsum(input, dim, *, dtype=None, out=None):
    """Running sums along `dim` (integers and bool accumulate in int64).

    Example:
        >>> nbtorch.tensor([1., 2., 3.]).cumsum(0)
        tensor([1., 3., 6.])
    """
    if dtype is None and out is None:
        res = _small_scan("cumsum", input, dim, _ZERO)
        if res is not None:
            return res
    if input.dtype.limited and dtype is None:
        no_kernel("cumsum_out_cpu", input.dtype, _dtype.FLOAT8)
    d = normalize_dim(dim, input.dim())
    return Cumsum.apply(input, d, False, _scan_dtype(input, dtype))


def reverse_cumsum(input, dim):
    """sum_{j >= i} input[j] along dim (the adjoint of cumsum)."""
    return Cumsum.apply(input, normalize_dim(dim, input.dim()), True, input.dtype)


# ---- cumprod --------------------------------------------------------------------------

class Cumprod(Function):
    @staticmethod
    def forward(ctx, x, dim, dtype):
        out = _accumulating_scan("cumprod", x, dim, False, dtype)
        ctx.dim = dim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return _cumprod_grad(x, out, g, ctx.dim), None, None


def _cumprod_grad(x, out, g, dim):
    """Exact with zeros: before the first zero z, revcumsum(g*out)/x; at z, the
    revcumsum of g times the cumprod with x_z replaced by 1; after z, 0.

    (Second derivatives are exact where the input has no zero; after a zero the
    gradient is the constant 0, so its derivative w.r.t. that zero is missed.)"""
    if x.numel() == 0:
        return g * 0
    is_zero = x == 0
    if not bool(is_zero.any()):
        return reverse_cumsum(g * out, dim) / x
    zeros_so_far = cumsum(is_zero, dim)
    before_first = zeros_so_far == 0
    first_zero = is_zero & (zeros_so_far == 1)
    part_before = reverse_cumsum(g * out, dim) / where(before_first, x, 1.0)
    without_zero = cumprod(where(first_zero, 1.0, x), dim)
    part_at = reverse_cumsum(g * without_zero, dim)
    return where(before_first, part_before, where(first_zero, part_at, 0.0))


def cumprod(input, dim, *, dtype=None, out=None):
    """Running products along `dim`; the gradient is exact when the input has zeros.

    Example:
        >>> nbtorch.tensor([1., 2., 3.]).cumprod(0)
        tensor([1., 2., 6.])
    """
    if dtype is None and out is None:
        res = _small_scan("cumprod", input, dim, _ONE)
        if res is not None:
            return res
    if input.dtype.limited:
        no_kernel('cumprod_out_cpu', input.dtype, _dtype.FLOAT8)
    d = normalize_dim(dim, input.dim())
    dt = _scan_dtype(input, dtype)
    if dt.is_complex and input.dim() == 0:
        return input.to(dt).clone()
    if dt.is_complex:                   # step by step: one complex mul per position
        from .joining import stack
        steps, acc = [], None
        for s in input.to(dt).unbind(d):
            acc = s if acc is None else acc * s
            steps.append(acc)
        return stack(steps, d) if steps else input.to(dt).clone()
    return Cumprod.apply(input, d, dt)


# ---- cummax / cummin ------------------------------------------------------------------

class CumExtreme(Function):
    @staticmethod
    def forward(ctx, x, dim, op):
        src = x.to(x.dtype.compute)
        values, indices = run_scan(op, src, dim, (src.dtype, _dtype.int64))
        if values.dtype is not x.dtype:
            values = values.to(x.dtype)
        ctx.dim, ctx.in_meta = dim, (x._shape, x.dtype, x.device)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _g_indices):
        return selection_grad(ctx, g), None, None


def _cum_extreme(name, result_cls):
    def fn(input, dim, *, out=None):
        if input.dtype.limited:
            no_kernel(name + "_cpu", input.dtype)
        d = normalize_dim(dim, input.dim())
        return result_cls(*CumExtreme.apply(input, d, name))
    fn.__name__ = name
    fn.__doc__ = (f"Running {name[3:]}imum along `dim` and the index it came from "
                  "(ties and NaN take the later index, as PyTorch).")
    return fn


cummax = _cum_extreme("cummax", rt.cummax)
cummin = _cum_extreme("cummin", rt.cummin)

Tensor.cumsum = cumsum
Tensor.cumprod = cumprod
Tensor.cummax = cummax
Tensor.cummin = cummin


# ---- logcumsumexp ---------------------------------------------------------------------

class LogCumSumExp(Function):
    @staticmethod
    def forward(ctx, x, dim):
        src = x.to(x.dtype.compute)
        out, = run_scan("logcumsumexp", src, dim, (src.dtype,))
        out = out if out.dtype is x.dtype else out.to(x.dtype)
        ctx.dim = dim
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        return _logcumsumexp_grad(x, out, g, ctx.dim), None


def _logcumsumexp_grad(x, out, g, dim):
    """PyTorch's formula: sum_{j >= i} g_j exp(x_i - out_j), split by the sign of g and
    summed in log space (a reverse logcumsumexp), so nothing overflows."""
    if x.numel() == 0:
        return g * 0
    low = _dtype.finfo(g.dtype).min

    def rev(t):
        return logcumsumexp(t.flip(dim), dim).flip(dim)
    log_abs = g.abs().log()
    pos = where(g > 0, log_abs, low)
    neg = where(g < 0, log_abs, low)
    return (rev(pos - out) + x).exp() - (rev(neg - out) + x).exp()


def logcumsumexp(input, dim, *, out=None):
    """log(cumsum(exp(input))) along `dim`, computed without overflow.

    Example:
        >>> nbtorch.tensor([0., 0.]).logcumsumexp(0)
        tensor([0.0000, 0.6931])
    """
    if not input.dtype.is_floating_point:
        from .reduction import dtype_label
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for "
                           f"'{dtype_label(input.dtype)}'")
    d = normalize_dim(dim, input.dim())
    res = LogCumSumExp.apply(input, d)
    if out is not None:
        out.copy_(res)
        return out
    return res


Tensor.logcumsumexp = logcumsumexp
