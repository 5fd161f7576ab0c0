"""CPU fast paths of indexing along a dim and by a full mask: `gather`, `scatter`,
`scatter_add` with one storage offset per index row (not per element, as the general
`indexing_gather._dim_offsets` builds them), and ``x[mask]`` / `masked_select` for a mask of x's
shape as one count and one compaction pass. The kernels are in `kernels/cpu/index.py`
(imported on first use); they move same-width words, so one compilation serves every
dtype of a width.
"""
import numpy as np

from .. import _dtype
from .._device import CPU
from .._lazy import kernel_module
from .._tensor import Tensor, empty
from ..autograd import function as _function
from ..autograd.function import unrecorded
from .pointwise_select import fresh_select

__all__ = ["full_mask", "compress_cpu", "gather_cpu", "scatter_cpu", "small_gather"]


def _kernels():
    return kernel_module("cpu.index")


def words(a):
    return _kernels().words(a)


def full_mask(x, index):
    """The bool tensor of `x[mask]` (or `x[mask,]`) when it has x's shape, both on the CPU
    (x not 0-d, not a limited dtype); else None."""
    if index.__class__ is tuple:
        if len(index) != 1:
            return None
        index = index[0]
    if not isinstance(index, Tensor) or index.dtype is not _dtype.bool or \
            index._shape != x._shape or not x._shape or x.device.type != "cpu" or \
            index.device.type != "cpu" or x.dtype.limited or x.is_quantized:
        return None
    return index


def compress_cpu(x, mask):
    """x[mask] for a mask of x's shape: NumPy's count of the mask, then index.compress
    (1024x512 float32 X[X > 0]: 6.8 ms through per-element offsets -> 0.30 ms)."""
    m = np.ascontiguousarray(mask._array).reshape(-1).view(np.uint8)
    out = empty((int(np.count_nonzero(m)),), x.dtype, x.device)
    if out.numel():
        a = np.ascontiguousarray(x._array).reshape(-1)
        o = out._array
        if a.dtype.itemsize <= 8:
            a, o = words(a), words(o)
        _kernels().compress(a, m, o)
    return out


def _row_bases(t, dim, shape):
    """For an index of `shape` along `dim` of t: the storage offset of each index row's
    start (its coordinates but the last, `dim`'s taken as 0), the stride along `dim`, and
    the step per last-dim position (0 when `dim` is the last: the index gives it). One
    offset a row instead of one an element (_dim_offsets)."""
    nd, strides = len(shape), t._strides
    if nd == 2:                          # the common case without the general broadcast
        off = t._offset
        if dim == 0:
            return np.full(shape[0], off, np.int64), strides[0], strides[1]
        step = strides[0]
        if step > 0:                     # off + r * step in one call (~0.3 us where three)
            return np.arange(off, off + shape[0] * step, step, np.int64), strides[1], 0
        return np.arange(shape[0], dtype=np.int64) * step + off, strides[1], 0
    base = np.full(shape[:-1], t._offset, np.int64)
    for d in range(nd - 1):
        if d != dim and shape[d] > 1:
            base += (np.arange(shape[d], dtype=np.int64) * strides[d]).reshape(
                (1,) * d + (shape[d],) + (1,) * (nd - 2 - d))
    return base.reshape(-1), strides[dim], (strides[-1] if dim != nd - 1 else 0)


_WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}   # (index.WORDS)


def _word_storage(t):
    """t's flat storage as the kernels that only move elements take it (same-width
    unsigned words; complex128 as itself)."""
    a = t._storage.data
    w = _WORDS.get(a.dtype.itemsize)
    return a if w is None else a.view(w)


def gather_cpu(x, dim, idx):
    """gather along `dim` by index.gather_rows, with the checked int64 `idx` (1024x512
    float32, (1024, 4) index, the op alone: 40 -> 19 us)."""
    out = empty(idx.shape, x.dtype, x.device)
    if idx.size:
        base, sd, sl = _row_bases(x, dim, idx.shape)
        last = idx.shape[-1]
        _kernels().gather_rows(_word_storage(x), base, idx.reshape(-1, last), sd, sl,
                               _word_storage(out).reshape(-1, last))
    return out


_SMALL_GATHER = 1 << 14         # index elements up to which `small_gather` serves a call
_GATHER_DTYPES = frozenset((_dtype.int64, _dtype.int32))
_GRIDS = {}                     # (n, dim, ndim) -> arange(n) along dim of ndim, read-only


def small_gather(x, dim, index):
    """`gather(x, dim, index)` for a plain CPU tensor `x` (not 0-d) and an int64/int32 CPU
    `index` of x's dims, no larger than x outside `dim` and of at most `_SMALL_GATHER`
    elements, with nothing to record or watch: the general path's check (`first_outside`:
    every index in [0, size), none wraps), then NumPy's fancy indexing of x by the index
    along `dim` and an arange along each other dim (the same elements moved, so the same
    bits as `gather_cpu`'s), without the layers (8x16 float32 by an (8, 3) index 9.5 ->
    4.4 us; PyTorch 1.5-2.5: the checks, the bounds pass, NumPy's gather and the new
    tensor cost ~0.9 us each here). None where any of that does not hold or an index is
    out of range (the general path then raises PyTorch's error)."""
    shape = x._shape
    nd = len(shape)
    if (x.device is not CPU or x.dtype.limited or index.__class__ is not Tensor
            or index.dtype not in _GATHER_DTYPES or index.device is not CPU
            or dim.__class__ is not int or not -nd <= dim < nd
            or len(index._shape) != nd or _function.TRACE_HOOK[0] is not None
            or not unrecorded(x)):
        return None
    d = dim + nd if dim < 0 else dim
    ishape = index._shape
    grids = []
    for k in range(nd):
        n = ishape[k]
        if k == d:
            grids.append(index._array)
            continue
        if n > shape[k]:
            return None
        g = _GRIDS.get((n, k, nd))
        if g is None:
            g = _grid(n, k, nd)
        grids.append(g)
    # C-ordered int64 for the check, and NumPy gathers faster by it (an expanded index:
    # 1.5 -> 1.0 us)
    idx = grids[d] = np.ascontiguousarray(grids[d], np.int64)
    if idx.size > _SMALL_GATHER:
        return None
    if idx.size and _kernels().first_outside(idx.ravel(), shape[d]) >= 0:
        return None
    return fresh_select(x._array[tuple(grids)], x.dtype)


def _grid(n, k, nd):
    """arange(n) laid along dim k of nd dims (a `_GRIDS` entry, made once)."""
    if len(_GRIDS) >= 256:
        _GRIDS.clear()
    g = np.arange(n, dtype=np.int64).reshape((1,) * k + (n,) + (1,) * (nd - 1 - k))
    g.flags.writeable = False
    _GRIDS[(n, k, nd)] = g
    return g


def scatter_cpu(out, dim, idx, values, accumulate):
    """scatter/scatter_add into `out` (CPU) by index.scatter_rows/scatter_add_rows in
    the order `put`/`put_add` take; False where `_put` must do it (other devices, 0-d,
    limited dtypes, halves and bools accumulating)."""
    dt = out.dtype
    if out.device.type != "cpu" or not out.dim() or dt.limited or \
            (accumulate and (dt.is_half or dt is _dtype.bool)) or values._shape != idx.shape:
        return False
    if idx.size:
        last = idx.shape[-1]
        v = values.contiguous()._array.reshape(-1, last)
        base, sd, sl = _row_bases(out, dim, idx.shape)
        if accumulate:
            _kernels().scatter_add_rows(out._storage.data, base, idx.reshape(-1, last), sd, sl,
                                        v)
        else:
            _kernels().scatter_rows(_word_storage(out), base, idx.reshape(-1, last), sd, sl,
                         words(v) if v.dtype.itemsize <= 8 else v)
    out._bump()
    return True
