"""``x * 0.5``, ``1 - x``, ``x / s``: add, sub, mul and div of a contiguous float32/float64
array and one value into a fresh output, split over the spinning helpers.

The ufunc loops (`ufuncs.py`) take their vectorised path only when every operand steps
by its item size, so a broadcast value used to be read from a block of 1,024 copies
(`loop_threads.broadcast_blocks`): a second input stream, which made ``x * 2`` on
10^6 float32 cost what ``x + y`` does (77-86 us on two threads, PyTorch 49-54). Here
the value is read once per chunk and the loop streams x alone: 56-58 us.

Each loop has the ufunc-loop ABI of `loop_threads` (``args = (a, b, out)`` in the op's
order, the value's step 0), float32 and float64 picked by the item size, 512-bit
vectors (`simd.py`); the bodies are `inplace.py`'s, so the bits are the ufunc's (one
IEEE operation per element). The serial calls (the helpers backed off, or the first
call of a size) stay NumPy's loop for these bodies (`ufuncs._call_serial`), the same
bits again. The wrappers mirror inplace.py's, one written out per body: a cfunc made in a
closure misses Numba's disk cache, and the loop must be inlined into the cfunc's own
function to get its 512-bit width (a loop passed in as a function argument need not be).
"""
import numpy as np
from numba import carray, njit

from nbtorch.kernels.cpu import inplace, loop_threads, spin_threads, workers
from nbtorch.kernels.cpu.simd import _own_function_with_512bit_vectors as _wide

__all__ = ["BODIES", "TYPES", "plan", "plan_dense", "run"]

_BODY = inplace.BODY_OPTIONS
_add, _sub, _mul, _div = (inplace.BINARY[name] for name in ("add", "sub", "mul", "div"))


@njit(inline="always", **_BODY)
def _with_value(body, args, n, steps, dtype):
    out = carray(args[2], (n,), dtype)
    if steps[1] == 0:                              # x op s
        x = carray(args[0], (n,), dtype)
        s = carray(args[1], (1,), dtype)[0]
        for i in range(n):
            out[i] = body(x[i], s)
    else:                                          # s op x
        s = carray(args[0], (1,), dtype)[0]
        x = carray(args[1], (n,), dtype)
        for i in range(n):
            out[i] = body(s, x[i])


@njit(inline="always", **_BODY)
def _either(body, args, n, steps):
    if steps[2] == 4:
        _with_value(body, args, n, steps, np.float32)
    else:
        _with_value(body, args, n, steps, np.float64)


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


BODIES = {"add": _add_loop, "sub": _sub_loop, "mul": _mul_loop, "div": _div_loop}
TYPES = frozenset(("ff->f", "dd->d"))
_STEPS = {}         # (item size, which operand is the value) -> the loop's steps


def plan(name, out, args):
    """(loop address, operands, steps) for `name`(*args) -> out where one operand is a
    single value (0-d, or a NumPy scalar) and the other a C-contiguous array of out's
    shape sharing no memory with a C-contiguous out, all of one float dtype; else None."""
    loop = BODIES.get(name)
    if loop is None or len(args) != 2 or not out.flags.c_contiguous:
        return None
    a, b = args
    value = 1 if b.ndim == 0 or (b.size == 1 and a.size != 1) else 0    # its position
    x, s = (a, b) if value == 1 else (b, a)
    if (x.__class__ is not np.ndarray or x.shape != out.shape or not x.flags.c_contiguous
            or s.size != 1 or x.dtype != out.dtype or s.dtype != out.dtype
            or np.may_share_memory(x, out)):
        return None
    s = np.asarray(s).reshape(())
    flat = out.reshape(-1)
    operands = (x.reshape(-1), s, flat) if value == 1 else (s, x.reshape(-1), flat)
    return loop_threads.cfunc_address(loop), operands, _steps(out.itemsize, value)


def plan_dense(name, out, x, s):
    """`plan`'s answer for x op s where the caller knows what plan checks: `out` fresh and
    C-contiguous, `x` a C-contiguous array of its shape and dtype, `s` a NumPy scalar of
    that dtype (`ufuncs.dense_value_call`'s contract: ~0.5 us instead of plan's 1.75)."""
    flat = out if out.ndim == 1 else out.reshape(-1)
    return (loop_threads.cfunc_address(BODIES[name]),
            (x if x.ndim == 1 else x.reshape(-1), np.asarray(s), flat),
            _steps(out.itemsize, 1))


def _steps(item, value):
    """The loop's byte steps for operands of `item` bytes, the one value at `value`."""
    steps = _STEPS.get((item, value))
    if steps is None:
        steps = _STEPS[(item, value)] = np.array(
            [item, 0, item] if value == 1 else [0, item, item], np.intp)
    return steps


def run(address, operands, steps, n):
    """The planned loop over `n` elements, split over this thread and the spinning helpers
    (all here where they cannot run it)."""
    if not spin_threads.run_arrays(address, operands, steps, n, workers.NUM_THREADS,
                                   loop_threads.ALIGN):
        bases, _ = loop_threads.operand_pointers(operands)
        spin_threads.run_here(address, bases, steps, n, 1, 1, 0, 0)
