"""`set_num_threads` / `get_num_threads`: one knob for Numba's parallel loops and BLAS.

Numba's `prange` kernels and NumPy's bundled OpenBLAS (used by matmul and conv)
keep separate thread pools; on a small or busy machine their spinning threads
fight over cores, so PyTorch's single setting drives both here.

Numba's OpenMP workers wait passively (`configure_openmp_waits`): GNU OpenMP spins
idle workers by default, which made a ~70 us parallel reduction average 2-10 ms (p90
12-24 ms) on a busy 2-core machine; sleeping workers average 70-400 us. The policy is
given to Numba's OpenMP runtime alone, while Numba loads it, and the environment is
put back, so other libraries and child processes see the environment the user set.
"""
import ctypes
import os
import threading

__all__ = ["set_num_threads", "get_num_threads"]

WAIT_POLICY_VAR = "NBTORCH_OMP_WAIT_POLICY"
_launch_lock = threading.Lock()

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
    """Use `n` threads for parallel Numba kernels, elementwise kernels and BLAS (matmul, conv)."""
    import numba
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads expects a positive integer, got {n!r}")
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    _call(_openblas(), _SETTERS, ctypes.c_int(n))
    from .kernels.cpu import workers        # the elementwise kernels' helper threads
    workers.set_num_threads(n)


def get_num_threads():
    """The number of threads parallel Numba kernels use."""
    import numba
    return numba.get_num_threads()


def configure_openmp_waits():
    """Have Numba's OpenMP workers wait passively, without changing the environment.

    GNU OpenMP reads OMP_WAIT_POLICY once, when the library loads; Numba loads it when
    its threading layer starts (the first parallel kernel, or numba.get_num_threads).
    So Numba's `_launch_threads` is wrapped: it sets OMP_WAIT_POLICY for that moment
    only and puts the environment back. The policy is $NBTORCH_OMP_WAIT_POLICY
    (default PASSIVE; empty: the runtime's own default). An OMP_WAIT_POLICY the user
    set is left alone, and so is a threading layer that is already running.
    """
    policy = os.environ.get(WAIT_POLICY_VAR, "PASSIVE")
    if not policy or "OMP_WAIT_POLICY" in os.environ:
        return
    from numba.np.ufunc import parallel
    original = parallel._launch_threads
    if parallel._is_initialized or getattr(original, "_nbtorch_policy", None):
        return

    def _launch_threads():
        with _launch_lock:
            if "OMP_WAIT_POLICY" in os.environ:          # set by the user meanwhile
                return original()
            os.environ["OMP_WAIT_POLICY"] = policy
            try:
                return original()
            finally:
                del os.environ["OMP_WAIT_POLICY"]
                parallel._launch_threads = original      # once started, nothing to do

    _launch_threads._nbtorch_policy = policy
    parallel._launch_threads = _launch_threads
