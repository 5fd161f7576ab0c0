"""Range kernels: `arange` and `linspace` fill a preallocated contiguous 1-D device array.

float16 outputs compute in float64/int64 and convert on the store.
"""
from numba import cuda

from ._launch import grid

__all__ = ["arange", "linspace"]


@cuda.jit(cache=True)
def arange_kernel(out, start, step):
    """for i (grid-stride): out[i] = start + i * step."""
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = start + i * step


@cuda.jit(cache=True)
def linspace_kernel(out, start, end, step):
    """for i: out[i] = start + i*step in the first half, end - (n-1-i)*step after (symmetric)."""
    n = out.size
    half = n // 2
    for i in range(cuda.grid(1), n, cuda.gridsize(1)):
        if i < half:
            out[i] = start + i * step
        else:
            out[i] = end - (n - 1 - i) * step


def arange(out, start, step, stream=0):
    """Launcher: out[i] = start + i * step (floats for float outputs, ints otherwise: one
    compiled signature per kind)."""
    kind = float if out.dtype.kind == "f" else int
    if out.size:
        arange_kernel[grid(out.size) + (stream,)](out, kind(start), kind(step))


def linspace(out, start, end, step, stream=0):
    """Launcher: `out.size` evenly spaced values from start to end inclusive."""
    if out.size:
        linspace_kernel[grid(out.size) + (stream,)](out, float(start), float(end),
                                                     float(step))


def typecheck_signatures():
    """arange/linspace for every output dtype the creation functions produce."""
    from numba import types as nt
    for dt in (nt.float16, nt.float32, nt.float64):
        out = nt.Array(dt, 1, "C")
        yield (f"arange[{dt}]", arange_kernel.py_func, (out, nt.float64, nt.float64))
        yield (f"linspace[{dt}]", linspace_kernel.py_func,
               (out, nt.float64, nt.float64, nt.float64))
    for dt in (nt.int8, nt.int16, nt.int32, nt.int64, nt.uint8):
        yield (f"arange[{dt}]", arange_kernel.py_func, (nt.Array(dt, 1, "C"), nt.int64,
                                                          nt.int64))
