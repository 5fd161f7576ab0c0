"""Gather/scatter through precomputed element offsets: the kernels behind advanced
indexing, `gather`, `scatter`, `index_select`, `take`, `masked_select` and friends.

The op layer turns any index expression into int64 storage offsets (validated
against the bounds first: these kernels check nothing), so two loops serve them all.
"""
import numba
import numpy as np

from ..halves import bits, is_half
from ..shared import reduce_segment


@numba.njit(cache=True)
def take(src, offsets, out):
    """for i: out[i] = src[offsets[i]]  (out contiguous, 1-D view)."""
    for i in range(offsets.size):
        out[i] = src[offsets[i]]


@numba.njit(cache=True)
def put(dst, offsets, values):
    """for i: dst[offsets[i]] = values[i]  (last write wins on repeats)."""
    for i in range(offsets.size):
        dst[offsets[i]] = values[i]


@numba.njit(cache=True)
def put_add(dst, offsets, values):
    """for i: dst[offsets[i]] += values[i]  (repeats accumulate: index_add, scatter_add)."""
    for i in range(offsets.size):
        dst[offsets[i]] += values[i]


@numba.njit(cache=True)
def nonzero_flat(mask, out):
    """Write the flat positions of true elements of `mask` into `out`; return the count."""
    n = 0
    for i in range(mask.size):
        if mask[i]:
            out[n] = i
            n += 1
    return n


# ---- launchers: the "cpu" kernels of take and put (kernels/cpu/table.py) --------------
# `src`/`dst`: a tensor's whole flat storage; `out`/`values`: contiguous 1-D arrays.

def take_any(src, offsets, out):
    take(bits(src), offsets, bits(out))


def put_any(dst, offsets, values, accumulate):
    if accumulate:
        if is_half(dst.dtype):           # accumulate in float32, round once
            tmp = dst.astype(np.float32)
            put_add(tmp, offsets, values.astype(np.float32))
            dst[...] = tmp
        elif dst.dtype == np.bool_:
            put(bits(dst), offsets, bits(values))   # add on bools is logical or of ones
        else:
            put_add(dst, offsets, values)
    else:
        put(bits(dst), offsets, bits(values))


def nonzero(a):
    """The (n, a.ndim) int64 coordinates of a's nonzero elements, in row-major order (the
    "cpu" kernel of nonzero: its output size depends on the data, so it returns it)."""
    flat = np.ascontiguousarray(a).reshape(-1)
    if is_half(flat.dtype):
        flat = flat.astype(np.float32)
    pos = np.empty(flat.size, np.int64)
    n = nonzero_flat(flat.view(np.uint8) if flat.dtype == np.bool_ else flat, pos)
    if not a.ndim:
        return np.zeros((n, 0), np.int64)
    return np.ascontiguousarray(np.stack(np.unravel_index(pos[:n], a.shape), axis=1),
                                dtype=np.int64)


# ---- scatter reductions: scatter_reduce, index_reduce, scatter(reduce=...) ---------------

@numba.njit(cache=True)
def segment_reduce(dst, targets, starts, values, mode, include_self):
    """for s: dst[targets[s]] = reduce(dst[targets[s]], values[starts[s]:starts[s + 1]])
    (shared.reduce_segment; segments are the runs of equal sorted target offsets)."""
    for s in range(targets.size):
        reduce_segment(dst, targets[s], values, starts[s], starts[s + 1], mode, include_self)


def scatter_reduce(dst, targets, starts, values, mode, include_self):
    """The "cpu" kernel of scatter_reduce: `dst` a whole flat storage, `targets` the distinct
    storage offsets written (int64), `starts` (len(targets) + 1) the bounds of each one's
    run in `values` (contiguous 1-D, grouped by target); mode as shared.reduce_segment.
    float16/bfloat16 reduce in float32 (rounded once per target), bool as uint8."""
    if is_half(dst.dtype):
        tmp = dst.astype(np.float32)
        segment_reduce(tmp, targets, starts, values.astype(np.float32), mode, include_self)
        dst[...] = tmp.astype(dst.dtype)
    elif dst.dtype == np.bool_:          # or/and as max/min of 0/1 (the op maps the mode)
        segment_reduce(dst.view(np.uint8), targets, starts, values.view(np.uint8), mode,
                       include_self)
    else:
        segment_reduce(dst, targets, starts, values, mode, include_self)


@numba.njit(cache=True)
def add_rows(dst, index, src):
    """dst[o, index[j], :] += src[o, j, :] for 3-D C-contiguous dst (outer, size, inner)
    and src (outer, len(index), inner); indices in [0, size), repeats accumulate in j
    order (the order `put_add` adds them in, so the same sums)."""
    outer, m, inner = src.shape
    for o in range(outer):
        for j in range(m):
            d = dst[o, index[j]]
            s = src[o, j]
            for k in range(np.uint64(inner)):
                d[k] += s[k]
