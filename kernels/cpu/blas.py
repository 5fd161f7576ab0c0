"""NumPy's bundled OpenBLAS, reached directly for what `np.matmul` cannot say: how many
threads a product uses, and how its work is split between them.

OpenBLAS picks its thread count per call from M*N*K alone (one thread up to 64^3
multiply-adds, all of them above) and, with two threads, splits one product in a
way that pays only for big ones. Measured on the project machine (2 cores, AVX-512,
OpenBLAS 0.3.31 SkylakeX kernels, float32, best of 15): 128^3 took 31.5 us on one
thread and 39 us on two; a batch of 64 such products 2.0 ms on one thread and no
less on two. While other processes kept both cores busy (load 5-7), two OpenBLAS
threads took 0.2-40 ms for the 128^3 product and 9-600 ms for the batch (its idle
workers spin with sched_yield and every call waits for a descheduled one), one
thread 31 us and 2.2 ms.

`gemm_split` splits a batch of products itself: OpenBLAS set to one thread, a
Numba `prange` over runs of the batch, each product one plain ``cblas_?gemm``
call through the function's address::

    for part in prange(parts):                  (parts = OpenBLAS's thread count)
        for t in its run of the batch: out[t] = ?gemm(op(a[t]), op(b[t]))

The address travels as an integer argument and the call is built by an intrinsic
(`_gemm_call`), so the kernel caches on disk like any other (a ctypes function
used as a global would not); one compiled signature serves float32 and float64.
`one_thread` runs any call with OpenBLAS on one thread. Without an ILP64 OpenBLAS
(NumPy built on another BLAS) `gemm_split` declines and `one_thread` just calls.
"""
import ctypes
import threading

import numba
import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.extending import intrinsic

__all__ = ["SMALL_WORK", "OWN_ONE_THREAD_WORK", "BATCH_SPLIT_MAX_WORK", "SPLIT_MIN_WORK",
           "one_thread", "threads", "gemm_split", "gemm_parts"]

SMALL_WORK = 128 ** 3             # multiply-adds per product up to which one thread is used
OWN_ONE_THREAD_WORK = 4 * 65536   # ...up to which OpenBLAS itself uses one thread
BATCH_SPLIT_MAX_WORK = 4 * SMALL_WORK   # per product: batches of products up to this size
SPLIT_MIN_WORK = 1 << 19               # ...and at least this much in all are split

_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
            "openblas_get_num_threads64_", "openblas_get_num_threads")
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")
_GEMMS = {np.dtype(np.float32): ("scipy_cblas_sgemm64_", "cblas_sgemm64_"),   # ILP64 only:
          np.dtype(np.float64): ("scipy_cblas_dgemm64_", "cblas_dgemm64_")}   # int64 sizes
_ROW_MAJOR, _NO_TRANS, _TRANS = 101, 111, 112

_get = _set = None
_gemm_addr = {}                  # NumPy dtype -> address of cblas_?gemm (ILP64)
_loaded = False


def _load():
    """Bind OpenBLAS's thread getter/setter and ?gemm addresses (found through the
    process's memory map, where NumPy loaded it); leaves them unset when there is none."""
    global _get, _set, _loaded
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
        _get, _set = get, set_
        for dtype, names in _GEMMS.items():
            fn = next((getattr(lib, n) for n in names if hasattr(lib, n)), None)
            if fn is not None:
                _gemm_addr[dtype] = ctypes.cast(fn, ctypes.c_void_p).value
        return


def threads():
    """OpenBLAS's current thread count (1 without OpenBLAS)."""
    if not _loaded:
        _load()
    return _get() if _get is not None else 1


_lock = threading.Lock()
_held = [0, 1]          # [calls inside one_thread, OpenBLAS's thread count before the first]


def _enter():
    with _lock:
        if _held[0] == 0:
            _held[1] = _get()
            _set(1)
        _held[0] += 1


def _leave():
    with _lock:
        _held[0] -= 1
        if _held[0] == 0:
            _set(_held[1])


def one_thread(fn, *args):
    """fn(*args) with OpenBLAS on one thread; its thread count is restored afterwards
    (by the last of several Python threads inside at once, so none restores a count
    another one set)."""
    if threads() <= 1:
        return fn(*args)
    _enter()
    try:
        return fn(*args)
    finally:
        _leave()


# ---- the split GEMM ------------------------------------------------------------------

@intrinsic
def _gemm_call(typingctx, addr, double, ta, tb, m, n, k, pa, lda, pb, ldb, pc, ldc):
    """cblas_?gemm(RowMajor, ta, tb, m, n, k, 1, pa, lda, pb, ldb, 0, pc, ldc) through
    the function at `addr` (sgemm, or dgemm when `double`); pointers are byte addresses."""
    sig = types.void(addr, double, ta, tb, m, n, k, pa, lda, pb, ldb, pc, ldc)

    def codegen(context, builder, signature, args):
        addr_, double_, ta_, tb_, m_, n_, k_, pa_, lda_, pb_, ldb_, pc_, ldc_ = args
        i32, i64 = ir.IntType(32), ir.IntType(64)

        def call(real):
            p = real.as_pointer()
            fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, real, p, i64,
                                                   p, i64, real, p, i64])
            fn = builder.inttoptr(addr_, fnty.as_pointer())
            builder.call(fn, [ir.Constant(i32, _ROW_MAJOR), builder.trunc(ta_, i32),
                              builder.trunc(tb_, i32), m_, n_, k_, ir.Constant(real, 1.0),
                              builder.inttoptr(pa_, p), lda_, builder.inttoptr(pb_, p), ldb_,
                              ir.Constant(real, 0.0), builder.inttoptr(pc_, p), ldc_])
        is_double = builder.icmp_unsigned("!=", double_, ir.Constant(double_.type, 0))
        with builder.if_else(is_double) as (then, otherwise):
            with then:
                call(ir.DoubleType())
            with otherwise:
                call(ir.FloatType())
        return context.get_dummy_value()
    return sig, codegen


@numba.njit(cache=True, parallel=True)
def gemm_parts(addr, double, parts, batch, m, n, k, pa, sa, ta, lda, pb, sb, tb, ldb,
               pc, sc, ldc):
    """out[t] = op(a[t]) @ op(b[t]) for t < batch, the batch cut into `parts` runs of
    whole products, run in parallel.

    Pointers are byte addresses, sa/sb/sc byte strides between products (0: broadcast),
    ld* leading dimensions in elements, ta/tb CBLAS transpose codes.
    """
    for part in prange(parts):
        for t in range(batch * part // parts, batch * (part + 1) // parts):
            _gemm_call(addr, double, ta, tb, m, n, k, pa + t * sa, lda, pb + t * sb, ldb,
                       pc + t * sc, ldc)


def _operand(x, rows, cols, isz):
    """(CBLAS transpose code, leading dimension) under which BLAS reads the matrix x
    (..., rows, cols) in place, or None when its strides do not allow it."""
    s_r, s_c = x.strides[-2], x.strides[-1]
    if s_r % isz or s_c % isz or s_r < 0 or s_c < 0:
        return None
    s_r //= isz
    s_c //= isz
    if s_c == 1 and s_r >= max(1, cols):
        return _NO_TRANS, s_r
    if s_r == 1 and s_c >= max(1, rows):
        return _TRANS, s_c
    if rows == 1 and s_c == 1:
        return _NO_TRANS, max(1, cols)
    if cols == 1 and s_r == 1:
        return _TRANS, max(1, rows)
    return None


def gemm_split(a, b, out, parts):
    """out = a @ b for 3-D a, b, out (batch dims broadcast) as `parts` parallel runs of
    single-threaded ?gemm calls; False (nothing done) where it does not apply: other
    dtypes or ranks, a batch smaller than `parts`, a layout BLAS cannot read in place,
    empty dims, or no ILP64 OpenBLAS."""
    if not _loaded:
        _load()
    dtype = out.dtype
    addr = _gemm_addr.get(dtype)
    if (addr is None or out.ndim != 3 or a.ndim != 3 or b.ndim != 3 or a.dtype != dtype
            or b.dtype != dtype or out.shape[0] < parts):
        return False
    m, k = a.shape[-2:]
    n = out.shape[-1]
    isz = dtype.itemsize
    if m == 0 or n == 0 or k == 0 or out.strides[-1] != isz or out.strides[-2] < n * isz:
        return False
    op_a, op_b = _operand(a, m, k, isz), _operand(b, k, n, isz)
    if op_a is None or op_b is None:
        return False
    sa = a.strides[0] if a.shape[0] > 1 else 0
    sb = b.strides[0] if b.shape[0] > 1 else 0
    sc = out.strides[0]
    if sa < 0 or sb < 0 or sc < 0:
        return False
    _enter()
    try:
        gemm_parts(addr, int(isz == 8), parts, out.shape[0], m, n, k,
                   a.ctypes.data, sa, op_a[0], op_a[1], b.ctypes.data, sb, op_b[0], op_b[1],
                   out.ctypes.data, sc, out.strides[-2] // isz)
    finally:
        _leave()
    return True
