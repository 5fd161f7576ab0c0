"""Reduction kernels. The caller moves the reduced dims last and makes the input
contiguous, so each kernel sees a 2-D (rows, n) array and reduces every row.
"""
import numba
import numpy as np

BLOCK = 1024


@numba.njit(cache=True, fastmath={"reassoc"})
def _block_sum(a, start, stop):
    s = a[start] * 0
    for i in range(start, stop):
        s += a[i]
    return s


@numba.njit(cache=True)
def sum_rows(a, out):
    """for r: out[r] = sum(a[r, :]); float32 blocks of 1024 summed in float64."""
    rows, n = a.shape
    for r in range(rows):
        row = a[r]
        acc = 0.0
        for b in range(0, n, BLOCK):
            acc += _block_sum(row, b, min(b + BLOCK, n))
        out[r] = acc
