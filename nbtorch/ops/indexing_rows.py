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
from .._lazy import kernel_module
from .._tensor import Tensor, empty

__all__ = ["take_rows", "add_rows"]

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
