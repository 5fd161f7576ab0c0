"""Softmax and log-softmax along the middle axis of a C-contiguous (outer, n, inner) array.

Numerically stable: every row is shifted by its max before `exp` (`fexp`, a
float32 exp that vectorises: kernels/scalar.py). Per row (inner == 1): max
(row_extreme.py), then exp(x - max) written to out with its sum per block (float64
between blocks), then one scaling pass over out (still in cache); each a simple
loop that vectorises.
inner > 1 walks whole rows in memory order in three phases (column max,
exp and column sums, scaling); the parallel kernel splits each phase into
ranges of rows and combines the per-range maxima and sums in between.
"""
import numba
import numpy as np
from numba import carray, prange

from ..scalar import fexp
from ..shared import copy_into
from .reduce import (BLOCK, FM, _block_sum, _row_extreme, _cols_extreme_into, cols_extreme,
                     row_splits, use_parallel)
from .split_rows import run_rows_split, splits_rows


@numba.njit(cache=True, fastmath=FM)
def exp_shifted(x, shift, y):
    """y[i] = exp(x[i] - shift[i]): a plain map, so fexp vectorises (a sum in the same
    loop kept it scalar: 2x slower)."""
    for i in range(x.size):
        y[i] = fexp(x[i] - shift[i])


@numba.njit(cache=True, fastmath=FM)
def _exp_minus(x, m, y):
    """y[i] = exp(x[i] - m) for a scalar m."""
    for i in range(x.size):
        y[i] = fexp(x[i] - m)


@numba.njit(cache=True, fastmath=FM)
def _softmax_row(x, y, log):
    """y = softmax(x) (log-softmax if log) for one contiguous row: max (NaN-propagating:
    a NaN row is all NaN), the exp map and then its sum per block (float64 between
    blocks), then a scale (or two shifts) in the row's type.

    The map and the sum stay two loops: one loop reading x, writing y and summing (10%
    faster, 256x512 83 -> 73 us serial) summed in an order that depended on where y lay
    after x in memory: LLVM guards such a loop with a check that y starts at least a
    vector's span after x, else runs the scalar loop, and under `reassoc` the two add up
    in different orders, so a few rows came out 1 ulp off when the allocator put the
    output just after the input (the gradcheck reentrancy failures of log_softmax). A
    sum over y alone takes one path for a given length."""
    m = _row_extreme(x, bool(True))
    n = x.size
    s = 0.0
    for b in range(0, n, BLOCK):         # exp, then its sum, per block; blocks in float64
        seg = y[b:min(b + BLOCK, n)]
        _exp_minus(x[b:min(b + BLOCK, n)], m, seg)
        s += _block_sum(seg, bool(False))
    if log:
        # (x - m) - log(s) in the row's type, as PyTorch orders it: x - m is exact near the
        # max, so large logits stay exact; against x - (m + log s) in float64 it is 1 ulp
        # off on a quarter of the values, matches PyTorch's bits on 93% (74%), and runs
        # 15-19% faster (256x512 float32 rows 96 -> 82 us serial)
        ls = y.dtype.type(np.log(s))
        for i in range(x.size):
            y[i] = (x[i] - m) - ls
    else:
        r = y.dtype.type(1.0 / s)
        for i in range(y.size):
            y[i] *= r


@numba.njit(cache=True, fastmath=FM)
def _exp_sum_rows(a, out, o, r0, r1, m, s, log):
    """s[:] += sum over rows r0:r1 of exp(a[o, i] - m); out[o, i] = the exp unless log."""
    tmp = np.empty(a.shape[2], a.dtype)
    for i in range(r0, r1):
        dst = tmp if log else out[o, i]
        exp_shifted(a[o, i], m, dst)
        for j in range(dst.size):
            s[j] += dst[j]


@numba.njit(cache=True, fastmath=FM)
def _finish_rows(a, out, o, r0, r1, t, log):
    """Rows r0:r1 of slab o: out = a - t (log; t = max + log sum) or out *= t (t = 1/sum)."""
    for i in range(r0, r1):
        seg = a[o, i]
        dst = out[o, i]
        if log:
            for j in range(seg.size):
                dst[j] = seg[j] - t[j]
        else:
            for j in range(seg.size):
                dst[j] *= t[j]


@numba.njit(cache=True, fastmath=FM)
def _shift_or_scale(m, s, log):
    """The per-column term of the last phase: m + log(s) (log) or 1 / s."""
    t = np.empty(s.size)
    for j in range(s.size):
        t[j] = m[j] + np.log(s[j]) if log else 1.0 / s[j]
    return t


# Each walk is a kernel of its own, so a program compiles only the walks it runs (a
# softmax over the last dim, the common case, compiles only the rows kernel: the
# transformer block's first call compiled all four phases' helpers for nothing).

@numba.njit(cache=True)
def softmax_rows(rows, dst, log):
    """dst[o] = softmax(rows[o]) (log_softmax if log); rows, dst (outer, n)."""
    for o in range(rows.shape[0]):
        _softmax_row(rows[o], dst[o], log)


@numba.njit(cache=True, parallel=True, fastmath=FM)
def softmax_rows_parallel(rows, dst, log):
    """softmax_rows with the rows in prange."""
    for o in prange(rows.shape[0]):
        _softmax_row(rows[o], dst[o], log)


@numba.njit(cache=True)
def softmax_cols(a, out, log):
    """out[o, :, k] = softmax(a[o, :, k]) (log_softmax if log); a, out (outer, n, inner),
    inner > 1, walked in memory order."""
    outer, n, inner = a.shape
    m = np.empty((1, inner), a.dtype)
    for o in range(outer):
        copy_into(m[0], a[o, 0])
        _cols_extreme_into(a, o, int(1), n, m[0], bool(True))
        s = np.zeros(inner)
        _exp_sum_rows(a, out, o, int(0), n, m[0], s, log)
        _finish_rows(a, out, o, int(0), n, _shift_or_scale(m[0], s, log), log)


@numba.njit(cache=True, parallel=True, fastmath=FM)
def softmax_cols_parallel(a, out, log):
    """softmax_cols with, per phase, ranges of rows in prange."""
    outer, n, inner = a.shape
    splits = row_splits(outer, n, inner)
    tasks = outer * splits
    part = np.empty((outer, splits, inner), a.dtype)
    for t in prange(tasks):
        o = t // splits
        r = t - o * splits
        r0 = r * n // splits
        copy_into(part[o, r], a[o, r0])
        _cols_extreme_into(a, o, r0 + 1, (r + 1) * n // splits, part[o, r], bool(True))
    m = np.empty((outer, inner), a.dtype)
    for o in range(outer):
        cols_extreme(part, m, o, bool(True))
    sums = np.zeros((outer, splits, inner))
    for t in prange(tasks):
        o = t // splits
        r = t - o * splits
        _exp_sum_rows(a, out, o, r * n // splits, (r + 1) * n // splits, m[o], sums[o, r], log)
    terms = np.empty((outer, inner))
    for o in range(outer):
        s = sums[o, 0]
        for r in range(1, splits):
            part = sums[o, r]
            for j in range(inner):
                s[j] += part[j]
        copy_into(terms[o], _shift_or_scale(m[o], s, log))
    for t in prange(tasks):
        o = t // splits
        r = t - o * splits
        _finish_rows(a, out, o, r * n // splits, (r + 1) * n // splits, terms[o], log)


@numba.njit(cache=True)
def _softmax_chunk(p, a_ptr, out_ptr, count, dtype):
    """softmax (log_softmax if p[1]) of `count` rows of length p[0] (as softmax_rows)."""
    rows = carray(a_ptr, (count, p[0]), dtype)
    dst = carray(out_ptr, (count, p[0]), dtype)
    log = p[1] != 0
    for r in range(count):
        _softmax_row(rows[r], dst[r], log)


def _softmax_f32(args, count, steps, data):
    """Rows of softmax over the spinning helpers (split_rows.run_rows_split's operands)."""
    _softmax_chunk(carray(args[1], (2,), np.int64), args[0], args[3], count[0], np.float32)


def _softmax_f64(args, count, steps, data):
    _softmax_chunk(carray(args[1], (2,), np.int64), args[0], args[3], count[0], np.float64)


_SOFTMAX_WRAPPERS = {"f": _softmax_f32, "d": _softmax_f64}


# ---- launchers: the "cpu" kernels of softmax and log_softmax (kernels/cpu/table.py) ---

# softmax's exp makes it pay sooner than a sum: (N, 512) float32 serial vs parallel, N = 128
# 76 vs 117 us, 256 141 vs 140, 512 290 vs 210, 2048 1216 vs 687: from a quarter of the
# reductions' threshold (2^18 elements).
_COST = 4


def _softmax(a3, out3, log):
    outer, n, inner = a3.shape
    parallel = use_parallel(a3, _COST)
    if inner == 1 and splits_rows(a3, out3):
        # rows split over the spinning helpers (1024x512 float32 log_softmax(1):
        # ~500 us serial, ~370 in an OpenMP region)
        rows, dst = a3.reshape(outer, n), out3.reshape(outer, n)
        run_rows_split("softmax", _SOFTMAX_WRAPPERS, a3, out3, (n, int(log)), (0.0, 0.0),
                       softmax_rows, rows, dst, log)
    elif inner == 1:
        kernel = softmax_rows_parallel if parallel else softmax_rows
        kernel(a3.reshape(outer, n), out3.reshape(outer, n), log)
    else:
        (softmax_cols_parallel if parallel else softmax_cols)(a3, out3, log)


def softmax(a3, out3):
    _softmax(a3, out3, False)


def log_softmax(a3, out3):
    _softmax(a3, out3, True)
