"""Range kernels: `arange` and `linspace` fill a preallocated 1-D output."""
import numba


@numba.njit(cache=True)
def arange(out, start, step):
    """for i: out[i] = start + i * step."""
    for i in range(out.size):
        out[i] = start + i * step


@numba.njit(cache=True)
def linspace(out, start, end, step):
    """for i: out[i] = start + i*step for the first half, end - (n-1-i)*step after (symmetric)."""
    n = out.size
    half = n // 2
    for i in range(n):
        if i < half:
            out[i] = start + i * step
        else:
            out[i] = end - (n - 1 - i) * step
