"""Strided copy with dtype conversion: the kernel behind `copy_`, `contiguous` and `to(dtype)`.

The caller merges dimensions that are contiguous in both arrays and passes
flat storages with element offsets, shapes and strides (DESIGN.md: index math
once per row, a tight inner loop with a contiguous fast path). One
compilation per (source dtype, destination dtype) pair serves every rank.
"""
import math

import numba
import numpy as np

from nbtorch.kernels.cpu import copy_threads
from nbtorch.kernels.halves import bits, is_half, round_to
from nbtorch.kernels.shared import advance_index
from nbtorch.kernels.layout import merge_dims


@numba.njit(cache=True)
def copy_strided(src, s_off, s_strides, dst, d_off, d_strides, shape):
    """for each index i: dst[d_off + i.d_strides] = src[s_off + i.s_strides].

    `shape`, `s_strides`, `d_strides`: int64 arrays of the same length >= 1. The last
    two dimensions are a plane copied by `_copy_plane`; the others are walked once per
    plane.
    """
    nd = shape.size
    if nd == 1:
        _copy_plane(src, s_off, 0, s_strides[0], dst, d_off, 0, d_strides[0], 1, shape[0])
        return
    planes = 1
    for k in range(nd - 2):
        planes *= shape[k]
    rows, cols = shape[nd - 2], shape[nd - 1]
    if planes == 0 or rows == 0 or cols == 0:
        return
    sp, sq = s_strides[nd - 2], s_strides[nd - 1]
    dp, dq = d_strides[nd - 2], d_strides[nd - 1]
    idx = np.zeros(max(nd - 2, 1), np.int64)
    for _ in range(planes):
        so = s_off
        do = d_off
        for k in range(nd - 2):
            so += idx[k] * s_strides[k]
            do += idx[k] * d_strides[k]
        _copy_plane(src, so, sp, sq, dst, do, dp, dq, rows, cols)
        advance_index(idx, shape, nd - 3)


@numba.njit(cache=True, inline="always")
def _copy_plane(src, so, sp, sq, dst, do, dp, dq, rows, cols):
    """dst[do + i*dp + j*dq] = src[so + i*sp + j*sq] for i < rows, j < cols. A transposed
    plane (src's unit stride on the rows, dst's on the columns: ``x.t().contiguous()``)
    goes in 8x8 tiles, so both sides touch few cache lines per tile; indices are
    unsigned, which spares LLVM the negative-index checks that kept the loops scalar
    (1024x512 float32: 1.08 ms row by row, 0.16 in tiles)."""
    if sp == 1 and dq == 1 and sq != 1 and rows >= _TILE and cols >= _TILE:
        rows8 = rows // _TILE * _TILE
        cols8 = cols // _TILE * _TILE
        for i0 in range(0, rows8, _TILE):
            for j0 in range(0, cols8, _TILE):
                for i in range(_TILE):
                    o = np.uint64(do + (i0 + i) * dp + j0)
                    b = np.uint64(so + i0 + i + j0 * sq)
                    for j in range(_TILE):
                        dst[o + np.uint64(j)] = src[b + np.uint64(j * sq)]
        _copy_rows(src, so + cols8 * sq, sp, sq, dst, do + cols8, dp, dq, rows8, cols - cols8)
        _copy_rows(src, so + rows8, sp, sq, dst, do + rows8 * dp, dp, dq, rows - rows8, cols)
        return
    _copy_rows(src, so, sp, sq, dst, do, dp, dq, rows, cols)


@numba.njit(cache=True, inline="always")
def _copy_rows(src, so, sp, sq, dst, do, dp, dq, rows, cols):
    """`_copy_plane` row by row (a unit-stride row copy vectorises)."""
    for i in range(rows):
        b = np.uint64(so + i * sp)
        o = np.uint64(do + i * dp)
        if sq == 1 and dq == 1:
            for j in range(np.uint64(cols)):
                dst[o + j] = src[b + j]
        else:
            for j in range(cols):
                dst[o + np.uint64(j * dq)] = src[b + np.uint64(j * sq)]


_TILE = 8


_TRANSPOSE_PLANS = {}     # (rows, cols) -> the stride and shape arrays of `transpose_into`


def transpose_into(t, out):
    """out = t.T for C-contiguous arrays t (n, m) and out (m, n) of one dtype: the tiled
    `copy_strided` (32x1024 float32 ~10 us, NumPy's copyto 20); the index arrays of a
    shape are made once. For products computed transposed (matmul.py, rnn.py)."""
    m, n = out.shape
    plan = _TRANSPOSE_PLANS.get((m, n))
    if plan is None:
        if len(_TRANSPOSE_PLANS) > 256:
            _TRANSPOSE_PLANS.clear()
        plan = _TRANSPOSE_PLANS[m, n] = (np.array([1, m], np.int64), np.array([n, 1], np.int64),
                                         np.array([m, n], np.int64))
    copy_strided(t.reshape(-1), 0, plan[0], out.reshape(-1), 0, plan[1], plan[2])


@numba.njit(cache=True)
def copy_cast_strided(src, s_off, s_strides, dst, d_off, d_strides, shape):
    """`copy_strided` between two dtypes, row by row (the last dim the inner loop): one
    compilation per dtype pair, so kept small; same-dtype copies take the tiled kernel
    on words of their width instead."""
    nd = shape.size
    inner = shape[nd - 1]
    ss = s_strides[nd - 1]
    ds = d_strides[nd - 1]
    rows = 1
    for k in range(nd - 1):
        rows *= shape[k]
    if inner == 0 or rows == 0:
        return
    idx = np.zeros(nd, np.int64)
    for _ in range(rows):
        so = s_off
        do = d_off
        for k in range(nd - 1):
            so += idx[k] * s_strides[k]
            do += idx[k] * d_strides[k]
        if ss == 1 and ds == 1:
            for j in range(np.uint64(inner)):
                dst[do + j] = src[so + j]
        else:
            for j in range(inner):
                dst[np.uint64(do + j * ds)] = src[np.uint64(so + j * ss)]
        advance_index(idx, shape, nd - 2)


@numba.njit(cache=True)
def fill_strided(dst, d_off, d_strides, shape, value):
    """for each index i: dst[d_off + i.d_strides] = value."""
    nd = shape.size
    inner = shape[nd - 1]
    ds = d_strides[nd - 1]
    rows = 1
    for k in range(nd - 1):
        rows *= shape[k]
    if inner == 0 or rows == 0:
        return
    idx = np.zeros(nd, np.int64)
    for _ in range(rows):
        do = d_off
        for k in range(nd - 1):
            do += idx[k] * d_strides[k]
        if ds == 1:
            dst[do:do + inner] = value
        else:
            for j in range(inner):
                dst[do + j * ds] = value
        advance_index(idx, shape, nd - 2)


@numba.njit(cache=True)
def copy_dense(src, s_off, dst, d_off, n):
    """for j < n: dst[d_off + j] = src[s_off + j] (both dense: the common `clone`/`to`).

    Scalar arguments only, so Numba's dispatch costs a fraction of the strided
    kernel's (whose launcher builds three index arrays per call). A loop over slice
    views, not computed indices: it vectorises (1e6 float32: 311-330 us vs 510, NumPy's
    memcpy 315). Not a slice assignment: its shape-mismatch message machinery costs ~5 s
    of cold compile (the demo's first run 7 -> 12.8 s).
    """
    d, s = dst[d_off:d_off + n], src[s_off:s_off + n]
    for j in range(n):
        d[j] = s[j]


@numba.njit(cache=True)
def fill_dense(dst, d_off, n, value):
    """dst[d_off:d_off + n] = value."""
    dst[d_off:d_off + n] = value


def _merged(shape, *strides_list):
    """merge_dims as int64 arrays, the form the kernels take."""
    m_shape, m_strides = merge_dims(shape, strides_list)
    return np.array(m_shape, np.int64), [np.array(st, np.int64) for st in m_strides]


# Below this many elements a same-dtype strided copy is NumPy's (one C call on two strided
# views) rather than merge_dims plus a Numba dispatch: t().contiguous() of 8x16 float32
# 11 -> 6 us. The same values: a copy.
NUMPY_COPY_MAX = 1 << 14


def copy(src_flat, s_off, s_shape_strides, dst_flat, d_off, d_strides, shape):
    """Launcher: copy a (broadcast) strided source into a strided destination.

    Dims are first put in the destination's memory order (decreasing strides), so a
    transposed or channels-last destination is written in order and one with the
    source's layout (a clone of ``x.t()``) is a dense copy (1024x512: 4.4 ms -> 0.1).
    A source that is one value (every stride 0: a sum's gradient made dense) is a fill
    of its bits (2 MB: 0.32 ms strided -> a fill).
    """
    if (not any(s_shape_strides) and src_flat.dtype == dst_flat.dtype
            and src_flat.dtype.kind in "fiub" and math.prod(shape) > 1):
        return fill(dst_flat, d_off, d_strides, shape, src_flat[s_off])
    if not _dense(shape, d_strides):
        shape, s_shape_strides, d_strides = _in_memory_order(shape, s_shape_strides,
                                                             d_strides)
    if _dense(shape, d_strides) and tuple(s_shape_strides) == tuple(d_strides):
        n = math.prod(shape)
        if src_flat.dtype == dst_flat.dtype and copy_threads.copy_bytes(
                src_flat[s_off:s_off + n], dst_flat[d_off:d_off + n]):
            return None                 # a large copy, split over the helpers
        return copy_dense(src_flat, s_off, dst_flat, d_off, n)
    if src_flat.dtype == dst_flat.dtype and 0 < math.prod(shape) < NUMPY_COPY_MAX:
        item = dst_flat.itemsize
        np.copyto(np.ndarray(shape, dst_flat.dtype, dst_flat, d_off * item,
                             tuple(st * item for st in d_strides)),
                  np.ndarray(shape, src_flat.dtype, src_flat, s_off * item,
                             tuple(st * item for st in s_shape_strides)))
        return
    m_shape, (ss, ds) = _merged(shape, s_shape_strides, d_strides)
    words = (copy_threads.WORDS.get(src_flat.itemsize) if src_flat.dtype == dst_flat.dtype
             else None)
    if words is None:
        copy_cast_strided(src_flat, s_off, ss, dst_flat, d_off, ds, m_shape)
    else:                               # bits moved as words: one kernel per width
        copy_strided(src_flat.view(words), s_off, ss, dst_flat.view(words), d_off, ds,
                     m_shape)


def fill(dst_flat, d_off, d_strides, shape, value):
    """Launcher: write one value into every element of a strided destination."""
    if not _dense(shape, d_strides):
        shape, d_strides, _ = _in_memory_order(shape, d_strides, d_strides)
    if _dense(shape, d_strides):
        n = math.prod(shape)
        value = dst_flat.dtype.type(value)
        if copy_threads.fill_bits(dst_flat[d_off:d_off + n], value):
            return None                 # a large fill, split over the helpers
        return fill_dense(dst_flat, d_off, n, value)
    m_shape, (ds,) = _merged(shape, d_strides)
    fill_strided(dst_flat, d_off, ds, m_shape, dst_flat.dtype.type(value))


def _in_memory_order(shape, s_strides, d_strides):
    """(shape, s_strides, d_strides) with the dims sorted by decreasing destination stride."""
    order = sorted(range(len(shape)), key=lambda k: (-d_strides[k], -shape[k]))
    return (tuple(shape[k] for k in order), tuple(s_strides[k] for k in order),
            tuple(d_strides[k] for k in order))


def _dense(shape, strides):
    """True when `strides` are the row-major strides of `shape` (size-1 dims ignored)."""
    expected = 1
    for i in range(len(shape) - 1, -1, -1):
        n = shape[i]
        if n != 1 and strides[i] != expected:
            return False
        expected *= n
    return True


# ---- launchers: the "cpu" kernels of copy_ and fill_ (kernels/cpu/table.py) ----------
# Arrays are whole flat storages; offsets and strides count elements; `src_strides` are
# already broadcast to `shape` (0 along broadcast dims).

def _view(storage, offset, strides, shape):
    """The strided NumPy view of `shape` over a flat storage (no copy)."""
    item = storage.itemsize
    return np.lib.stride_tricks.as_strided(storage[offset:], tuple(shape),
                                           tuple(s * item for s in strides))


def copy_(dst, dst_offset, dst_strides, src, src_offset, src_strides, shape):
    """dst's elements = src's, cast to dst's dtype (halves with PyTorch's rounding)."""
    if is_half(src.dtype) or is_half(dst.dtype):
        if src.dtype != dst.dtype:          # NumPy's casts, halves made from float32
            values = _view(src, src_offset, src_strides, shape)
            if src.dtype.name == "bfloat16":
                values = values.astype(np.float32)       # exact; then float32's casts
            np.copyto(_view(dst, dst_offset, dst_strides, shape),
                      round_to(values, dst.dtype), casting="unsafe")
            return
        src, dst = bits(src), bits(dst)     # same half dtype: move the bits
    copy(src, src_offset, src_strides, dst, dst_offset, dst_strides, shape)


def fill_(dst, dst_offset, dst_strides, shape, value):
    """Every element of dst = value (a Python number; halves rounded through float32)."""
    if is_half(dst.dtype):
        _view(dst, dst_offset, dst_strides, shape)[...] = dst.dtype.type(np.float32(value))
        return
    fill(dst, dst_offset, dst_strides, shape, value)
