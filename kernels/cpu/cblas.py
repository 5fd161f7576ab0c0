"""OpenBLAS's GEMM called by address: from inside Numba kernels, and as `matmul`, the
kernels' one entry for BLAS products (float32 ones above `PRIVATE_MIN_WORK` multiply-adds
on nbtorch's own copy of the library where blas_private.py loads one).

A kernel that interleaves small GEMMs with its own loops (convolution: im2col of one
image, then its product, while the columns are still in cache) cannot call `np.matmul`
from nopython code, and a ctypes function baked into a kernel pins its address, so the
kernel would not load from Numba's disk cache in the next process (DESIGN.md). Here an
intrinsic builds the call from an integer argument: the address is looked up once per
process (`gemm_address`) and passed in, and the kernel caches.

NumPy 2's Linux wheels bundle scipy-openblas with 64-bit integers
(``scipy_cblas_sgemm64_``); older ones ``cblas_sgemm64_``. Where neither is found
(another BLAS, another platform) `gemm_address` answers 0 and callers keep their
`np.matmul` path; so it does with ``NUMBA_DISABLE_JIT=1`` (kernels run as Python, where
an intrinsic cannot be called). Callers hold OpenBLAS to one thread (`blas.one_thread`) around
kernels that call it, and validate every shape: the call trusts its pointers.
"""
import ctypes

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import blas

__all__ = ["gemm_address", "gemm", "sgemm_private", "matmul", "matrix_layout", "NO_TRANS",
           "TRANS"]

NO_TRANS, TRANS = 111, 112          # CBLAS_TRANSPOSE
_ROW_MAJOR = 101                    # CBLAS_ORDER
_NAMES = {"f": ("scipy_cblas_sgemm64_", "cblas_sgemm64_"),
          "d": ("scipy_cblas_dgemm64_", "cblas_dgemm64_")}
_ADDRESSES = {}
# Products of more multiply-adds than this go to nbtorch's own OpenBLAS copy where one is
# loaded (blas_private.py); smaller ones stay with NumPy's, whose SkylakeX build has
# small-matrix kernels (to 100^3) the Haswell one lacks. One thread, us, NumPy's / the
# copy's: LeNet's conv products 6x25 @ 25x576 2.2 / 4.2, 16x150 @ 150x64 3.2 / 4.4, 32^3
# 1.2 / 1.6, 64^3 5.2 / 6.2, 100^3 18.4 / 20.8; then 128^3 42.9 / 41.4, 32x144 @ 144x784
# 78.0 / 74.2, 64x576 @ 576x224 170 / 158, 128x784 @ (512x784).T 1141 / 987. A product's
# size alone decides, so its values never depend on the load.
PRIVATE_MIN_WORK = 100 ** 3


def gemm_address(dtype, work=0):
    """The address of OpenBLAS's 64-bit-integer cblas_?gemm for float32/float64 `dtype`,
    or 0 (no such library or symbol, or another dtype): for float32 products of more than
    `PRIVATE_MIN_WORK` multiply-adds (`work`) nbtorch's private copy where one is loaded
    (blas_private.py), else NumPy's."""
    char = np.dtype(dtype).char
    key = (char, work > PRIVATE_MIN_WORK)
    address = _ADDRESSES.get(key)
    if address is None:
        names = () if numba.config.DISABLE_JIT else _NAMES.get(char, ())
        private = blas.private_library() if key == ("f", True) else None
        address = _ADDRESSES[key] = (private is not None and _find(names, private)
                                     or _find(names))
    return address


def _find(names, lib=None):
    lib = lib if lib is not None else blas.library()
    for name in names if lib is not None else ():
        fn = getattr(lib, name, None)
        if fn is not None:
            return ctypes.cast(fn, ctypes.c_void_p).value or 0
    return 0


@intrinsic
def gemm(typingctx, address, trans_a, trans_b, m, n, k, alpha, a, a_off, lda,
         b, b_off, ldb, beta, c, c_off, ldc):
    """C = alpha * op(A) @ op(B) + beta * C, row-major, for the cblas_?gemm at `address`:
    A, B, C are 1-D arrays of one float dtype, the matrices start at element offsets
    a_off, b_off, c_off; op(A) is (m, k), op(B) (k, n), C (m, n)."""
    if not (isinstance(a, types.Array) and a.dtype in (types.float32, types.float64)
            and b == a and c == a):
        return None
    sig = types.void(address, trans_a, trans_b, m, n, k, alpha, a, a_off, lda,
                     b, b_off, ldb, beta, c, c_off, ldc)

    def codegen(context, builder, signature, args):
        (address_v, ta, tb, m_v, n_v, k_v, alpha_v, a_v, a_off_v, lda_v,
         b_v, b_off_v, ldb_v, beta_v, c_v, c_off_v, ldc_v) = args
        tys = signature.args
        i32, i64 = ir.IntType(32), ir.IntType(64)
        real = context.get_value_type(a.dtype)
        ptr = real.as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, real, ptr, i64,
                                               ptr, i64, real, ptr, i64])
        fn = builder.inttoptr(address_v, fnty.as_pointer())

        def int_(value, ty, width):
            return context.cast(builder, value, ty, types.int64) if width == 64 else \
                builder.trunc(context.cast(builder, value, ty, types.int64), i32)

        def real_(value, ty):
            return context.cast(builder, value, ty, a.dtype)

        def data(value, ty, off, off_ty):
            base = context.make_array(ty)(context, builder, value).data
            return builder.gep(base, [int_(off, off_ty, 64)])
        builder.call(fn, [
            ir.Constant(i32, _ROW_MAJOR), int_(ta, tys[1], 32), int_(tb, tys[2], 32),
            int_(m_v, tys[3], 64), int_(n_v, tys[4], 64), int_(k_v, tys[5], 64),
            real_(alpha_v, tys[6]),
            data(a_v, tys[7], a_off_v, tys[8]), int_(lda_v, tys[9], 64),
            data(b_v, tys[10], b_off_v, tys[11]), int_(ldb_v, tys[12], 64),
            real_(beta_v, tys[13]),
            data(c_v, tys[14], c_off_v, tys[15]), int_(ldc_v, tys[16], 64)])
        return context.get_dummy_value()
    return sig, codegen


_PRIVATE_SGEMM = []


def _private_sgemm():
    """The private copy's cblas_sgemm address, or 0 (no copy loaded)."""
    if not _PRIVATE_SGEMM:
        lib = None if numba.config.DISABLE_JIT else blas.private_library()
        _PRIVATE_SGEMM.append(_find(_NAMES["f"], lib) if lib is not None else 0)
    return _PRIVATE_SGEMM[0]


def sgemm_private(a, b, out):
    """out = a @ b through the private OpenBLAS copy's cblas_sgemm (blas_private.py), for
    2-D float32 `a`, `b` each C- or Fortran-contiguous (a transposed matrix is passed as
    such) of more than `PRIVATE_MIN_WORK` multiply-adds and a C-contiguous `out` sharing
    no memory with them; True when done, False
    (nothing done: NumPy's matmul then) where the copy is not loaded or the operands
    need NumPy's handling."""
    address = _private_sgemm()
    if (not address or a.dtype.char != "f" or b.dtype.char != "f" or out.dtype.char != "f"
            or a.ndim != 2 or b.ndim != 2 or not out.flags.c_contiguous):
        return False
    m, k = a.shape
    n = b.shape[1]
    if (m * n * k <= PRIVATE_MIN_WORK or np.may_share_memory(out, a)
            or np.may_share_memory(out, b)):
        return False
    fa, fb = _flat(a), _flat(b)
    if fa is None or fb is None:
        return False
    _sgemm(address, fa[0], fb[0], m, n, k, fa[2], fa[1], fb[2], fb[1], out.reshape(-1), n)
    return True


def _flat(x):
    """(trans, ld, 1-D view) of a C- or Fortran-contiguous 2-D array as cblas takes it, or
    None."""
    if x.flags.c_contiguous:
        return NO_TRANS, x.shape[1], x.reshape(-1)
    if x.flags.f_contiguous:
        return TRANS, x.shape[0], x.T.reshape(-1)
    return None


@numba.njit(cache=True, nogil=True)
def _sgemm(address, ta, tb, m, n, k, a, lda, b, ldb, c, ldc):
    gemm(address, ta, tb, m, n, k, np.float32(1.0), a, 0, lda, b, 0, ldb, np.float32(0.0),
         c, 0, ldc)


def matmul(a, b, out):
    """np.matmul(a, b, out=out), float32 products on nbtorch's private OpenBLAS copy where
    it is loaded and the layouts allow (`sgemm_private`, `_batched_private`), so 2-D and
    batched products run the same kernels. The kernels' one entry for BLAS products.
    A product of at most `PRIVATE_MIN_WORK` multiply-adds per matrix goes to NumPy at
    once (the private copy's checks cost ~1.6 us: 8x16 @ 16x16 3.1 -> 1.4 us)."""
    shape = out.shape
    if len(shape) >= 2 and shape[-2] * shape[-1] * a.shape[-1] <= PRIVATE_MIN_WORK:
        np.matmul(a, b, out=out)
    elif not (sgemm_private(a, b, out) if out.ndim == 2 else _batched_private(a, b, out)):
        np.matmul(a, b, out=out)


def matrix_layout(shape, strides, unit):
    """(transpose flag, leading dimension) of a matrix of `shape` (its last two dims) and
    byte `strides` that BLAS can read in place, `unit` bytes an element, or None (neither
    dim has unit stride, or the other stride is too small)."""
    s0, s1 = strides[-2:]
    if s1 == unit and s0 % unit == 0 and s0 // unit >= max(1, shape[-1]):
        return NO_TRANS, s0 // unit
    if s0 == unit and s1 % unit == 0 and s1 // unit >= max(1, shape[-2]):
        return TRANS, s1 // unit
    return None


def _batch_stride(x, batch_shape):
    """The byte step between x's matrices when its batch dims are `batch_shape` and walk
    memory evenly (0 for a 2-D x, broadcast over every batch), or None."""
    if x.ndim == 2:
        return 0
    if x.shape[:-2] != batch_shape:
        return None
    step = None
    for size, stride in zip(reversed(x.shape[:-2]), reversed(x.strides[:-2])):
        if size == 1:
            continue
        if step is None:
            step, span = stride, stride * size
        elif stride != span:
            return None
        else:
            span = stride * size
    return step or 0


def _batched_private(a, b, out):
    """`matmul` for batched float32 operands on the private copy: one cblas_sgemm per
    matrix, from compiled code; False where `sgemm_private` would say False or a batch
    layout is not an even walk (NumPy's matmul then)."""
    address = _private_sgemm()
    if (not address or a.dtype.char != "f" or b.dtype.char != "f" or out.dtype.char != "f"
            or out.ndim < 3 or not out.flags.c_contiguous or a.ndim < 2 or b.ndim < 2):
        return False
    m, n = out.shape[-2:]
    k = a.shape[-1]
    batch_shape = out.shape[:-2]
    if (m * n * k <= PRIVATE_MIN_WORK or not out.size or a.shape[-2] != m
            or b.shape[-2:] != (k, n)):
        return False
    sa, sb = _batch_stride(a, batch_shape), _batch_stride(b, batch_shape)
    la, lb = matrix_layout(a.shape, a.strides, 4), matrix_layout(b.shape, b.strides, 4)
    if (sa is None or sb is None or la is None or lb is None
            or np.may_share_memory(out, a) or np.may_share_memory(out, b)):
        return False
    _sgemm_batch(address, la[0], lb[0], m, n, k, a.ctypes.data, sa, la[1],
                 b.ctypes.data, sb, lb[1], out.ctypes.data, 4 * m * n, n, out.size // (m * n))
    return True


@intrinsic
def _sgemm_at(typingctx, address, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc):
    """C = op(A) @ op(B) by the cblas_sgemm at `address`, row-major, A, B, C given as
    integer byte addresses (float32)."""
    sig = types.void(address, trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc)

    def codegen(context, builder, signature, args):
        tys = signature.args
        i32, i64, f32 = ir.IntType(32), ir.IntType(64), ir.FloatType()
        ptr = f32.as_pointer()
        fnty = ir.FunctionType(ir.VoidType(), [i32, i32, i32, i64, i64, i64, f32, ptr, i64,
                                               ptr, i64, f32, ptr, i64])
        fn = builder.inttoptr(args[0], fnty.as_pointer())

        def i(index, width=64):
            v = context.cast(builder, args[index], tys[index], types.int64)
            return v if width == 64 else builder.trunc(v, i32)

        def p(index):
            return builder.inttoptr(i(index), ptr)
        builder.call(fn, [ir.Constant(i32, _ROW_MAJOR), i(1, 32), i(2, 32), i(3), i(4), i(5),
                          ir.Constant(f32, 1.0), p(6), i(7), p(8), i(9), ir.Constant(f32, 0.0),
                          p(10), i(11)])
        return context.get_dummy_value()
    return sig, codegen


@numba.njit(cache=True, nogil=True)
def _sgemm_batch(address, ta, tb, m, n, k, a, sa, lda, b, sb, ldb, c, sc, ldc, count):
    for t in range(count):
        _sgemm_at(address, ta, tb, m, n, k, a + t * sa, lda, b + t * sb, ldb, c + t * sc, ldc)
