"""`set_num_threads` / `get_num_threads`: one knob for Numba's parallel loops and BLAS.

Numba's `prange` kernels and NumPy's bundled OpenBLAS (used by matmul and conv)
keep separate thread pools; on a small or busy machine their spinning threads
fight over cores, so PyTorch's single setting drives both here.
"""
import ctypes

__all__ = ["set_num_threads", "get_num_threads"]

_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")


def _openblas():
    """NumPy's loaded OpenBLAS library, or None (found through the process's memory map)."""
    import numpy as np
    np.dot(np.ones((2, 2)), np.ones((2, 2)))      # make sure BLAS is loaded
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps
                     if "openblas" in line.lower() and ".so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if any(hasattr(lib, s) for s in _SETTERS):
            return lib
    return None


def _call(lib, names, *args):
    for name in names:
        fn = getattr(lib, name, None) if lib is not None else None
        if fn is not None:
            return fn(*args)
    return None


def set_num_threads(n):
    """Use `n` threads for parallel Numba kernels and for BLAS (matmul, conv)."""
    import numba
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads expects a positive integer, got {n!r}")
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    _call(_openblas(), _SETTERS, ctypes.c_int(n))


def get_num_threads():
    """The number of threads parallel Numba kernels use."""
    import numba
    return numba.get_num_threads()
