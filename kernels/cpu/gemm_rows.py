"""A mid-size 2-D product split by rows between the calling thread and a spinning helper
(`spin_threads.py`), each range one single-threaded OpenBLAS call.

OpenBLAS either keeps a product of up to 128^3 multiply-adds on one thread (what
`blas.py` asks: its own two threads lost on a busy machine and, on the Xeon measured
there, even idle: 31.5 us on one thread, 39 on two) or splits it with threads that
it must wake. On an idle AMD EPYC (2 cores) one thread took 44 us for 128^3, two 33,
PyTorch 31. Here the rows of C are "elements" of a ufunc-ABI loop (`_sgemm_rows`,
`_dgemm_rows`: a range of rows is one cblas_?gemm call with beta 0), so the spinning
helpers of the elementwise kernels run a range without a wake-up, and a range the
helper has not started when the caller is done with its own runs on the caller.

Ranges start at multiples of 16 rows (a whole number of OpenBLAS's row tiles). The
ranges depend on the thread count alone, never on the load (a range runs on the caller
when the helper has not taken it, or when its kind of call backs off), so a product's
values depend on the shape and `set_num_threads`, as PyTorch's do. Against one call over
all rows (the path before) they can differ in the last bits, where OpenBLAS picks
another kernel or blocking for a smaller call: float32 96x300 @ 300x17 (A transposed),
float64 250x64 @ 64x300; equal in most shapes tested (128^3 among them).
"""
from time import perf_counter

import numpy as np
from numba import carray
from numba.extending import register_jitable

from nbtorch.kernels.cpu import blas, cblas, loop_threads, spin_threads, workers

__all__ = ["matmul", "SUPPORTED"]

SUPPORTED = spin_threads.SUPPORTED

ROW_ALIGN = 16
MIN_ROWS = 2 * ROW_ALIGN        # fewer rows than two tiles: one call
# params (int64): gemm address, n, k, lda, ldb, ldc, trans_a, trans_b
_P_ADDRESS, _P_N, _P_K, _P_LDA, _P_LDB, _P_LDC, _P_TA, _P_TB = range(8)
@register_jitable
def _gemm_range(p, m, a, b, c):
    """C = A @ B over `m` rows, the rest of the call in params `p` (cblas_?gemm, beta 0)."""
    cblas.gemm(p[_P_ADDRESS], p[_P_TA], p[_P_TB], m, p[_P_N], p[_P_K], 1.0, a, 0, p[_P_LDA],
               b, 0, p[_P_LDB], 0.0, c, 0, p[_P_LDC])


def _sgemm_rows(args, rows, steps, data):
    """C[rows] = A[rows] @ B (float32), the ufunc-loop ABI: args = (A, B, params, C)."""
    _gemm_range(carray(args[2], (8,), np.int64), rows[0], carray(args[0], (1,), np.float32),
                carray(args[1], (1,), np.float32), carray(args[3], (1,), np.float32))


def _dgemm_rows(args, rows, steps, data):
    """C[rows] = A[rows] @ B (float64), as `_sgemm_rows`."""
    _gemm_range(carray(args[2], (8,), np.int64), rows[0], carray(args[0], (1,), np.float64),
                carray(args[1], (1,), np.float64), carray(args[3], (1,), np.float64))


_WRAPPERS = {"f": _sgemm_rows, "d": _dgemm_rows}


_PLANS = {}      # (dtype char, shapes, strides) -> _plan(...)


def _plan(char, a_shape, a_strides, b_shape, b_strides, chunks):
    """(params, steps, address, kind of call, work) of a product, or None where the
    operands do not suit (see `matmul`). A range's GEMM is the one `cblas.gemm_address`
    gives for its size (float32 ranges above `cblas.PRIVATE_MIN_WORK`: nbtorch's copy)."""
    unit = 4 if char == "f" else 8
    la = cblas.matrix_layout(a_shape, a_strides, unit)
    lb = cblas.matrix_layout(b_shape, b_strides, unit)
    (m, k), n = a_shape, b_shape[1]
    address = cblas.gemm_address(np.dtype(char), -(-m // chunks) * n * k)
    if la is None or lb is None or m < MIN_ROWS or k == 0 or n == 0 or not address:
        return None
    params = np.array([address, n, k, la[1], lb[1], n, la[0], lb[0]], np.int64)
    steps = np.array([a_strides[0], 0, 0, n * unit], np.intp)
    work = m * n * k
    key = ("gemm_rows", char, work.bit_length())
    return params, steps, loop_threads.cfunc_address(_WRAPPERS[char]), key, work


def matmul(a, b, out, chunks):
    """out = a @ b (2-D, one float dtype) in `chunks` ranges of rows, OpenBLAS on one
    thread for each: on this thread and the spinning helpers while they pay, else all
    here (kinds of call, a dtype and a size class, are judged as elementwise ones are:
    `workers.use_helpers`; the ranges are the same either way, so the values do not
    depend on the machine's load). False, with nothing done, where this path does not
    apply: one thread, no spinning helpers, other dtypes, fewer than `MIN_ROWS` rows,
    an operand BLAS cannot read in place, out not C-contiguous."""
    char = out.dtype.char
    if (chunks < 2 or char not in _WRAPPERS or a.dtype.char != char
            or b.dtype.char != char or not out.flags.c_contiguous):
        return False
    shape_key = (char, a.shape, a.strides, b.shape, b.strides, chunks)
    plan = _PLANS.get(shape_key, False)
    if plan is False:
        if len(_PLANS) > 512:
            _PLANS.clear()
        plan = _PLANS[shape_key] = _plan(*shape_key)
    if plan is None:
        return False
    params, steps, address, key, work = plan
    _run(address, (a, b, params, out), steps, a.shape[0], chunks, key, work)
    return True


def _run(address, operands, steps, m, chunks, key, work):
    """The ranges on the helpers while they pay, else here, OpenBLAS held on one thread
    (by the compiled dispatch itself on the helpers' path: blas_hold.py); timed for
    `workers`' judgement (one function: each Python frame between the op and the GEMM
    costs ~0.1 us)."""
    if workers.use_helpers(key):
        t = perf_counter()
        if not spin_threads.run_arrays(address, operands, steps, m, chunks, ROW_ALIGN,
                                       blas.hold()):
            blas.one_thread(_here, address, operands, steps, m, chunks)
        workers.record_parallel(key, perf_counter() - t, work)
    else:
        t = perf_counter()
        blas.one_thread(_here, address, operands, steps, m, chunks)
        workers.record_serial(key, perf_counter() - t, work)


def _here(address, operands, steps, m, chunks):
    bases, _ = loop_threads.operand_pointers(operands)
    spin_threads.run_here(address, bases, steps, m, chunks, ROW_ALIGN, 0, 0)
