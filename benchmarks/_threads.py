"""`--threads N` for the benchmark scripts: import this before NumPy, Numba or torch.

The thread counts of BLAS, OpenMP and Numba are read when those libraries load,
so the environment must be set first; `THREADS` is N (None without the flag).
"""
import os
import sys


def _threads_from_argv():
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return int(sys.argv[i + 1])
    return None


THREADS = _threads_from_argv()
if THREADS:
    for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "NUMBA_NUM_THREADS",
                 "MKL_NUM_THREADS"):
        os.environ[_var] = str(THREADS)
