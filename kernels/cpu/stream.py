"""Flat loops of the cheapest elementwise bodies (add, sub, mul, div, relu) at 256-bit
vectors, for the split path of large dense calls (`cpu/ufuncs.py`'s `dense_call`).

A 10^6-element float32 ``a + b`` streams 12 MB through L3: its speed is the caches'
bandwidth, not the arithmetic. There the ufunc loop Numba builds, at the 512-bit vectors
LLVM prefers for AMD Zen 4 (which splits each such operation in two halves), ran ~6%
slower than the same loop at 256 bits (`simd.py`'s streaming note). Each loop here is
``out[i] = body(x[i], y[i])`` (or ``body(x[i])``) over 1-D contiguous operands of one
dtype, float32 and float64 picked by the item size, behind NumPy's ufunc-loop ABI so the
spinning helpers run it in chunks (`loop_threads.cfunc_address`):

    loop(char **args, intp *n, intp *steps, void *data):  args = (inputs..., out)

The bodies are the ufuncs' own (`inplace.BINARY`), one IEEE operation per element, so
the bits are the ufunc loop's. The wrappers are written out one per body, not made by a
factory: a cfunc built in a closure misses Numba's disk cache (DESIGN.md).
"""
import numpy as np
from numba import carray, njit

from nbtorch.kernels.cpu import loop_threads
from nbtorch.kernels.cpu.inplace import BINARY, BODY_OPTIONS as _BODY, _relu
from nbtorch.kernels.cpu.simd import _own_function_with_256bit_vectors as _narrow

__all__ = ["address", "BODIES"]

_add, _sub, _mul, _div = BINARY["add"], BINARY["sub"], BINARY["mul"], BINARY["div"]


@njit(inline="always", **_BODY)
def _binary(body, args, n, dtype):
    x, y = carray(args[0], (n,), dtype), carray(args[1], (n,), dtype)
    out = carray(args[2], (n,), dtype)
    for i in range(n):
        out[i] = body(x[i], y[i])


@njit(inline="always", **_BODY)
def _either(body, args, n, steps):
    if steps[0] == 4:
        _binary(body, args, n, np.float32)
    else:
        _binary(body, args, n, np.float64)


def _add_loop(args, n, steps, data):
    _narrow()
    _either(_add, args, n[0], steps)


def _sub_loop(args, n, steps, data):
    _narrow()
    _either(_sub, args, n[0], steps)


def _mul_loop(args, n, steps, data):
    _narrow()
    _either(_mul, args, n[0], steps)


def _div_loop(args, n, steps, data):
    _narrow()
    _either(_div, args, n[0], steps)


@njit(inline="always", **_BODY)
def _unary(body, args, n, dtype):
    x, out = carray(args[0], (n,), dtype), carray(args[1], (n,), dtype)
    for i in range(n):
        out[i] = body(x[i])


def _relu_loop(args, n, steps, data):
    _narrow()
    if steps[0] == 4:
        _unary(_relu, args, n[0], np.float32)
    else:
        _unary(_relu, args, n[0], np.float64)


_LOOPS = {"add": _add_loop, "sub": _sub_loop, "mul": _mul_loop, "div": _div_loop,
          "relu": _relu_loop}
_TYPES = {"add": ("ff->f", "dd->d"), "sub": ("ff->f", "dd->d"), "mul": ("ff->f", "dd->d"),
          "div": ("ff->f", "dd->d"), "relu": ("f->f", "d->d")}
BODIES = frozenset(_LOOPS)


def address(name, types):
    """The C address of body `name`'s streaming loop when it has one for ufunc types
    `types` ('ff->f', 'dd->d'; compiled, or loaded from the disk cache, on first use),
    else 0."""
    if types not in _TYPES.get(name, ()):
        return 0
    return loop_threads.cfunc_address(_LOOPS[name])
