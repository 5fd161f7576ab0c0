"""LU factorisation with partial pivoting, per matrix, written once for both devices.

``register_jitable`` bodies (see `shared.py`): the CPU loops (`cpu/linalg.py`) and the
CUDA kernels (`cuda/linalg.py`, one thread per matrix) call them on one matrix of a
batch. They follow LAPACK's getrf/getrs conventions, which PyTorch returns:

    factor:  P A = L U in place (L unit lower, below the diagonal; U on and above it);
             pivots[j] = 1-based row swapped with row j; info = 1 + the first j with
             U[j, j] == 0 (0 if none; the factorisation still completes, as getrf's)
    solve:   x <- A^-1 x (trans: A^-T x) for x of shape (n, k), from the factors

Every inner loop walks a row (contiguous in C order): the trailing update is
``row_i[j+1:] -= l_ij * row_j[j+1:]``.
"""
import math

from numba.extending import register_jitable

__all__ = ["lu_factor_one", "lu_solve_one", "lu_det_one"]


@register_jitable
def _cabs1(v):
    """|Re v| + |Im v|: LAPACK's pivot measure (i?amax), |v| for real v."""
    return abs(v.real) + abs(v.imag)


@register_jitable
def lu_factor_one(a, pivots):
    """Factor the (m, n) matrix `a` in place; pivots has min(m, n) slots. Returns info."""
    m, n = a.shape
    info = 0
    for j in range(min(m, n)):
        p = j
        best = _cabs1(a[j, j])
        for i in range(j + 1, m):
            v = _cabs1(a[i, j])
            if v > best:
                best = v
                p = i
        pivots[j] = p + 1
        if a[p, j] != 0:
            if p != j:
                for c in range(n):
                    t = a[j, c]
                    a[j, c] = a[p, c]
                    a[p, c] = t
            d = a[j, j]
            for i in range(j + 1, m):
                a[i, j] = a[i, j] / d
        elif info == 0:
            info = j + 1
        rj = a[j, j + 1:]
        for i in range(j + 1, m):
            lij = a[i, j]
            ri = a[i, j + 1:]
            for c in range(ri.shape[0]):
                ri[c] -= lij * rj[c]
    return info


@register_jitable
def lu_solve_one(lu, pivots, x, trans):
    """x (n, k) <- A^-1 x, or A^-T x with `trans`, from A's packed factors."""
    n = lu.shape[0]
    k = x.shape[1]
    if not trans:
        for j in range(n):                          # x <- P x
            p = pivots[j] - 1
            if p != j:
                for c in range(k):
                    t = x[j, c]
                    x[j, c] = x[p, c]
                    x[p, c] = t
        for i in range(n):                          # L y = x (unit diagonal)
            xi = x[i]
            for j in range(i):
                lij = lu[i, j]
                xj = x[j]
                for c in range(k):
                    xi[c] -= lij * xj[c]
        for i in range(n - 1, -1, -1):              # U z = y
            xi = x[i]
            for j in range(i + 1, n):
                uij = lu[i, j]
                xj = x[j]
                for c in range(k):
                    xi[c] -= uij * xj[c]
            d = lu[i, i]
            for c in range(k):
                xi[c] = xi[c] / d
        return
    for i in range(n):                              # U^T y = x (forward)
        xi = x[i]
        for j in range(i):
            uji = lu[j, i]
            xj = x[j]
            for c in range(k):
                xi[c] -= uji * xj[c]
        d = lu[i, i]
        for c in range(k):
            xi[c] = xi[c] / d
    for i in range(n - 1, -1, -1):                  # L^T z = y (unit, backward)
        xi = x[i]
        for j in range(i + 1, n):
            lji = lu[j, i]
            xj = x[j]
            for c in range(k):
                xi[c] -= lji * xj[c]
    for j in range(n - 1, -1, -1):                  # x <- P^T z
        p = pivots[j] - 1
        if p != j:
            for c in range(k):
                t = x[j, c]
                x[j, c] = x[p, c]
                x[p, c] = t


@register_jitable
def lu_det_one(lu, pivots):
    """(sign, log|det|, det) of A from its packed factors (sign 0 when singular)."""
    n = lu.shape[0]
    sign = 1.0
    logabs = 0.0
    det = 1.0
    for j in range(n):
        d = lu[j, j]
        det *= d
        if pivots[j] != j + 1:
            sign = -sign
            det = -det
        if d < 0:
            sign = -sign
        elif d == 0:
            sign = 0.0
        logabs += math.log(abs(d)) if d != 0 else -math.inf
    return sign, logabs, det
