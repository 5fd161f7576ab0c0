"""The CPU kernels' helper threads: split one call's work into chunks that the calling
thread and the helpers claim as they become free.

Kernels that release the GIL (NumPy ufunc loops, ``nogil`` Numba loops) run in
parallel this way without Numba's ``parallel=True`` (which doubles compile time).
A chunk goes to whichever thread asks first, so on a busy machine, where a helper
may not be scheduled for a while, the calling thread simply does more chunks: the
call degrades to the serial loop plus a few microseconds, instead of waiting for a
statically assigned half (a fixed split made 10^6-element adds 20% slower than
serial at load 5 on 2 cores).

A helper can still be descheduled in the middle of a chunk it claimed, and then the
caller waits for it: at load 6 on 2 cores that made calls of 2^21+ elements 3-4x
slower than serial (median). So callers time their serial calls per kind of call
(`record_serial`: a loop and a size class; the pace kept is a floor that rises at
most 5% a sample) and a parallel call is judged against it: slower than 0.8x the
serial pace means the helpers did not pay (they are starved of CPU, or the call is
too small for them); two such calls in a row (`STRIKES`) and `use_helpers` answers
False for the next 8, 16, ... 512 calls of that kind (they run serially, refreshing
the pace) before the helpers are tried again; a call that pays halves the next
back-off (a lucky call on a busy machine does not bring back every later stall).
One slow call alone is noise on a virtual machine: with a back-off per slow call, a
loop of 10^6-element adds (parallel 290 us, serial 420) ran 35-45% of its calls
serially after occasional 500-2,400 us outliers; with two strikes, 2% (the
resamples). The first call of a kind runs serially, to learn its pace, and so does
every `RESAMPLE`th, to keep it current.
(The caller's own chunk times are a poor measure: they include its waits for the
GIL; a kind with no serial pace, e.g. `batch_threads.py`'s, is judged by them: 0.8x
its fastest chunk times the chunk count.) Calls split by `loop_threads.py` and
`gemm_rows.py` (the spinning helpers of `spin_threads.py`, else Numba's threads) are
judged by `record_parallel`; large dense elementwise calls by the same rules compiled into
their dispatch (`spin_threads.run_dense_judged`, one judge array per kind).

    parallel_chunks(chunk, n, key, size):   for k in range(n) (on several threads): chunk(k)
"""
import itertools
import os
import queue
import threading
from time import perf_counter

__all__ = ["NUM_THREADS", "parallel_chunks", "pool", "helpers_usable", "use_helpers",
           "record_serial", "record_parallel", "unhelped", "timed", "set_num_threads"]

NUM_THREADS = max(1, min(os.cpu_count() or 1, 8))   # this thread and the helpers
MAX_BACKOFF = 512                # calls run serially after repeated starved parallel calls
RESAMPLE = 64                    # every 64th call of a kind runs serially: a fresh pace
STRIKES = 2                      # starved parallel calls in a row that start a back-off
_POOL = []
_BACKOFF = {}     # key -> [serial calls still to make, the next back-off length,
                  #         starved calls in a row]
_PACE = {}        # key -> seconds per element of the serial call
_CALLS = {}       # key -> calls that asked `use_helpers`
_COLD = set()     # keys whose last call ran serially (record_parallel)
_UNHELPED = [False]   # the parallel call now ending ran every chunk on its caller


def helpers_usable(key=None):
    """False while recent parallel calls of kind `key` found the helpers starved (see
    the module doc); callers without a key share one back-off. A keyed kind is also
    asked to run serially first and every `RESAMPLE`th call (`use_helpers`), so that
    its parallel calls are judged against its serial pace (`record_serial`)."""
    if key is None:
        return _usable(key)
    return use_helpers(key)


def use_helpers(key):
    """Whether a call of kind `key` should split over the helpers: not while they back
    off, nor before a serial call of that kind gave its pace."""
    n = _CALLS[key] = _CALLS.get(key, 0) + 1
    return n % RESAMPLE != 0 and key in _PACE and _usable(key)


def _usable(key):
    b = _BACKOFF.get(key)
    if b is not None and b[0]:
        b[0] -= 1                    # a race between threads only shifts the count by one
        return False
    return NUM_THREADS > 1


def record_serial(key, seconds, size):
    """Note the time of a serial call of kind `key` over `size` elements."""
    _COLD.add(key)
    pace = seconds / size
    old = _PACE.get(key)
    _PACE[key] = pace if old is None or pace < old else min(pace, old * 1.05)


def record_parallel(key, seconds, size, worth=1.0):
    """Judge a parallel call of kind `key` over `size` elements run by threads without a
    GIL hand-off (`loop_threads.py`, `gemm_rows.py`) against the serial pace, as
    `parallel_chunks` does but with `worth` for its 0.8: these threads cost no hand-off,
    so a call no slower than the best serial one is kept (a memory-bound 1e6 add on two
    sleeping workers runs at 0.75-0.9 of the serial floor, where serial calls typically
    take 1.1 of it; with 0.8 or 0.9 most of its calls backed off), while a descheduled
    thread still shows (its static half makes the call as slow as serial or far slower).

    The first parallel call after a serial one of its kind is not judged: Numba's
    sleeping workers wake from a core left idle meanwhile (a 1e6 add: 430-600 us
    then, 320-370 in a run of parallel calls), so judging it kept a loop of such calls
    serial for good (each back-off ended in one cold call). Nor is a call none of whose
    chunks ran on a helper (`unhelped`: each was taken back unstarted, its helper asleep
    or not scheduled): it ran as a serial call plus the posting, and the back-off is for
    helpers that claim a chunk and stall in it."""
    helped = not _UNHELPED[0]
    _UNHELPED[0] = False
    if key in _COLD:
        _COLD.discard(key)
        return
    if not helped:
        return
    pace = _PACE.get(key)
    if pace is not None:
        _record(key, seconds > worth * pace * size)


def unhelped():
    """Say that the parallel call now ending ran all its chunks on the calling thread
    (spin_threads.run): `record_parallel` leaves it unjudged."""
    _UNHELPED[0] = True


def timed(record, key, size, fn, *args):
    """fn(*args), its time handed to `record` (record_serial or record_parallel)."""
    t = perf_counter()
    fn(*args)
    record(key, perf_counter() - t, size)


def set_num_threads(n):
    """Use `n` threads (the caller and n - 1 helpers); ``nbtorch.set_num_threads`` calls
    this, so ``set_num_threads(1)`` makes elementwise kernels serial, as in PyTorch."""
    global NUM_THREADS
    NUM_THREADS = max(1, min(int(n), 8))


def _record(key, starved):
    """Judge one parallel call: `STRIKES` starved calls in a row start a back-off (one
    slow call is noise: a virtual CPU woken late, another process's burst), each next
    one doubles it; a call that pays clears the strikes and halves the next back-off."""
    b = _BACKOFF.get(key)
    if b is None:
        b = _BACKOFF[key] = [0, 0, 0]
    if starved:
        b[2] += 1
        if b[2] >= STRIKES:
            b[1] = min(max(2 * b[1], 8), MAX_BACKOFF)
            b[0] = b[1]
    else:
        b[1] //= 2
        b[2] = 0


class Helpers:
    """NUM_THREADS - 1 daemon threads, each running the jobs of one shared queue."""

    def __init__(self, n):
        self._jobs = queue.SimpleQueue()
        self.size = 0
        self.grow(n)

    def grow(self, n):
        """Start threads until there are `n`."""
        while self.size < n:
            threading.Thread(target=self._serve, name=f"nbtorch-pw{self.size}",
                             daemon=True).start()
            self.size += 1

    def _serve(self):
        get = self._jobs.get
        while True:
            get()()

    def put(self, job):
        """Run `job()` on a helper thread (fire and forget)."""
        self._jobs.put(job)



def pool():
    """The helper threads, made on first use and again in a forked child (DataLoader
    workers): threads do not survive a fork."""
    pid = os.getpid()
    if not _POOL or _POOL[0] != pid:
        _POOL[:] = [pid, Helpers(NUM_THREADS - 1)]
    elif _POOL[1].size < NUM_THREADS - 1:       # set_num_threads asked for more
        _POOL[1].grow(NUM_THREADS - 1)
    return _POOL[1]


def parallel_chunks(chunk, n_chunks, key=None, size=0):
    """Call ``chunk(k)`` for k in range(n_chunks) on this thread and the helpers, each k
    once; returns when all are done, raising the first chunk's exception if any. With
    the `key` and `size` (elements) of a call whose serial pace is known, the time is
    judged against it (see the module doc)."""
    claim = itertools.count().__next__
    finish = itertools.count(1).__next__
    all_done = threading.Lock()
    all_done.acquire()
    errors = []

    def work():
        fastest = 1e9
        k = claim()
        while k < n_chunks:
            t = perf_counter()
            try:
                chunk(k)
            except BaseException as exc:     # noqa: BLE001 - raised on the calling thread
                errors.append(exc)
            fastest = min(fastest, perf_counter() - t)
            if finish() == n_chunks:
                all_done.release()
            k = claim()
        return fastest

    helpers = pool()
    for _ in range(min(NUM_THREADS - 1, n_chunks - 1)):
        helpers.put(work)
    t0 = perf_counter()
    fastest = work()
    all_done.acquire()
    pace = _PACE.get(key) if key is not None else None           # did the helpers pay?
    serial = pace * size if pace is not None else fastest * n_chunks
    _record(key, perf_counter() - t0 > 0.8 * serial)
    if errors:
        raise errors[0]
