"""Sorting and selection: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode,
unique, bincount, histc.

Every selection is a sort along the dim (a stable merge sort in
kernels/cpu/sort.py) followed by views or a gather of its output, so
gradients come from the one `Sort` backward: the gradient scattered back
to the sorted positions. topk on the CPU is a per-row selection instead
(`TopK`, the same result as the first k of the stable sort).
"""
import numpy as np

from .. import _dtype
from .._capture import host_computed, recorded_whole
from .._tensor import _CPU_CACHED, _LAYOUTS, Storage, Tensor, _layout, empty
from .._registry import _KERNELS, get_kernel
from ..autograd import grad_mode
from ..autograd.function import APPLY_WRAPPERS, Function, unrecorded
from .._limited import bits, no_kernel, signed_order, unsigned_order
from ._common import normalize_dim, selection_grad, tensor_method
from . import _return_types as rt
from .reduction import dtype_label

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
           "unique", "bincount", "histc"]


# ---- sort ---------------------------------------------------------------------------

def _sort_last(x, dim, descending):
    """(values, indices) of x sorted along dim (kernel on a (rows, n) copy, dim moved last)."""
    work = x.dtype.compute
    if x.dim() == 0:
        return x.clone(), empty((), _dtype.int64, x.device).fill_(0)
    if x.device.type == "cpu" and work is x.dtype:
        return _sort_cpu(x, dim, descending)
    moved = x.movedim(dim, -1).contiguous()
    if work is not x.dtype:
        moved = moved.to(work)
    values = empty(moved._shape, work, x.device)
    indices = empty(moved._shape, _dtype.int64, x.device)
    n = x._shape[dim]
    if moved.numel():
        rows = moved.numel() // n
        get_kernel("sort", x.device.type)(moved._array.reshape(rows, n),
                                          values._array.reshape(rows, n),
                                          indices._array.reshape(rows, n), descending)
    values, indices = values.movedim(-1, dim), indices.movedim(-1, dim)
    if work is not x.dtype:
        values = values.to(x.dtype)
    return values.contiguous(), indices.contiguous()


def _sort_cpu(x, dim, descending, k=None):
    """`_sort_last` on the CPU for a dtype the kernel sorts as is, with NumPy moving `dim`
    last and back instead of view ops (each a Function call: topk of 8x16 40 -> 9 us); the
    first `k` along dim only when k is given (topk). The same kernel, so the same order of
    equal elements. Returns new contiguous tensors."""
    a = x._array
    last = a.ndim - 1
    dim %= a.ndim
    if dim != last:
        a = a.transpose(tuple(i for i in range(a.ndim) if i != dim) + (dim,))
    moved = a.shape
    n = moved[-1]
    uint = x.dtype.limited                  # uint16-64 sort as signed ints: no new kernel
    if uint:
        a = signed_order(a)
    final = dim == last and k is None and not uint      # the kernel's output is the result
    if final:
        out_v, out_i = empty(moved, x.dtype, x.device), empty(moved, _dtype.int64, x.device)
        values, indices = out_v._arr, out_i._arr
    else:                                   # scratch, copied from below
        values, indices = np.empty(moved, a.dtype), np.empty(moved, np.int64)
    if values.size:
        rows = values.size // n
        get_kernel("sort", "cpu")(np.ascontiguousarray(a).reshape(rows, n),
                                  values.reshape(rows, n), indices.reshape(rows, n),
                                  descending)
    if final:
        return out_v, out_i
    m = n if k is None else k
    back = tuple(range(dim)) + (last,) + tuple(range(dim, last))   # dim back in place
    shape = x._shape[:dim] + (m,) + x._shape[dim + 1:]
    out_v, out_i = empty(shape, x.dtype, x.device), empty(shape, _dtype.int64, x.device)
    values = values[..., :m]
    np.copyto(out_v._arr, (unsigned_order(values, x.dtype.np) if uint else values).transpose(back))
    np.copyto(out_i._arr, indices[..., :m].transpose(back))
    return out_v, out_i


def _unrecorded_cpu(x):
    """True where a selection of CPU tensor `x` records nothing and nothing watches the
    ops (no graph capture or profiler), so it may skip the Sort node and its views."""
    return x.device.type == "cpu" and x.dtype.compute is x.dtype and unrecorded(x)


# ---- small rows: the serial kernels called directly -----------------------------------
# topk / sort of a small C-contiguous CPU tensor along its last dim with nothing to
# record: the serial row loop of kernels/cpu/sort.py (the one its launcher picks for
# them) into fresh tensors, skipping Function.apply, the launcher and `empty` (8x16
# float32, old and new path alternated in one process: topk(3) 6.7 -> 4.6 us, sort(-1)
# 6.9 -> 4.2; of topk's 4.6, ~1 is the kernel's and ~1.5 the two result tensors'). The
# same loop on the same rows, so the same values, indices and order of ties.

_SMALL_ROWS_DTYPES = frozenset((_dtype.float32, _dtype.float64, _dtype.int8, _dtype.int16,
                                _dtype.int32, _dtype.int64, _dtype.uint8, _dtype.bool))
_SORT_KEY = ("sort", "cpu")
_ROW_KERNELS = [None]   # kernels/cpu/sort.py and its launchers as loaded (first use)
_new_tuple = tuple.__new__  # a return type built as its namedtuple's __new__ does, without it


def _row_kernels():
    """kernels/cpu/sort.py with its launchers `topk` and `sort` as its own code defines
    them, or None where one was replaced (a user's patch runs through the layers)."""
    found = _ROW_KERNELS[0]
    if found is None:
        from ..kernels.cpu import sort as module
        launchers = (module.topk, module.sort)
        if any(f.__module__ != module.__name__ for f in launchers):
            return None
        found = _ROW_KERNELS[0] = (module,) + launchers
    return found


def _small_rows(x, dim):
    """The (rows, n) array of a tensor `x` that the row kernels may take directly for
    `dim` (see above; bools as uint8); None where any of that does not hold, and for dims
    out of range (the general path raises)."""
    if (x.__class__ is not Tensor or APPLY_WRAPPERS[0] or dim.__class__ is not int
            or x.dtype not in _SMALL_ROWS_DTYPES or x.device.type != "cpu"
            or (grad_mode.STATE.enabled and x._requires_grad)):
        return None
    shape = x._shape
    nd = len(shape)
    if not nd or (dim != nd - 1 and dim != -1):
        return None
    size, strides, numel = _LAYOUTS.get(shape) or _layout(shape)
    a = x._arr
    if not 0 < numel < _CPU_CACHED or x._strides != strides or a is None:
        return None
    if nd != 2:
        a = a.reshape(numel // shape[-1], shape[-1])
    return a.view(np.uint8) if x.dtype is _dtype.bool else a


def _fresh_pair(shape, dtype, device):
    """Two new C-contiguous tensors of `shape` (dtype and int64) on the CPU, as `empty`
    makes them (fewer than _CPU_CACHED elements: NumPy's buffers), with their (rows, m)
    arrays for a row kernel (bools as uint8)."""
    size, strides, m = _LAYOUTS.get(shape) or _layout(shape)
    va, ia = np.empty(size, dtype.np), np.empty(size, np.int64)
    if len(size) == 1:
        v, i = va, ia
        v2, i2 = va.reshape(1, m), ia.reshape(1, m)
    else:
        v, i = va.ravel(), ia.ravel()
        if len(size) == 2:
            v2, i2 = va, ia
        else:
            v2, i2 = v.reshape(m // size[-1], size[-1]), i.reshape(m // size[-1], size[-1])
    values = Tensor.__new__(Tensor)._init(Storage(v, device), 0, size, strides, dtype, va)
    indices = Tensor.__new__(Tensor)._init(Storage(i, device), 0, size, strides,
                                           _dtype.int64, ia)
    return values, indices, (v2.view(np.uint8) if dtype is _dtype.bool else v2), i2


def _small_topk(x, k, dim, largest):
    """`topk` of a small tensor along its last dim (1 <= k <= n) by the serial row loop
    (`topk_rows`, which the launcher runs below TOPK_PARALLEL_MIN elements), or None."""
    a = _small_rows(x, dim)
    if a is None or k.__class__ is not int:
        return None
    kernels = _ROW_KERNELS[0] or _row_kernels()
    if kernels is None:
        return None
    module = kernels[0]
    if (module.topk is not kernels[1] or not 0 < k <= a.shape[1]
            or a.size >= module.TOPK_PARALLEL_MIN):
        return None
    values, indices, v2, i2 = _fresh_pair(x._shape[:-1] + (k,), x.dtype, x.device)
    module.topk_rows(a, v2, i2, bool(largest))
    return _new_tuple(rt.topk, (values, indices))


def _small_sort(x, dim, descending):
    """`sort` of a small tensor along its last dim by the row sort (`sort_rows`) where the
    registered "sort" kernel is the table's launcher, or None."""
    a = _small_rows(x, dim)
    if a is None:
        return None
    kernels = _ROW_KERNELS[0] or _row_kernels()
    if kernels is None or (_KERNELS.get(_SORT_KEY) or get_kernel("sort", "cpu")) \
            is not kernels[2]:
        return None                 # a user's kernel: the layers call it
    values, indices, v2, i2 = _fresh_pair(x._shape, x.dtype, x.device)
    kernels[0].sort_rows(a, v2, i2, bool(descending))
    return _new_tuple(rt.sort, (values, indices))


class Sort(Function):
    @staticmethod
    def forward(ctx, x, dim, descending):
        values, indices = _sort_last(x, dim, descending)
        ctx.dim, ctx.in_meta = dim, (x._shape, x.dtype, x.device)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _g_indices):
        return selection_grad(ctx, g), None, None


@tensor_method()
def sort(input, dim=-1, descending=False, stable=False, *, out=None):
    """(values, indices) sorted along `dim`; always stable (equal values keep their order).

    NaN sorts as the largest value.

    Example:
        >>> nbtorch.tensor([3., 1., 2.]).sort(descending=True)
        torch.return_types.sort(values=tensor([3., 2., 1.]), indices=tensor([0, 2, 1]))
    """
    if out is None:
        result = _small_sort(input, dim, descending)
        if result is not None:
            return result
    if input.dtype.limited:
        no_kernel("sorting_kernel_method_name", input.dtype, _dtype.FLOAT8)
    if isinstance(dim, bool):          # sort(stable=..., dim, descending) style misuse
        raise TypeError("sort(): argument 'dim' must be int, not bool")
    d = normalize_dim(dim, input.dim())
    return rt.sort(*Sort.apply(input, d, bool(descending)))


@tensor_method()
@recorded_whole
def argsort(input, dim=-1, descending=False, stable=False):
    """Indices that sort `input` along `dim` (stable)."""
    if input.dtype.limited:
        no_kernel("sorting_kernel_method_name", input.dtype, _dtype.FLOAT8)
    d = normalize_dim(dim, input.dim())
    return _sort_last(input.detach(), d, bool(descending))[1]


@tensor_method()
def msort(input):
    """input sorted along its first dim."""
    return sort(input, 0).values


def _topk_cpu(x, dim, k, largest):
    """(values, indices) of the k best along dim of a CPU tensor whose dtype is its own
    compute type: a per-row selection (kernels/cpu/sort.py `topk`), not a sort (1024x512
    float32 topk(5, 1): 30 -> 1.3 ms). The same result as the first k of the stable sort,
    equal values in index order. Rows moved last by NumPy (a copy only when dim is not
    the last or the input not contiguous); new contiguous tensors."""
    from ..kernels.cpu.sort import topk as kernel
    a = x._array
    last = a.ndim - 1
    if dim != last:
        a = a.transpose(tuple(i for i in range(a.ndim) if i != dim) + (dim,))
    n = a.shape[-1]
    shape = x._shape[:dim] + (k,) + x._shape[dim + 1:]
    out_v, out_i = empty(shape, x.dtype, x.device), empty(shape, _dtype.int64, x.device)
    if dim == last:
        values, indices = out_v._arr, out_i._arr
    else:                                   # scratch in moved order, copied back below
        values = np.empty(a.shape[:-1] + (k,), out_v._arr.dtype)
        indices = np.empty(values.shape, np.int64)
    rows = values.size // k if k else 0
    if rows:
        kernel(np.ascontiguousarray(a).reshape(rows, n), values.reshape(rows, k),
               indices.reshape(rows, k), largest)
    if dim != last:
        back = tuple(range(dim)) + (last,) + tuple(range(dim, last))
        np.copyto(out_v._arr, values.transpose(back))
        np.copyto(out_i._arr, indices.transpose(back))
    return out_v, out_i


class TopK(Function):
    """topk on the CPU with a gradient: the selection forward, the gradient scattered
    back to the selected positions (as Sort's)."""

    @staticmethod
    def forward(ctx, x, dim, k, largest):
        values, indices = _topk_cpu(x, dim, k, largest)
        ctx.dim, ctx.in_meta = dim, (x._shape, x.dtype, x.device)
        ctx.save_for_backward(indices)
        ctx.mark_non_differentiable(indices)
        return values, indices

    @staticmethod
    def backward(ctx, g, _g_indices):
        return selection_grad(ctx, g), None, None, None


@tensor_method()
def topk(input, k, dim=-1, largest=True, sorted=True):
    """The k largest (or smallest) values along `dim` and their indices.

    Example:
        >>> nbtorch.tensor([1., 5., 3.]).topk(2)
        torch.return_types.topk(values=tensor([5., 3.]), indices=tensor([1, 2]))
    """
    result = _small_topk(input, k, dim, largest)
    if result is not None:
        return result
    if input.dtype.limited:
        no_kernel("topk_cpu", input.dtype)
    d = normalize_dim(dim, input.dim())
    n = input._shape[d] if input.dim() else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"selected index k out of range (k={k}, dim size {n})")
    if input.dim() and input.device.type == "cpu" and input.dtype.compute is input.dtype:
        if unrecorded(input):
            return rt.topk(*_topk_cpu(input, d, k, bool(largest)))
        return rt.topk(*TopK.apply(input, d, k, bool(largest)))
    values, indices = Sort.apply(input, d, bool(largest))
    if input.dim() == 0:
        return rt.topk(values, indices)
    return rt.topk(values.narrow(d, 0, k), indices.narrow(d, 0, k))


@tensor_method()
def kthvalue(input, k, dim=-1, keepdim=False):
    """The k-th smallest value (k from 1) along `dim` and its index."""
    if input.dtype.limited:
        no_kernel('kthvalue_cpu', input.dtype)
    d = normalize_dim(dim, input.dim())
    n = input._shape[d] if input.dim() else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    values, indices = Sort.apply(input, d, False)
    if input.dim() == 0:
        return rt.kthvalue(values, indices)
    v, i = values.narrow(d, k - 1, 1), indices.narrow(d, k - 1, 1)
    return rt.kthvalue(*((v, i) if keepdim else (v.squeeze(d), i.squeeze(d))))


def _median(op, input, dim, keepdim, skip_nan):
    """Lower median along dim: NaN if the slice holds one (unless skip_nan)."""
    from .creation import tensor
    if input.dim() == 0:
        return input.clone() if dim is None else rt.median(input.clone(), tensor(0))
    if dim is None:
        return _median_all(input, skip_nan)
    x = input
    d = normalize_dim(dim, input.dim())
    n = x._shape[d]
    if n == 0:
        raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")
    values, indices = Sort.apply(x, d, False)
    nans = (x != x).sum(dim=d, keepdim=True)
    if skip_nan:
        pos = (n - nans - 1).clamp(min=0) // 2
    else:
        pos = ((n - 1) // 2) + (nans > 0).to(_dtype.int64) * (n - nans - (n - 1) // 2)
    v, i = values.gather(d, pos), indices.gather(d, pos)
    if not keepdim:
        v, i = v.squeeze(d), i.squeeze(d)
    return (rt.nanmedian if skip_nan else rt.median)(v, i)


class _ValueOf(Function):
    """A value selected from x (a median); the gradient is shared by the elements equal to
    it, as PyTorch does for median() over all elements."""

    @staticmethod
    def forward(ctx, x, value):
        ctx.save_for_backward(x, value)
        return value.clone()

    @staticmethod
    def backward(ctx, g):
        from .reduction_minmax import evenly_distributed_grad
        x, value = ctx.saved_tensors
        return evenly_distributed_grad(x, value, g, tuple(range(x.dim()))), None


def _median_all(input, skip_nan):
    from .creation import full
    if input.numel() == 0:
        return full((), float("nan"), dtype=input.dtype, device=input.device)
    flat = input.detach().reshape(-1)
    value = _median(None, flat, 0, False, skip_nan).values
    return _ValueOf.apply(input, value)


@tensor_method()
def median(input, dim=None, keepdim=False):
    """Lower median of all elements, or (values, indices) along `dim`; NaN propagates."""
    if input.dtype.limited:
        no_kernel('median_cpu', input.dtype)
    return _median("median", input, dim, keepdim, False)


@tensor_method()
def nanmedian(input, dim=None, keepdim=False):
    """Lower median ignoring NaN (NaN only where a slice is all NaN)."""
    return _median("nanmedian", input, dim, keepdim, True)


class Mode(Function):
    """The most frequent value along dim (smallest on ties) and its last index."""

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        ctx.dim, ctx.keepdim, ctx.in_shape = dim, keepdim, x._shape
        if x.dim() == 0:
            return x.clone(), empty((), _dtype.int64, x.device).fill_(0)
        values, indices = _sort_last(x.movedim(dim, -1), -1, False)
        n = x._shape[dim]
        kept = values._shape[:-1]
        rows = values.numel() // n
        out_v = empty(kept, values.dtype, x.device)
        out_i = empty(kept, _dtype.int64, x.device)
        work = values.to(values.dtype.compute)
        ov = out_v if not out_v.dtype.is_half else empty(kept, work.dtype, x.device)
        get_kernel("mode", x.device.type)(work._array.reshape(rows, n),
                                          indices._array.reshape(rows, n),
                                          ov._array.reshape(rows), out_i._array.reshape(rows))
        if ov is not out_v:
            out_v = ov.to(out_v.dtype)
        if keepdim:
            out_v, out_i = out_v.unsqueeze(dim), out_i.unsqueeze(dim)
        ctx.save_for_backward(out_i)
        ctx.mark_non_differentiable(out_i)
        return out_v, out_i

    @staticmethod
    def backward(ctx, g, _g_indices):
        from .reduction_minmax import index_mask
        from .reduction import keepdim_shape
        if not ctx.in_shape:
            return g, None, None
        indices, = ctx.saved_tensors
        shape = keepdim_shape(ctx.in_shape, (ctx.dim,))
        if not ctx.keepdim:
            g, indices = g.view(shape), indices.view(shape)
        return g * index_mask(indices, ctx.dim, ctx.in_shape), None, None


@tensor_method()
def mode(input, dim=-1, keepdim=False):
    """The most frequent value along `dim` (the smallest on ties) and the index of its last
    occurrence, as `torch.return_types.mode`.

    Example:
        >>> nbtorch.tensor([1, 2, 2, 1, 3]).mode()
        torch.return_types.mode(values=tensor(1), indices=tensor(3))
    """
    if input.dtype.limited:
        no_kernel('mode_cpu', input.dtype)
    d = normalize_dim(dim, input.dim())
    if input.dim() and input._shape[d] == 0:
        raise IndexError(f"mode(): Expected reduction dim {d} to have non-zero size.")
    return rt.mode(*Mode.apply(input, d, keepdim))


# ---- unique, bincount, histc -------------------------------------------------------------

@tensor_method()
@host_computed("has a data-dependent output shape")
def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The sorted distinct values, optionally with inverse indices and counts.

    Example:
        >>> nbtorch.unique(nbtorch.tensor([3, 1, 3]), return_counts=True)
        (tensor([1, 3]), tensor([1, 2]))
    """
    if input.dtype.limited:
        no_kernel("unique", input.dtype, _dtype.FLOAT8)
    if dim is not None:
        return _unique_dim(input, dim, return_inverse, return_counts)
    flat = input.detach().reshape(-1)
    values, order = _sort_last(flat, 0, False)
    n = flat.numel()
    uniq = empty((n,), input.dtype, input.device)
    inverse = empty((n,), _dtype.int64, input.device)
    counts = empty((n,), _dtype.int64, input.device)
    vals = values._array if input.dtype is not _dtype.bool else values._array.view(np.uint8)
    u_raw = uniq._array if input.dtype is not _dtype.bool else uniq._array.view(np.uint8)
    if input.dtype.is_half:          # unique runs compare bits
        vals, u_raw = vals.view(np.uint16), u_raw.view(np.uint16)
    elif input.dtype.limited:        # uint16-64 too, as same-width ints
        vals, u_raw = bits(vals, input.dtype), bits(u_raw, input.dtype)
    m = get_kernel("unique_runs", input.device.type)(
        vals, order._array, u_raw, inverse._array, counts._array) if n else 0
    result = [uniq[:m].clone()]
    if return_inverse:
        result.append(inverse.view(input._shape))
    if return_counts:
        result.append(counts[:m].clone())
    return result[0] if len(result) == 1 else tuple(result)


def _unique_dim(input, dim, return_inverse, return_counts):
    """unique(dim=d): the distinct slices along d, in lexicographic order (sorted or not,
    as PyTorch), with each slice's index among them and their counts. Runs on the host
    (NumPy's unique over rows); the results go back to input's device."""
    if input.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = normalize_dim(dim, input.dim())
    shape = input._shape
    zero_dims = [i for i, n in enumerate(shape) if n == 0]
    if len(zero_dims) > 1:
        raise RuntimeError("Number of zero sized dimensions is more than one, so unique "
                           "cannot be applied ")
    if zero_dims and zero_dims[0] != d:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so "
                           "unique cannot be applied")
    from .creation import from_numpy
    moved = input.detach().movedim(d, 0).cpu().contiguous().numpy()
    rows = moved.reshape(shape[d], int(np.prod(moved.shape[1:])))
    if rows.shape[0]:
        uniq, inverse, counts = np.unique(rows, axis=0, return_inverse=True,
                                          return_counts=True)
    else:
        uniq = rows
        inverse = counts = np.zeros(0, np.int64)
    values = from_numpy(np.ascontiguousarray(uniq.reshape((len(uniq),) + moved.shape[1:])))
    result = [values.movedim(0, d).contiguous().to(input.device)]
    if return_inverse:
        result.append(from_numpy(inverse.reshape(-1).astype(np.int64)).to(input.device))
    if return_counts:
        result.append(from_numpy(counts.astype(np.int64)).to(input.device))
    return result[0] if len(result) == 1 else tuple(result)


@tensor_method()
@host_computed("has a data-dependent output shape")
def bincount(input, weights=None, minlength=0):
    """Counts of each value of a 1-D non-negative integer tensor (sums of `weights`)."""
    if input.dtype.limited:
        no_kernel('bincount_cpu', input.dtype, _dtype.UINTS)
    if input.dim() != 1 or input.dtype.is_floating_point or input.dtype is _dtype.bool:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if weights is not None and weights._shape != input._shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    x = input.detach().to(_dtype.int64).contiguous()
    if x.numel() and int(x.amin()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    length = max(int(x.amax()) + 1 if x.numel() else 0, minlength)
    if weights is None:
        out_dtype, w = _dtype.int64, np.zeros(0, np.int64)
    else:
        out_dtype = _dtype.float32 if weights.dtype is _dtype.float32 else _dtype.float64
        w = weights.detach().to(out_dtype).contiguous()._array
    from .creation import zeros
    out = zeros(length, dtype=out_dtype, device=input.device)
    get_kernel("bincount", input.device.type)(x._array, w, out._array)
    return out


@tensor_method()
@host_computed("counts the input's values on the host")
def histc(input, bins=100, min=0, max=0):
    """Histogram of `bins` equal bins over [min, max] (the data's range if min == max)."""
    if input.dtype.limited:
        no_kernel("aminmax_cpu", input.dtype)
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for "
                           f"'{dtype_label(input.dtype)}'")
    if bins <= 0:
        raise RuntimeError("bins must be > 0")
    x = input.detach().contiguous()
    work = x.to(x.dtype.compute)
    lo, hi = float(min), float(max)
    if lo == hi and x.numel():
        lo, hi = float(work.amin()), float(work.amax())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("max must be larger than min")
    from .creation import zeros
    out = zeros(bins, dtype=work.dtype, device=input.device)
    get_kernel("histc", input.device.type)(work._array.reshape(-1), out._array, lo, hi)
    return out if out.dtype is input.dtype else out.to(input.dtype)
