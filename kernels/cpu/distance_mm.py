"""cdist's Euclidean distances by the matmul identity, forward and backward, for the CPU.

PyTorch computes p = 2 distances of larger inputs (P or R > 25 by default) as

    sq[b, i, j] = |x1[b, i]|^2 - 2 x1[b, i] . x2[b, j] + |x2[b, j]|^2,   out = sqrt(sq)

with one GEMM for the dot products (BLAS through NumPy, the registry's "matmul") and
these small loops around it, instead of P*R*M differences. The backward is two more
GEMMs: with w = g / out (0 where out == 0),

    dx1 = x1 * sum_j w[:, j] - w @ x2          dx2 = x2 * sum_i w[i, :] - w^T @ x1

Arrays are C-contiguous, one float dtype (float32 or float64), 3-D (B, rows, M);
norms and row/column sums are float64 (B, rows). No bounds checks: the op layer
(`nbtorch/ops/distance_mm.py`) validates shapes.
"""
import math

import numba
import numpy as np

__all__ = ["row_sq_norms", "distances_from_gram", "distance_grad_weights",
           "scaled_rows_minus"]

_FAST = {"reassoc"}      # reassociation alone vectorises the sums; NaN still propagates


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def row_sq_norms(x, out):
    """out[b, i] = sum_k x[b, i, k]**2, accumulated in float64, stored in out's dtype."""
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            row = x[b, i]
            s = 0.0
            for k in range(row.shape[0]):
                v = np.float64(row[k])
                s += v * v
            out[b, i] = s


@numba.njit(cache=True, nogil=True)
def distances_from_gram(n1, n2, gram):
    """In place, gram (B, P, R) of dot products -> distances:

        t = (n1[b, i] - 2 gram[b, i, j]) + n2[b, j]     (in the input dtype)
        gram[b, i, j] = sqrt(max(t, 1e-30)) if t > 0 else 0

    the rounding of the composite `n1 - 2 * G + n2^T`, clamped and square-rooted (a
    float64 square root rounded once to float32 is float32's own)."""
    for b in range(gram.shape[0]):
        col = n2[b]
        for i in range(gram.shape[1]):
            a = n1[b, i]
            row = gram[b, i]
            for j in range(row.shape[0]):
                t = (a - (row[j] + row[j])) + col[j]
                row[j] = math.sqrt(max(np.float64(t), 1e-30)) if t > 0 else 0.0


@numba.njit(cache=True, nogil=True, fastmath=_FAST)
def distance_grad_weights(g, out, w, s1, s2):
    """w[b, i, j] = g / out (0 where out == 0); float64 s1[b, i] = sum_j w[b, i, j] and
    s2[b, j] = sum_i w[b, i, j] (rows walked in memory order)."""
    for b in range(out.shape[0]):
        cols = s2[b]
        cols[:] = 0.0
        for i in range(out.shape[1]):
            gr = g[b, i]
            orow = out[b, i]
            wr = w[b, i]
            s = 0.0
            for j in range(orow.shape[0]):
                v = gr[j] / orow[j] if orow[j] != 0 else 0.0
                wr[j] = v
                s += wr[j]
                cols[j] += wr[j]
            s1[b, i] = s


@numba.njit(cache=True, nogil=True)
def scaled_rows_minus(x, s, mm):
    """In place: mm[b, i, k] = x[b, i, k] * s[b, i] - mm[b, i, k] (s float64)."""
    for b in range(x.shape[0]):
        for i in range(x.shape[1]):
            xr = x[b, i]
            mr = mm[b, i]
            sc = s[b, i]
            for k in range(xr.shape[0]):
                mr[k] = xr[k] * sc - mr[k]
