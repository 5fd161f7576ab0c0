"""Split a kernel call over ranges of its leading (batch) axis, run on Python threads.

Convolution and pooling run their per-range work in Numba kernels compiled with
``nogil=True`` (and NumPy's GEMMs, which release the GIL too), so plain threads run
them side by side. This beats OpenBLAS's own threads on the per-image GEMMs of a
convolution (too small to split) and Numba's prange beside BLAS (idle BLAS threads
spinning on 2 cores measured up to 10x slower). The thread count is BLAS's
(`nbtorch.set_num_threads` sets both), so a one-thread setting keeps everything serial.
"""
import os
from concurrent.futures import ThreadPoolExecutor

from . import blas

__all__ = ["threads", "ranges", "run"]

_POOL = []              # [pid, executor, workers]


def threads():
    """Threads a split call may use: as many as BLAS may."""
    return blas.threads()


def _pool(workers):
    """The worker threads, made on first use (and again in a forked child: an inherited
    pool has no threads)."""
    if not _POOL or _POOL[0] != os.getpid() or _POOL[2] < workers:
        _POOL[:] = [os.getpid(), ThreadPoolExecutor(workers, thread_name_prefix="nbtorch-split"),
                    workers]
    return _POOL[1]


def ranges(n, work, min_work):
    """[b0, b1) ranges of [0, n), one per thread, or None (run once, serially) when `work`
    is under `min_work` or only one thread is allowed."""
    t = min(threads(), n)
    if t <= 1 or work < min_work:
        return None
    return [(n * k // t, n * (k + 1) // t) for k in range(t)]


def run(fn, parts):
    """[fn(b0, b1) for each range], the first in this thread and the others on the pool,
    with OpenBLAS held to one thread meanwhile."""
    def go():
        futures = [_pool(len(parts) - 1).submit(fn, b0, b1) for b0, b1 in parts[1:]]
        first = fn(*parts[0])
        return [first] + [f.result() for f in futures]
    return blas.one_thread(go)
