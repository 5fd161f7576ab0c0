"""Helper threads that spin briefly between elementwise calls: a flat loop split in
chunks without waking a sleeping thread.

Numba's OpenMP workers sleep between parallel regions (nbtorch/_threads.py), so each
region pays a futex wake and a sleep each way: a 10^6-element float32 add took 177 us
on two threads against 145 serial (AMD EPYC, 2 cores; PyTorch, whose workers spin,
74-100). Letting OpenMP's workers spin (GOMP_SPINCOUNT) brings the add to ~100 us but
makes every parallel kernel's workers hold a core after it, which slows BLAS-heavy
steps (LeNet 3.15 -> 3.57 ms, a Transformer block 16.7 -> 17.6).

Here one thread per extra core runs `_serve`, a ``nogil`` Numba loop that watches a
slot of a shared int64 array for a posted chunk (a C loop address, pointers, a count;
the ufunc-loop ABI of `loop_threads.py`), runs it, and after `SPIN_SECONDS` without
work sleeps on a POSIX semaphore, inside the same nogil loop. The calling thread posts
the semaphores of the helpers that sleep (from nogil code too), posts one chunk per
helper, runs its own chunk, then takes back any chunk a helper has not started (so a
sleeping or descheduled helper costs little: the call runs as if serial) and waits for
the others. Chains of elementwise ops keep the helpers spinning; everything else sees
them asleep. `gemm_rows.py` posts ranges of a product's rows the same way.

Why a semaphore and not a `threading.Event` (what the helpers slept on before): a
thread woken from Python's Event needs the GIL to go on, and the caller holds it
whenever it is not inside a kernel, so a helper woken by one call waited for the
interpreter's switch interval (5 ms): measured on the AMD EPYC VM, an Event wake took
48 us at best (caller inside nogil code) and over 2 ms while the caller ran Python,
and in a loop of 128^3 products ~30 calls in a row after each pause ran without their
helper (whose late calls looked starved to `workers.record_parallel`, which then kept
the kind serial for up to 512 calls); a semaphore waited on in nogil code wakes in
6-27 us (p10-p90) and needs no GIL.

A slot's chunk goes FREE -> POSTED (by the caller) -> RUNNING (claimed by the helper) ->
FINISHED -> FREE (by the caller), or POSTED -> FREE when the caller takes it back. A
slot's AWAKE is 1 while its helper spins, 0 while it sleeps (or is about to), 2 once a
caller has posted its semaphore (only a caller that moves it 0 -> 2 posts, so posts and
waits pair up). The atomic loads, stores and compare-exchanges are built in LLVM IR
below. x86-64 Linux only (the spin uses `pause` and the time-stamp counter, the sleep
the C library's sem_wait); elsewhere, under NUMBA_DISABLE_JIT and with
NBTORCH_SPIN_THREADS=0, `run` returns False and the callers use Numba's OpenMP threads.
"""
import atexit
import ctypes
import os
import platform
import sys
import threading
from time import perf_counter, sleep

import numba
import numpy as np
from numba import literal_unroll, njit
from numba.extending import register_jitable

from nbtorch.kernels.cpu import blas_hold, workers
from nbtorch.kernels.cpu.atomics import call_c as _call_c, load as _load, pause as _pause
from nbtorch.kernels.cpu.atomics import store as _store, swap as _swap, ticks as _ticks
from nbtorch.kernels.cpu.loop_threads import ALIGN as _ALIGN
from nbtorch.kernels.cpu.loop_threads import call_blocked, chunk_pointers

__all__ = ["run", "run_dense", "run_dense_judged", "run_arrays_judged", "new_judge",
           "run_arrays", "run_here", "SPIN_SECONDS", "MAX_OPERANDS"]

SPIN_SECONDS = 100e-6      # a helper spins this long after its last chunk, then sleeps
MAX_OPERANDS = 8           # operands of one loop (inputs and the output)

FREE, POSTED, RUNNING, FINISHED = 0, 1, 2, 3          # a slot's chunk
# a slot's fields (int64 each); slot 0 holds the pool's lock, stop flag and the
# addresses of sem_post and sem_wait
STATE, AWAKE, ADDRESS, COUNT, NOPS, WRAP, BLOCK, POINTERS = range(8)
STEPS = POINTERS + MAX_OPERANDS
SEMAPHORE = STEPS + MAX_OPERANDS             # the address of the helper's sem_t (0: none)
SLOT = (SEMAPHORE + 1 + 7) // 8 * 8          # 24 int64: slots on cache lines of their own
LOCK, STOP_FLAG, SEM_POST, SEM_WAIT = range(4)
MAX_HELPERS = 8
SEM_BYTES = 64                               # room for a sem_t (32 bytes on x86-64 Linux)


def _semaphore_functions():
    """(sem_init, sem_post address, sem_wait address) of the C library, or None (not
    Linux, or not found)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)                 # the process's own symbols (libc)
        init, post, wait = libc.sem_init, libc.sem_post, libc.sem_wait
    except (OSError, AttributeError, TypeError):
        return None
    init.restype, init.argtypes = ctypes.c_int, [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint]
    return (init, ctypes.cast(post, ctypes.c_void_p).value,
            ctypes.cast(wait, ctypes.c_void_p).value)


ENABLED = os.environ.get("NBTORCH_SPIN_THREADS", "1").strip() != "0"   # 0: OpenMP instead
_SEMAPHORES = _semaphore_functions() if ENABLED else None
SUPPORTED = (ENABLED and platform.machine() in ("x86_64", "AMD64")
             and not numba.config.DISABLE_JIT and _SEMAPHORES is not None)


@njit(nogil=True, cache=True)
def _read_ticks():
    return _ticks()


# ---- the helper's loop and the caller's dispatch (nogil Numba) --------------------

@njit(nogil=True, cache=True)
def _run_slot(ctl, base):
    """The chunk posted in the slot at `base`."""
    nops = ctl[base + NOPS]
    call_blocked(ctl[base + ADDRESS], ctl[base + POINTERS:base + POINTERS + nops],
                 ctl[base + COUNT], ctl[base + STEPS:base + STEPS + nops], ctl[base + WRAP],
                 ctl[base + BLOCK])


@njit(nogil=True, cache=True)
def _serve(ctl, slot, budget):
    """A helper's life: run the chunks posted in `slot`, sleeping on the slot's semaphore
    after `budget` ticks without one; returns when told to stop."""
    base = slot * SLOT
    _store(ctl, base + AWAKE, 1)
    last = _ticks()
    while True:
        state = _load(ctl, base + STATE)
        if state == POSTED:
            if _swap(ctl, base + STATE, POSTED, RUNNING):
                _run_slot(ctl, base)
                _store(ctl, base + STATE, FINISHED)
            last = _ticks()
            continue
        if _load(ctl, STOP_FLAG):
            _store(ctl, base + AWAKE, 0)
            return
        if state == FREE and _ticks() - last > budget:
            _sleep(ctl, base)
            last = _ticks()
        _pause()


@njit(nogil=True, cache=True)
def _sleep(ctl, base):
    """Sleep on the slot's semaphore until a caller posts it; stay awake instead when a
    chunk was posted meanwhile and no caller has posted the semaphore yet."""
    _swap(ctl, base + AWAKE, 1, 0)          # an atomic step: ordered before the load below
    if _load(ctl, base + STATE) == POSTED and _swap(ctl, base + AWAKE, 0, 1):
        return
    _call_c(ctl[SEM_WAIT], ctl[base + SEMAPHORE])   # at once if a caller posted already
    if not _swap(ctl, base + AWAKE, 2, 1):          # woken by a caller, or else
        _swap(ctl, base + AWAKE, 0, 1)              # a signal interrupted the wait


@njit(nogil=True, cache=True)
def _wake(ctl, base):
    """Post the semaphore of the helper at slot `base` if it sleeps (once per sleep)."""
    if (ctl[base + SEMAPHORE] != 0 and _load(ctl, base + AWAKE) == 0
            and _swap(ctl, base + AWAKE, 0, 2)):
        _call_c(ctl[SEM_POST], ctl[base + SEMAPHORE])


@njit(nogil=True, cache=True)
def _dispatch(ctl, helpers, address, bases, steps, n, align, wrap, block):
    """Split the loop at `address` into one chunk for this thread and one for each of the
    first `helpers` slots, and run it: chunks a helper has not started when this thread is
    done with its own are taken back and run here. The number of chunks helpers ran (-1:
    another thread holds the pool; the whole loop ran here). `wrap`, `block`: operands
    read again every `block` elements (`loop_threads.call_blocked`)."""
    m = bases.shape[0]
    if not _swap(ctl, LOCK, 0, 1):
        call_blocked(address, bases, n, steps, wrap, block)
        return -1
    chunks = helpers + 1
    for w in range(1, chunks):
        _wake(ctl, w * SLOT)                # first: a sleeping helper takes 6-27 us to wake
    for w in range(1, chunks):
        base = w * SLOT
        lo = n * w // chunks // align * align
        hi = n if w == chunks - 1 else n * (w + 1) // chunks // align * align
        ctl[base + ADDRESS] = address
        ctl[base + COUNT] = hi - lo
        ctl[base + NOPS] = m
        ctl[base + WRAP] = wrap
        ctl[base + BLOCK] = block
        chunk_pointers(bases, steps, lo, wrap, ctl[base + POINTERS:base + POINTERS + m])
        for k in range(m):
            ctl[base + STEPS + k] = steps[k]
        if hi > lo:
            _store(ctl, base + STATE, POSTED)
    hi0 = n // chunks // align * align
    if hi0 > 0:
        call_blocked(address, bases, hi0, steps, wrap, block)
    ran = 0
    for w in range(1, chunks):
        base = w * SLOT
        if _load(ctl, base + STATE) == FREE:             # an empty chunk
            continue
        if _swap(ctl, base + STATE, POSTED, FREE):      # not started: run it here
            _run_slot(ctl, base)
            continue
        while _load(ctl, base + STATE) != FINISHED:
            _pause()
        _store(ctl, base + STATE, FREE)
        ran += 1
    _store(ctl, LOCK, 0)
    return ran


@register_jitable
def _item_steps(operands):
    """The item size of each array in the tuple `operands` (dense operands' steps)."""
    steps = np.empty(len(operands), np.int64)
    k = 0
    for x in literal_unroll(operands):
        steps[k] = x.itemsize
        k += 1
    return steps


@register_jitable
def _bases(operands):
    """The data address of each array in the tuple `operands`."""
    bases = np.empty(len(operands), np.int64)
    k = 0
    for x in literal_unroll(operands):
        bases[k] = x.ctypes.data
        k += 1
    return bases


@njit(nogil=True, cache=True)
def _dispatch_dense(ctl, helpers, address, operands, n, align, block):
    """`_dispatch` over a tuple of dense 1-D arrays of `n` elements (inputs, then an
    output that overlaps none of them), their pointers and steps read here: one compiled
    call instead of three (`loop_threads.operand_pointers`, `in_place_bits`, `_dispatch`),
    ~2 us less per call once a large call has left the caches cold."""
    return _dispatch(ctl, helpers, address, _bases(operands), _item_steps(operands), n, align,
                     0, block)


# ---- a dense call that judges itself (workers.py's rules, compiled) ------------------
# The fields of a kind's judge, a float64 array (`new_judge`): calls made, the serial pace
# (ticks per element, 0 before the first serial call), serial calls still owed to a
# back-off, the next back-off's length, starved calls in a row, whether the last call ran
# serially (the next parallel one is not judged: its helpers woke from a core left idle).
J_CALLS, J_PACE, J_OWED, J_NEXT, J_STRIKES, J_COLD = range(6)
JUDGE_FIELDS = 6
_RESAMPLE, _STRIKES, _MAX_BACKOFF = workers.RESAMPLE, workers.STRIKES, workers.MAX_BACKOFF


def new_judge():
    """The judge of one kind of `run_dense_judged` call: fresh, so its first call runs
    serially and gives the pace."""
    return np.zeros(JUDGE_FIELDS)


@njit(nogil=True, cache=True)
def judge_wants_split(judge, helpers):
    """Count a call of the kind and say whether it may split (`workers.use_helpers`):
    there are helpers, it is not a resample, the kind has a pace and no back-off is owed
    (a call that would split pays one off)."""
    calls = judge[J_CALLS] + 1.0
    judge[J_CALLS] = calls
    split = helpers > 0 and calls % _RESAMPLE != 0 and judge[J_PACE] > 0
    if split and judge[J_OWED] > 0:
        judge[J_OWED] -= 1
        return False
    return split


@njit(nogil=True, cache=True)
def judge_serial(judge, ticks, n):
    """Note a serial call of `ticks` over `n` elements (`workers.record_serial`)."""
    pace = ticks / n
    old = judge[J_PACE]
    judge[J_PACE] = pace if old <= 0 or pace < old else min(pace, old * 1.05)
    judge[J_COLD] = 1


@njit(nogil=True, cache=True)
def judge_split(judge, ran, ticks, n):
    """Judge a split call (`workers.record_parallel`, worth 1): not the first after a
    serial one, nor one no helper ran a chunk of (`ran` <= 0); slower than the serial
    pace is starved, and `STRIKES` of those in a row start a back-off, each next one
    doubling it; a call that pays clears the strikes and halves the next back-off."""
    if judge[J_COLD] != 0:
        judge[J_COLD] = 0
        return
    if ran <= 0:
        return
    if ticks > judge[J_PACE] * n:
        judge[J_STRIKES] += 1
        if judge[J_STRIKES] >= _STRIKES:
            judge[J_NEXT] = min(max(2 * judge[J_NEXT], 8), _MAX_BACKOFF)
            judge[J_OWED] = judge[J_NEXT]
    else:
        judge[J_NEXT] = judge[J_NEXT] // 2
        judge[J_STRIKES] = 0


@njit(nogil=True, cache=True)
def _dispatch_arrays_judged(ctl, helpers, address, operands, steps, n, judge):
    """`_dispatch` over the arrays of `operands` (stepping by `steps`), or the whole loop
    on this thread, as `judge` says, and the call judged on it (time-stamp ticks instead
    of seconds): one compiled call instead of ~10 Python ones and their dictionaries."""
    bases = _bases(operands)
    split = judge_wants_split(judge, helpers)
    start = _ticks()
    if split:
        ran = _dispatch(ctl, helpers, address, bases, steps, n, _ALIGN, 0, 0)
        judge_split(judge, ran, _ticks() - start, n)
    else:
        call_blocked(address, bases, n, steps, 0, 0)
        judge_serial(judge, _ticks() - start, n)


@njit(nogil=True, cache=True)
def _dispatch_dense_judged(ctl, helpers, address, operands, n, judge):
    """`_dispatch_arrays_judged` for dense operands (each steps by its item size)."""
    _dispatch_arrays_judged(ctl, helpers, address, operands, _item_steps(operands), n,
                            judge)


@njit(nogil=True, cache=True)
def _dispatch_arrays(ctl, helpers, address, operands, steps, n, align):
    """`_dispatch` over the arrays of the tuple `operands` (a loop's own layout, e.g. a
    GEMM's matrices and parameters: `steps` says how far each moves per element), their
    pointers read here (one compiled call instead of two)."""
    return _dispatch(ctl, helpers, address, _bases(operands), steps, n, align, 0, 0)


@njit(nogil=True, cache=True)
def _dispatch_arrays_held(ctl, helpers, address, operands, steps, n, align, state, fns):
    """`_dispatch_arrays` with OpenBLAS held on one thread around it (blas_hold.py: the
    hold in the same compiled call, ~1 us less than `blas.one_thread` around it)."""
    blas_hold.enter(state, fns)
    ran = _dispatch(ctl, helpers, address, _bases(operands), steps, n, align, 0, 0)
    blas_hold.leave(state, fns)
    return ran


@njit(nogil=True, cache=True)
def run_here(address, bases, steps, n, chunks, align, wrap, block):
    """The chunks `_dispatch` would make, all run on this thread (the same calls: for
    loops whose values depend on the split, a serial run that matches a split one)."""
    pointers = np.empty(bases.shape[0], np.int64)
    for c in range(chunks):
        lo = n * c // chunks // align * align
        hi = n if c == chunks - 1 else n * (c + 1) // chunks // align * align
        if hi > lo:
            chunk_pointers(bases, steps, lo, wrap, pointers)
            call_blocked(address, pointers, hi - lo, steps, wrap, block)


# ---- the threads (Python) ----------------------------------------------------------

class _Pool:
    """The control array, the helper threads and their semaphores."""

    def __init__(self):
        self.ctl = np.zeros(SLOT * (MAX_HELPERS + 1), np.int64)   # lock slot + helpers
        self.semaphores = np.zeros((MAX_HELPERS + 1) * SEM_BYTES // 8, np.int64)
        self.threads = []
        self.budget = 0
        self.lock = threading.Lock()

    def start(self, helpers):
        """Start helper threads up to `helpers`, each with a fresh semaphore."""
        with self.lock:
            if not self.budget:
                self.budget = max(1, int(SPIN_SECONDS * _tick_rate()))
            sem_init, self.ctl[SEM_POST], self.ctl[SEM_WAIT] = _SEMAPHORES
            while len(self.threads) < helpers:
                slot = len(self.threads) + 1
                address = self.semaphores.ctypes.data + slot * SEM_BYTES
                if sem_init(address, 0, 0) != 0:
                    raise OSError("sem_init failed for a helper thread's semaphore")
                self.ctl[slot * SLOT + SEMAPHORE] = address
                thread = threading.Thread(target=_serve, args=(self.ctl, slot, self.budget),
                                          name=f"nbtorch-spin-{slot}", daemon=True)
                self.threads.append(thread)
                thread.start()

    def stop(self):
        """Tell the helpers to return (at exit): spinning ones see the flag, sleeping
        ones are woken to see it."""
        self.ctl[STOP_FLAG] = 1
        for slot in range(1, len(self.threads) + 1):
            _wake(self.ctl, slot * SLOT)

    def after_fork_in_child(self):
        """The helper threads do not exist in a forked child: start afresh there (their
        semaphores are initialised again when they start)."""
        self.ctl[:] = 0
        self.threads = []
        self.lock = threading.Lock()


def _tick_rate():
    """Time-stamp counter ticks per second (measured over 5 ms)."""
    _read_ticks()                       # compiled or loaded first, outside the window
    t0, k0 = perf_counter(), _read_ticks()
    sleep(0.005)
    t1, k1 = perf_counter(), _read_ticks()
    return (k1 - k0) / (t1 - t0)


_POOL = _Pool() if SUPPORTED else None
if _POOL is not None:
    os.register_at_fork(after_in_child=_POOL.after_fork_in_child)
    atexit.register(_POOL.stop)


def _helpers(chunks, operands):
    """The helpers a call in `chunks` pieces over `operands` operands gets, their threads
    started; 0 where this pool cannot run it."""
    pool = _POOL
    if pool is None or chunks < 2 or operands > MAX_OPERANDS:
        return 0
    helpers = min(chunks - 1, MAX_HELPERS)
    if len(pool.threads) < helpers:
        pool.start(helpers)
    return helpers


def _judge(ran):
    """A call whose pieces all ran here (`ran`, `_dispatch`'s count, <= 0) tells `workers`
    so: it was a serial call plus a few microseconds, not one whose helpers starved."""
    if ran <= 0:
        workers.unhelped()


def run(address, bases, steps, n, chunks, align, wrap=0, block=0):
    """Run the C loop at `address` (ufunc-loop ABI) over `n` elements of the operands at
    `bases` (inputs then the output, `steps` bytes apart; `loop_threads.run_loop`) in
    `chunks` pieces: this thread's and the helpers' (woken first where asleep; a piece a
    helper has not started when this thread is done with its own runs here). `wrap`,
    `block`: operands read again every `block` elements. False where this pool cannot
    run it (nothing ran)."""
    helpers = _helpers(chunks, bases.shape[0])
    if not helpers:
        return False
    _judge(_dispatch(_POOL.ctl, helpers, address, bases, steps, n, align, wrap, block))
    return True


def run_dense(address, operands, n, chunks, align, block):
    """`run` for a tuple of dense 1-D arrays of `n` elements, inputs then a fresh output
    (none broadcast, none aliasing the output): what `loop_threads.run_loop` does for such
    operands, with fewer steps. False where this pool cannot run it (nothing ran)."""
    helpers = _helpers(chunks, len(operands))
    if not helpers:
        return False
    _judge(_dispatch_dense(_POOL.ctl, helpers, address, operands, n, align, block))
    return True


def run_dense_judged(address, operands, n, judge):
    """`run_dense` over `workers.NUM_THREADS` chunks (alignment and block of
    `loop_threads`), or serially, as `judge` (`new_judge`, one per kind of call: a loop
    and a size class) says, the call then judged on it as `workers` judges its kinds:
    serial first and every `workers.RESAMPLE`th call, backing off after `STRIKES`
    starved calls. Its Python was ~10 calls and a dozen dictionary lookups, 4-6 us per
    10^6-element call once the loop had left the caches cold (a float32 relu: kernel
    ~45 us). False where this pool cannot run it (nothing ran)."""
    pool = _judged_pool(operands)
    if pool is None:
        return False
    _dispatch_dense_judged(pool.ctl, workers.NUM_THREADS - 1, address, operands, n, judge)
    return True


def _judged_pool(operands):
    """The pool, its helpers started for `workers.NUM_THREADS` (at most 8 threads), or
    None where it cannot run a loop over `operands`."""
    pool = _POOL
    if pool is None or len(operands) > MAX_OPERANDS:
        return None
    if len(pool.threads) < workers.NUM_THREADS - 1:
        pool.start(workers.NUM_THREADS - 1)
    return pool


def run_arrays_judged(address, operands, steps, n, judge):
    """`run_dense_judged` for operands stepping by `steps` (`run_arrays`' layout)."""
    pool = _judged_pool(operands)
    if pool is None:
        return False
    _dispatch_arrays_judged(pool.ctl, workers.NUM_THREADS - 1, address, operands, steps, n,
                            judge)
    return True


def run_arrays(address, operands, steps, n, chunks, align, hold=None):
    """`run` with the operands given as a tuple of arrays whose data addresses are the
    loop's bases (read in the same compiled call that dispatches). `hold`: blas.hold()'s
    arrays, to run the whole call with OpenBLAS held on one thread. False where this pool
    cannot run it (nothing ran)."""
    helpers = _helpers(chunks, len(operands))
    if not helpers:
        return False
    if hold is None:
        ran = _dispatch_arrays(_POOL.ctl, helpers, address, operands, steps, n, align)
    else:
        ran = _dispatch_arrays_held(_POOL.ctl, helpers, address, operands, steps, n, align,
                                    hold[0], hold[1])
    _judge(ran)
    return True
