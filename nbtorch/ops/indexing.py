"""Advanced indexing: `tensor[index]`, `tensor[index] = v` and `index_put`.

Basic indices (ints, slices, None, ...) make views (`indexing_basic.py`).
Anything else is advanced indexing and copies: NumPy applies the index
expression to stride-0 per-dimension offset grids (so its broadcasting,
placement and bounds rules hold, without materialising the source), and the
resulting int64 storage offsets drive the `take` / `put` kernels. Bounds are
checked before any kernel runs. The gather/scatter-style ops along a dim
(`gather`, `scatter`, `index_select`, `masked_fill`, ...) build on these
offsets in `indexing_gather.py`.
"""
import numpy as np

from .. import _dtype
from .._capture import refuse_capture
from .._tensor import Tensor, empty, _LAYOUTS
from .._meta import index_values, meta_offsets
from .._registry import get_kernel
from ..autograd import grad_mode
from ..autograd.function import Function
from .._limited import bits, no_kernel
from ._common import tensor_method, check_same_device
from ._inplace import inplace_guard
from .indexing_basic import (basic_getitem, is_basic,
                             slices_and_ints as _slices_and_ints)
from .indexing_rows import add_rows, add_rows_into, small_rows, take_rows
from .views import Select, slice_view
from .indexing_dim import compress_cpu as _compress_cpu, full_mask as _full_mask

__all__ = ["index_put"]


# ---- index expressions -> storage offsets -----------------------------------------

def _np_index_item(i):
    if isinstance(i, Tensor):
        if i.dtype.is_floating_point:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if i.is_meta:                   # the shape of an integer index, no values
            if i.dtype.itemsize == 1:   # bool or uint8: a mask
                raise NotImplementedError("a mask index's result shape depends on its "
                                          "values, which a meta tensor does not have")
        return index_values(i)
    if isinstance(i, (list, tuple)):
        if not i:                         # x[[]]: an empty int64 index, as PyTorch
            return np.zeros(0, np.int64)
        a = np.asarray([x.item() if isinstance(x, Tensor) else x for x in i])
        if a.dtype.kind == "f":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return a
    if isinstance(i, (bool, np.bool_)):
        return np.bool_(i)
    return i


def _grid(t):
    """Per-dim stride-0 offset grids whose sum is t's storage offset at each index."""
    nd = t.dim()
    grids = []
    for d, (n, s) in enumerate(zip(t._shape, t._strides)):
        shape = [1] * nd
        shape[d] = n
        grids.append(np.broadcast_to((np.arange(n, dtype=np.int64) * s).reshape(shape),
                                     t._shape))
    return grids


_SMALL_GRID = 1 << 12      # elements up to which offsets_at makes the whole offset array


def offsets_at(t, index):
    """int64 storage offsets of t[index] (NumPy semantics), shaped like the result."""
    items = index if isinstance(index, tuple) else (index,)
    np_index = tuple(_np_index_item(i) for i in items)
    try:
        if t.device.type == "meta":     # only the result's shape: no offsets, no memory
            return meta_offsets(t._shape, np_index)
        if t.dim() == 0:
            base = np.zeros((), np.int64)
            out = base[np_index] + t._offset
        elif t.numel() <= _SMALL_GRID:
            # a small tensor: every element's offset in one array, indexed once (the
            # per-dim broadcast grids cost ~4 us each to build: x[idx] on 8x16 17 -> 9 us)
            shape, strides, off = t._shape, t._strides, t._offset
            if _LAYOUTS.get(shape, (None, None))[1] == strides:
                base = np.arange(off, off + t.numel(), dtype=np.int64).reshape(shape)
            else:
                base = np.full(shape, off, np.int64)
                for d, (n, st) in enumerate(zip(shape, strides)):
                    base += (np.arange(n, dtype=np.int64) * st).reshape(
                        (1,) * d + (n,) + (1,) * (len(shape) - d - 1))
            out = base[np_index]
        else:
            out = t._offset
            for g in _grid(t):
                out = out + g[np_index]
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None
    return np.asarray(out, dtype=np.int64, order="C")   # keeps 0-d results 0-d


def _take(t, offsets):
    out = empty(offsets.shape, t.dtype, t.device)
    if offsets.size:
        src = t._storage.data
        if t.dtype.limited:             # uint16-64, float8: moved as same-width ints
            src, dst = bits(src, t.dtype), bits(out._storage.data, t.dtype)
        else:
            dst = out._array.reshape(-1)
        get_kernel("take", t.device.type)(src, offsets.reshape(-1), dst)
    return out


def _put(t, offsets, values, accumulate=False):
    """Write `values` (broadcast to offsets' shape) at `offsets` of t's storage."""
    if offsets.size:
        v = values.expand(offsets.shape).contiguous() if values._shape != offsets.shape \
            else values.contiguous()
        dst = t._storage.data
        if t.dtype.limited:             # (flat storages: no strided view of a float8)
            if accumulate or t.dtype in _NO_INDEX_PUT:
                no_kernel("index_put", t.dtype)
            n = offsets.size
            src = bits(v._storage.data[v._offset:v._offset + n], t.dtype)
            dst = bits(dst, t.dtype)
        else:
            src = v._array.reshape(-1)
        get_kernel("put", t.device.type)(dst, offsets.reshape(-1), src, accumulate)
    t._bump()


_NO_INDEX_PUT = _dtype.UINTS + (_dtype.float8_e8m0fnu,)


def _contiguous_like(shape):
    from .creation import zeros
    return zeros(shape)


class IndexGet(Function):
    _backward_name = "IndexBackward0"

    @staticmethod
    def forward(ctx, x, index):
        ctx.in_meta = (x._shape, x.dtype, x.device)
        ctx.index = index
        mask = _full_mask(x, index)
        if mask is not None:
            return _compress_cpu(x, mask)
        out = take_rows(x, index)
        return out if out is not None else _take(x, offsets_at(x, index))

    @staticmethod
    def backward(ctx, g):
        from .creation import zeros
        shape, dtype, device = ctx.in_meta
        if not grad_mode.STATE.enabled:         # no graph of the backward to record
            out = add_rows(shape, dtype, ctx.index, g)
            if out is not None:
                return out, None
        return index_put(zeros(shape, dtype=dtype, device=device), ctx.index, g,
                         accumulate=True), None


class IndexPut(Function):
    """out = x.clone(); out[index] = v (or += with accumulate)."""

    @staticmethod
    def forward(ctx, x, index, v, accumulate):
        ctx.index, ctx.accumulate = index, accumulate
        ctx.v_shape = v._shape
        out = x.clone()
        if accumulate and add_rows_into(out, index, v):     # index_add along a dim
            return out
        offs = offsets_at(out, index)
        _check_value_shape(v, offs.shape)
        _put(out, offs, v.to(x.dtype), accumulate)
        return out

    @staticmethod
    def backward(ctx, g):
        from ._common import sum_to
        gx = g if ctx.accumulate else index_put(g, ctx.index, g.new_zeros(()), False)
        gv = sum_to(g[ctx.index], ctx.v_shape) if ctx.needs_input_grad[2] else None
        return gx, None, gv, None


def _check_value_shape(v, shape):
    try:
        np.broadcast_shapes(tuple(v._shape), tuple(shape))
        if len(v._shape) > len(shape) and any(s != 1 for s in v._shape[:len(v._shape) -
                                                                        len(shape)]):
            raise ValueError
    except ValueError:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be "
                           f"broadcast to indexing result of shape {list(shape)}") from None


def _as_value(x, v):
    if isinstance(v, Tensor):
        check_same_device("index_put_", x, v)
        if v.dtype is not x.dtype:
            raise RuntimeError(f"Index put requires the source and destination dtypes match, "
                               f"got {_dtype.type_name(x.dtype)} for the destination and "
                               f"{_dtype.type_name(v.dtype)} for the source.")
        if v.dim() > 0 and v.numel() and len(v._shape) > 0:
            return v
        return v
    from .creation import full         # a factory a graph capture records (`x[i] = 0`)
    return full((), v, dtype=x.dtype, device=x.device)


def index_put(input, indices, values, accumulate=False):
    values = _as_value(input, values)
    if values.dim() > 0:
        shape = offsets_at(input, indices).shape
        lead = values.dim() - len(shape)
        if lead > 0:
            values = values.reshape(values._shape[lead:])
    return IndexPut.apply(input, indices, values, accumulate)


@tensor_method()
def index_put_(self, indices, values, accumulate=False):
    values = _as_value(self, values)
    indices = tuple(indices) if isinstance(indices, (list, tuple)) else indices

    def raw():
        if accumulate and add_rows_into(self, indices, values):     # x.index_add_(d, ...)
            return
        offs = offsets_at(self, indices)
        _check_value_shape(values, offs.shape)
        _put(self, offs, values.to(self.dtype), accumulate)
    return inplace_guard(self, IndexPut, (self, indices, values, accumulate), raw)


Tensor.index_put = index_put


_DROP_FIRST = frozenset((0,))


def __getitem__(self, index):
    c = index.__class__
    if c is int and self._shape:
        return _select_first(self, index)
    if c is tuple:
        view = _slices_and_ints(self, index)
        if view is not None:
            return view
    elif c is Tensor and self.__class__ is Tensor and self._shape:
        out = small_rows(self, 0, index)        # x[idx]: nothing to record
        if out is not None:
            return out
    if is_basic(index):
        return basic_getitem(self, index)
    split = _ints_first(self, index)
    if split is not None:
        return split[0][split[1]]
    if _has_mask(index):
        refuse_capture("boolean-mask indexing", "has a data-dependent output shape")
    return IndexGet.apply(self, index)


def _is_int_index(i):
    """A Python/NumPy integer or a 0-d integer tensor (bools are masks, not integers)."""
    c = i.__class__
    if c is int:
        return True
    if c is bool:
        return False
    if isinstance(i, Tensor):
        return not i._shape and not i.dtype.is_floating_point and not i.dtype.is_complex \
            and i.dtype is not _dtype.bool
    return isinstance(i, np.integer)


def _ints_first(x, index):
    """PyTorch applies integer indices as selects (and None as unsqueezes) before the
    advanced ones; NumPy counts integers as advanced indices, which moves the indexed dims
    when a slice separates them (x[0, :, [1, 2]] is (4, 2) in PyTorch, (2, 4) in NumPy).
    For a tuple mixing integers with advanced indices: (the view x[integers, Nones], the
    rest of the index); else None."""
    if index.__class__ is not tuple:
        return None
    ints = adv = False
    for i in index:
        if _is_int_index(i):
            ints = True
        elif not (i is None or i is Ellipsis or i.__class__ is slice):
            adv = True
    if not (ints and adv):
        return None
    basic = tuple(int(i) if _is_int_index(i) else
                  (i if i is None or i is Ellipsis else slice(None)) for i in index)
    rest = tuple(slice(None) if i is None else i for i in index if not _is_int_index(i))
    return basic_getitem(x, basic), rest


def _has_mask(index):
    """True when an advanced index holds a bool (or uint8) tensor of one or more dims."""
    for i in (index if isinstance(index, tuple) else (index,)):
        if isinstance(i, Tensor) and i.dtype in (_dtype.bool, _dtype.uint8) and i._shape:
            return True
    return False


def _select_first(x, i):
    """x[i] for a Python int: the same Select view `basic_getitem` makes, without its
    general parsing (a Dataset's `t[i]` per sample is the hot case)."""
    shape = x._shape
    n = shape[0]
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of bounds for dimension 0 with size {n}")
    if i < 0:
        i += n
    if not (x._requires_grad and grad_mode.STATE.enabled):     # nothing to record
        strides = x._strides
        v = x._view(shape[1:], strides[1:], x._offset + i * strides[0])
        if x._arr is not None and x.device.type == "cpu":
            v._arr = x._arr[i, ...]     # NumPy's own view of the same elements
        return v
    nd = len(shape)
    return Select.apply(x, (i,) + (0,) * (nd - 1), (1,) + tuple(shape)[1:], (1,) * nd,
                        _DROP_FIRST)


def __setitem__(self, index, value):
    if is_basic(index):
        target = basic_getitem(self, index)
        if isinstance(value, Tensor):
            target.copy_(value)
        else:
            target.fill_(value)
        return
    if index.__class__ is list and _plain_list(index):
        # x[[0, 2]] = v: the list is one index (as x[[0, 2]] reads), where index_put_
        # takes a list as one index per dim (it set x[0, 2] alone before)
        index = (index,)
    if self.dtype.limited and _has_mask(index):
        no_kernel("masked_fill", self.dtype)   # PyTorch sets x[mask] = v by masked_fill
    split = _ints_first(self, index)
    if split is not None:                   # x[0, :, [1, 2]] = v: into the view x[0]
        split[0][split[1]] = value
        return
    self.index_put_(index, value)


def _plain_list(index):
    """A (nested) list of Python ints and bools: one index, not one per dim."""
    return all(e.__class__ in (int, bool) or (e.__class__ is list and _plain_list(e))
               for e in index)


Tensor.__getitem__ = __getitem__
Tensor.__setitem__ = __setitem__
