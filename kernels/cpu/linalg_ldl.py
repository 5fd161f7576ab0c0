"""LDL^T of symmetric matrices with Bunch-Kaufman pivoting (LAPACK's sytf2/sytrs, lower
storage), as Numba loops: NumPy ships no sytrf, and PyTorch's ldl_factor is sytrf.

Contracts (raw C-contiguous float32/float64 arrays, a leading batch dim)::

    ldl_factor(a (B,n,n), pivots (B,n) int32, info (B,) int32)   in place: a -> LD
    ldl_solve(ld (B,n,n), pivots (B,n), b (B,n,k))               in place: b -> A^-1 b

Only the lower triangle of `a` is read; on return it holds L (unit diagonal implied)
and the 1x1/2x2 blocks of D, the strict upper triangle is zeroed. `pivots` are
LAPACK's: 1-based, ``p > 0`` a 1x1 block whose row was swapped with row p, a pair of
equal negatives ``-p`` a 2x2 block whose second row was swapped with row p. `info[b]`
is k > 0 when D's k-th diagonal block is exactly singular. For n up to LAPACK's block
size (64) the pivots and values are LAPACK's own; above it sytrf's blocked variant
makes the same choices up to rounding.
"""
import math

import numpy as np
from numba import njit

__all__ = ["ldl_factor", "ldl_solve"]

_ALPHA = (1.0 + math.sqrt(17.0)) / 8.0


@njit(cache=True, error_model="numpy")
def _factor_one(A, ipiv):
    """sytf2, lower: for k: choose a 1x1 or 2x2 pivot, swap, eliminate below it."""
    n = A.shape[0]
    info = 0
    k = 0
    while k < n:
        kstep = 1
        absakk = abs(A[k, k])
        imax = k
        colmax = 0.0
        for i in range(k + 1, n):
            v = abs(A[i, k])
            if v > colmax:
                colmax = v
                imax = i
        if max(absakk, colmax) == 0.0 or absakk != absakk:
            if info == 0:
                info = k + 1
            kp = k
        else:
            if absakk >= _ALPHA * colmax:
                kp = k
            else:
                rowmax = 0.0
                for j in range(k, imax):
                    rowmax = max(rowmax, abs(A[imax, j]))
                for i in range(imax + 1, n):
                    rowmax = max(rowmax, abs(A[i, imax]))
                if absakk >= _ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif abs(A[imax, imax]) >= _ALPHA * rowmax:
                    kp = imax
                else:
                    kp = imax
                    kstep = 2
            kk = k + kstep - 1
            if kp != kk:
                for i in range(kp + 1, n):
                    t = A[i, kk]
                    A[i, kk] = A[i, kp]
                    A[i, kp] = t
                for j in range(kk + 1, kp):
                    t = A[j, kk]
                    A[j, kk] = A[kp, j]
                    A[kp, j] = t
                t = A[kk, kk]
                A[kk, kk] = A[kp, kp]
                A[kp, kp] = t
                if kstep == 2:
                    t = A[k + 1, k]
                    A[k + 1, k] = A[kp, k]
                    A[kp, k] = t
            if kstep == 1:
                if k < n - 1:
                    d11 = 1.0 / A[k, k]
                    for j in range(k + 1, n):
                        f = d11 * A[j, k]
                        for i in range(j, n):
                            A[i, j] -= f * A[i, k]
                    for i in range(k + 1, n):
                        A[i, k] *= d11
            elif k < n - 2:
                d21 = A[k + 1, k]
                d11 = A[k + 1, k + 1] / d21
                d22 = A[k, k] / d21
                t = 1.0 / (d11 * d22 - 1.0)
                d21 = t / d21
                for j in range(k + 2, n):
                    wk = d21 * (d11 * A[j, k] - A[j, k + 1])
                    wkp1 = d21 * (d22 * A[j, k + 1] - A[j, k])
                    for i in range(j, n):
                        A[i, j] -= A[i, k] * wk + A[i, k + 1] * wkp1
                    A[j, k] = wk
                    A[j, k + 1] = wkp1
        if kstep == 1:
            ipiv[k] = kp + 1
        else:
            ipiv[k] = -(kp + 1)
            ipiv[k + 1] = -(kp + 1)
        k += kstep
    for i in range(n):
        for j in range(i + 1, n):
            A[i, j] = 0.0
    return info


@njit(cache=True, error_model="numpy")
def _swap_rows(B, r, s):
    for j in range(B.shape[1]):
        t = B[r, j]
        B[r, j] = B[s, j]
        B[s, j] = t


@njit(cache=True, error_model="numpy")
def _solve_one(A, ipiv, B):
    """sytrs, lower: L D Y = P B forward over the blocks, then L^T X = Y backward."""
    n, m = B.shape
    k = 0
    while k < n:
        if ipiv[k] > 0:
            kp = ipiv[k] - 1
            if kp != k:
                _swap_rows(B, k, kp)
            for i in range(k + 1, n):
                for j in range(m):
                    B[i, j] -= A[i, k] * B[k, j]
            for j in range(m):
                B[k, j] /= A[k, k]
            k += 1
        else:
            kp = -ipiv[k] - 1
            if kp != k + 1:
                _swap_rows(B, k + 1, kp)
            for i in range(k + 2, n):
                for j in range(m):
                    B[i, j] -= A[i, k] * B[k, j] + A[i, k + 1] * B[k + 1, j]
            akm1k = A[k + 1, k]
            akm1 = A[k, k] / akm1k
            ak = A[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            for j in range(m):
                bkm1 = B[k, j] / akm1k
                bk = B[k + 1, j] / akm1k
                B[k, j] = (ak * bkm1 - bk) / denom
                B[k + 1, j] = (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:
        if ipiv[k] > 0:
            for j in range(m):
                s = 0.0
                for i in range(k + 1, n):
                    s += A[i, k] * B[i, j]
                B[k, j] -= s
            kp = ipiv[k] - 1
            if kp != k:
                _swap_rows(B, k, kp)
            k -= 1
        else:
            for j in range(m):
                s0 = 0.0
                s1 = 0.0
                for i in range(k + 1, n):
                    s0 += A[i, k] * B[i, j]
                    s1 += A[i, k - 1] * B[i, j]
                B[k, j] -= s0
                B[k - 1, j] -= s1
            kp = -ipiv[k] - 1
            if kp != k:
                _swap_rows(B, k, kp)
            k -= 2


@njit(cache=True, error_model="numpy")
def _factor_batch(a, pivots, info):
    for b in range(a.shape[0]):
        info[b] = _factor_one(a[b], pivots[b])


@njit(cache=True, error_model="numpy")
def _solve_batch(ld, pivots, b):
    for i in range(b.shape[0]):
        _solve_one(ld[i], pivots[i], b[i])


def ldl_factor(a, pivots, info):
    """Factor every matrix of `a` in place (see the module contract)."""
    if a.shape[1]:
        _factor_batch(a, pivots, info)


def ldl_solve(ld, pivots, b):
    """Overwrite `b` with A^-1 b from A's factors `ld`, `pivots`."""
    if b.size:
        _solve_batch(ld, pivots.astype(np.int32, copy=False), b)
