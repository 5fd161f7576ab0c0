"""Gather/scatter through precomputed element offsets: the kernels behind advanced
indexing, `gather`, `scatter`, `index_select`, `take`, `masked_select` and friends.

The op layer turns any index expression into int64 storage offsets (validated
against the bounds first: these kernels check nothing), so two loops serve them all.
"""
import numba
import numpy as np


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


_HALF_NAMES = ("float16", "bfloat16")


def is_half(np_dtype):
    """float16 or (ml_dtypes') bfloat16: dtypes Numba lacks (named, so that testing
    for bfloat16 does not import ml_dtypes)."""
    return np_dtype.name in _HALF_NAMES


def _u(a):
    """Arrays the move-only kernels take: halves as uint16 bits, bools as uint8."""
    return a.view(np.uint16) if is_half(a.dtype) else (
        a.view(np.uint8) if a.dtype == np.bool_ else a)


def take_any(src, offsets, out):
    take(_u(src), offsets, _u(out))


def put_any(dst, offsets, values, accumulate):
    if accumulate:
        if is_half(dst.dtype):           # accumulate in float32, round once
            tmp = dst.astype(np.float32)
            put_add(tmp, offsets, values.astype(np.float32))
            dst[...] = tmp
        elif dst.dtype == np.bool_:
            put(_u(dst), offsets, _u(values))   # add on bools is logical or of ones
        else:
            put_add(dst, offsets, values)
    else:
        put(_u(dst), offsets, _u(values))
