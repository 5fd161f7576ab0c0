"""Gather/scatter-style ops along a dim: `gather`, `scatter`, `scatter_add`,
`index_select`, `index_add`, `index_copy`, `take`, `masked_fill`, `masked_select`,
`nonzero`, `argwhere`.

Each turns its dim-wise indices into int64 storage offsets (checked against the
dim's size first, as PyTorch checks them) and runs the `take` / `put` kernels of
advanced indexing (`indexing.py`); CPU fast paths with one offset per index row
are in `indexing_dim.py`, the reductions (`scatter_reduce`, `index_reduce`) in
`indexing_reduce.py`.
"""
import numpy as np

from .. import _dtype, _memory_format
from .._capture import host_computed
from .._device import CPU
from .._scalars import checked
from .._tensor import Tensor, empty
from .._meta import index_values
from .._registry import _KERNELS, get_kernel
from ..autograd import grad_mode
from ..autograd.function import Function
from .._lazy import kernel_module
from .._limited import no_kernel
from ._common import broadcast_shapes, normalize_dim, tensor_method
from ._inplace import inplace_guard
from .pointwise_select import (fresh_select, own_where_kernel, plain_small, small_where,
                               unwatched, value_array)
from .indexing import IndexPut, index_put, offsets_at, _put, _take
from .indexing_dim import (gather_cpu as _gather_cpu, scatter_cpu as _scatter_cpu,
                           small_gather as _small_gather)
from .indexing_rows import small_index_select

__all__ = ["gather", "scatter", "scatter_add", "index_select", "masked_fill",
           "masked_select", "nonzero", "take", "index_add", "argwhere", "index_copy"]

# How PyTorch reports an index outside [0, size) (these ops take no negative index):
# op -> (exception class, message prefix)
_INDEX_ERRORS = {"index_copy_": (IndexError, "index_copy_(): ")}


def _check_index(op, index, size, dim):
    """Host int64 indices, every one checked against [0, size) as PyTorch checks them for
    `op` (none wraps; the first bad one is named)."""
    if not isinstance(index, Tensor) or index.dtype not in (_dtype.int64, _dtype.int32):
        raise RuntimeError(f"{op}(): Expected dtype int64 for index")
    arr = np.ascontiguousarray(index_values(index), dtype=np.int64)
    if arr.size:
        at = kernel_module("cpu.index").first_outside(arr.reshape(-1), size)
        if at >= 0:
            v = int(arr.reshape(-1)[at])
            if op == "index_select" and dim == 0:    # PyTorch's dim-0 path
                raise IndexError("index out of range in self")
            if op == "index_select":
                raise RuntimeError(f"INDICES element is out of DATA bounds, id={v} "
                                   f"axis_dim={size}")
            exc, prefix = _INDEX_ERRORS.get(op, (RuntimeError, ""))
            raise exc(f"{prefix}index {v} is out of bounds for dimension {dim} with size "
                      f"{size}")
    return arr


def _dim_offsets(t, dim, idx):
    """Offsets of t at positions given by idx (shape of idx) along `dim`, identity elsewhere."""
    off = np.full(idx.shape, t._offset, np.int64)
    for d in range(idx.ndim):
        if d == dim:
            off += idx * t._strides[d]
        else:
            shape = [1] * idx.ndim
            shape[d] = idx.shape[d]
            off += (np.arange(idx.shape[d], dtype=np.int64) * t._strides[d]).reshape(shape)
    return off


def _check_gather_shapes(op, t, dim, index):
    if max(index.dim(), 1) != max(t.dim(), 1):     # PyTorch: a 0-d tensor counts as 1-d
        raise RuntimeError(f"Index tensor must have the same number of dimensions as input "
                           f"tensor")
    for d in range(min(t.dim(), index.dim())):
        if d != dim and index._shape[d] > t._shape[d]:
            raise RuntimeError(f"Size does not match at dimension {d} expected index "
                               f"{list(index.shape)} to be smaller than self "
                               f"{list(t.shape)} apart from dimension {dim}")


def _as_vector(t):
    """A 0-d tensor as a 1-element vector: gather/scatter on a 1-d tensor take a 0-d index
    (and src) as PyTorch does; anything else unchanged."""
    return t.reshape(1) if isinstance(t, Tensor) and t.dim() == 0 else t


class Gather(Function):
    @staticmethod
    def forward(ctx, x, dim, index):
        ctx.in_meta, ctx.dim, ctx.index = (x._shape, x.dtype, x.device), dim, index
        idx = _check_index("gather", index, x._shape[dim] if x.dim() else 1, dim)
        if x.dim() and x.device.type == "cpu" and not x.dtype.limited:
            return _gather_cpu(x, dim, idx)
        return _take(x, _dim_offsets(x, dim, idx) if x.dim() else idx * 0 + x._offset)

    @staticmethod
    def backward(ctx, g):
        from .creation import zeros
        shape, dtype, device = ctx.in_meta
        return zeros(shape, dtype=dtype, device=device).scatter_add(ctx.dim, ctx.index, g), \
            None, None


def gather(input, dim, index, *, sparse_grad=False, out=None):
    """out[i][j] = input[index[i][j]][j] for dim=0 (and likewise for other dims)."""
    if input.__class__ is Tensor:
        res = _small_gather(input, dim, index)      # nothing to record
        if res is not None:
            return res
    if input.dtype.limited:
        no_kernel("gather_expanded_index" if input.dtype in _dtype.FLOAT8 and input.dim() == 1
                  else "scatter_gather_tensor_cpu", input.dtype)   # (PyTorch's own names)
    d = normalize_dim(dim, input.dim())
    _check_gather_shapes("gather", input, d, index)
    if index.dim() == 0 and input.dim() == 1:
        return Gather.apply(input, d, index.reshape(1)).reshape(())
    return Gather.apply(input, d, index)


class Scatter(Function):
    @staticmethod
    def forward(ctx, x, dim, index, src, accumulate):
        ctx.dim, ctx.index, ctx.accumulate = dim, index, accumulate
        out = x.clone()
        idx = _check_index("scatter", index, x._shape[dim], dim)
        ctx.src_shape = src._shape if isinstance(src, Tensor) else None
        if isinstance(src, Tensor):
            src_part = src[tuple(slice(0, n) for n in index._shape)] if src._shape != \
                index._shape else src
            values = src_part.to(x.dtype)
        else:
            from .creation import full
            values = full(index._shape, src, dtype=x.dtype, device=x.device)
        if not _scatter_cpu(out, dim, idx, values, accumulate):
            _put(out, _dim_offsets(out, dim, idx), values, accumulate)
        return out

    @staticmethod
    def backward(ctx, g):
        gx = g if ctx.accumulate else g.scatter(ctx.dim, ctx.index, 0.0)
        gs = None
        if ctx.needs_input_grad[3]:
            gs = g.gather(ctx.dim, ctx.index)
            if gs._shape != ctx.src_shape:
                from .creation import zeros
                full = zeros(ctx.src_shape, dtype=g.dtype, device=g.device)
                full[tuple(slice(0, n) for n in gs._shape)] = gs
                gs = full
        return gx, None, None, gs, None


def _check_src_dtype(x, src):
    if isinstance(src, Tensor) and src.dtype is not x.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of input with values from src (or `value`) written at index along dim."""
    if input.dtype.limited:
        no_kernel("scatter_gather_tensor_cpu", input.dtype)
    d = normalize_dim(dim, input.dim())
    src = value if src is None else src
    _check_src_dtype(input, src)
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce == "multiply":
        from .indexing_reduce import scatter_multiply
        return scatter_multiply(input, d, index, src, False)
    _check_gather_shapes("scatter", input, d, index)
    if index.dim() == 0 and input.dim() == 1:
        index, src = index.reshape(1), _as_vector(src)
    return Scatter.apply(input, d, index, src, reduce is not None)


def scatter_add(input, dim, index, src):
    """A copy of input with src added at index along dim (repeats accumulate)."""
    if input.dtype.limited:
        no_kernel('scatter_gather_tensor_cpu', input.dtype)
    d = normalize_dim(dim, input.dim())
    _check_src_dtype(input, src)
    _check_gather_shapes("scatter_add", input, d, index)
    if index.dim() == 0 and input.dim() == 1:
        index, src = index.reshape(1), _as_vector(src)
    return Scatter.apply(input, d, index, src, True)


def _scatter_inplace(accumulate):
    def method(self, dim, index, src=None, *, value=None, reduce=None):
        src = value if src is None else src
        d = normalize_dim(dim, self.dim())
        _check_src_dtype(self, src)
        if reduce is not None and reduce not in ("add", "multiply"):
            raise RuntimeError("reduce argument must be either add or multiply.")
        if reduce == "multiply":
            from .indexing_reduce import scatter_multiply
            return scatter_multiply(self, d, index, src, True)
        acc = accumulate or reduce is not None
        _check_gather_shapes("scatter", self, d, index)
        if index.dim() == 0 and self.dim() == 1:
            index, src = index.reshape(1), _as_vector(src)

        def raw():
            from .copy import raw_copy_
            raw_copy_(self, Scatter.forward(_Ctx(), self.detach(), d, index, src, acc))
        return inplace_guard(self, Scatter, (self, d, index, src, acc), raw)
    return method


class _Ctx:
    pass


Tensor.scatter_ = _scatter_inplace(False)
Tensor.scatter_add_ = _scatter_inplace(True)


def index_select(input, dim, index):
    """Rows (along dim) picked by a 1-D index tensor (a copy)."""
    if input.__class__ is Tensor:
        out = small_index_select(input, dim, index)     # nothing to record
        if out is not None:
            return out
    if input.dtype.limited:
        no_kernel("index_select", input.dtype, _dtype.UINTS)
    d = normalize_dim(dim, input.dim())
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    _check_index("index_select", index, input._shape[d] if input.dim() else 1, d)
    return input[(slice(None),) * d + (index.reshape(-1),)]


def take(input, index):
    """Elements of input seen as 1-D, at the positions in index (shaped like index)."""
    if input.dtype.limited:
        no_kernel('take_cpu', input.dtype)
    return input.reshape(-1)[index]


class MaskedFill(Function):
    @staticmethod
    def forward(ctx, x, mask, value):
        if x.dtype.limited:
            no_kernel("masked_fill", x.dtype)
        shape = broadcast_shapes(x._shape, mask._shape)
        if shape != x._shape:
            raise RuntimeError(f"masked_fill: mask of shape {list(mask.shape)} does not "
                               f"broadcast to input of shape {list(x.shape)}")
        ctx.mask = mask
        d = x.dtype
        if d.is_floating_point and value.__class__ in (float, int):
            # the elementwise select (a copy with the value where the mask holds), without
            # the index machinery: 8x16 float32 52 -> 5 us
            value = checked(value, d)
            out = small_where(mask, value, x, d) if x.is_contiguous() else None
            if out is not None:
                return out
            from ._elementwise import run_elementwise
            # C-contiguous whatever the inputs' layout: PyTorch's masked_fill fills a
            # contiguous clone
            out = empty(shape, d, x.device)
            return run_elementwise("where", (mask, value, x), (_dtype.bool, d, d), d, out=out)
        out = x.clone(memory_format=_memory_format.contiguous_format)
        offs = offsets_at(out, (mask.expand(shape),))
        v = value.to(x.dtype) if isinstance(value, Tensor) else _full_like_scalar(x, value)
        _put(out, offs, v.reshape(()) if v.dim() else v)
        return out

    @staticmethod
    def backward(ctx, g):
        # a float zero takes forward's elementwise select (a 0-d tensor value took the
        # index path: 256x512 backward 1.3 ms)
        zero = 0.0 if g.dtype.is_floating_point else 0
        gx = MaskedFill.apply(g, ctx.mask, zero)
        gv = g[ctx.mask.expand(g.shape)].sum() if ctx.needs_input_grad[2] else None
        return gx, None, gv


def _full_like_scalar(x, value):
    from .creation import full
    return full((), value, dtype=x.dtype, device=x.device)


def _check_mask(mask):
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with "
                           f"dtype {getattr(mask, 'dtype', type(mask).__name__)}")


# The CPU kernels masked_fill's general path runs for an integer tensor (a float one runs
# the "where" kernel, and masked_fill_ writes either result back by "copy_")
_FILL_KERNELS = ((("copy_", "cpu"), "cpu.copy", "copy_"),
                 (("fill_", "cpu"), "cpu.copy", "fill_"),
                 (("put", "cpu"), "cpu.index", "put_any"))
_OWN_KERNELS = {}   # registry key -> nbtorch's own kernel of it, once looked up


def _own_kernels(kernels):
    """True while the registered kernels of `kernels` ((registry key, family, name)
    triples) are nbtorch's own, so a fast path may do their work (a user's kernel runs
    itself)."""
    for key, family, name in kernels:
        own = _OWN_KERNELS.get(key)
        if own is None:
            own = _OWN_KERNELS[key] = getattr(kernel_module(family), name)
        if _KERNELS.get(key) is not own:
            return False
    return True


def _broadcasts_to(s, shape):
    """True when shape `s` broadcasts to `shape` itself."""
    n = len(shape) - len(s)
    if n < 0:
        return False
    for a, b in zip(s, shape[n:]):
        if a != b and a != 1:
            return False
    return True


def _fill_value(x, mask, value, inplace):
    """The Python number `value` as a 0-d array of x's dtype (as masked_fill's general path
    converts it) for a fast masked fill of `x`: a `plain_small` tensor of a floating (not
    half) dtype and a float or int value, or of an integer one and an int value, by a
    `plain_small` bool `mask` that broadcasts to it, with nbtorch's own kernels, nothing to
    record and nothing watching; None for anything else (the general path then runs, and
    raises its errors)."""
    c, d = value.__class__, x.dtype
    if c is float:
        if not d.is_floating_point:
            return None
    elif c is not int or d is _dtype.bool or d.is_complex:
        return None
    if (mask.__class__ is not Tensor or mask.dtype is not _dtype.bool or d.is_half
            or d.limited or not unwatched()
            or grad_mode.STATE.enabled and (x._requires_grad or inplace and x._base is not None
                                            and x._base._requires_grad)
            or not plain_small(x)):
        return None
    if mask._shape == x._shape:                     # a mask of x's shape: plain like x
        if mask._strides != x._strides or mask.device is not CPU:
            return None
    elif not (plain_small(mask) and _broadcasts_to(mask._shape, x._shape)):
        return None
    if d.is_floating_point:
        if not own_where_kernel() or inplace and not _own_kernels(_FILL_KERNELS[:1]):
            return None
    elif not _own_kernels(_FILL_KERNELS):
        return None
    try:
        return value_array(value, d, check=True)
    except (RuntimeError, OverflowError):
        return None


def masked_fill(input, mask, value):
    """A copy of input with `value` where mask is True (mask broadcasts)."""
    if input.__class__ is Tensor:
        # nothing to record: NumPy's select, as the general path's (8x16 float32 7.7 -> 3.5
        # us; int32, which the general path fills by index, 27 -> 3.5 us)
        v = _fill_value(input, mask, value, False)
        if v is not None:
            return fresh_select(np.where(mask._array, v, input._array), input.dtype)
    _check_mask(mask)
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                           f"got tensor with {value.dim()} dimension(s).")
    return MaskedFill.apply(input, mask, value)


@tensor_method()
def masked_fill_(self, mask, value):
    if self.__class__ is Tensor:
        v = _fill_value(self, mask, value, True)
        if v is not None and mask._storage is not self._storage:
            # nothing to record: the value copied in where the mask holds, as the general
            # path's select and copy back write it
            np.copyto(self._array, v, where=mask._array)
            self._bump()
            return self
    _check_mask(mask)

    def raw():
        from .copy import raw_copy_
        raw_copy_(self, MaskedFill.forward(_Ctx(), self.detach(), mask, value))
    return inplace_guard(self, MaskedFill, (self, mask, value), raw)


def masked_select(input, mask):
    """The elements of input where mask is True, as a 1-D tensor."""
    from ._common import broadcast_shapes
    shape = broadcast_shapes(input._shape, mask._shape)
    return input.expand(shape)[mask.expand(shape)]


@host_computed("has a data-dependent output shape")
def nonzero(input, *, as_tuple=False):
    """Indices of non-zero elements: (n, ndim) int64, or a tuple of 1-D tensors."""
    if input.dtype.limited:
        no_kernel("nonzero_count_cpu", input.dtype)
    from .._tensor import wrap
    a = input.detach()._host()      # data-dependent output size: counted on the host
    coords = get_kernel("nonzero", "cpu")(a)
    out = wrap(coords).to(input.device)
    if as_tuple:                          # a 0-d input: one index tensor of 0s, as PyTorch
        return tuple(out[:, d] for d in range(a.ndim)) if a.ndim else \
            (wrap(np.zeros(coords.shape[0], np.int64)).to(input.device),)
    return out


def argwhere(input):
    return nonzero(input)


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of input with alpha * source rows added at index along dim."""
    if input.dtype.limited:
        no_kernel("index_add_", input.dtype)
    d = normalize_dim(dim, input.dim())
    _check_index("index_add", index, input._shape[d] if input.dim() else 1, d)
    _check_index_add_source(input, d, index, source)
    idx = (slice(None),) * d + (index,)
    src = source if alpha == 1 else source * alpha
    if (isinstance(src, Tensor) and src.dtype is input.dtype and src.device == input.device
            and isinstance(index, Tensor) and index.dim() == 1
            and tuple(src._shape) == input._shape[:d] + index._shape + input._shape[d + 1:]):
        return IndexPut.apply(input, idx, src, True)    # (no offsets for index_put's shape)
    return index_put(input, idx, src, accumulate=True)


def _check_index_add_source(x, d, index, source):
    """PyTorch's errors for a source of index_add of the wrong count, shape or dtype."""
    if not isinstance(source, Tensor) or not isinstance(index, Tensor) or x.dim() == 0:
        return
    n, shape = index.numel(), source._shape
    if source.dim() == x.dim() and n != shape[d]:
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({shape[d]}), for dim: {d}")
    check_source_like("index_add_", x, d, source)


def check_source_like(op, x, d, source, label=_dtype.type_name):
    """PyTorch's errors for an index_add/index_reduce source whose shape differs from x's
    outside dim `d`, or whose dtype differs from x's (`label` names the dtypes)."""
    if source.dim() != x.dim() or any(a != b for k, (a, b) in
                                      enumerate(zip(x._shape, source._shape)) if k != d):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(x.shape)} "
                           f"source.shape = {list(source.shape)}")
    if source.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): self ({label(x.dtype)}) and source "
                           f"({label(source.dtype)}) must have the same scalar type")


@tensor_method()
def index_add_(self, dim, index, source, *, alpha=1):
    d = normalize_dim(dim, self.dim())
    _check_index("index_add_", index, self._shape[d], d)
    _check_index_add_source(self, d, index, source)
    src = source if alpha == 1 else source * alpha
    return self.index_put_((slice(None),) * d + (index,), src, accumulate=True)


def index_copy(input, dim, index, source):
    if input.dtype.limited:
        no_kernel('index_copy_cpu', input.dtype)
    d = normalize_dim(dim, input.dim())
    _check_index("index_copy_", index, input._shape[d] if input.dim() else 1, d)
    return index_put(input, (slice(None),) * d + (index,), source)


for _n in ("gather", "scatter", "scatter_add", "index_select", "masked_fill", "masked_select",
           "nonzero", "take", "index_add", "argwhere", "index_copy"):
    setattr(Tensor, _n, globals()[_n])
