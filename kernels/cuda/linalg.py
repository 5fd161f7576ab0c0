"""Batched small dense linear algebra on CUDA: one thread per matrix.

The LU bodies of `kernels/lu.py` (the CPU's loops call the same ones) run in a thread
per matrix of the batch, on a scratch copy in global memory: fine for many small
systems (the common case on a GPU: per-sample solves, covariance matrices), slow for
one big matrix (no blocked, multi-thread factorisation here). Contracts of
`kernels/cpu/linalg.py` plus ``stream=``::

    lu_factor(a, lu, pivots, info), lu_solve(lu, pivots, b, out, trans)   (complex too)
    solve(a, b, out, info), inv(a, out, info), det(a, out), slogdet(a, sign, logabs)

QR, eigh, SVD, least squares and Cholesky have no CUDA kernel (LAPACK-class
algorithms; tests/cuda/test_parity.py lists them).
"""
import numpy as np
from numba import cuda

from nbtorch.kernels.lu import lu_det_one, lu_factor_one, lu_solve_one
from ._launch import grid

__all__ = ["lu_factor", "lu_solve", "solve", "inv", "det", "slogdet", "typecheck_signatures"]


@cuda.jit(cache=True)
def lu_factor_kernel(a, pivots, info):
    """for b (grid-stride): info[b] = getrf(a[b]) in place."""
    for b in range(cuda.grid(1), a.shape[0], cuda.gridsize(1)):
        info[b] = lu_factor_one(a[b], pivots[b])


@cuda.jit(cache=True)
def lu_solve_kernel(lu, pivots, x, trans):
    """for b: x[b] <- A_b^-1 x[b] (A_b^-T with trans) from the packed factors."""
    for b in range(cuda.grid(1), lu.shape[0], cuda.gridsize(1)):
        lu_solve_one(lu[b], pivots[b], x[b], trans)


@cuda.jit(cache=True)
def identity_kernel(out):
    """out[b] = I for every b (grid-stride over all elements)."""
    n = out.shape[1]
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        b = t // (n * n)
        r = t - b * n * n
        i = r // n
        out[b, i, r - i * n] = 1.0 if i == r - i * n else 0.0


@cuda.jit(cache=True)
def det_kernel(lu, pivots, sign, logabs, det, want_det):
    """for b: the determinant (want_det) or its sign and log|.| from the factors."""
    for b in range(cuda.grid(1), lu.shape[0], cuda.gridsize(1)):
        s, l, d = lu_det_one(lu[b], pivots[b])
        if want_det:
            det[b] = d
        else:
            sign[b] = s
            logabs[b] = l


def _factor(a, stream):
    """(lu, pivots, info) device arrays of a's factorisation (a left untouched)."""
    lu = cuda.device_array(a.shape, a.dtype, stream=stream)
    lu.copy_to_device(a, stream=stream)
    pivots = cuda.device_array(a.shape[:2], "int32", stream=stream)
    info = cuda.device_array(a.shape[0], "int32", stream=stream)
    lu_factor_kernel[grid(a.shape[0]) + (stream,)](lu, pivots, info)
    return lu, pivots, info


def lu_factor(a, lu, pivots, info, stream=0):
    if a.shape[0] == 0:
        return
    lu.copy_to_device(a, stream=stream)
    lu_factor_kernel[grid(a.shape[0]) + (stream,)](lu, pivots, info)


def lu_solve(lu, pivots, b, out, trans=False, stream=0):
    if out.size == 0:
        return
    out.copy_to_device(b, stream=stream)
    with np.errstate(all="ignore"):         # the simulator's NumPy scalars: singular A
        lu_solve_kernel[grid(lu.shape[0]) + (stream,)](lu, pivots, out, bool(trans))


def solve(a, b, out, info, stream=0):
    if a.shape[0] == 0 or out.size == 0:
        return
    lu, pivots, inf = _factor(a, stream)
    info.copy_to_device(inf, stream=stream)
    lu_solve(lu, pivots, b, out, False, stream)


def inv(a, out, info, stream=0):
    if a.shape[0] == 0 or out.size == 0:
        return
    lu, pivots, inf = _factor(a, stream)
    info.copy_to_device(inf, stream=stream)
    identity_kernel[grid(out.size) + (stream,)](out)
    with np.errstate(all="ignore"):
        lu_solve_kernel[grid(a.shape[0]) + (stream,)](lu, pivots, out, False)


def det(a, out, stream=0):
    if a.shape[0] == 0:
        return
    lu, pivots, _ = _factor(a, stream)
    det_kernel[grid(a.shape[0]) + (stream,)](lu, pivots, out, out, out, True)


def slogdet(a, sign, logabs, stream=0):
    if a.shape[0] == 0:
        return
    lu, pivots, _ = _factor(a, stream)
    det_kernel[grid(a.shape[0]) + (stream,)](lu, pivots, sign, logabs, sign, False)


def typecheck_signatures():
    from numba import types as nt
    piv = nt.Array(nt.int32, 2, "C")
    info = nt.Array(nt.int32, 1, "C")
    for t in (nt.float32, nt.float64):
        a3 = nt.Array(t, 3, "C")
        a1 = nt.Array(t, 1, "C")
        yield (f"lu_factor[{t}]", lu_factor_kernel.py_func, (a3, piv, info))
        yield (f"lu_solve[{t}]", lu_solve_kernel.py_func, (a3, piv, a3, nt.boolean))
        yield (f"identity[{t}]", identity_kernel.py_func, (a3,))
        yield (f"det[{t}]", det_kernel.py_func, (a3, piv, a1, a1, a1, nt.boolean))
    for t in (nt.complex64, nt.complex128):           # lu_factor / lu_solve of complex
        a3 = nt.Array(t, 3, "C")
        yield (f"lu_factor[{t}]", lu_factor_kernel.py_func, (a3, piv, info))
        yield (f"lu_solve[{t}]", lu_solve_kernel.py_func, (a3, piv, a3, nt.boolean))
