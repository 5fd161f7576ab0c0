"""Row- and column-broadcast loops of the four arithmetic ops: ``out[i, j] = a[i, j] op
row[j]`` (a bias added to a batch) or ``a[i, j] op col[i]`` (rows scaled by their norms),
either operand first, over C-contiguous float32/float64 rows.

NumPy runs such a call through the op's ufunc loop once per row, and that loop, written
for any strides, stays scalar: (1024, 512) + (512,) took 3-5x NumPy's own add. These
loops see contiguous rows and vectorise. An add, subtract, multiply or divide is one
correctly rounded operation however it is vectorised, so results are identical. Large
calls split ranges of rows over the spinning helpers (`spin_threads.py`), each range a
call of a ufunc-ABI `cfunc` around the same loops (1024x512 + 512: 139 us on the
threaded ufunc, 47 on one row loop, PyTorch 32).
"""
import numpy as np
from numba import carray, njit
from numba.extending import register_jitable

from nbtorch.kernels.cpu import loop_threads, spin_threads, workers

__all__ = ["ROW_LOOPS", "plan", "run"]

_LOOP = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


@register_jitable(inline="always")
def _add(x, y):
    return x + y


@register_jitable(inline="always")
def _sub(x, y):
    return x - y


@register_jitable(inline="always")
def _mul(x, y):
    return x * y


@register_jitable(inline="always")
def _div(x, y):
    return x / y


@register_jitable(error_model="numpy", fastmath={"contract"})
def _broadcast(op, out, a, vec, first, column, inplace):
    """out[i, j] = op(a[i, j], v) with v = vec[j] (a row) or vec[i] (a column; vec holds
    one value per row), op(v, a[i, j]) when `first`. In place (`inplace`: a is out) the
    loop reads out itself: LLVM's vectorised loop refuses two arrays that overlap, so
    passing out as `a` too would keep it scalar."""
    rows, width = out.shape
    for i in range(rows):
        o = out[i]
        x = o if inplace else a[i]
        if column:
            v = vec[i]
            if first:
                for j in range(width):
                    o[j] = op(v, x[j])
            else:
                for j in range(width):
                    o[j] = op(x[j], v)
        elif first:
            for j in range(width):
                o[j] = op(vec[j], x[j])
        else:
            for j in range(width):
                o[j] = op(x[j], vec[j])


@njit(**_LOOP)
def add_rows(out, a, vec, first, column=False, inplace=False):
    """out = a + vec over 2-D out and a, vec a row (or a column): see `_broadcast`."""
    _broadcast(_add, out, a, vec, first, column, inplace)


@njit(**_LOOP)
def sub_rows(out, a, vec, first, column=False, inplace=False):
    _broadcast(_sub, out, a, vec, first, column, inplace)


@njit(**_LOOP)
def mul_rows(out, a, vec, first, column=False, inplace=False):
    _broadcast(_mul, out, a, vec, first, column, inplace)


@njit(**_LOOP)
def div_rows(out, a, vec, first, column=False, inplace=False):
    _broadcast(_div, out, a, vec, first, column, inplace)


ROW_LOOPS = {"add": add_rows, "sub": sub_rows, "mul": mul_rows, "div": div_rows}
_OP_CODES = {"add": 0, "sub": 1, "mul": 2, "div": 3}


@register_jitable
def _dispatch(p, out, a, vec):
    """The loop of op code p[1] with first, column, inplace = p[2], p[3], p[4]."""
    first, column, inplace = p[2] != 0, p[3] != 0, p[4] != 0
    op = p[1]
    if op == 0:
        add_rows(out, a, vec, first, column, inplace)
    elif op == 1:
        sub_rows(out, a, vec, first, column, inplace)
    elif op == 2:
        mul_rows(out, a, vec, first, column, inplace)
    else:
        div_rows(out, a, vec, first, column, inplace)


def _rows_f32(args, count, steps, data):
    """`count` rows of a broadcast loop (float32), the ufunc-loop ABI: args = (a, vec,
    params, out), params = (width, op, first, column, inplace)."""
    p = carray(args[2], (5,), np.int64)
    n, width = count[0], p[0]
    _dispatch(p, carray(args[3], (n, width), np.float32), carray(args[0], (n, width),
              np.float32), carray(args[1], (n if p[3] else width,), np.float32))


def _rows_f64(args, count, steps, data):
    """`_rows_f32` for float64."""
    p = carray(args[2], (5,), np.int64)
    n, width = count[0], p[0]
    _dispatch(p, carray(args[3], (n, width), np.float64), carray(args[0], (n, width),
              np.float64), carray(args[1], (n if p[3] else width,), np.float64))


_WRAPPERS = {"f": _rows_f32, "d": _rows_f64}


def run(name, plan_, split):
    """Run the broadcast loop of `plan` (from `plan`); with `split`, over ranges of rows
    on the spinning helpers while that pays (`workers.use_helpers`: kinds of call that
    do not pay run here). Elementwise: the same values either way."""
    out, a, vec, first, column = plan_
    inplace = a is out
    loop = ROW_LOOPS[name]
    if not split or not spin_threads.SUPPORTED or out.shape[0] < 2:
        return loop(out, a, vec, first, column, inplace)
    char = out.dtype.char
    key = ("rows", name, column, char, out.size.bit_length())
    if not workers.use_helpers(key):
        return workers.timed(workers.record_serial, key, out.size, loop, out, a, vec, first,
                             column, inplace)
    width, item = out.shape[1], out.itemsize
    params = np.array([width, _OP_CODES[name], first, column, inplace], np.int64)
    bases, _ = loop_threads.operand_pointers((a, vec, params, out))
    steps = np.array([width * item, item if column else 0, 0, width * item], np.intp)
    workers.timed(workers.record_parallel, key, out.size, _split, loop_threads.cfunc_address(_WRAPPERS[char]), bases,
                  steps, out.shape[0], a, vec, first, column, inplace, loop, out)


def _split(address, bases, steps, n, a, vec, first, column, inplace, loop, out):
    if not spin_threads.run(address, bases, steps, n, workers.NUM_THREADS, 1):
        loop(out, a, vec, first, column, inplace)


def plan(out, a, b):
    """(out2, full2, vec, first, column) for a broadcast loop when one operand has out's
    shape (C-contiguous; out itself, or not overlapping it) and the other does not overlap
    out and is either a row of out's trailing dims or a column (out's shape with a last
    dim of 1; copied when strided and small); None otherwise (the ufunc runs it)."""
    shape = out.shape
    if len(shape) < 2 or not out.flags.c_contiguous:
        return None
    if a.shape == shape:
        full, vec, first = a, b, False
    elif b.shape == shape:
        full, vec, first = b, a, True
    else:
        return None
    vshape = vec.shape
    while vshape and vshape[0] == 1:
        vshape = vshape[1:]
    k = len(vshape)
    if not k or not full.flags.c_contiguous:
        return None
    if not vec.flags.c_contiguous:
        if vec.size * 8 > out.size:
            return None
        vec = np.ascontiguousarray(vec)   # a column sliced from a matrix (x[:, :1]): small
    if k < len(shape) and vshape == shape[len(shape) - k:]:
        column = False
        width = vec.size
    elif vshape[-1] == 1 and shape[-1] > 1 and vshape[:-1] == shape[len(shape) - k:-1]:
        column = True                   # x / x.norm(dim=-1, keepdim=True)
        width = shape[-1]
        if vec.size * width != out.size:
            return None                 # a column broadcast over leading dims too
    else:
        return None
    if np.may_share_memory(vec, out) or (full is not out and np.may_share_memory(full, out)
                                         and full.ctypes.data != out.ctypes.data):
        return None
    full2 = out if full is out else full.reshape(-1, width)
    out2 = out.reshape(-1, width)
    return out2, (out2 if full is out else full2), vec.reshape(-1), first, column
