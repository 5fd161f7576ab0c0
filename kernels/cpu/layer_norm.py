"""Layer-norm and group-norm kernels for the CPU (batch norm is in `norm.py`).

Layouts, all C-contiguous: layer norm sees ``x2`` as ``(M, K)`` with ``K`` the
product of the normalised (last) dims; group norm sees ``x3`` as ``(N, C, S)``
and group ``g`` of sample ``n`` is the contiguous block of channels
``g*C/G .. (g+1)*C/G``. Statistics and weight/bias gradients are float64;
sums are taken in float64 around a per-row shift (one pass, no cancellation);
the loops writing one value per element run in the input's dtype (see below).
Each kernel has a serial and a ``parallel=True`` variant; the function of the
same name without suffix picks one by size.
"""
import math

import numba
import numpy as np

from ..shared import group_norm_terms
from .norm_common import FAST as _FAST, use_parallel as _use_parallel

__all__ = ["layer_norm_forward", "layer_norm_backward", "group_norm_forward",
           "group_norm_backward"]


# --------------------------------------------------------------------------
# layer norm and group norm: row statistics shared by both
# --------------------------------------------------------------------------

@numba.njit(cache=True, fastmath=_FAST)
def _row_mean_rstd(row, eps):
    """(mean, 1/sqrt(var + eps)) of a 1-D row in one shifted float64 pass."""
    K = row.shape[0]
    shift = np.float64(row[0])
    s1 = 0.0
    s2 = 0.0
    for k in range(np.uint64(K)):         # unsigned: the loop vectorises (DESIGN.md)
        d = np.float64(row[k]) - shift
        s1 += d
        s2 += d * d
    m = s1 / K
    var = max(s2 / K - m * m, 0.0)
    return shift + m, 1.0 / math.sqrt(var + eps)


@numba.njit(cache=True, nogil=True)
def _split_mean(m, sc):
    """(hi, lo) of float64 mean ``m`` in the input's dtype (``sc``: a 2-element scratch
    array of it): ``(x - hi) - lo`` is x - m to within the dtype's rounding of the
    difference, even where |m| >> |x - m| (a rounded mean alone would lose those bits)."""
    sc[0] = m
    sc[1] = m - np.float64(sc[0])
    return sc[0], sc[1]


@numba.njit(cache=True, nogil=True)
def _to_dtype(v, sc):
    """float64 ``v`` rounded to the input's dtype (through the scratch array ``sc``)."""
    sc[0] = v
    return sc[0]


# Loops below that write one output per input element run in the input's dtype (float32
# vectors are twice as wide as float64's): the float64 per-row scalars are rounded once,
# the centring is ((x - hi) - lo). No fastmath there, so LLVM cannot fold the two
# subtractions into one. Same values as float64 loops to within float32 rounding (1-2
# ulp against float64 references, also at mean 1000, std 0.01); float64 inputs keep the
# forward's operations, the gradients' regrouped factors differ in the last bits.

# --------------------------------------------------------------------------
# layer norm
# --------------------------------------------------------------------------

ROWS_PER_TASK = 64          # rows a parallel forward task normalises (stats, then affine)


BLOCK_ROWS = 32            # rows whose statistics one call computes before their outputs


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _ln_stats_rows(x2, eps, mean, rstd, r0, r1):
    """float64 mean[r], rstd[r] of rows r0..r1 (a function of its own: the only loops
    here that need reassociation)."""
    for r in range(r0, r1):
        m, rs = _row_mean_rstd(x2[r], eps)
        mean[r] = m
        rstd[r] = rs


@numba.njit(cache=True, nogil=True)
def _ln_forward_rows(x2, w, b, eps, out2, mean, rstd, r0, r1):
    """Rows r0..r1 in blocks of BLOCK_ROWS (still in cache for the second sweep): float64
    mean/rstd, then out2[r, k] = ((x2[r, k] - hi) - lo) * rstd[r] * w[k] + b[k] in x's
    dtype (2048x128 float32: 133 -> 95 us against the float64 loop)."""
    sc = np.empty(2, x2.dtype)
    for b0 in range(r0, r1, BLOCK_ROWS):
        b1 = min(b0 + BLOCK_ROWS, r1)
        _ln_stats_rows(x2, eps, mean, rstd, b0, b1)
        for r in range(b0, b1):
            mh, ml = _split_mean(mean[r], sc)
            rs = _to_dtype(rstd[r], sc)
            xr = x2[r]
            orow = out2[r]
            for k in range(np.uint64(xr.shape[0])):
                orow[k] = ((xr[k] - mh) - ml) * rs * w[k] + b[k]


@numba.njit(cache=True)
def layer_norm_forward_serial(x2, w, b, eps, out2, mean, rstd):
    """Serial layer norm over the rows of ``x2`` (M, K); float64 mean/rstd (M,)."""
    _ln_forward_rows(x2, w, b, eps, out2, mean, rstd, int(0), x2.shape[0])


@numba.njit(cache=True, parallel=True)
def layer_norm_forward_parallel(x2, w, b, eps, out2, mean, rstd):
    """Parallel over ranges of ROWS_PER_TASK rows: same result as the serial kernel."""
    M = x2.shape[0]
    for t in numba.prange((M + ROWS_PER_TASK - 1) // ROWS_PER_TASK):
        r0 = t * ROWS_PER_TASK
        _ln_forward_rows(x2, w, b, eps, out2, mean, rstd, r0, min(r0 + ROWS_PER_TASK, M))


def layer_norm_forward(x2, w, b, eps, out2, mean, rstd):
    """Layer norm forward of ``x2`` (M, K) with affine ``w``, ``b`` (K,, x's dtype).

    Saves float64 ``mean[r]`` and ``rstd[r] = 1/sqrt(var + eps)`` for backward.

    Example:
        >>> x = np.random.rand(2, 5); out = np.empty_like(x)
        >>> layer_norm_forward(x, np.ones(5), np.zeros(5), 1e-5, out, np.empty(2), np.empty(2))
    """
    if _use_parallel(x2.size, (x2.shape[0] + ROWS_PER_TASK - 1) // ROWS_PER_TASK):
        layer_norm_forward_parallel(x2, w, b, eps, out2, mean, rstd)
    else:
        layer_norm_forward_serial(x2, w, b, eps, out2, mean, rstd)


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _ln_backward_sums(dy2, x2, mean, rstd, w, gw, gb, coef, r0, r1):
    """Rows r0..r1: coef[r - r0] = (sum(g)/K, rstd * sum(g*xhat)/K) with g = dy * w,
    xhat = (x - mean) * rstd; adds dy * xhat into gw and dy into gb (float64)."""
    K = x2.shape[1]
    for r in range(r0, r1):
        m = mean[r]
        rs = rstd[r]
        dr = dy2[r]
        xr = x2[r]
        sg = 0.0
        sgx = 0.0
        for k in range(np.uint64(K)):
            d = np.float64(dr[k])
            xh = (xr[k] - m) * rs
            g = d * w[k]
            sg += g
            sgx += g * xh
            gw[k] += d * xh
            gb[k] += d
        coef[r - r0, 0] = sg / K
        coef[r - r0, 1] = rs * sgx / K


@numba.njit(cache=True, nogil=True)
def _ln_backward_rows(dy2, x2, mean, rstd, w, gx2, gw, gb, r0, r1, compute_gx):
    """Rows r0..r1 of layer norm backward in blocks of BLOCK_ROWS; adds into float64
    ``gw``/``gb`` (K,).

    per row: xhat = (x - mean) * rstd; g = dy * w;
    gx = rstd * (g - sum(g)/K - xhat * sum(g*xhat)/K)   (in x's dtype);
    gw += dy * xhat; gb += dy   (float64).
    """
    sc = np.empty(2, x2.dtype)
    coef = np.empty((BLOCK_ROWS, 2))
    for b0 in range(r0, r1, BLOCK_ROWS):
        b1 = min(b0 + BLOCK_ROWS, r1)
        _ln_backward_sums(dy2, x2, mean, rstd, w, gw, gb, coef, b0, b1)
        if not compute_gx:
            continue
        for r in range(b0, b1):
            mh, ml = _split_mean(mean[r], sc)
            rs = _to_dtype(rstd[r], sc)
            a = _to_dtype(coef[r - b0, 0], sc)
            c = _to_dtype(coef[r - b0, 1], sc)
            dr = dy2[r]
            xr = x2[r]
            orow = gx2[r]
            for k in range(np.uint64(xr.shape[0])):
                orow[k] = rs * (dr[k] * w[k] - a - ((xr[k] - mh) - ml) * c)


@numba.njit(cache=True)
def layer_norm_backward_serial(dy2, x2, mean, rstd, w, gx2, gw, gb, compute_gx):
    """Serial layer norm backward; zeroes and fills float64 ``gw``/``gb`` (K,)."""
    gw[:] = 0.0
    gb[:] = 0.0
    _ln_backward_rows(dy2, x2, mean, rstd, w, gx2, gw, gb, int(0), x2.shape[0],
                      compute_gx)


@numba.njit(cache=True, parallel=True)
def layer_norm_backward_parallel(dy2, x2, mean, rstd, w, gx2, gw, gb, compute_gx,
                                 gw_parts, gb_parts):
    """Parallel over T = len(gw_parts) row chunks, each adding into its own part row.
    Plain loops, no array expressions (`a[:] = 0`): each would become a parfor of its own
    (they made this kernel's compile 2x longer)."""
    M = x2.shape[0]
    T = gw_parts.shape[0]
    chunk = (M + T - 1) // T
    for t in numba.prange(T):
        for k in range(gw_parts.shape[1]):
            gw_parts[t, k] = 0.0
            gb_parts[t, k] = 0.0
        r0 = t * chunk
        _ln_backward_rows(dy2, x2, mean, rstd, w, gx2, gw_parts[t], gb_parts[t],
                          min(r0, M), min(r0 + chunk, M), compute_gx)
    for k in range(gw.shape[0]):
        sw = 0.0
        sb = 0.0
        for t in range(T):
            sw += gw_parts[t, k]
            sb += gb_parts[t, k]
        gw[k] = sw
        gb[k] = sb


def layer_norm_backward(dy2, x2, mean, rstd, w, gx2, gw, gb, compute_gx=True):
    """Layer norm gradients in one kernel: ``gx2`` (M, K), float64 ``gw``/``gb`` (K,).

    Example:
        >>> x = np.random.rand(2, 5); out = np.empty_like(x); m, r = np.empty(2), np.empty(2)
        >>> layer_norm_forward(x, np.ones(5), np.zeros(5), 1e-5, out, m, r)
        >>> gx, gw, gb = np.empty_like(x), np.empty(5), np.empty(5)
        >>> layer_norm_backward(np.ones_like(x), x, m, r, np.ones(5), gx, gw, gb)
    """
    M, K = x2.shape
    threads = numba.get_num_threads()
    if _use_parallel(x2.size, M):
        T = min(M, threads)
        parts = np.empty((2, T, K))
        layer_norm_backward_parallel(dy2, x2, mean, rstd, w, gx2, gw, gb, compute_gx,
                                     parts[0], parts[1])
    else:
        layer_norm_backward_serial(dy2, x2, mean, rstd, w, gx2, gw, gb, compute_gx)


# --------------------------------------------------------------------------
# group norm
# --------------------------------------------------------------------------

@numba.njit(cache=True, nogil=True)
def _gn_forward_group(x3, G, w, b, eps, out3, mean, rstd, i):
    """Group i = n*G + g: stats over x3[n, g*Cg:(g+1)*Cg, :], then per channel c
    out3[n, c] = (x3[n, c] - mean) * (rstd * w[c]) + b[c] in x's dtype."""
    N, C, S = x3.shape
    Cg = C // G
    n = i // G
    c0 = (i - n * G) * Cg
    flat = x3[n].reshape(C * S)
    m, rs = _row_mean_rstd(flat[c0 * S:(c0 + Cg) * S], eps)
    mean[i] = m
    rstd[i] = rs
    sc = np.empty(2, x3.dtype)
    mh, ml = _split_mean(m, sc)
    for c in range(c0, c0 + Cg):
        a = _to_dtype(rs * w[c], sc)
        sh = b[c]
        xr = x3[n, c]
        orow = out3[n, c]
        for s in range(np.uint64(S)):
            orow[s] = ((xr[s] - mh) - ml) * a + sh


@numba.njit(cache=True)
def group_norm_forward_serial(x3, G, w, b, eps, out3, mean, rstd):
    """Serial group norm forward; float64 mean/rstd of shape (N*G,)."""
    for i in range(x3.shape[0] * G):
        _gn_forward_group(x3, G, w, b, eps, out3, mean, rstd, i)


@numba.njit(cache=True, parallel=True)
def group_norm_forward_parallel(x3, G, w, b, eps, out3, mean, rstd):
    """Parallel over the N*G groups: same result as the serial kernel."""
    for i in numba.prange(x3.shape[0] * G):
        _gn_forward_group(x3, G, w, b, eps, out3, mean, rstd, i)


def group_norm_forward(x3, G, w, b, eps, out3, mean, rstd):
    """Group norm forward of ``x3`` (N, C, S) in ``G`` groups, affine ``w``/``b`` (C,).

    Example:
        >>> x = np.random.rand(2, 4, 3); out = np.empty_like(x)
        >>> group_norm_forward(x, 2, np.ones(4), np.zeros(4), 1e-5, out, np.empty(4), np.empty(4))
    """
    if _use_parallel(x3.size, x3.shape[0] * G):
        group_norm_forward_parallel(x3, G, w, b, eps, out3, mean, rstd)
    else:
        group_norm_forward_serial(x3, G, w, b, eps, out3, mean, rstd)


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def _gn_group_sums(dy3, x3, m, w, ds, db, n, c0, c1):
    """Channels c0..c1 of sample n: ds[n, c] = sum_s dy*(x - m), db[n, c] = sum_s dy;
    returns (sum_c w[c]*db, sum_c w[c]*ds) (float64)."""
    sum_g = 0.0
    sum_gx = 0.0
    for c in range(c0, c1):
        gr = dy3[n, c]
        xr = x3[n, c]
        a = 0.0
        d = 0.0
        for s in range(np.uint64(xr.shape[0])):
            g = np.float64(gr[s])
            d += g
            a += g * (xr[s] - m)
        ds[n, c] = a
        db[n, c] = d
        sum_g += w[c] * d
        sum_gx += w[c] * a
    return sum_g, sum_gx


@numba.njit(cache=True, nogil=True)
def _gn_backward_group(dy3, x3, mean, rstd, w, G, gx3, ds, db, i, compute_gx):
    """Group i = n*G + g of group norm backward.

    per channel c: ds[n, c] = sum_s dy*(x - mean), db[n, c] = sum_s dy;
    sum_g = sum_c w[c]*db, sum_gx = rstd * sum_c w[c]*ds  (over the group);
    gx = rstd * (w[c]*dy - sum_g/Mg - (x - mean)*rstd*sum_gx/Mg), Mg = Cg*S, computed
    as (rstd*w[c]) * dy - (x - mean) * (rstd*proj) - rstd*mg in x's dtype.
    """
    N, C, S = x3.shape
    Cg = C // G
    n = i // G
    c0 = (i - n * G) * Cg
    m = mean[i]
    rs = rstd[i]
    sum_g, sum_gx = _gn_group_sums(dy3, x3, m, w, ds, db, n, c0, c0 + Cg)
    if not compute_gx:
        return
    mg, proj = group_norm_terms(sum_g, sum_gx, rs, Cg * S)
    sc = np.empty(2, x3.dtype)
    mh, ml = _split_mean(m, sc)
    p = _to_dtype(rs * proj, sc)
    q = _to_dtype(rs * mg, sc)
    for c in range(c0, c0 + Cg):
        a = _to_dtype(rs * w[c], sc)
        gr = dy3[n, c]
        xr = x3[n, c]
        orow = gx3[n, c]
        for s in range(np.uint64(S)):
            orow[s] = a * gr[s] - ((xr[s] - mh) - ml) * p - q


@numba.njit(cache=True)
def _gn_weight_grads(rstd, G, ds, db, gw, gb):
    """gw[c] = sum_n ds[n, c] * rstd[n, g]; gb[c] = sum_n db[n, c]."""
    N, C = ds.shape
    Cg = C // G
    gw[:] = 0.0
    gb[:] = 0.0
    for n in range(N):
        for c in range(C):
            gw[c] += ds[n, c] * rstd[n * G + c // Cg]
            gb[c] += db[n, c]


@numba.njit(cache=True)
def group_norm_backward_serial(dy3, x3, mean, rstd, w, G, gx3, ds, db, gw, gb, compute_gx):
    """Serial group norm backward; ``ds``/``db`` are float64 (N, C) scratch."""
    for i in range(x3.shape[0] * G):
        _gn_backward_group(dy3, x3, mean, rstd, w, G, gx3, ds, db, i, compute_gx)
    _gn_weight_grads(rstd, G, ds, db, gw, gb)


@numba.njit(cache=True, parallel=True)
def group_norm_backward_parallel(dy3, x3, mean, rstd, w, G, gx3, ds, db, gw, gb, compute_gx):
    """Parallel over the N*G groups, then a serial (N, C) reduction for gw/gb."""
    for i in numba.prange(x3.shape[0] * G):
        _gn_backward_group(dy3, x3, mean, rstd, w, G, gx3, ds, db, i, compute_gx)
    _gn_weight_grads(rstd, G, ds, db, gw, gb)


def group_norm_backward(dy3, x3, mean, rstd, w, G, gx3, gw, gb, compute_gx=True):
    """Group norm gradients in one kernel: ``gx3`` (N, C, S), float64 ``gw``/``gb`` (C,).

    Example:
        >>> x = np.random.rand(2, 4, 3); out = np.empty_like(x); m, r = np.empty(4), np.empty(4)
        >>> group_norm_forward(x, 2, np.ones(4), np.zeros(4), 1e-5, out, m, r)
        >>> gx, gw, gb = np.empty_like(x), np.empty(4), np.empty(4)
        >>> group_norm_backward(np.ones_like(x), x, m, r, np.ones(4), 2, gx, gw, gb)
    """
    N, C, _ = x3.shape
    scratch = np.empty((2, N, C))
    if _use_parallel(x3.size, N * G):
        group_norm_backward_parallel(dy3, x3, mean, rstd, w, G, gx3, scratch[0], scratch[1],
                                     gw, gb, compute_gx)
    else:
        group_norm_backward_serial(dy3, x3, mean, rstd, w, G, gx3, scratch[0], scratch[1],
                                   gw, gb, compute_gx)
