"""Scans (cumsum, cumprod, cummax, cummin, logcumsumexp) along the middle axis of
(outer, n, inner) arrays.

for o: acc[:] = identity; for i in 0..n-1 (or n-1..0 if reverse):
    acc[:] (op)= a[o, i, :]; out[o, i, :] = acc
Rows are walked in memory order, so a scan over any dim reads each element
once, contiguously. Sums, products and log-sum-exps accumulate in float64 (int64 for
ints).
"""
import numba
import numpy as np

from ..shared import copy_into, log_add_exp


@numba.njit(cache=True)
def cumsum_scan(a, out, zero, reverse):
    """out[o, i, k] = sum_{i' <= i} a[o, i', k] (i' >= i if reverse); acc type of `zero`."""
    outer, n, inner = a.shape
    acc = np.full(inner, zero)
    for o in range(outer):
        acc[:] = zero
        for t in range(n):
            i = n - 1 - t if reverse else t
            seg = a[o, i]
            dst = out[o, i]
            for j in range(inner):
                acc[j] += seg[j]
                dst[j] = acc[j]


@numba.njit(cache=True)
def cumprod_scan(a, out, one, reverse):
    """out[o, i, k] = prod_{i' <= i} a[o, i', k] (i' >= i if reverse); acc type of `one`."""
    outer, n, inner = a.shape
    acc = np.full(inner, one)
    for o in range(outer):
        acc[:] = one
        for t in range(n):
            i = n - 1 - t if reverse else t
            seg = a[o, i]
            dst = out[o, i]
            for j in range(inner):
                acc[j] *= seg[j]
                dst[j] = acc[j]


@numba.njit(cache=True)
def cumextreme_scan(a, values, indices, want_max):
    """Running max (min) and the index it came from; ties and NaN take the later index.

    As PyTorch: v replaces the running value m when v is NaN, or m is not NaN and
    v >= m (v <= m for min).
    """
    outer, n, inner = a.shape
    for o in range(outer):
        best = values[o, 0]
        idx = indices[o, 0]
        copy_into(best, a[o, 0])
        idx[:] = 0
        for i in range(1, n):
            seg = a[o, i]
            prev_v = values[o, i - 1]
            prev_i = indices[o, i - 1]
            cur_v = values[o, i]
            cur_i = indices[o, i]
            for j in range(inner):
                v = seg[j]
                m = prev_v[j]
                if v != v or (m == m and (v >= m if want_max else v <= m)):
                    cur_v[j] = v
                    cur_i[j] = i
                else:
                    cur_v[j] = m
                    cur_i[j] = prev_i[j]


@numba.njit(cache=True)
def logcumsumexp_scan(a, out):
    """out[o, i, k] = log(sum_{i' <= i} exp(a[o, i', k])), accumulated in float64 by
    `shared.log_add_exp` (no overflow, -inf stays -inf)."""
    outer, n, inner = a.shape
    acc = np.empty(inner, np.float64)
    for o in range(outer):
        acc[:] = -np.inf
        for i in range(n):
            seg = a[o, i]
            dst = out[o, i]
            for j in range(inner):
                acc[j] = log_add_exp(acc[j], np.float64(seg[j]))
                dst[j] = acc[j]


# ---- launchers: the "cpu" kernels of the scans (kernels/cpu/table.py) -----------------

def _acc(dtype, value):
    return np.float64(value) if dtype.kind == "f" else np.int64(value)


def cumsum(a3, out3, reverse):
    cumsum_scan(a3, out3, _acc(a3.dtype, 0), reverse)


def cumprod(a3, out3, reverse):
    cumprod_scan(a3, out3, _acc(a3.dtype, 1), reverse)


def _cumextreme(a3, values3, indices3, want_max):
    if a3.dtype == np.bool_:                       # bools scan as uint8 (same order)
        a3, values3 = a3.view(np.uint8), values3.view(np.uint8)
    cumextreme_scan(a3, values3, indices3, want_max)


def cummax(a3, values3, indices3):
    _cumextreme(a3, values3, indices3, True)


def cummin(a3, values3, indices3):
    _cumextreme(a3, values3, indices3, False)


def logcumsumexp(a3, out3):
    logcumsumexp_scan(a3, out3)
