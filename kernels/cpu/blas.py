"""NumPy's bundled OpenBLAS, reached through ctypes for the one thing `np.matmul` cannot
say: how many threads a product may use.

OpenBLAS picks its thread count per call from M*N*K alone (one thread up to 64^3
multiply-adds, all of them above). On the project machine (2 cores, AVX-512,
OpenBLAS 0.3.31 SkylakeX kernels) a 128^3 float32 product took 31.5 us on one
thread and 39 us on two (best of 15; the waking thread costs more than it saves),
and 128-200 us on two whenever another process held a core; from ~160^3 up two
threads win (160^3: 54 vs 43 us, 256^3: 215 vs 135 us). `one_thread` runs a call
with OpenBLAS's pool set to one thread and puts the count back (each ctypes call
costs ~0.2 us); the matmul launchers use it below `SMALL_WORK`.

Without a loadable OpenBLAS (NumPy built on another BLAS) everything here is a no-op.
"""
import ctypes

__all__ = ["SMALL_WORK", "OWN_ONE_THREAD_WORK", "one_thread", "threads"]

SMALL_WORK = 128 ** 3       # multiply-adds per product up to which one thread is used
OWN_ONE_THREAD_WORK = 4 * 65536   # ...up to which OpenBLAS itself uses one thread

_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")
_get = _set = None
_loaded = False


def _load():
    """Bind OpenBLAS's thread getter and setter (found through the process's memory map,
    where NumPy loaded it); leaves them None when there is none."""
    global _get, _set, _loaded
    _loaded = True
    import numpy as np
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
        if get is not None and set_ is not None:
            get.restype, get.argtypes = ctypes.c_int, []
            set_.restype, set_.argtypes = None, [ctypes.c_int]
            _get, _set = get, set_
            return


def threads():
    """OpenBLAS's current thread count (1 without OpenBLAS)."""
    if not _loaded:
        _load()
    return _get() if _get is not None else 1


def one_thread(fn, *args):
    """fn(*args) with OpenBLAS on one thread; its thread count is restored afterwards."""
    n = threads()
    if n <= 1:
        return fn(*args)
    _set(1)
    try:
        return fn(*args)
    finally:
        _set(n)
