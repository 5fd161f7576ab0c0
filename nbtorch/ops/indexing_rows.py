"""The common advanced index on the CPU: one integer tensor picking whole rows along a dim.

``x[idx]``, ``x[:, idx]``, `index_select` and an embedding-style lookup pick slices of x
along one dim. The general path (`indexing.offsets_at`) builds an int64 offset for every
element of the result from per-dim grids and gathers them one by one: 10000x128 float32
rows picked by 4,096 indices took 2.8 ms there (PyTorch 29 us). Here the indices are
checked once and NumPy's `take` copies whole rows into the result; the gradient adds
the rows back with one Numba loop (`kernels/cpu/index.add_rows`).
"""
import numpy as np

from .. import _dtype
from .._device import CPU
from .._lazy import kernel_module
from .._tensor import Tensor, empty
from ..autograd import function as _function
from ..autograd.function import unrecorded
from .pointwise_select import fresh_select

__all__ = ["take_rows", "add_rows", "small_rows", "small_index_select"]

_INDEX_DTYPES = frozenset((_dtype.int64, _dtype.int32, _dtype.int16, _dtype.int8))


def _index_position(index):
    """(dim, index tensor) when `index` is an integer tensor after only full slices, else
    None (anything else takes the general path)."""
    if isinstance(index, Tensor):
        return 0, index
    if index.__class__ is not tuple or not index:
        return None
    *lead, last = index
    for s in lead:
        if s.__class__ is not slice or s != slice(None):
            return None
    if not isinstance(last, Tensor):
        return None
    return len(lead), last


def _rows_index(x, index):
    """(dim, index values) of a row index `take_rows` serves, checked; else None."""
    if x.device.type != "cpu" or x.dtype.limited:
        return None
    found = _index_position(index)
    if found is None:
        return None
    d, idx = found
    if idx.dtype not in _INDEX_DTYPES or idx.device.type != "cpu" or d >= x.dim():
        return None
    size = x._shape[d]
    values = idx.detach()._array
    if values.size:
        lo, hi = values.min(), values.max()
        if lo < -size or hi >= size:
            flat = values.reshape(-1)
            bad = int(flat[(flat < -size) | (flat >= size)][0])
            raise IndexError(f"index {bad} is out of bounds for dimension {d} with size "
                             f"{size}")
    return d, values


def add_rows(shape, dtype, index, g):
    """The gradient of ``x[index]`` for a row index (`take_rows`'s case): zeros of x's
    `shape` with g's slices added at the indexed positions (repeats accumulate), or None
    where the general path must do it (other indices, dtypes without a loop)."""
    if g.device.type != "cpu" or dtype.is_half or dtype.is_complex or dtype is _dtype.bool:
        return None
    from .creation import zeros
    out = zeros(shape, dtype=dtype, device=g.device)
    return out if add_rows_into(out, index, g) else None


def add_rows_into(out, index, src):
    """out[index] += src in place for a row index (`take_rows`'s case) and `src` of exactly
    the indexed shape (repeats accumulate, in index order: `put_add`'s sums), as one loop
    over whole slices: `index_add` of 1,024 rows of 512 into 256 took 5.3 ms through
    per-element offsets (PyTorch 0.05). False, with nothing done, where the general path
    must do it (other indices or shapes, a strided `out`, dtypes without a loop)."""
    dtype = out.dtype
    if (out.device.type != "cpu" or dtype.is_half or dtype.is_complex
            or dtype is _dtype.bool or not out.is_contiguous()):
        return False
    found = _rows_index(out, index)
    if found is None:
        return False
    d, values = found
    shape = out._shape
    if tuple(src._shape) != shape[:d] + values.shape + shape[d + 1:]:
        return False
    size = shape[d]
    index64 = values.reshape(-1).astype(np.int64)
    index64 = np.where(index64 < 0, index64 + size, index64)
    outer = 1
    for n in shape[:d]:
        outer *= n
    inner = out.numel() // (outer * size) if outer * size else 0
    if out.numel() and index64.size:
        src = src.detach().to(dtype).contiguous()._array.reshape(outer, index64.size, inner)
        kernel_module("cpu.index").add_rows(out._array.reshape(outer, size, inner), index64,
                                            src)
    out._bump()
    return True


def take_rows(x, index):
    """``x[index]`` as a new tensor when `index` is one integer CPU tensor at dim d after
    full slices (x's slices along d picked, any index shape); None for other indices.
    Out-of-range indices raise PyTorch's IndexError; negative ones count from the end."""
    found = _rows_index(x, index)
    if found is None:
        return None
    d, values = found
    shape = x._shape[:d] + values.shape + x._shape[d + 1:]
    out = empty(shape, x.dtype, x.device)
    if out.numel():
        if d == 0 and x.is_contiguous() and _take_split(x, values, out):
            return out
        # mode="wrap" after the check above: negatives count from the end, and NumPy
        # writes straight into `out` (mode="raise" would buffer the whole result)
        np.take(x._array, values, axis=d, out=out._array, mode="wrap")
    return out


def _take_split(x, values, out):
    """Leading rows of a large result gathered over the helper threads
    (`kernels/cpu/copy_threads.take_rows`); False where that path does not apply."""
    copy_threads = kernel_module("cpu.copy_threads")
    if out._array.nbytes < copy_threads.SPLIT_MIN_BYTES:
        return False
    index = values.reshape(-1).astype(np.int64)      # a copy: negatives made positive
    np.add(index, x._shape[0], out=index, where=index < 0)
    return copy_threads.take_rows(x._array, index, out._array.reshape((-1,) + x._shape[1:]))


_SMALL_ROWS = 1 << 14       # result elements up to which `small_rows` serves a call
_FIRST_OUTSIDE = []         # kernels/cpu/index.first_outside, once loaded


def small_rows(x, d, index):
    """``x[index]`` along dim `d` for an integer CPU `index` tensor of one or more dims (or
    its checked int64 values, `small_index_select`'s) and a plain CPU tensor `x` with
    nothing to record or watch, up to `_SMALL_ROWS` result elements: NumPy's `take`, whose
    bounds check ('raise' mode) lets negatives count from the end as `take_rows` does, into
    a fresh tensor, without IndexGet.apply and the index parsing (8x16 float32 ``x[idx]``
    8.4 -> 2.0 us; PyTorch 2.1). The same copy `take_rows` makes, so the same bits, shape
    and strides. None where any of that does not hold or an index is out of range (the
    general path then raises PyTorch's error)."""
    if (x.device is not CPU or x.dtype.limited or _function.TRACE_HOOK[0] is not None
            or not unrecorded(x)):
        return None
    if index.__class__ is Tensor:
        if (index.dtype not in _INDEX_DTYPES or index.device is not CPU
                or not index._shape):
            return None
        values = index._array
    else:
        values = index
    n = values.size
    shape = x._shape
    for k, s in enumerate(shape):
        if k != d:
            n *= s
    if n > _SMALL_ROWS:
        return None
    try:
        data = x._array.take(values, d)
    except IndexError:
        return None
    return fresh_select(data, x.dtype)


def small_index_select(x, dim, index):
    """`index_select(x, dim, index)` for a plain CPU tensor `x` (not 0-d) and a 1-D int64
    or int32 CPU `index` whose values all lie in [0, size) (index_select takes no negative
    index: `first_outside`, the general path's check), by `small_rows`; None otherwise (the
    general path then checks and raises)."""
    shape = x._shape
    nd = len(shape)
    if (dim.__class__ is not int or not -nd <= dim < nd or index.__class__ is not Tensor
            or index.dtype not in _SELECT_DTYPES or index.device is not CPU
            or len(index._shape) != 1):
        return None
    d = dim + nd if dim < 0 else dim
    values = np.ascontiguousarray(index._array, np.int64)
    if not _FIRST_OUTSIDE:
        _FIRST_OUTSIDE.append(kernel_module("cpu.index").first_outside)
    if values.size and _FIRST_OUTSIDE[0](values, shape[d]) >= 0:
        return None
    return small_rows(x, d, values)


_SELECT_DTYPES = frozenset((_dtype.int64, _dtype.int32))
