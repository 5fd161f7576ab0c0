"""Split a kernel call over ranges of its leading (batch or plane) axis, run by the CPU
helper threads (kernels/cpu/workers.py).

Convolution and pooling run each range's work in Numba kernels compiled with
``nogil=True`` and in NumPy GEMMs (which release the GIL too), so the calling thread
and the helpers run ranges side by side, each claiming the next range when free (a
descheduled helper on a busy machine leaves its ranges to the caller; starved calls
back the helpers off, as for elementwise kernels). This beats OpenBLAS's own threads
on a convolution's per-image GEMMs (too small to split: 2 threads ran no faster than
1) and Numba's prange beside BLAS (its idle threads spinning: up to 10x slower on 2
cores). OpenBLAS is held to one thread meanwhile. The thread count is BLAS's
(`nbtorch.set_num_threads` sets both), so a one-thread setting keeps everything serial.
The ranges depend only on the size and the thread count - never on which thread ran
what, nor on the helpers' back-off (backing off, the caller runs the same ranges
itself) - so results do not depend on the machine's load.

Each kind of call (a `key`: the caller's kernel and a size class) backs off on its own:
with one shared back-off, LeNet's small convolutions, whose split does not pay, kept an
8x64x56x56 convolution serial for hundreds of calls (65 vs 35 ms).
"""
from time import perf_counter

from . import blas, workers

__all__ = ["RANGES_PER_THREAD", "threads", "ranges", "run", "over_ranges"]

RANGES_PER_THREAD = 2      # ranges to claim per thread: a slow thread leaves some to others


def threads():
    """Threads a split call may use: as many as BLAS may, and helpers exist for."""
    return min(blas.threads(), workers.NUM_THREADS)


def ranges(n, work, min_work):
    """[b0, b1) ranges covering [0, n), or None (run once, serially) when `work` is under
    `min_work` or only one thread is allowed."""
    t = min(threads(), n)
    if t <= 1 or work < min_work:
        return None
    parts = min(n, RANGES_PER_THREAD * t)
    return [(n * k // parts, n * (k + 1) // parts) for k in range(parts)]


def run(fn, parts, key=None):
    """[fn(b0, b1) for each range], run by this thread and the helpers (by this thread
    alone while calls of kind `key` back off, and on the serial calls that time the
    kind's pace), OpenBLAS held to one thread meanwhile.

    A split call is judged against the kind's serial pace (workers.py): LeNet's 64-image
    convolutions and poolings ran slower on two threads than on one (the helpers' wake-up
    and GIL hand-offs; step 3.34-3.55 vs 3.10-3.20 ms), which the old judge, a call's own
    fastest range, did not see."""
    results = [None] * len(parts)

    def chunk(k):
        results[k] = fn(*parts[k])
    if workers.helpers_usable(key):
        blas.one_thread(workers.parallel_chunks, chunk, len(parts), key, len(parts))
    else:                               # the helpers back off: the same ranges, here
        t = perf_counter()
        blas.one_thread(lambda: [chunk(k) for k in range(len(parts))])
        if key is not None:
            workers.record_serial(key, perf_counter() - t, len(parts))
    return results


def over_ranges(n, work, amount, min_work=blas.SPLIT_MIN_WORK):
    """work(b0, b1) over the ranges of [0, n) when `amount` (multiply-adds, or elements)
    reaches `min_work`, else work(0, n) once: the split as the fused attention and
    dropout kernels use it."""
    parts = ranges(n, amount, min_work)
    if parts is None:
        work(0, n)
    else:
        run(work, parts, (work.__code__, amount.bit_length()))
