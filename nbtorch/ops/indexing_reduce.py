"""Index ops that reduce or fill: scatter_reduce (sum, prod, mean, amax, amin, with or
without self), index_reduce, scatter(reduce='multiply'), index_fill, masked_scatter, put.

scatter_reduce's kernel (`scatter_reduce` in kernels/{cpu,cuda}/index.py) takes the
sources grouped by the storage offset they reduce into: the offsets are computed and
bounds-checked on the host (as every index op here), sorted stably, and each run of
equal offsets is reduced by one loop iteration (one CUDA thread): no atomics, and
the same order on every device. Backward formulas are PyTorch's (FunctionsManual's
scatter_reduce_backward), written with nbtorch ops.
"""
import numpy as np

from .. import _dtype
from .._tensor import Tensor
from .._meta import index_values
from .._registry import get_kernel
from ..autograd.function import Function
from .._limited import no_kernel
from ._common import normalize_dim, tensor_method
from ._inplace import inplace_guard
from .indexing import _take, index_put
from .indexing_gather import _dim_offsets, _check_gather_shapes, check_source_like

__all__ = ["scatter_reduce", "index_reduce", "index_fill", "masked_scatter", "put"]

_MODES = {"sum": 0, "prod": 1, "mean": 2, "amax": 3, "amin": 4}


def check_index(op, index, size, dim, *, negative=False, error=RuntimeError, prefix=""):
    """Host int64 indices from an integer `index` tensor, each checked against `size` as
    PyTorch does for `op`: negative ones wrap only when `negative`; out-of-range ones
    raise `error` naming the index, the dim and its size."""
    if not isinstance(index, Tensor) or index.dtype.is_floating_point or \
            index.dtype is _dtype.bool or index.dtype.is_complex:
        raise RuntimeError(f"{op}(): Expected dtype int64 for index")
    arr = index_values(index).astype(np.int64, copy=False)
    if arr.size:
        lo = -size if negative else 0
        bad = arr[(arr < lo) | (arr >= size)]
        if bad.size:
            raise error(f"{prefix}index {int(bad[0])} is out of bounds for dimension {dim} "
                        f"with size {size}")
        if negative:
            arr = np.where(arr < 0, arr + size, arr)
    return arr


def _runs(offsets):
    """(order, distinct targets, run starts) of flat int64 `offsets` grouped by value."""
    order = np.argsort(offsets, kind="stable")
    ordered = offsets[order]
    first = np.ones(ordered.size, bool)
    first[1:] = ordered[1:] != ordered[:-1]
    starts = np.flatnonzero(first)
    return order, np.ascontiguousarray(ordered[starts]), \
        np.append(starts, ordered.size).astype(np.int64)


def _source_part(src, index):
    return src if src._shape == index._shape else \
        src[tuple(slice(0, n) for n in index._shape)]


def reduce_into(out, dim, idx, values, reduce, include_self):
    """Reduce `values` (index-shaped) into `out` (a fresh contiguous tensor) at the host
    indices `idx` along `dim`, in place (no autograd)."""
    mode = _MODES[reduce]
    if out.dtype is _dtype.bool:
        if reduce == "mean":
            raise NotImplementedError("\"scatter_reduce\" with reduce='mean' is not "
                                      "implemented for 'Bool'")
        mode = {0: 3, 1: 4}.get(mode, mode)            # or, and: max, min of 0/1
    elif mode == 2 and not out.dtype.is_floating_point:
        mode = 5                                        # integer mean: floor division
    if not idx.size:
        return out
    order, targets, starts = _runs(_dim_offsets(out, dim, idx).reshape(-1))
    flat = values.to(out.dtype).contiguous().reshape(-1)
    grouped = _take(flat, order + flat._offset)
    get_kernel("scatter_reduce", out.device.type)(out._storage.data, targets, starts,
                                                  grouped._array, mode, include_self)
    out._bump()
    return out


class ScatterReduce(Function):
    @staticmethod
    def forward(ctx, x, dim, index, src, reduce, include_self):
        idx = check_index("scatter_reduce", index, x._shape[dim] if x.dim() else 1, dim)
        part = _source_part(src, index)
        ctx.dim, ctx.index, ctx.reduce, ctx.include_self = dim, index, reduce, include_self
        ctx.src_shape = src._shape
        out = reduce_into(x.clone() if x.is_contiguous() else x.contiguous(), dim, idx, part,
                          reduce, include_self)
        ctx.save_for_backward(x, part, out)
        return out

    @staticmethod
    def backward(ctx, g):
        x, src, out = ctx.saved_tensors
        gx, gs = _scatter_reduce_grads(g, x, src, out, ctx.dim, ctx.index, ctx.reduce,
                                       ctx.include_self)
        if gs is not None and gs._shape != ctx.src_shape:
            from .creation import zeros
            full = zeros(ctx.src_shape, dtype=g.dtype, device=g.device)
            full[tuple(slice(0, n) for n in gs._shape)] = gs
            gs = full
        return gx, None, None, gs, None, None


def _scatter_reduce_grads(g, x, src, out, dim, index, reduce, include_self):
    """PyTorch's scatter_reduce_backward (FunctionsManual.cpp), with nbtorch ops."""
    from .pointwise_select import where
    if reduce == "sum":
        gx, gs = g, g.gather(dim, index)
    elif reduce == "mean":
        n = (g.new_ones(g.shape) if include_self else g.new_zeros(g.shape)).scatter_add(
            dim, index, g.new_ones(index.shape))
        n = n.masked_fill(n == 0, 1)
        gx, gs = g / n, g.gather(dim, index) / n.gather(dim, index)
    elif reduce == "prod":
        masked_x = x.masked_fill(x == 0, 1)
        gx = g * scatter_reduce(masked_x, dim, index, src, "prod", include_self=include_self) \
            / masked_x
        src_zero = src == 0
        zeros_per_target = x.new_zeros(x.shape).scatter_add(dim, index, src_zero.to(x.dtype))
        single_zero = src_zero & (zeros_per_target.gather(dim, index) == 1)
        masked_src_result = scatter_reduce(x, dim, index, src.masked_fill(single_zero, 1),
                                           "prod", include_self=include_self)
        gs = where(single_zero, (g * masked_src_result).gather(dim, index),
                   (g * out).gather(dim, index) / src.masked_fill(src_zero, 1))
    else:                                               # amax, amin
        value = out.gather(dim, index)
        x_is = (x == out).to(g.dtype)
        src_is = (src == value).to(g.dtype)
        share = g / x_is.scatter_add(dim, index, src_is)
        gx, gs = x_is * share, src_is * share.gather(dim, index)
    if not include_self:
        gx = gx.scatter(dim, index, 0.0)
    return gx, gs


def _check_scatter_reduce(op, x, dim, index, src, reduce):
    if reduce not in _MODES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
    d = normalize_dim(dim, x.dim())
    _check_gather_shapes(op, x, d, index)
    if index.dim() == src.dim():
        for k in range(index.dim()):
            if index._shape[k] > src._shape[k]:
                raise RuntimeError(f"Expected index {list(index.shape)} to be smaller than "
                                   f"self {list(x.shape)} apart from dimension {d} and to "
                                   f"be smaller size than src {list(src.shape)}")
    return d


@tensor_method()
def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
    """A copy of self where each element that `index` points at (along dim) is reduced
    with the `src` values sent to it: reduce is "sum", "prod", "mean", "amax" or "amin";
    include_self=False leaves self's own value out of the reduction.

    Example:
        >>> x = nbtorch.tensor([1., 2.])
        >>> x.scatter_reduce(0, nbtorch.tensor([0, 0]), nbtorch.tensor([3., 5.]), "amax")
        tensor([5., 2.])
    """
    d = _check_scatter_reduce("scatter_reduce", self, dim, index, src, reduce)
    return ScatterReduce.apply(self, d, index, src, reduce, include_self)


def _inplace(self, fn_args, raw_out):
    def raw():
        from .copy import raw_copy_
        raw_copy_(self, raw_out())
    return inplace_guard(self, ScatterReduce, fn_args, raw)


@tensor_method()
def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    d = _check_scatter_reduce("scatter_reduce_", self, dim, index, src, reduce)
    args = (self, d, index, src, reduce, include_self)
    return _inplace(self, args, lambda: ScatterReduce.forward(_Ctx(), self.detach(), *args[1:]))


class _Ctx:
    def save_for_backward(self, *tensors):
        pass


def scatter_multiply(self, dim, index, src, inplace):
    """scatter(..., reduce='multiply'): scatter_reduce 'prod' including self (src may be
    a number)."""
    if not isinstance(src, Tensor):
        from .creation import full
        src = full(index.shape, src, dtype=self.dtype, device=self.device)
    src = src.to(self.dtype)
    return (scatter_reduce_ if inplace else scatter_reduce)(self, dim, index, src, "prod")


def _index_as_scatter(op, x, dim, index, source):
    """index_reduce's 1-D index expanded to source's shape along dim (a scatter index)."""
    if index.dim() > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: "
                         f"{index.dim()} with type: {_dtype_label(index.dtype)} and size: "
                         f"{list(index.shape)}")
    d = normalize_dim(dim, x.dim())
    n = index.numel()
    src_n = source._shape[d] if source.dim() else 1
    if n != src_n:
        raise RuntimeError(f"{op}(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({src_n}), for dim: {d}")
    check_source_like(op, x, d, source, _dtype_label)
    if x.dim() == 0:
        return d, index.reshape(())
    view = [1] * x.dim()
    view[d] = n
    return d, index.reshape(view).expand(source.shape)


def _dtype_label(d):
    from .reduction import dtype_label
    return dtype_label(d)


def _check_index_reduce(op, reduce):
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"{op}(): Expected reduce to be one of prod, mean, amax or amin "
                           f"but got {reduce}.")


@tensor_method()
def index_reduce(self, dim, index, source, reduce, *, include_self=True):
    """A copy of self where slice index[i] along dim is reduced with source's slice i
    ("prod", "mean", "amax" or "amin")."""
    _check_index_reduce("index_reduce", reduce)
    d, full = _index_as_scatter("index_reduce_", self, dim, index, source)
    check_index("index_reduce", index, self._shape[d] if self.dim() else 1, d,
                error=IndexError)
    return ScatterReduce.apply(self, d, full, source, reduce, include_self)


@tensor_method()
def index_reduce_(self, dim, index, source, reduce, *, include_self=True):
    _check_index_reduce("index_reduce_", reduce)
    d, full = _index_as_scatter("index_reduce_", self, dim, index, source)
    check_index("index_reduce_", index, self._shape[d] if self.dim() else 1, d,
                error=IndexError)
    args = (self, d, full, source, reduce, include_self)
    return _inplace(self, args, lambda: ScatterReduce.forward(_Ctx(), self.detach(), *args[1:]))


def _fill_index(op, x, dim, index, value):
    d = normalize_dim(dim, x.dim())
    if not isinstance(index, Tensor) or index.dtype is not _dtype.int64:
        raise IndexError(f"{op}(): Expected dtype int64 for index.")
    if index.dim() > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value.dim():
        raise RuntimeError(f"{op} only supports a 0-dimensional value tensor, but got tensor "
                           f"with {value.dim()} dimension(s).")
    size = x._shape[d] if x.dim() else 1
    idx = check_index(op, index, size, d, negative=True, error=IndexError)
    from .creation import tensor
    key = (slice(None),) * d + (tensor(idx.reshape(-1), device=x.device),)
    from .._scalars import checked
    v = value.to(x.dtype) if isinstance(value, Tensor) else \
        tensor(checked(value, x.dtype), dtype=x.dtype, device=x.device)
    return key, v


@tensor_method()
def index_fill(self, dim, index, value):
    """A copy of self with `value` in the slices index (along dim); negative indices wrap."""
    if self.dtype.limited:
        no_kernel('index_fill_cpu', self.dtype)
    key, v = _fill_index("index_fill_", self, dim, index, value)
    if not self.dim():
        return index_put(self.reshape(1), key, v).reshape(())
    return index_put(self, key, v)


@tensor_method()
def index_fill_(self, dim, index, value):
    key, v = _fill_index("index_fill_", self, dim, index, value)
    (self if self.dim() else self.view(1)).index_put_(key, v)
    return self


def _masked_source(op, x, mask, source):
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {_dtype_label(getattr(mask, 'dtype', _dtype.float32))}")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes "
                           f"but got{_dtype_label(x.dtype)} and {_dtype_label(source.dtype)}")
    from ._common import broadcast_shapes
    shape = broadcast_shapes(x._shape, mask._shape)
    m = mask.expand(shape)
    count = int(m.sum())
    if source.numel() < count:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    return shape, m, source.reshape(-1)[:count]


@tensor_method()
def masked_scatter(self, mask, source):
    """A copy of self (broadcast with mask) whose elements where mask is True are source's
    first elements, in row-major order."""
    if self.dtype.limited:
        no_kernel('masked_scatter', self.dtype)
    shape, m, part = _masked_source("masked_scatter", self, mask, source)
    return index_put(self.expand(shape), (m,), part)


@tensor_method()
def masked_scatter_(self, mask, source):
    shape, m, part = _masked_source("masked_scatter_", self, mask, source)
    if tuple(shape) != tuple(self._shape):
        raise RuntimeError(f"masked_scatter_: mask of shape {list(mask.shape)} does not "
                           f"broadcast to self of shape {list(self.shape)}")
    if part._storage is self._storage:      # x.masked_scatter_(mask, x): PyTorch reads
        part = part.clone()                 # the source as it was
    return self.index_put_((m,), part)


def _put_key(op, x, index, source):
    if not isinstance(index, Tensor) or index.dtype is not _dtype.int64:
        raise RuntimeError(f"{op}(): Expected a long tensor for index, but got "
                           f"{_dtype_label(getattr(index, 'dtype', _dtype.float32))}")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_dtype_label(x.dtype)} and source.dtype = "
                           f"{_dtype_label(source.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"{op}(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, "
                         f"index.numel() = {index.numel()}")
    n = x.numel()
    arr = index_values(index).reshape(-1).astype(np.int64)
    bad = arr[(arr < -n) | (arr >= n)]
    if bad.size:
        raise IndexError(f"out of range: tried to access index {int(bad[0])} on a tensor of "
                         f"{n} elements.")
    arr = np.where(arr < 0, arr + n, arr)
    from .creation import tensor
    shape = x._shape or (1,)
    return tuple(tensor(a, device=x.device) for a in np.unravel_index(arr, shape))


@tensor_method()
def put(self, index, source, accumulate=False):
    """A copy of self with source's values at the positions `index` of self seen as 1-D
    (negative positions count from the end; accumulate adds instead)."""
    key = _put_key("put_", self, index, source)
    x = self if self.dim() else self.reshape(1)
    out = index_put(x, key, source.reshape(-1), accumulate)
    return out if self.dim() else out.reshape(())


@tensor_method()
def put_(self, index, source, accumulate=False):
    key = _put_key("put_", self, index, source)
    (self if self.dim() else self.view(1)).index_put_(key, source.reshape(-1), accumulate)
    return self
