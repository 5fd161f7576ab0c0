"""Layer-norm and group-norm kernels for the CPU (batch norm is in `norm.py`).

Layouts, all C-contiguous: layer norm sees ``x2`` as ``(M, K)`` with ``K`` the
product of the normalised (last) dims; group norm sees ``x3`` as ``(N, C, S)``
and group ``g`` of sample ``n`` is the contiguous block of channels
``g*C/G .. (g+1)*C/G``. Statistics and weight/bias gradients are float64;
sums are taken in float64 around a per-row shift (one pass, no cancellation).
Each kernel has a serial and a ``parallel=True`` variant; the function of the
same name without suffix picks one by size.
"""
import math

import numba
import numpy as np

from ..shared import group_norm_input_grad, group_norm_terms
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
    for k in range(K):
        d = np.float64(row[k]) - shift
        s1 += d
        s2 += d * d
    m = s1 / K
    var = max(s2 / K - m * m, 0.0)
    return shift + m, 1.0 / math.sqrt(var + eps)


# --------------------------------------------------------------------------
# layer norm
# --------------------------------------------------------------------------

ROWS_PER_TASK = 64          # rows a parallel forward task normalises (stats, then affine)


@numba.njit(cache=True, fastmath=_FAST)
def _ln_forward_rows(x2, w, b, eps, out2, mean, rstd, r0, r1):
    """Rows r0..r1: float64 mean/rstd of each row, then, in a second sweep over the same
    rows (still in cache), out2[r, k] = (x2[r, k] - mean[r]) * rstd[r] * w[k] + b[k].
    Two simple loops vectorise; one loop doing both per row ran 2x slower."""
    for r in range(r0, r1):
        m, rs = _row_mean_rstd(x2[r], eps)
        mean[r] = m
        rstd[r] = rs
    for r in range(r0, r1):
        m = mean[r]
        rs = rstd[r]
        xr = x2[r]
        orow = out2[r]
        for k in range(xr.shape[0]):
            orow[k] = (xr[k] - m) * rs * w[k] + b[k]


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


@numba.njit(cache=True, fastmath=_FAST)
def _ln_backward_rows(dy2, x2, mean, rstd, w, gx2, gw, gb, r0, r1, compute_gx):
    """Rows r0..r1 of layer norm backward; adds into float64 ``gw``/``gb`` (K,).

    per row: xhat = (x - mean) * rstd; g = dy * w;
    gx = rstd * (g - sum(g)/K - xhat * sum(g*xhat)/K);
    gw += dy * xhat; gb += dy.
    """
    K = x2.shape[1]
    for r in range(r0, r1):
        m = mean[r]
        rs = rstd[r]
        dr = dy2[r]
        xr = x2[r]
        sg = 0.0
        sgx = 0.0
        for k in range(K):
            d = np.float64(dr[k])
            xh = (xr[k] - m) * rs
            g = d * w[k]
            sg += g
            sgx += g * xh
            gw[k] += d * xh
            gb[k] += d
        if compute_gx:
            a = sg / K
            c = sgx / K
            orow = gx2[r]
            for k in range(K):
                orow[k] = rs * (dr[k] * w[k] - a - (xr[k] - m) * rs * c)


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

@numba.njit(cache=True)
def _gn_forward_group(x3, G, w, b, eps, out3, mean, rstd, i):
    """Group i = n*G + g: stats over x3[n, g*Cg:(g+1)*Cg, :], then per-channel affine."""
    N, C, S = x3.shape
    Cg = C // G
    n = i // G
    c0 = (i - n * G) * Cg
    flat = x3[n].reshape(C * S)
    m, rs = _row_mean_rstd(flat[c0 * S:(c0 + Cg) * S], eps)
    mean[i] = m
    rstd[i] = rs
    for c in range(c0, c0 + Cg):
        a = rs * w[c]
        sh = b[c] - m * a
        xr = x3[n, c]
        orow = out3[n, c]
        for s in range(S):
            orow[s] = xr[s] * a + sh


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


@numba.njit(cache=True, fastmath=_FAST)
def _gn_backward_group(dy3, x3, mean, rstd, w, G, gx3, ds, db, i, compute_gx):
    """Group i = n*G + g of group norm backward.

    per channel c: ds[n, c] = sum_s dy*(x - mean), db[n, c] = sum_s dy;
    sum_g = sum_c w[c]*db, sum_gx = rstd * sum_c w[c]*ds  (over the group);
    gx = rstd * (w[c]*dy - sum_g/Mg - (x - mean)*rstd*sum_gx/Mg), Mg = Cg*S.
    """
    N, C, S = x3.shape
    Cg = C // G
    n = i // G
    c0 = (i - n * G) * Cg
    m = mean[i]
    rs = rstd[i]
    sum_g = 0.0
    sum_gx = 0.0
    for c in range(c0, c0 + Cg):
        gr = dy3[n, c]
        xr = x3[n, c]
        a = 0.0
        d = 0.0
        for s in range(S):
            g = np.float64(gr[s])
            d += g
            a += g * (xr[s] - m)
        ds[n, c] = a
        db[n, c] = d
        sum_g += w[c] * d
        sum_gx += w[c] * a
    if compute_gx:
        mg, proj = group_norm_terms(sum_g, sum_gx, rs, Cg * S)
        for c in range(c0, c0 + Cg):
            wc = w[c]
            gr = dy3[n, c]
            xr = x3[n, c]
            orow = gx3[n, c]
            for s in range(S):
                orow[s] = group_norm_input_grad(gr[s], xr[s], wc, m, rs, mg, proj)


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
