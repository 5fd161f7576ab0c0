"""Pairwise distances on CUDA: the contract of kernels/cpu/distance.py, one thread per
output element (grid-stride)::

    for t = (b, i, j): out[b, i, j] = shared.pair_distance(x1[b, i], x2[b, j], p)
"""
import numpy as np
from numba import cuda

from ..shared import pair_distance
from ._launch import grid

__all__ = ["cdist", "typecheck_signatures"]


@cuda.jit(cache=True)
def cdist_kernel(x1, x2, out, p):
    B, P, R = out.shape
    for t in range(cuda.grid(1), B * P * R, cuda.gridsize(1)):
        b = t // (P * R)
        r = t - b * P * R
        i = r // R
        j = r - i * R
        out[b, i, j] = pair_distance(x1[b, i], x2[b, j], p)


def cdist(x1, x2, out, p, stream=0):
    """x1 (B, P, M), x2 (B, R, M), out (B, P, R) device arrays of one float dtype
    (float16 through float32 copies)."""
    if out.size == 0:
        return
    if out.dtype == np.float16:
        from . import copy
        a, b = (cuda.device_array(x.shape, np.float32, stream=stream) for x in (x1, x2))
        tmp = cuda.device_array(out.shape, np.float32, stream=stream)
        copy.copy(a, x1, stream)
        copy.copy(b, x2, stream)
        cdist_kernel[grid(out.size) + (stream,)](a, b, tmp, float(p))
        copy.copy(out, tmp, stream)
    else:
        cdist_kernel[grid(out.size) + (stream,)](x1, x2, out, float(p))


def typecheck_signatures():
    from numba import types as nt
    for t in (nt.float32, nt.float64):
        a = nt.Array(t, 3, "C")
        yield (f"cdist[{t}]", cdist_kernel.py_func, (a, a, a, nt.float64))
