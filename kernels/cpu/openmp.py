"""Whether Numba's parallel kernels (``prange``, OpenMP threads) may run in this process.

GNU OpenMP cannot run in a child forked after its threads started: Numba detects it and
kills the child ("Terminating: fork() called from a process already using GNU
OpenMP"), even with one thread. A DataLoader worker forked from a training process is
such a child. So after a fork in a process whose threading layer had started, `USABLE`
is False and every launcher picks its serial variant instead (PyTorch's DataLoader
workers run on one thread for the same reason).

    if big and openmp.USABLE: kernel_parallel(...)  else: kernel_serial(...)
"""
import os

__all__ = ["USABLE"]

USABLE = True


def _after_fork_in_child():
    global USABLE
    try:
        from numba.np.ufunc import parallel
    except ImportError:                  # pragma: no cover - Numba always has it
        return
    if parallel._is_initialized:
        USABLE = False


os.register_at_fork(after_in_child=_after_fork_in_child)
