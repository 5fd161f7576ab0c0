"""Range kernels: `arange` and `linspace` fill a preallocated 1-D output."""
import numba
import numpy as np

from ..halves import is_half


@numba.njit(cache=True)
def arange_loop(out, start, step):
    """for i: out[i] = start + i * step."""
    for i in range(out.size):
        out[i] = start + i * step


@numba.njit(cache=True)
def linspace_loop(out, start, end, step):
    """for i: out[i] = start + i*step for the first half, end - (n-1-i)*step after (symmetric)."""
    n = out.size
    half = n // 2
    for i in range(n):
        if i < half:
            out[i] = start + i * step
        else:
            out[i] = end - (n - 1 - i) * step


# ---- launchers: the "cpu" kernels of arange and linspace (kernels/cpu/table.py) -------

def _half_safe(loop, out, *args):
    """Numba has no halves: fill a float32 buffer and round it into `out`."""
    if is_half(out.dtype):
        tmp = np.empty(out.shape, np.float32)
        loop(tmp, *args)
        out[...] = tmp
    else:
        loop(out, *args)


def arange(out, start, step):
    _half_safe(arange_loop, out, start, step)


def linspace(out, start, end, step):
    _half_safe(linspace_loop, out, start, end, step)
