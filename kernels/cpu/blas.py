"""NumPy's bundled OpenBLAS, reached through ctypes for what `np.matmul` cannot say: how
many threads a product uses.

OpenBLAS picks its thread count per call from M*N*K alone (one thread up to 64^3
multiply-adds, all of them above) and, with two threads, splits one product in a
way that pays only for big ones. Measured on the project machine (2 cores, AVX-512,
OpenBLAS 0.3.31 SkylakeX kernels, float32, best of 15): 128^3 took 31.5 us on one
thread and 39 us on two; a batch of 64 such products 2.0 ms on one thread and no
less on two. While other processes kept both cores busy (load 5-7), two OpenBLAS
threads took 0.2-40 ms for the 128^3 product and 9-600 ms for the batch (its idle
workers spin with sched_yield and every call waits for a descheduled one), one
thread 31 us and 2.2 ms.

Worst are products with one short dim (a training batch of 128): at load 6, two
OpenBLAS threads took 41 ms for 128x784 @ 784x512 (0.67 ms on one thread) and 35-41
ms for 128x512 @ 512x256 (0.22 ms), while 512^3 still ran 1.7x faster on two.

On idle cores OpenBLAS's two threads split one big product better than the CPU
helper threads do (512^3: 0.95 vs 1.17 ms; the MLP step 3.1 vs 3.6 ms, load 2).

`one_thread` runs a call with OpenBLAS on one thread (the hold is counted in compiled
code, blas_hold.py, which compiled callers such as gemm_rows take directly).
kernels/cpu/matmul.py uses it for products up to `SMALL_WORK` (from 2^20 multiply-adds
split by rows over the spinning helpers, one single-threaded call per range:
kernels/cpu/gemm_rows.py, where OpenBLAS's own two threads are measured on an AMD EPYC);
it splits batches over the CPU helper threads (kernels/cpu/batch_threads.py: ranges
claimed by whichever thread is free, OpenBLAS on one thread meanwhile, the whole call on
one thread when the helpers back off); bigger single products go to OpenBLAS's own
threads, always: OpenBLAS's one- and two-thread results differ in the last bits for some
shapes (128x784 @ 784x512), so a switch on the machine's load would make a product's
value depend on the load. Measured against a Numba `prange` calling `cblas_sgemm`
through its address (an intrinsic builds the call from an integer argument, so such a
kernel caches): the same speed idle, 5-15% slower at load 6 (a statically assigned half
waits for a descheduled thread, where the helpers' ranges go to whichever thread runs),
and 1.3 s of cold compile. Without OpenBLAS (NumPy built on another BLAS) `one_thread`
just calls.

Where nbtorch loads its own copy of this library for large float32 products (on AMD
Zen 4: blas_private.py, `private_library`), `set_threads` and `one_thread` set the
thread counts of both copies together.

Tried and not adopted: OpenBLAS's own threads handed to the spinning helpers. NumPy's
OpenBLAS exports `openblas_set_threads_callback_function` (0.3.31, with the scipy_
prefix and 64_ suffix); its pthreads `exec_blas` then passes every multi-threaded call's
jobs to the callback (`exec_blas_async`, used by LAPACK's parallel factorisations, still
goes to OpenBLAS's server threads). A Numba cfunc posting jobs 1.. to the helpers gave
the same bits, but the MLP 784-512-256-10 step with Adam was never faster (in-process
A/B, blocks interleaved, 0.3 s apart so OpenBLAS's server went to sleep: compiled 3.50
-> 4.00 and 3.45 -> 3.58 ms, eager 3.54 -> 3.55 and 2.69 -> 3.02), 128x784 @ 784x512
equal back to back and 1-18% slower after 0.2-1 ms idle (the helper sleeps after 0.1
ms; OpenBLAS's server spins 2^28 ticks with `nop`s). Two traps for whoever tries again:
the level-3 jobs wait on each other, so all must run at once (a helper that went to
sleep between the wake and the post deadlocks the call unless the caller re-wakes it
until it claims its job, and no job may be taken back and run after job 0); and the
thread number a job is given indexes OpenBLAS's `thread_status` and thread buffers,
so numbers below the server's thread count hung a product within 400 switches back to
OpenBLAS's threads (numbers from 32 or 55 up, of MAX_THREADS=64, ran them all).
"""
import ctypes
import os

import numpy as np

from . import blas_hold

__all__ = ["SMALL_WORK", "OWN_ONE_THREAD_WORK", "SPLIT_MIN_WORK", "one_thread", "threads",
           "set_threads", "library", "private_library"]

SMALL_WORK = 128 ** 3             # multiply-adds per product up to which one thread is used
OWN_ONE_THREAD_WORK = 4 * 65536   # ...up to which OpenBLAS itself uses one thread
SPLIT_MIN_WORK = 1 << 19          # multiply-adds in all from which a batch is split

_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")

_get = _set = _lib = _private = None
_loaded = False
_HOLD = blas_hold.new_state()     # (state, fns): one_thread's hold (blas_hold.py)


def _address(fn):
    return ctypes.cast(fn, ctypes.c_void_p).value


def _unlock_in_child():
    """A forked child has only the thread that forked: a hold's spin lock taken by another
    thread at that moment (its nogil enter or leave) would never be released there."""
    _HOLD[0][blas_hold.LOCK] = 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_unlock_in_child)


def _load():
    """Bind OpenBLAS's thread getter and setter (found through the process's memory
    map, where NumPy loaded it); leaves them None when there is none."""
    global _get, _set, _lib, _loaded
    _loaded = True
    np.dot(np.ones((2, 2)), np.ones((2, 2)))          # NumPy loads BLAS lazily
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps
                            if "openblas" in line.lower() and ".so" in line})
    except OSError:
        return
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        get = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        set_ = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        if get is None or set_ is None:
            continue
        get.restype, get.argtypes = ctypes.c_int, []
        set_.restype, set_.argtypes = None, [ctypes.c_int]
        _get, _set, _lib = get, set_, lib
        fns = _HOLD[1]
        fns[blas_hold.GET], fns[blas_hold.SET_NUMPY] = _address(get), _address(set_)
        _bind_private(lib, path)
        return


def _bind_private(numpy_lib, path):
    """Load the private copy of `blas_private.py` where it applies; `_set` then sets the
    thread count of both copies (the private one starts at NumPy's)."""
    global _set, _private
    from . import blas_private
    try:
        lib = blas_private.load(numpy_lib, path)
    except Exception:                     # noqa: BLE001 - any failure: NumPy's copy only
        lib = None
    set_ = lib is not None and next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)),
                                    None)
    if not set_:
        return
    set_.restype, set_.argtypes = None, [ctypes.c_int]
    set_(_get())
    set_numpy = _set

    def set_both(n):
        set_numpy(n)
        set_(n)
    _set, _private = set_both, lib
    _HOLD[1][blas_hold.SET_PRIVATE] = _address(set_)


def library():
    """NumPy's OpenBLAS as a ctypes library, or None (cblas.py reads its GEMM there)."""
    if not _loaded:
        _load()
    return _lib


def private_library():
    """nbtorch's own copy of that OpenBLAS for float32 products (blas_private.py), or None
    where it does not apply."""
    if not _loaded:
        _load()
    return _private


def threads():
    """OpenBLAS's current thread count (1 without OpenBLAS)."""
    if not _loaded:
        _load()
    return _get() if _get is not None else 1


def hold():
    """(state, fns) of one_thread's hold for compiled callers (blas_hold.enter/leave), or
    None without OpenBLAS."""
    if not _loaded:
        _load()
    return _HOLD if _get is not None else None


def set_threads(n):
    """Give OpenBLAS `n` threads (`nbtorch.set_num_threads`); while calls run inside
    `one_thread`, the count they restore when the last one leaves."""
    if not _loaded:
        _load()
    if _set is None:
        return
    blas_hold.set_threads(*_HOLD, n)


def one_thread(fn, *args):
    """fn(*args) with OpenBLAS on one thread; its thread count is restored afterwards
    (by the last of several Python threads inside at once, so none restores a count
    another one set, and every call inside runs on one thread)."""
    if not _loaded:
        _load()
    if _get is None:                     # no OpenBLAS: nothing to hold
        return fn(*args)
    state, fns = _HOLD
    blas_hold.enter(state, fns)
    try:
        return fn(*args)
    finally:
        blas_hold.leave(state, fns)
