"""OpenBLAS held on one thread, counted in compiled code: `blas.one_thread`'s hold, callable
from ``nogil`` Numba code too (gemm_rows.py takes it inside its dispatch).

OpenBLAS's thread count is process-global, so a call that must run on one thread sets
it to 1 and restores it afterwards, and calls from several threads at once share one
hold: the first to enter saves the count and sets 1 on every copy of the library
(NumPy's and nbtorch's own, blas_private.py), the last to leave restores it. The count
lives in `state` (an int64 array: a spin lock, the holders, the saved count) and the
library's getter and setters are called by address (`fns`). Through ctypes and a
Python lock, entering and leaving cost 1.8 us, and inside gemm_rows' split 128^3
product ~3 us of its 30; the OpenBLAS calls themselves take ~10 ns in all.
"""
import ctypes
import threading

import numba
import numpy as np
from numba import njit

from .atomics import call_int, call_void_int, pause, store, swap

__all__ = ["new_state", "enter", "leave", "set_threads", "GET", "SET_NUMPY", "SET_PRIVATE"]

LOCK, HELD, SAVED = range(3)            # state's fields
GET, SET_NUMPY, SET_PRIVATE = range(3)  # fns' addresses (SET_PRIVATE 0: no private copy)


def new_state():
    """(state, fns): a zeroed hold, the addresses to be filled in by blas.py."""
    return np.zeros(8, np.int64), np.zeros(3, np.int64)


@njit(nogil=True, cache=True, inline="always")
def _lock(state):
    while not swap(state, LOCK, 0, 1):
        pause()


@njit(nogil=True, cache=True, inline="always")
def _set_all(fns, n):
    call_void_int(fns[SET_NUMPY], n)
    if fns[SET_PRIVATE] != 0:
        call_void_int(fns[SET_PRIVATE], n)


@njit(nogil=True, cache=True)
def enter(state, fns):
    """Hold OpenBLAS on one thread (the first holder saves its count and sets 1)."""
    _lock(state)
    if state[HELD] == 0:
        state[SAVED] = call_int(fns[GET])
        _set_all(fns, 1)
    state[HELD] += 1
    store(state, LOCK, 0)


@njit(nogil=True, cache=True)
def leave(state, fns):
    """End a hold (the last holder restores the saved count)."""
    _lock(state)
    state[HELD] -= 1
    if state[HELD] == 0:
        _set_all(fns, state[SAVED])
    store(state, LOCK, 0)


@njit(nogil=True, cache=True)
def set_threads(state, fns, n):
    """OpenBLAS's thread count = n, or, while held, the count the last holder restores."""
    _lock(state)
    if state[HELD] != 0:
        state[SAVED] = n
    else:
        _set_all(fns, n)
    store(state, LOCK, 0)



# ---- the same hold in Python, through ctypes (NUMBA_DISABLE_JIT=1: kernels run as Python)

_PY_LOCK = threading.Lock()


def _py_set_all(fns, n):
    for k in (SET_NUMPY, SET_PRIVATE):
        if fns[k]:
            ctypes.CFUNCTYPE(None, ctypes.c_int)(int(fns[k]))(int(n))


def _py_enter(state, fns):
    with _PY_LOCK:
        if state[HELD] == 0:
            state[SAVED] = ctypes.CFUNCTYPE(ctypes.c_int)(int(fns[GET]))()
            _py_set_all(fns, 1)
        state[HELD] += 1


def _py_leave(state, fns):
    with _PY_LOCK:
        state[HELD] -= 1
        if state[HELD] == 0:
            _py_set_all(fns, state[SAVED])


def _py_set_threads(state, fns, n):
    with _PY_LOCK:
        if state[HELD] != 0:
            state[SAVED] = n
        else:
            _py_set_all(fns, n)


if numba.config.DISABLE_JIT:
    enter, leave, set_threads = _py_enter, _py_leave, _py_set_threads
