"""Pairwise distances: the kernel behind `cdist` (and `pdist`, which takes its upper
triangle).

    for b, i, j: out[b, i, j] = (sum_k |x1[b, i, k] - x2[b, j, k]|^p)^(1/p)

(`shared.pair_distance`, float64 accumulation; p = 0, 1, 2 and inf have their own
terms.) Rows are contiguous, so the inner loop walks two rows side by side.
"""
import numba
import numpy as np

from ..halves import is_half
from ..shared import pair_distance


@numba.njit(cache=True)
def cdist_rows(x1, x2, out, p):
    """out[b, i, j] = p-distance of x1[b, i] and x2[b, j] (all C-contiguous, 3-D)."""
    for b in range(out.shape[0]):
        for i in range(out.shape[1]):
            a = x1[b, i]
            for j in range(out.shape[2]):
                out[b, i, j] = pair_distance(a, x2[b, j], p)


def cdist(x1, x2, out, p):
    """The "cpu" kernel of cdist: x1 (B, P, M), x2 (B, R, M), out (B, P, R), one float
    dtype (halves computed through float32)."""
    if is_half(x1.dtype):
        tmp = np.empty(out.shape, np.float32)
        cdist_rows(x1.astype(np.float32), x2.astype(np.float32), tmp, float(p))
        out[...] = tmp.astype(out.dtype)
    else:
        cdist_rows(x1, x2, out, float(p))
