"""Reductions over all, one or several dims: the layout planner, `sum`, `mean`, `prod`, ...

Every reduction kernel sees a C-contiguous (outer, n, inner) array and writes
(outer, inner) (see kernels/cpu/reduce.py). `reduction_layout` finds that view
without copying whenever the reduced dims are one block in memory order (any
single dim of a contiguous tensor, a transposed tensor, ...); only scattered
dims fall back to `move_reduced_last` (permute + one contiguous copy).
"""
import builtins

import numpy as np

from .. import _dtype
from .._capture import recorded_whole
from .._tensor import _LAYOUTS, Tensor, _layout, empty, wrap
from .._registry import _KERNELS, get_kernel
from ..autograd import grad_mode
from ..autograd.function import APPLY_WRAPPERS, Function, renamed
from .._limited import no_kernel
from ._common import normalize_dims, tensor_method
from .pointwise_select import where

__all__ = ["sum", "mean", "nansum", "nanmean", "prod", "all", "any", "count_nonzero"]

# ---- layout -------------------------------------------------------------------------

def move_reduced_last(x, dims):
    """(x permuted so `dims` are last and made contiguous, kept shape, reduced size)."""
    keep = [d for d in range(x.dim()) if d not in dims]
    xp = x.permute(keep + list(dims)).contiguous() if x.dim() else x.reshape(1)
    kept_shape = tuple(x._shape[d] for d in keep)
    n = 1
    for d in dims:
        n *= x._shape[d]
    return xp, kept_shape, n


def keepdim_shape(shape, dims):
    """`shape` with every dim in `dims` set to 1 (what keepdim=True returns)."""
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def expand_reduced(g, in_shape, dims, keepdim):
    """The gradient `g` of a reduction of `dims`, broadcast back to `in_shape`.

    A stride-0 view made directly when no graph of the backward is recorded
    (the first-order case: no view/expand nodes to build), else view + expand.
    """
    if not grad_mode.STATE.enabled:
        strides = []
        src = g._strides
        j = 0
        for i in range(len(in_shape)):
            if i in dims:
                strides.append(0)
                j += keepdim
            else:
                strides.append(src[j])
                j += 1
        return g._view(in_shape, strides)
    if not keepdim:
        g = g.view(keepdim_shape(in_shape, dims))
    return g.expand(in_shape)


def reduced_shape(shape, dims, keepdim):
    """The result shape of reducing `dims` of `shape`."""
    if keepdim:
        return keepdim_shape(shape, dims)
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def _prod(xs):
    n = 1
    for s in xs:
        n *= s
    return n


def _memory_order(x):
    """x's non-size-1 dims from outermost to innermost if x is dense in that order, else None."""
    order = [d for d in range(x.dim()) if x._shape[d] != 1]
    order.sort(key=lambda d: -x._strides[d])
    expected = 1
    for d in reversed(order):
        if x._strides[d] != expected:
            return None
        expected *= x._shape[d]
    return order


def _flat_array(x, shape):
    """x's storage span (x dense, no size-0 dim) as a C-contiguous array of `shape`."""
    start = x._offset
    return x._storage.data[start:start + _prod(shape)].reshape(shape)


class Layout:
    """How a reduction of `dims` of a tensor reaches the (outer, n, inner) kernels.

    a3: the C-contiguous (outer, n, inner) raw array; kept: the shape of the
    kept dims in the tensor's order; inner_shape/perm: the kernel writes the kept
    dims in memory order `inner_shape`, `perm` (or None) restores the tensor's order.
    """

    __slots__ = ("a3", "kept", "inner_shape", "perm", "n")

    def new_output(self, dtype, device):
        """A fresh output tensor the kernel writes into, and its (outer, inner) raw view."""
        out = empty(self.inner_shape, dtype, device)
        return out, out._array.reshape(self.a3.shape[0], self.a3.shape[2])

    def finish(self, out):
        """The kernel's output in the tensor's dim order (shape `kept`)."""
        if self.perm is not None:
            out = out.permute(self.perm).contiguous()
        return out.view(self.kept) if out._shape != self.kept else out


def _contiguous_run_layout(x, shape, dims):
    """The fast path: x contiguous and `dims` one run d0..d1 -> (outer, n, inner)."""
    d0, d1 = dims[0], dims[-1]
    lay = Layout()
    lay.kept = shape[:d0] + shape[d1 + 1:]
    outer, n, inner = _prod(shape[:d0]), _prod(shape[d0:d1 + 1]), _prod(shape[d1 + 1:])
    lay.a3 = _flat_array(x, (outer, n, inner))
    lay.inner_shape, lay.perm, lay.n = lay.kept, None, n
    return lay


def reduction_layout(x, dims):
    """Plan the reduction of `dims` (sorted, normalized) of a non-empty tensor `x`."""
    shape = tuple(x._shape)
    contiguous = x.is_contiguous()
    if contiguous and dims and dims[-1] - dims[0] + 1 == len(dims):
        return _contiguous_run_layout(x, shape, dims)
    if not dims:                       # nothing reduced (a 0-d tensor): n = 1
        x = x if contiguous else x.contiguous()
        return _contiguous_run_layout(x, shape + (1,), (len(shape),))
    lay = Layout()
    lay.kept = tuple(s for i, s in enumerate(shape) if i not in dims)
    order = list(range(x.dim())) if contiguous else _memory_order(x)
    if order is not None:
        order = [d for d in order if x._shape[d] != 1]
        flags = [d in dims for d in order]
        first = flags.index(True) if True in flags else len(flags)
        last = len(flags) - flags[::-1].index(True) if True in flags else len(flags)
        if builtins.all(flags[first:last]):
            before, mid, after = order[:first], order[first:last], order[last:]
            sizes = [x._shape[d] for d in order]
            outer, n = _prod(sizes[:first]), _prod(sizes[first:last])
            inner = _prod(sizes[last:])
            lay.a3 = _flat_array(x, (outer, n, inner))
            kept_order = before + after
            lay.inner_shape = tuple(x._shape[d] for d in kept_order)
            lay.perm = None
            if kept_order != sorted(kept_order):
                rank = sorted(kept_order)
                lay.perm = tuple(kept_order.index(d) for d in rank)
            lay.n = n
            return lay
    xp, kept, n = move_reduced_last(x, dims)
    lay.a3 = xp._array.reshape(_prod(kept), n, 1)
    lay.inner_shape, lay.perm, lay.n = kept, None, n
    return lay


def reduce_numel(shape, dims):
    return _prod(shape[d] for d in dims)


# ---- kernels --------------------------------------------------------------------

def compute_dtype(dtype):
    """The dtype a sum-like kernel runs in: float16/bfloat16 -> float32, integers -> int64."""
    return dtype.compute if dtype.is_floating_point or dtype.is_complex else _dtype.int64


def run_reduction(op, x, dims, out_dtype, *args, empty_fill=None):
    """Run kernel `op` reducing `dims` of x into a new tensor of shape kept (no keepdim).

    The kernel runs in `compute_dtype(out_dtype)`; the result is cast to out_dtype.
    A reduction over zero elements returns `empty_fill` (0 for sum, 1 for prod).
    """
    work = compute_dtype(out_dtype)
    if (len(dims) == len(x._shape) and x.dtype is work and x.device.type == "cpu"
            and x.is_contiguous()):
        # every dim of a contiguous CPU tensor (a loss, a metric): the (1, n, 1) layout
        # reduction_layout would plan, without planning it
        n = x.numel()
        if n:
            out = empty((), work, x.device)
            a3 = x._storage.data[x._offset:x._offset + n].reshape(1, n, 1)
            get_kernel(op, "cpu")(a3, out._arr.reshape(1, 1), *args)
            return out if work is out_dtype else out.to(out_dtype)
    if (dims and x.dtype is work and x.device.type == "cpu"
            and dims[-1] - dims[0] + 1 == len(dims)):
        out = _contiguous_run(op, x, dims, args)
        if out is not None:
            return out if work is out_dtype else out.to(out_dtype)
    if op == "sum" and 0 in x._strides and x.dtype is work and x.device.type == "cpu" and dims:
        out = _expanded_sum(x, dims, args)
        if out is not None:
            return out if work is out_dtype else out.to(out_dtype)
    kept = tuple(s for i, s in enumerate(x._shape) if i not in dims)
    if x.numel() == 0:
        out = empty(kept, work, x.device)
        if out.numel():
            out.fill_(empty_fill)
    else:
        src = x if x.dtype is work else x.to(work)
        lay = reduction_layout(src, dims)
        out, raw = lay.new_output(work, x.device)
        get_kernel(op, x.device.type)(lay.a3, raw, *args)
        out = lay.finish(out)
    return out if work is out_dtype else out.to(out_dtype)


def _contiguous_run(op, x, dims, args):
    """run_reduction's common CPU case: x contiguous (in its own dtype, not empty) and
    `dims` one run d0..d1 - the (outer, n, inner) view of x's array straight into the
    kernel, without a layout plan (sum(-1) of 8x16 6.6 -> 4.5 us). None for the rest."""
    shape = x._shape
    size, strides, numel = _LAYOUTS.get(shape) or _layout(shape)
    if x._strides != strides or not numel:
        return None
    d0, d1 = dims[0], dims[-1]
    outer = n = inner = 1
    kept = []
    for i, s in enumerate(shape):
        if i < d0:
            outer *= s
            kept.append(s)
        elif i > d1:
            inner *= s
            kept.append(s)
        else:
            n *= s
    out = empty(tuple(kept), x.dtype, x.device)
    get_kernel(op, "cpu")(x._array.reshape(outer, n, inner), out._arr.reshape(outer, inner),
                          *args)
    return out


def _expanded_sum(x, dims, args):
    """The sum of `dims` of an x expanded along kept dims (stride 0, size > 1: the
    gradient of a sum reaching `expand`/`repeat`'s backward), computed once over one
    slice and expanded, instead of once per copy: (2,256,1,512) of one value summed
    over dim 0, 131,072 rows of 2 -> one. Such an x always reaches the kernel as rows
    moved last (`move_reduced_last`: its stride-0 dims are not dense), so the slice
    runs the same rows in the same order, the same bits; None when not expanded, or
    when the slice would take the chunked walk of a few long rows."""
    shape, strides = x._shape, x._strides
    narrowed = x
    for d in range(len(shape)):
        if strides[d] == 0 and shape[d] > 1 and d not in dims:
            narrowed = narrowed.narrow(d, 0, 1)
    if narrowed is x or not narrowed.numel():
        return None
    xp, kept_small, n = move_reduced_last(narrowed, dims)
    outer = _prod(kept_small)
    if outer < 8 and outer * n >= (1 << 20):
        return None
    out = empty(kept_small, x.dtype, x.device)
    get_kernel("sum", "cpu")(xp._array.reshape(outer, n, 1), out._array.reshape(outer, 1),
                             *args)
    return out.expand(tuple(s for i, s in enumerate(shape) if i not in dims)).contiguous()


# ---- sum, mean, nansum ------------------------------------------------------------

_SUM_KEY = ("sum", "cpu")
_SMALL_SUM = 1 << 15    # elements: under the sum kernel's row split (split_rows.py's
                        # SPIN_MIN_NUMEL) and OpenMP (reduce.py's PARALLEL_MIN_NUMEL)
                        # thresholds, so it runs its serial loops (tested)
_SUM_LOOPS = {}         # the table's CPU sum kernel -> its (rows, walk, accumulator)

class Sum(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype, mean=False, skip_nan=False):
        ctx.in_shape, ctx.dims, ctx.keepdim = x._shape, dims, keepdim
        ctx.scale = 1.0 / reduce_numel(x._shape, dims) if mean and x.numel() else 1.0
        ctx.skip_nan = skip_nan
        if skip_nan:
            ctx.save_for_backward(x)
        fill = float("nan") if mean else 0
        if dtype.is_complex:            # summed as (real, imag) pairs by the real kernels
            from .._complex_views import as_complex, as_real
            xr = as_real(x if x.dtype is dtype else x.to(dtype))
            out = as_complex(run_reduction("sum", xr, dims, dtype.to_real(), ctx.scale,
                                           skip_nan, empty_fill=fill).contiguous())
        else:
            out = run_reduction("sum", x, dims, dtype, ctx.scale, skip_nan, empty_fill=fill)
        return out.view(keepdim_shape(x._shape, dims)) if keepdim else out

    @staticmethod
    def backward(ctx, g):
        g = expand_reduced(g, ctx.in_shape, ctx.dims, ctx.keepdim)
        if ctx.scale != 1.0:
            g = g * ctx.scale
        if ctx.skip_nan:
            x, = ctx.saved_tensors
            g = g * (x == x)
        return g, None, None, None, None, None


class Mean(Sum):
    """Sum scaled by 1/n (its own class so the node prints as MeanBackward0)."""


class Nansum(Sum):
    """Sum skipping NaN (NansumBackward0)."""


# PyTorch's nodes for sum/mean over given dims (the .dim_IntList overloads); same
# class names, so passes that match Functions by name (fx fusion) still see Sum/Mean
_SumDim = renamed(Sum, "SumBackward1")
_MeanDim = renamed(Mean, "MeanBackward1")


def _sum_dtype(x, dtype):
    if dtype is not None:
        return _dtype.to_dtype(dtype)
    return x.dtype if x.dtype.is_floating_point or x.dtype.is_complex else _dtype.int64


_ROWS_DTYPES = (_dtype.float32, _dtype.float64)


def _small_sum(x, dim, keepdim, mean):
    """``x.sum(dim)`` / ``x.mean(dim)`` (`dim` one int, or None for every dim) of a small
    C-contiguous float32/float64 CPU tensor with nothing to record: straight into the
    serial loop `kernels/cpu/reduce.sum_` picks for it (rows, or the walk when dims
    follow), with the scale `Sum` gives it, so the same bits; the Function, planning and
    kernel-choice layers skipped (8x16 float32, processes alternated: ``x.sum(-1)`` 5.7 ->
    3.6 us, ``x.sum()`` 5.5 -> 3.0, ``x.mean()`` 6.3 -> 3.1; PyTorch 1.9, 1.6, 3.5). None
    where any of that does not hold, or before the sum kernel is loaded, or when a user's
    kernel replaced it."""
    if (x.__class__ is not Tensor or APPLY_WRAPPERS[0] or x.device.type != "cpu"
            or (grad_mode.STATE.enabled and x._requires_grad) or x.dtype not in _ROWS_DTYPES):
        return None
    kernel = _KERNELS.get(_SUM_KEY)
    loops = _SUM_LOOPS.get(kernel)
    if loops is None:
        loops = _sum_loops(kernel)
        if loops is None:
            return None
    shape = x._shape
    size, strides, numel = _LAYOUTS.get(shape) or _layout(shape)
    if x._strides != strides or not 0 < numel < _SMALL_SUM:
        return None
    if dim is None:
        outer, n, inner = 1, numel, 1
        kept = (1,) * len(shape) if keepdim else ()
    else:
        nd = len(shape)
        d = dim + nd if dim < 0 else dim
        if not 0 <= d < nd:
            return None                                     # (the general path raises)
        outer = inner = 1
        for i in range(d):
            outer *= shape[i]
        for i in range(d + 1, nd):
            inner *= shape[i]
        n = shape[d]
        kept = shape[:d] + ((1,) if keepdim else ()) + shape[d + 1:]
    rows, walk, accumulator = loops
    zero = accumulator(x.dtype.np, 0)
    one = zero.dtype.type(1.0 / n) if mean and n != 1 else accumulator(x.dtype.np, 1)
    out = empty(kept, x.dtype, x.device)
    if inner == 1:
        rows(x._array.reshape(outer, n), out._arr.reshape(outer, 1), zero, one, False)
    else:
        walk(x._array.reshape(outer, n, inner), out._arr.reshape(outer, inner), zero, one,
             False)
    return out


def _sum_loops(kernel):
    """(rows, walk, accumulator) of `kernels/cpu/reduce.py` when `kernel` is its `sum_`
    (the table's, loaded), else None."""
    if getattr(kernel, "__module__", None) != "nbtorch.kernels.cpu.reduce" or \
            getattr(kernel, "__name__", None) != "sum_":
        return None
    import sys
    reduce = sys.modules[kernel.__module__]
    loops = _SUM_LOOPS[kernel] = (reduce.sum_rows, reduce.sum_reduce, reduce.accumulator)
    return loops


@tensor_method()
def sum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum of all elements, or over `dim` (an int or a tuple of ints).

    Integer and bool inputs sum to int64 unless `dtype` says otherwise; float32
    sums accumulate in float64 blocks, so 10^7 terms do not drift.

    Example:
        >>> nbtorch.tensor([[1., 2.], [3., 4.]]).sum(dim=0)
        tensor([4., 6.])
    """
    if dtype is None and (dim is None or dim.__class__ is int) and keepdim.__class__ is bool:
        out = _small_sum(input, dim, keepdim, False)
        if out is not None:
            return out
    if input.dtype.limited and dtype is None:
        no_kernel("sum_cpu", input.dtype, _dtype.FLOAT8)
    dims = normalize_dims(dim, input.dim())
    fn = Sum if dim is None else _SumDim
    return fn.apply(input, dims, keepdim, _sum_dtype(input, dtype))


def _float_dtype_for(op, x, dtype):
    d = _dtype.to_dtype(dtype) if dtype is not None else x.dtype
    if not (d.is_floating_point or d.is_complex):
        raise RuntimeError(f"{op}(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {dtype_label(d)}")
    return d


def dtype_label(d):
    return {"int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
            "uint8": "Byte", "bool": "Bool", "uint16": "UInt16", "uint32": "UInt32",
            "uint64": "UInt64"}.get(d.name, d.name.capitalize())


@tensor_method()
def mean(input, dim=None, keepdim=False, *, dtype=None):
    """Arithmetic mean over all elements or `dim`; floating inputs (or `dtype=`) only.

    Example:
        >>> nbtorch.tensor([1., 2., 3., 6.]).mean()
        tensor(3.)
    """
    if dtype is None and (dim is None or dim.__class__ is int) and keepdim.__class__ is bool:
        out = _small_sum(input, dim, keepdim, True)
        if out is not None:
            return out
    if input.dtype.limited and dtype is None:
        no_kernel("sum_cpu", input.dtype, _dtype.FLOAT8)
    d = _float_dtype_for("mean", input, dtype)
    dims = normalize_dims(dim, input.dim())
    return (Mean if dim is None else _MeanDim).apply(input, dims, keepdim, d, True)


@tensor_method()
def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """Sum treating NaN as zero."""
    if input.dtype.limited:
        no_kernel('nansum_cpu', input.dtype, _dtype.FLOAT8)
    if input.dtype.is_complex:
        raise RuntimeError("nansum does not support complex inputs")
    dims = normalize_dims(dim, input.dim())
    return Nansum.apply(input, dims, keepdim, _sum_dtype(input, dtype), False, True)


@tensor_method()
def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """Mean of the non-NaN elements (NaN where all are NaN)."""
    d = _float_dtype_for("nanmean", input, dtype)
    total = nansum(input, dim, keepdim, dtype=d)
    count = (input == input).sum(dim=normalize_dims(dim, input.dim()), keepdim=keepdim)
    return total / count.to(d)


# ---- prod ---------------------------------------------------------------------------

class Prod(Function):
    @staticmethod
    def forward(ctx, x, dims, keepdim, dtype):
        ctx.dims, ctx.keepdim = dims, keepdim
        out = run_reduction("prod", x, dims, dtype, empty_fill=1)
        out = out.view(keepdim_shape(x._shape, dims)) if keepdim else out
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, out = ctx.saved_tensors
        shape = keepdim_shape(x._shape, ctx.dims)
        if not ctx.keepdim:
            g, out = g.view(shape), out.view(shape)
        return _prod_grad(x, out, g, ctx.dims), None, None, None


def _prod_grad(x, out, g, dims):
    """d prod / dx_i = prod of the others: out / x without zeros, else exclusive products
    from both sides (exact with zeros, and differentiable again: PyTorch's second
    derivatives of a product with a zero)."""
    if not bool((x == 0).any()):
        return g * out / x
    return g * _prod_of_others(x, dims)


def _prod_of_others(x, dims):
    """For every element, the product over `dims` of the other elements of its slice:
    cumprod from the left times cumprod from the right, each exclusive of the element."""
    from .creation import ones_like
    from .joining import cat
    if not dims:
        return ones_like(x)
    rest = [d for d in range(x.dim()) if d not in dims]
    perm = rest + list(dims)
    xp = x.permute(perm)
    flat = xp.reshape(*xp.shape[:len(rest)], -1)
    one = ones_like(flat[..., :1])
    left = cat([one, flat[..., :-1].cumprod(-1)], -1)
    right = cat([flat[..., 1:].flip(-1).cumprod(-1).flip(-1), one], -1)
    inverse = [perm.index(d) for d in range(x.dim())]
    return (left * right).reshape(xp.shape).permute(inverse)


@tensor_method()
def prod(input, dim=None, keepdim=False, *, dtype=None):
    """Product of all elements, or over one `dim` (integers multiply in int64).

    Example:
        >>> nbtorch.tensor([[1., 2.], [3., 4.]]).prod(1)
        tensor([ 2., 12.])
    """
    if input.dtype.limited and dtype is None:
        no_kernel("prod_out_cpu", input.dtype, _dtype.FLOAT8)
    dims = normalize_dims(dim, input.dim())
    d = _sum_dtype(input, dtype)
    if d.is_complex:                    # pairwise products: ops/complex.py
        from .complex import complex_prod
        return complex_prod(input.to(d), dims, keepdim)
    return Prod.apply(input, dims, keepdim, d)


# ---- all, any, count_nonzero (no gradient) ------------------------------------------

def _count(x, dim, keepdim):
    dims = normalize_dims(dim, x.dim())
    # limited dtypes (uint16-64, float8) count their truth values: no kernel compiles
    src = x.to(x.dtype.compute) if not x.dtype.limited else x.detach() != 0
    kept = tuple(s for i, s in enumerate(x._shape) if i not in dims)
    if x.numel() == 0:
        from .creation import zeros
        out = zeros(kept, dtype=_dtype.int64, device=x.device)
    else:
        lay = reduction_layout(src.detach(), dims)
        out, raw = lay.new_output(_dtype.int64, x.device)
        get_kernel("count_nonzero", x.device.type)(lay.a3, raw)
        out = lay.finish(out)
    if keepdim:
        out = out.view(keepdim_shape(x._shape, dims))
    return out, reduce_numel(x._shape, dims)


@tensor_method()
@recorded_whole
def count_nonzero(input, dim=None):
    """Number of non-zero elements, over all or over `dim` (int64)."""
    if input.dtype.limited and dim is None:
        no_kernel("nonzero_count_cpu", input.dtype)
    return _count(input, dim, False)[0]


@tensor_method()
@recorded_whole
def all(input, dim=None, keepdim=False):
    """True where every element (over `dim`) is non-zero (bool; uint8 stays uint8)."""
    if dim is None and not keepdim and input.dtype is _dtype.bool and \
            input.device.type == "cpu":
        a = input._array                            # a mask's all(): NumPy's count, 15 -> ~2 us
        return _bool_scalar(np.count_nonzero(a) == a.size, input.device)
    if _no_dims(dim):
        return _logical_result(input != 0, input)
    count, n = _count(input, dim, keepdim)
    return _logical_result(count == n, input)


@tensor_method()
@recorded_whole
def any(input, dim=None, keepdim=False):
    """True where some element (over `dim`) is non-zero."""
    if dim is None and not keepdim and input.dtype is _dtype.bool and \
            input.device.type == "cpu":
        return _bool_scalar(np.count_nonzero(input._array) != 0, input.device)
    if _no_dims(dim):
        return _logical_result(input != 0, input)
    count, _ = _count(input, dim, keepdim)
    return _logical_result(count > 0, input)


def _bool_scalar(value, device):
    """A fresh 0-d bool tensor holding `value` (what ``wrap(np.array(value))`` made, without
    its layout inspection: ~0.8 us less)."""
    out = empty((), _dtype.bool, device)
    out._arr[()] = value
    return out


def _no_dims(dim):
    """dim=() (or []): PyTorch 2.13's all/any reduce over no dim (each element's truth)."""
    return dim.__class__ in (tuple, list) and not dim



def _logical_result(mask, x):
    return mask.to(_dtype.uint8) if x.dtype is _dtype.uint8 else mask
