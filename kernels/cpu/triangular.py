"""Cholesky factorisation and triangular solves over a batch of small matrices.

Raw arrays in, raw arrays out; the op layer (`nbtorch/ops/linalg_triangular.py`)
broadcasts the batch, makes the operands C-contiguous ``(batch, n, n)`` /
``(batch, n, k)`` and allocates every output. Both loops walk rows, so the
innermost loop reads contiguous memory.
"""
import math

from numba import njit

__all__ = ["cholesky", "solve_triangular"]


@njit(cache=True)
def cholesky(a, out, info):
    """Lower Cholesky factor of each a[b] (its lower triangle is read), column by column::

        for b, j:   d = Re a[b,j,j] - sum_k<j |out[b,j,k]|**2;  stop with info[b] = j+1 if d <= 0
                    out[b,j,j] = sqrt(d)
                    out[b,i,j] = (a[b,i,j] - sum_k<j out[b,i,k] conj(out[b,j,k])) / out[b,j,j]

    `out` must arrive zero-filled (the upper triangle stays 0); info[b] = 0 on success,
    else the order of the first leading minor that is not positive-definite.
    """
    n = a.shape[1]
    for b in range(a.shape[0]):
        info[b] = 0
        for j in range(n):
            d = a[b, j, j].real                 # the same loop serves complex (Hermitian) a
            for k in range(j):
                v = out[b, j, k]
                d -= (v * v.conjugate()).real
            if not d > 0:                     # also catches NaN
                info[b] = j + 1
                break
            d = math.sqrt(d)
            out[b, j, j] = d
            for i in range(j + 1, n):
                t = a[b, i, j]
                for k in range(j):
                    t -= out[b, i, k] * out[b, j, k].conjugate()
                out[b, i, j] = t / d


@njit(cache=True)
def solve_triangular(a, rhs, out, upper, unit):
    """X with a[b] X = rhs[b] for triangular a[b] (only that triangle is read)::

        lower: for i = 0..n-1:  out[b,i,:] = (rhs[b,i,:] - sum_j<i a[b,i,j] out[b,j,:]) / a[b,i,i]
        upper: for i = n-1..0:  the same with j > i

    With `unit` the diagonal is taken as 1 (not read).
    """
    n = a.shape[1]
    m = rhs.shape[2]
    for b in range(a.shape[0]):
        for step in range(n):
            i = n - 1 - step if upper else step
            lo = i + 1 if upper else 0
            hi = n if upper else i
            for c in range(m):
                out[b, i, c] = rhs[b, i, c]
            for j in range(lo, hi):
                aij = a[b, i, j]
                for c in range(m):
                    out[b, i, c] -= aij * out[b, j, c]
            if not unit:
                d = a[b, i, i]
                for c in range(m):
                    out[b, i, c] /= d
