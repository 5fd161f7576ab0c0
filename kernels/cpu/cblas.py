"""NumPy's bundled OpenBLAS GEMM called from inside Numba kernels, by address.

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

__all__ = ["gemm_address", "gemm", "NO_TRANS", "TRANS"]

NO_TRANS, TRANS = 111, 112          # CBLAS_TRANSPOSE
_ROW_MAJOR = 101                    # CBLAS_ORDER
_NAMES = {"f": ("scipy_cblas_sgemm64_", "cblas_sgemm64_"),
          "d": ("scipy_cblas_dgemm64_", "cblas_dgemm64_")}
_ADDRESSES = {}


def gemm_address(dtype):
    """The address of OpenBLAS's 64-bit-integer cblas_?gemm for float32/float64 `dtype`,
    or 0 (no such library or symbol, or another dtype)."""
    char = np.dtype(dtype).char
    address = _ADDRESSES.get(char)
    if address is None:
        names = () if numba.config.DISABLE_JIT else _NAMES.get(char, ())
        address = _ADDRESSES[char] = _find(names)
    return address


def _find(names):
    lib = blas.library()
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
