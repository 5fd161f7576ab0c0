"""Sobol' sequences (Bratley & Fox, Algorithm 659; Joe & Kuo direction numbers) as
PyTorch's `SobolEngine` runs them, so unscrambled draws are bit for bit PyTorch's.

A dimension ``d`` keeps 30 direction numbers ``v[d, b]`` (30-bit integers, bit ``b``
of the index walked in Gray-code order) and a running integer point ``quasi[d]``.
Point ``k + 1`` follows point ``k`` by one XOR::

    l = number of trailing one bits of k          # the Gray code's changed bit
    quasi[d] ^= v[d, l]; out[k, d] = quasi[d] * 2**-30

Arrays in, arrays out: the engine (`nbtorch.quasirandom`) owns the tensors.
"""
import numba
import numpy as np

__all__ = ["MAXBIT", "init_direction_numbers", "scramble", "draw", "fast_forward"]

MAXBIT = 30
_RECIPD = 1.0 / (1 << MAXBIT)


@numba.njit(cache=True)
def _trailing_ones(k):
    """Count of the trailing one bits of k >= 0 (the Gray code's bit to flip)."""
    z = 0
    while k & 1:
        k >>= 1
        z += 1
    return z


@numba.njit(cache=True)
def init_direction_numbers(poly, vinit, out):
    """Fill `out` (int64, dimension x MAXBIT) with the scaled direction numbers.

    Row 0 is all ones. Row d >= 1 starts with the s = deg(poly[d]) initial numbers
    ``vinit[d, :s]`` and continues by Bratley & Fox's recurrence::

        v[j] = v[j - s] ^ sum_{k < s, bit (s-1-k) of poly set} 2**(k+1) v[j-k-1]

    then column b is multiplied by 2**(MAXBIT - 1 - b).
    """
    dim = out.shape[0]
    for b in range(MAXBIT):
        out[0, b] = 1
    for d in range(1, dim):
        p = poly[d]
        s = 0
        while (p >> (s + 1)) > 0:
            s += 1
        for i in range(s):
            out[d, i] = vinit[d, i]
        for j in range(s, MAXBIT):
            newv = out[d, j - s]
            pow2 = 1
            for k in range(s):
                pow2 <<= 1
                if (p >> (s - 1 - k)) & 1:
                    newv ^= pow2 * out[d, j - k - 1]
            out[d, j] = newv
    for d in range(dim):
        for b in range(MAXBIT):
            out[d, b] <<= MAXBIT - 1 - b


@numba.njit(cache=True)
def scramble(sobolstate, ltm):
    """Owen's linear matrix scramble of the direction numbers, in place.

    `ltm` (int64 0/1, dimension x MAXBIT x MAXBIT) holds random bits per dimension, of
    which the strict lower triangle is used and the diagonal taken as 1. Row p of matrix d read as a
    30-bit number ``r[p] = sum_k ltm[d, p, k] 2**(MAXBIT-1-k)``; each direction number
    v becomes ``sum_p parity(r[p] & v) 2**(MAXBIT-1-p)``.
    """
    dim = sobolstate.shape[0]
    rows = np.empty(MAXBIT, np.int64)
    for d in range(dim):
        for p in range(MAXBIT):
            r = 0
            for k in range(p):
                r += ltm[d, p, k] << (MAXBIT - 1 - k)
            r += 1 << (MAXBIT - 1 - p)
            rows[p] = r
        for j in range(MAXBIT):
            v = sobolstate[d, j]
            t = 0
            for p in range(MAXBIT):
                x = rows[p] & v
                par = 0
                while x:
                    par ^= 1
                    x &= x - 1
                t += par << (MAXBIT - 1 - p)
            sobolstate[d, j] = t


@numba.njit(cache=True)
def draw(quasi, sobolstate, num_generated, out):
    """Write the next ``out.shape[0]`` points into `out` (float32 or float64, n x
    dimension), advancing `quasi` in place; `num_generated` is the Gray-code index of
    the point `quasi` holds. Each value is the integer rounded to out's dtype, then
    scaled by 2**-30 (exact), as PyTorch computes it."""
    n, dim = out.shape
    for i in range(n):
        l = _trailing_ones(num_generated + i)
        for j in range(dim):
            quasi[j] ^= sobolstate[j, l]
            out[i, j] = quasi[j]
        for j in range(dim):
            out[i, j] *= _RECIPD


@numba.njit(cache=True)
def fast_forward(quasi, sobolstate, num_generated, n):
    """Advance `quasi` in place by n points without writing them."""
    dim = quasi.shape[0]
    for i in range(n):
        l = _trailing_ones(num_generated + i)
        for j in range(dim):
            quasi[j] ^= sobolstate[j, l]
