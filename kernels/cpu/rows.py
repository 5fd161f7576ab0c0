"""Row-broadcast loops of the four arithmetic ops: ``out[i, j] = a[i, j] op row[j]`` (or
``row[j] op a[i, j]``) over C-contiguous float32/float64 rows - a bias added to a batch.

NumPy runs such a call through the op's ufunc loop once per row, and that loop, written
for any strides, stays scalar: (1024, 512) + (512,) took 3-5x NumPy's own add. These
loops see contiguous rows and vectorise. An add, subtract, multiply or divide is one
correctly rounded operation however it is vectorised, so results are identical.
"""
import numpy as np
from numba import njit

__all__ = ["ROW_LOOPS", "plan"]

_LOOP = dict(cache=True, nogil=True, error_model="numpy", fastmath={"contract"})


@njit(**_LOOP)
def add_rows(out, a, row, row_first):
    """out[i, j] = a[i, j] + row[j] (2-D out and a, 1-D row; the order does not matter)."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = a[i, j] + row[j]


@njit(**_LOOP)
def mul_rows(out, a, row, row_first):
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            out[i, j] = a[i, j] * row[j]


@njit(**_LOOP)
def sub_rows(out, a, row, row_first):
    """out[i, j] = a[i, j] - row[j], or row[j] - a[i, j] when `row_first`."""
    if row_first:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = row[j] - a[i, j]
    else:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = a[i, j] - row[j]


@njit(**_LOOP)
def div_rows(out, a, row, row_first):
    if row_first:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = row[j] / a[i, j]
    else:
        for i in range(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = a[i, j] / row[j]


ROW_LOOPS = {"add": add_rows, "sub": sub_rows, "mul": mul_rows, "div": div_rows}


def plan(out, a, b):
    """(out2, full2, row, row_first) for a row loop when one operand has out's shape (out
    itself, or not overlapping it) and the other is a C-contiguous row of out's trailing
    dims not overlapping out; None otherwise (the ufunc runs it)."""
    shape = out.shape
    if len(shape) < 2 or not out.flags.c_contiguous:
        return None
    if a.shape == shape:
        full, row, row_first = a, b, False
    elif b.shape == shape:
        full, row, row_first = b, a, True
    else:
        return None
    rshape = row.shape
    while rshape and rshape[0] == 1:
        rshape = rshape[1:]
    k = len(rshape)
    if not k or k >= len(shape) or rshape != shape[len(shape) - k:]:
        return None
    if not (full.flags.c_contiguous and row.flags.c_contiguous):
        return None
    if np.may_share_memory(row, out) or (full is not out and np.may_share_memory(full, out)
                                         and full.ctypes.data != out.ctypes.data):
        return None
    width = row.size
    return out.reshape(-1, width), full.reshape(-1, width), row.reshape(width), row_first
