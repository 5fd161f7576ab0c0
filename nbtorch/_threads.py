"""`set_num_threads` / `get_num_threads`: one knob for Numba's parallel loops, the CPU
helper threads of elementwise and batch-split kernels, and BLAS.

Numba's `prange` kernels, nbtorch's helper threads (kernels/cpu/workers.py) and
NumPy's bundled OpenBLAS (used by matmul and conv; found and held in
kernels/cpu/blas.py) keep separate thread pools; on a small or busy machine their
threads fight over cores, so PyTorch's single setting drives all three here.

Numba's OpenMP workers wait passively (`configure_openmp_waits`): GNU OpenMP spins
idle workers by default, which made a ~70 us parallel reduction average 2-10 ms (p90
12-24 ms) on a busy 2-core machine; sleeping workers average 70-400 us. The policy is
given to Numba's OpenMP runtime alone, while Numba loads it, and the environment is
put back, so other libraries and child processes see the environment the user set.
"""
import os
import threading

__all__ = ["set_num_threads", "get_num_threads"]

WAIT_POLICY_VAR = "NBTORCH_OMP_WAIT_POLICY"
_launch_lock = threading.Lock()


def set_num_threads(n):
    """Use `n` threads for parallel Numba kernels, elementwise kernels and BLAS (matmul, conv)."""
    import numba
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads expects a positive integer, got {n!r}")
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    from .kernels.cpu import blas, workers  # OpenBLAS (found and held there), and the
    blas.set_threads(n)                     # elementwise kernels' helper threads
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
