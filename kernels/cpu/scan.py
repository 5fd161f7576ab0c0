"""Scans (cumsum, cumprod, cummax, cummin, logcumsumexp) along the middle axis of
(outer, n, inner) arrays.

for o: acc[:] = identity; for i in 0..n-1 (or n-1..0 if reverse):
    acc[:] (op)= a[o, i, :]; out[o, i, :] = acc
Rows are walked in memory order, so a scan over any dim reads each element
once, contiguously; a scan along the last dim (inner == 1) runs the row kernels. Sums, products and log-sum-exps accumulate in float64 (int64 for
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


# ---- inner == 1: scans along contiguous rows ------------------------------------------
# The (outer, n, 1) walk above pays two slices per element there (1024x512 float32
# cumsum(1): 1.7 ms). These loop over plain rows, four rows at a time for the sums and
# products so four independent chains hide the add's latency; each row still
# accumulates in order from its first (last, if reverse) element, as above, so the
# results are the same bits.

@numba.njit(cache=True)
def accumulate_rows(a, out, init, reverse, mul):
    """out[r, i] = init (+ or * if mul) a[r, 0] ... a[r, i] in order (from the end if
    reverse), accumulated in the type of `init`; a and out (rows, n) C-contiguous."""
    rows, n = a.shape
    nu = np.uint64(n)
    r = 0
    while r + 4 <= rows:
        a0, a1, a2, a3 = a[r], a[r + 1], a[r + 2], a[r + 3]
        o0, o1, o2, o3 = out[r], out[r + 1], out[r + 2], out[r + 3]
        s0 = s1 = s2 = s3 = init
        for t in range(nu):
            i = nu - np.uint64(1) - t if reverse else t
            if mul:
                s0 *= a0[i]
                s1 *= a1[i]
                s2 *= a2[i]
                s3 *= a3[i]
            else:
                s0 += a0[i]
                s1 += a1[i]
                s2 += a2[i]
                s3 += a3[i]
            o0[i] = s0
            o1[i] = s1
            o2[i] = s2
            o3[i] = s3
        r += 4
    for q in range(r, rows):
        row, dst = a[q], out[q]
        s = init
        for t in range(nu):
            i = nu - np.uint64(1) - t if reverse else t
            if mul:
                s *= row[i]
            else:
                s += row[i]
            dst[i] = s


@numba.njit(cache=True)
def cumextreme_rows(a, values, indices, want_max):
    """cumextreme_scan along contiguous rows (the same test, the same ties and NaN)."""
    rows, n = a.shape
    for r in range(rows):
        row, dv, di = a[r], values[r], indices[r]
        m = row[0]
        k = 0
        dv[0] = m
        di[0] = 0
        for i in range(1, n):
            v = row[i]
            if v != v or (m == m and (v >= m if want_max else v <= m)):
                m = v
                k = i
            dv[i] = m
            di[i] = k


@numba.njit(cache=True)
def logcumsumexp_rows(a, out):
    """logcumsumexp_scan along contiguous rows (float64 accumulator, same order)."""
    rows, n = a.shape
    for r in range(rows):
        row, dst = a[r], out[r]
        acc = -np.inf
        for i in range(n):
            acc = log_add_exp(acc, np.float64(row[i]))
            dst[i] = acc


# ---- launchers: the "cpu" kernels of the scans (kernels/cpu/table.py) -----------------

def _acc(dtype, value):
    return np.float64(value) if dtype.kind == "f" else np.int64(value)


def _rows(*arrays3):
    """The (outer, n) rows of (outer, n, 1) arrays."""
    return tuple(x.reshape(x.shape[0], x.shape[1]) for x in arrays3)


def cumsum(a3, out3, reverse):
    if a3.shape[2] == 1:
        accumulate_rows(*_rows(a3, out3), _acc(a3.dtype, 0), reverse, False)
    else:
        cumsum_scan(a3, out3, _acc(a3.dtype, 0), reverse)


def cumprod(a3, out3, reverse):
    if a3.shape[2] == 1:
        accumulate_rows(*_rows(a3, out3), _acc(a3.dtype, 1), reverse, True)
    else:
        cumprod_scan(a3, out3, _acc(a3.dtype, 1), reverse)


def _cumextreme(a3, values3, indices3, want_max):
    if a3.dtype == np.bool_:                       # bools scan as uint8 (same order)
        a3, values3 = a3.view(np.uint8), values3.view(np.uint8)
    if a3.shape[2] == 1:
        cumextreme_rows(*_rows(a3, values3, indices3), want_max)
    else:
        cumextreme_scan(a3, values3, indices3, want_max)


def cummax(a3, values3, indices3):
    _cumextreme(a3, values3, indices3, True)


def cummin(a3, values3, indices3):
    _cumextreme(a3, values3, indices3, False)


def logcumsumexp(a3, out3):
    if a3.shape[2] == 1:
        logcumsumexp_rows(*_rows(a3, out3))
    else:
        logcumsumexp_scan(a3, out3)
