"""`set_num_threads` / `get_num_threads`: one knob for Numba's parallel loops, the CPU
helper threads of elementwise and batch-split kernels, and BLAS.

Numba's `prange` kernels, nbtorch's helper threads (kernels/cpu/workers.py, and the
spinning ones of kernels/cpu/spin_threads.py that split large elementwise calls and
mid-size products) and NumPy's bundled OpenBLAS (used by matmul and conv; found and
held in kernels/cpu/blas.py) keep separate thread pools; on a small or busy machine their
threads fight over cores, so PyTorch's single setting drives all three here.

Numba's OpenMP workers wait passively (`configure_openmp_waits`): GNU OpenMP spins
idle workers by default (300,000 rounds, ~3.5 ms of CPU after every parallel region),
which made a ~70 us parallel reduction average 2-10 ms (p90 12-24 ms) on a busy 2-core
machine. A short spin (GOMP_SPINCOUNT=10000, ~0.15 ms) reaches the workers in ~1 us
instead of a futex wake (1e6-element add on two threads 225 us vs 258-277 passive, serial
430; in a benchmark loop 345 us vs serial 510, where passive workers do not pay), but it
made the Transformer block's step 19 -> 24 ms: the spinning workers take the core that
OpenBLAS's threads and the helper threads need next (three pools on two cores). So
sleeping is the default; NBTORCH_OMP_SPINCOUNT opts into the spin. The setting is given
to Numba's OpenMP runtime alone, while Numba loads it, and the environment is put back,
so other libraries and child processes see the environment the user set.
"""
import os
import threading

__all__ = ["set_num_threads", "get_num_threads"]

WAIT_POLICY_VAR = "NBTORCH_OMP_WAIT_POLICY"
SPIN_COUNT_VAR = "NBTORCH_OMP_SPINCOUNT"
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
    """Have Numba's OpenMP workers sleep when idle (or spin briefly, on request), without
    changing the environment.

    GNU OpenMP reads OMP_WAIT_POLICY and GOMP_SPINCOUNT once, when the library loads;
    Numba loads it when its threading layer starts (the first parallel kernel, or
    numba.get_num_threads). So Numba's `_launch_threads` is wrapped: it sets them for
    that moment only and puts the environment back. OMP_WAIT_POLICY is
    $NBTORCH_OMP_WAIT_POLICY (default PASSIVE; empty: the runtime's default) unless
    $NBTORCH_OMP_SPINCOUNT asks for a spin of that many rounds (then GOMP_SPINCOUNT, no
    policy). Either variable the user set is left alone, and so is a threading layer
    that is already running.
    """
    spin = os.environ.get(SPIN_COUNT_VAR, "")
    policy = "" if spin else os.environ.get(WAIT_POLICY_VAR, "PASSIVE")
    wanted = {"OMP_WAIT_POLICY": policy, "GOMP_SPINCOUNT": spin}   # a spin asked replaces
                                                                   # the passive default
    wanted = {k: v for k, v in wanted.items() if v and k not in os.environ}
    if not wanted:
        return
    from numba.np.ufunc import parallel
    original = parallel._launch_threads
    if parallel._is_initialized or getattr(original, "_nbtorch_waits", None):
        return

    def _launch_threads():
        with _launch_lock:
            given = [k for k in wanted if k not in os.environ]    # the user's win, even now
            for k in given:
                os.environ[k] = wanted[k]
            try:
                return original()
            finally:
                for k in given:
                    del os.environ[k]
                parallel._launch_threads = original      # once started, nothing to do

    _launch_threads._nbtorch_waits = wanted
    parallel._launch_threads = _launch_threads
