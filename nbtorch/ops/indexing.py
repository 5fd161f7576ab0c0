"""Indexing: `tensor[index]`, `tensor[index] = v`, and gather/scatter-style ops.

Basic indices (ints, slices, None, ...) make views (`indexing_basic.py`).
Anything else is advanced indexing and copies: NumPy applies the index
expression to stride-0 per-dimension offset grids (so its broadcasting,
placement and bounds rules hold, without materialising the source), and the
resulting int64 storage offsets drive the `take` / `put` kernels. Bounds are
checked before any kernel runs.
"""
import numpy as np

from .. import _dtype, _memory_format
from .._capture import host_computed, refuse_capture
from .._scalars import checked
from .._tensor import Tensor, empty, _LAYOUTS
from .._meta import index_values, meta_offsets
from .._registry import get_kernel
from ..autograd import grad_mode
from ..autograd.function import Function
from .._lazy import kernel_module
from .._limited import bits, no_kernel
from ._common import broadcast_shapes, normalize_dim, tensor_method, check_same_device
from ._inplace import inplace_guard
from .pointwise_select import small_where
from .indexing_basic import basic_getitem, is_basic, slice_extent
from .indexing_rows import add_rows, add_rows_into, take_rows
from .views import Select, slice_view
from .indexing_dim import compress_cpu as _compress_cpu, full_mask as _full_mask, \
    gather_cpu as _gather_cpu, scatter_cpu as _scatter_cpu

__all__ = ["gather", "scatter", "scatter_add", "index_select", "masked_fill",
           "masked_select", "nonzero", "take", "index_add", "index_put", "argwhere",
           "index_copy"]


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
    if index.__class__ is int and self._shape:
        return _select_first(self, index)
    if index.__class__ is tuple:
        view = _slices_and_ints(self, index)
        if view is not None:
            return view
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


def _slices_and_ints(x, index):
    """x[index] for the common basic index, a tuple of slices (positive steps) and in-range
    Python ints over leading dims (`x[:, 2:5]`, `x[..., 0]` is not one): the same view
    `basic_getitem` makes, without its general parsing (5.6 -> 3 us); None otherwise."""
    shape = x._shape
    if len(index) > len(shape):
        return None
    starts, lengths, steps, drop = [], [], [], []
    for d, (i, n) in enumerate(zip(index, shape)):
        c = i.__class__
        if c is slice:
            step = i.step
            if step is None:
                step = 1
            elif step.__class__ is not int or step <= 0:
                return None
            start, length = slice_extent(i.start, i.stop, step, n)
            starts.append(start)
            lengths.append(length)
            steps.append(step)
        elif c is int and -n <= i < n:
            starts.append(i + n if i < 0 else i)
            lengths.append(1)
            steps.append(1)
            drop.append(d)
        else:
            return None
    for n in shape[len(index):]:
        starts.append(0)
        lengths.append(n)
        steps.append(1)
    return slice_view(x, starts, lengths, steps, drop)


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


# ---- dim-wise index ops ---------------------------------------------------------------

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


def masked_fill(input, mask, value):
    """A copy of input with `value` where mask is True (mask broadcasts)."""
    _check_mask(mask)
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but "
                           f"got tensor with {value.dim()} dimension(s).")
    return MaskedFill.apply(input, mask, value)


@tensor_method()
def masked_fill_(self, mask, value):
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
