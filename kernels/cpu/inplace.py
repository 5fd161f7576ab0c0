"""In-place elementwise loops over one contiguous array, ``x[i] = body(x[i], y[i])`` (or a
scalar `y`, or a unary body), split over the spinning helpers like the other loops.

The general loops take the output and each input as separate pointers. When the output
is an input (``x.add_(y)``, ``x += y``, ``x.relu_()``), LLVM's run-time check that the
output overlaps no input fails and the vectorised loop is skipped for the scalar one:
a 10^6-element float32 ``x.add_(y)`` through the ufunc loop took 315-365 us on one
thread (NumPy's own in-place add: 95); `loop_threads` works around it by copying each
block of the input first, which made it 93 us on two threads against PyTorch's 50-56
(``x.relu_()``: 75-94 against 27-37). Here the output and the input are one array in
the loop's source, so no check stands between it and its vectors, 512 bits wide
(`simd.py`): x.add_(y) 50-60 us, x.mul_(1.5) 32-46, x.relu_() 39-43 (PyTorch 50-55,
26-40, 26-39; interleaved runs on the AMD EPYC, 2 threads).

Each loop has the ufunc-loop ABI of `loop_threads` (``args = (x, y)``: y's step is
0 for a scalar, read once per chunk, and `SELF` where y is x itself, read as x: 1024x512
float32 ``x.add_(x)`` 66 -> 30 us), one per body, float32 and float64 picked by the
item size (the wrappers are written out one per body: a cfunc made in a closure misses
Numba's disk cache). Same bits as the ufunc: the same body, one element at a time.
"""
import numpy as np
from numba import carray, njit

from nbtorch.kernels import scalar, scalar_activation
from nbtorch.kernels.cpu import loop_threads, openmp, spin_threads, workers
from nbtorch.kernels.cpu.simd import _own_function_with_512bit_vectors as _wide

__all__ = ["BODIES", "BINARY", "BODY_OPTIONS", "run"]

BODY_OPTIONS = _BODY = dict(error_model="numpy", fastmath={"contract"})  # the ufuncs' options
_add = njit(**_BODY)(scalar.add)
_sub = njit(**_BODY)(scalar.sub)
_mul = njit(**_BODY)(scalar.mul)
_div = njit(**_BODY)(scalar.div)
_relu = njit(**_BODY)(scalar_activation.relu)
BINARY = {"add": _add, "sub": _sub, "mul": _mul, "div": _div}   # (scalar_operand.py's too)
SELF = -1          # y's step when y is x itself (x.add_(x)): the loops read x alone


@njit(inline="always", **_BODY)
def _binary(body, args, n, steps, dtype):
    x = carray(args[0], (n,), dtype)
    if steps[1] == 0:
        s = carray(args[1], (1,), dtype)[0]
        for i in range(n):
            x[i] = body(x[i], s)
    elif steps[1] == SELF:                     # y is x itself (x.add_(x)): read x alone
        for i in range(n):
            x[i] = body(x[i], x[i])
    else:
        y = carray(args[1], (n,), dtype)
        for i in range(n):
            x[i] = body(x[i], y[i])


@njit(inline="always", **_BODY)
def _either(body, args, n, steps):
    if steps[0] == 4:
        _binary(body, args, n, steps, np.float32)
    else:
        _binary(body, args, n, steps, np.float64)


def _add_loop(args, n, steps, data):
    _wide()
    _either(_add, args, n[0], steps)


def _sub_loop(args, n, steps, data):
    _wide()
    _either(_sub, args, n[0], steps)


def _mul_loop(args, n, steps, data):
    _wide()
    _either(_mul, args, n[0], steps)


def _div_loop(args, n, steps, data):
    _wide()
    _either(_div, args, n[0], steps)


@njit(inline="always", **_BODY)
def _unary(body, args, n, dtype):
    x = carray(args[0], (n,), dtype)
    for i in range(n):
        x[i] = body(x[i])


def _relu_loop(args, n, steps, data):
    _wide()
    if steps[0] == 4:
        _unary(_relu, args, n[0], np.float32)
    else:
        _unary(_relu, args, n[0], np.float64)


# scalar body name -> (its in-place loop, operands besides x)
BODIES = {"add": (_add_loop, 1), "sub": (_sub_loop, 1), "mul": (_mul_loop, 1),
          "div": (_div_loop, 1), "relu": (_relu_loop, 0)}
_TYPES = ("f", "d")
_STEPS = {}


def run(name, x, y, parallel):
    """x[i] = body `name`(x[i], y[i]) in place, True; False (nothing done) where no loop
    here fits: `x` must be a C-contiguous float32/float64 array, `y` one of x's dtype and
    shape sharing no memory with x, or a 0-d array of x's dtype (None for a unary body).
    `parallel`: a call large enough to split over the helpers (judged per loop, dtype
    and size class like the other loops)."""
    entry = BODIES.get(name)
    char = x.dtype.char
    if entry is None or char not in _TYPES or not x.flags.c_contiguous:
        return False
    loop, arity = entry
    if arity:
        if y.__class__ is not np.ndarray:
            if not isinstance(y, np.generic):
                return False
            y = np.asarray(y)                  # a NumPy scalar (wrap's result)
        if y.dtype.char != char:
            return False
        if y.ndim:
            if y.shape != x.shape or not y.flags.c_contiguous:
                return False
            if y.ctypes.data == x.ctypes.data:
                kind = 3                        # x op= x: element for element
            elif np.may_share_memory(x, y):
                return False
            else:
                kind = 1
        else:
            kind = 0
        operands = (x, y)
    elif y is not None:
        return False
    else:
        operands, kind = (x,), 2
    steps = _STEPS.get((char, kind))
    if steps is None:
        item = x.itemsize
        steps = _STEPS[(char, kind)] = np.array(
            [item, item] if kind == 1 else [item, 0] if kind == 0 else
            [item, SELF] if kind == 3 else [item], np.intp)
    address = loop_threads.cfunc_address(loop)
    n = x.size
    if not (parallel and workers.NUM_THREADS > 1 and spin_threads.SUPPORTED
            and openmp.USABLE):
        _here(address, operands, steps, n)
        return True
    key = (loop, char, n.bit_length())
    if workers.use_helpers(key):
        workers.timed(workers.record_parallel, key, n, _split, address, operands, steps, n)
    else:
        workers.timed(workers.record_serial, key, n, _here, address, operands, steps, n)
    return True


def _split(address, operands, steps, n):
    if not spin_threads.run_arrays(address, operands, steps, n, workers.NUM_THREADS,
                                   loop_threads.ALIGN):
        _here(address, operands, steps, n)


def _here(address, operands, steps, n):
    bases, _ = loop_threads.operand_pointers(operands)
    spin_threads.run_here(address, bases, steps, n, 1, 1, 0, 0)
