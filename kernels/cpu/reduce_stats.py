"""Statistics kernels over a C-contiguous (outer, n, inner) float array -> (outer, inner).

Same layouts as kernels/cpu/reduce.py: inner == 1 reduces contiguous rows,
inner > 1 walks the rows in memory order with per-column accumulators. All
accumulate in float64; division by zero gives inf/NaN (numpy error model).
"""
import numba
import numpy as np
from numba import prange

from ..scalar import fexp
from ..shared import copy_into, norm_finish, norm_term
from .reduce import FM, BLOCK, _row_extreme, cols_extreme, use_parallel
from .softmax import exp_shifted


# ---- variance (two passes: mean, then squared deviations) ---------------------------

@numba.njit(cache=True, fastmath=FM, error_model="numpy")
def _row_var(row, correction):
    n = row.size
    s = 0.0
    for b in range(0, n, BLOCK):
        seg = row[b:min(b + BLOCK, n)]
        p = seg.dtype.type(0)
        for i in range(seg.size):
            p += seg[i]
        s += p
    mean = s / n
    m2 = 0.0
    for i in range(n):
        d = row[i] - mean
        m2 += d * d
    return m2 / max(n - correction, 0.0), mean


@numba.njit(cache=True, fastmath=FM, error_model="numpy")
def _cols_var(a, var, mean, o, correction):
    n, inner = a.shape[1], a.shape[2]
    acc = np.zeros(inner)
    for i in range(n):
        seg = a[o, i]
        for j in range(inner):
            acc[j] += seg[j]
    for j in range(inner):
        acc[j] /= n
    m2 = np.zeros(inner)
    for i in range(n):
        seg = a[o, i]
        for j in range(inner):
            d = seg[j] - acc[j]
            m2[j] += d * d
    denom = max(n - correction, 0.0)
    for j in range(inner):
        var[o, j] = m2[j] / denom
        mean[o, j] = acc[j]


# One kernel per walk (rows; walking rows), as in reduce.py: a program compiles only the
# walks it runs.

@numba.njit(cache=True)
def var_rows(rows, var, mean, correction):
    """var[o, 0] = sum_i (rows[o, i] - m)^2 / max(n - correction, 0), mean[o, 0] = m."""
    for o in range(rows.shape[0]):
        var[o, 0], mean[o, 0] = _row_var(rows[o], correction)


@numba.njit(cache=True, parallel=True, fastmath=FM)
def var_rows_parallel(rows, var, mean, correction):
    """var_rows with the rows in prange."""
    for o in prange(rows.shape[0]):
        var[o, 0], mean[o, 0] = _row_var(rows[o], correction)


@numba.njit(cache=True)
def var_reduce(a, var, mean, correction):
    """var[o, k] = sum_i (a[o,i,k] - m)^2 / max(n - correction, 0), mean[o, k] = m;
    inner > 1."""
    for o in range(a.shape[0]):
        _cols_var(a, var, mean, o, correction)


@numba.njit(cache=True, parallel=True, fastmath=FM)
def var_reduce_parallel(a, var, mean, correction):
    """var_reduce with the outer index in prange."""
    for o in prange(a.shape[0]):
        _cols_var(a, var, mean, o, correction)


# ---- logsumexp -----------------------------------------------------------------------

@numba.njit(cache=True, fastmath=FM)
def _block_sum_exp(seg, m):
    """sum_i exp(seg[i] - m) in the row's type (one block; vectorised)."""
    s = seg.dtype.type(0)
    for i in range(seg.size):
        s += fexp(seg[i] - m)
    return s


@numba.njit(cache=True, fastmath=FM)
def _row_sum_exp(row, m):
    """sum_i exp(row[i] - m), the blocks' sums added in float64. The exps are summed as
    they come (the map into a buffer, then `_block_sum` over it, gave the same bits with
    a buffer allocated per row: 256x512 float32 rows 79 -> 66 us, 1024x1000 585 -> 526)."""
    s = 0.0
    for b in range(0, row.size, BLOCK):
        s += _block_sum_exp(row[b:min(b + BLOCK, row.size)], m)
    return s


@numba.njit(cache=True)
def _finite(v):
    return v - v == 0


@numba.njit(cache=True, fastmath=FM)
def logsumexp_rows(rows, out):
    """out[o, 0] = m + log(sum_i exp(rows[o, i] - m)), m the max (a +-inf max is the
    result)."""
    for o in range(rows.shape[0]):
        m = _row_extreme(rows[o], bool(True))
        if not _finite(m):
            out[o, 0] = m
        else:
            out[o, 0] = m + np.log(_row_sum_exp(rows[o], m))


@numba.njit(cache=True, fastmath=FM)
def logsumexp_reduce(a, out):
    """out[o, k] = m + log(sum_i exp(a[o,i,k] - m)), m the max; inner > 1."""
    outer, n, inner = a.shape
    mx = np.empty(inner, a.dtype)
    tmp = np.empty(inner, a.dtype)
    for o in range(outer):
        cols_extreme(a, out, o, bool(True))
        copy_into(mx, out[o])
        s = np.zeros(inner)
        for i in range(n):
            exp_shifted(a[o, i], mx, tmp)
            for j in range(inner):
                s[j] += tmp[j]
        for j in range(inner):
            if _finite(mx[j]):
                out[o, j] = mx[j] + np.log(s[j])


# ---- vector norms --------------------------------------------------------------------

@numba.njit(cache=True, fastmath=FM, error_model="numpy")
def _row_norm(row, p):
    if p == np.inf or p == -np.inf:
        m = abs(row[0])
        for i in range(row.size):
            v = abs(row[i])
            if (v > m if p > 0 else v < m) or v != v:
                m = v
            if m != m:
                return m
        return m
    s = 0.0
    for i in range(row.size):
        s += norm_term(abs(row[i]), p)
    return norm_finish(s, p)


@numba.njit(cache=True, fastmath=FM, error_model="numpy")
def norm_rows(rows, out, p):
    """out[o, 0] = (sum_i |rows[o, i]|^p)^(1/p); p = inf/-inf: max/min |a|; p = 0: count
    != 0."""
    for o in range(rows.shape[0]):
        out[o, 0] = _row_norm(rows[o], p)


@numba.njit(cache=True, fastmath=FM, error_model="numpy")
def norm_reduce(a, out, p):
    """out[o, k] = (sum_i |a[o,i,k]|^p)^(1/p), inner > 1 (as norm_rows)."""
    outer, n, inner = a.shape
    for o in range(outer):
        acc = np.zeros(inner)
        if p == np.inf or p == -np.inf:
            first = a[o, 0]
            for j in range(inner):
                acc[j] = abs(first[j])
            for i in range(1, n):
                seg = a[o, i]
                for j in range(inner):
                    v = abs(seg[j])
                    better = v > acc[j] if p > 0 else v < acc[j]
                    if better or v != v:
                        acc[j] = v
        else:
            for i in range(n):
                seg = a[o, i]
                for j in range(inner):
                    acc[j] += norm_term(abs(seg[j]), p)
            for j in range(inner):
                acc[j] = norm_finish(acc[j], p)
        for j in range(inner):
            out[o, j] = acc[j]


# ---- launchers: the "cpu" kernels of var, logsumexp, norm (kernels/cpu/table.py) ------

def _rows(a3):
    """a3 (outer, n, 1) as its (outer, n) rows."""
    return a3.reshape(a3.shape[0], a3.shape[1])


def var(a3, var2, mean2, correction):
    parallel = use_parallel(a3)
    if a3.shape[2] == 1:
        (var_rows_parallel if parallel else var_rows)(_rows(a3), var2, mean2,
                                                        float(correction))
    else:
        (var_reduce_parallel if parallel else var_reduce)(a3, var2, mean2, float(correction))


def logsumexp(a3, out2):
    if a3.shape[2] == 1:
        logsumexp_rows(_rows(a3), out2)
    else:
        logsumexp_reduce(a3, out2)


def norm(a3, out2, p):
    if a3.shape[2] == 1:
        norm_rows(_rows(a3), out2, float(p))
    else:
        norm_reduce(a3, out2, float(p))
