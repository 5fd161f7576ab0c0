"""Softmax and log-softmax along the middle axis of a C-contiguous (outer, n, inner) array.

Numerically stable: every row is shifted by its max before `exp`. Per row
(inner == 1) two passes over the input: max, then exp(x - max) written to out
while summing in float64, then one scaling pass over out (still in cache).
inner > 1 walks rows in memory order with per-column max and sum vectors.
"""
import numba
import numpy as np
from numba import prange

from .reduce import FM, COLS, _row_extreme


@numba.njit(cache=True, fastmath=FM)
def _softmax_row(x, y, log):
    """y = softmax(x) (log-softmax if log) for one contiguous row."""
    m = _row_extreme(x, True)
    if log:
        s = 0.0
        for i in range(x.size):
            s += np.exp(x[i] - m)
        shift = m + np.log(s)
        for i in range(x.size):
            y[i] = x[i] - shift
    else:
        s = 0.0
        for i in range(x.size):
            e = np.exp(x[i] - m)
            y[i] = e
            s += e
        r = 1.0 / s
        for i in range(x.size):
            y[i] *= r


@numba.njit(cache=True, fastmath=FM)
def _softmax_cols(a, out, o, c0, c1, log):
    """Columns c0:c1 of slab o: max row-walk, exp+sum row-walk, scale row-walk."""
    n = a.shape[1]
    w = c1 - c0
    m = np.empty(w, a.dtype)
    m[:] = a[o, 0, c0:c1]
    for i in range(1, n):
        seg = a[o, i, c0:c1]
        for j in range(w):
            v = seg[j]
            m[j] = v if (v > m[j] or v != v) else m[j]
    s = np.zeros(w)
    for i in range(n):
        seg = a[o, i, c0:c1]
        dst = out[o, i, c0:c1]
        for j in range(w):
            e = np.exp(seg[j] - m[j])
            s[j] += e
            if not log:
                dst[j] = e
    if log:
        for j in range(w):
            s[j] = m[j] + np.log(s[j])
        for i in range(n):
            seg = a[o, i, c0:c1]
            dst = out[o, i, c0:c1]
            for j in range(w):
                dst[j] = seg[j] - s[j]
    else:
        for j in range(w):
            s[j] = 1.0 / s[j]
        for i in range(n):
            dst = out[o, i, c0:c1]
            for j in range(w):
                dst[j] *= s[j]


@numba.njit(cache=True)
def softmax_forward(a, out, log):
    """out[o, :, k] = softmax(a[o, :, k]) (log_softmax if log); a, out (outer, n, inner)."""
    outer, n, inner = a.shape
    if inner == 1:
        rows = a.reshape(outer, n)
        dst = out.reshape(outer, n)
        for o in range(outer):
            _softmax_row(rows[o], dst[o], log)
    else:
        for o in range(outer):
            _softmax_cols(a, out, o, 0, inner, log)


@numba.njit(cache=True, parallel=True)
def softmax_forward_parallel(a, out, log):
    """softmax_forward with rows (or column blocks of COLS) in prange."""
    outer, n, inner = a.shape
    if inner == 1:
        rows = a.reshape(outer, n)
        dst = out.reshape(outer, n)
        for o in prange(outer):
            _softmax_row(rows[o], dst[o], log)
    else:
        ncb = (inner + COLS - 1) // COLS
        for t in prange(outer * ncb):
            o = t // ncb
            c0 = (t - o * ncb) * COLS
            _softmax_cols(a, out, o, c0, min(c0 + COLS, inner), log)
