"""Batched matrix multiply on CUDA: a shared-memory tiled, register-blocked GEMM.

Contract of kernels/cpu/matmul.py: ``matmul(a, b, out)`` with a (..., M, K),
b (..., K, N), out (..., M, N), batch dims broadcasting (size-1 or stride-0
dims), any strides. The launcher merges the batch dims (stride-0 ones included)
into at most two, builds 4-D views without copying, and launches::

    block (bx, by, z) computes out[z, by*BM:(by+1)*BM, bx*BN:(bx+1)*BN]:
    for k0 in range(0, K, BK):
        As[BK, BM] = a[z, rows, k0:k0+BK]^T ; Bs[BK, BN] = b[z, k0:k0+BK, cols]  (zero padded)
        each thread: acc[TM, TN] += As[kk, its rows] x Bs[kk, its cols]  (registers)

A thread owns rows ty + i*TY and columns tx + j*TX (strided, so shared-memory
reads are conflict-free and stores coalesced). Accumulates in out's dtype
(float32 like cuBLAS without TF32; int64 for integers); float16 runs through
float32 copies. Tile sizes are smaller on the simulator (every thread is a
Python thread there).
"""
import itertools

import numpy as np
from numba import cuda

from ._launch import SIMULATOR, strided_view
from .gridstride import merged_layout

__all__ = ["matmul", "typecheck_signatures"]

TX = 2 if SIMULATOR else 16          # threads along N
TY = 2 if SIMULATOR else 16          # threads along M
TM = 2 if SIMULATOR else 4           # rows per thread
TN = 2 if SIMULATOR else 4           # columns per thread
BM = TY * TM
BN = TX * TN
BK = 2 if SIMULATOR else 16
AS_ROW = BM + 1      # As rows padded by one: its transposing stores As[kk, mm] hit distinct banks
MAX_GRID_Z = 65535


@cuda.jit(cache=True)
def matmul_kernel(a, b, out):
    """out[z0, z1] = a[z0, z1] @ b[z0, z1] for 4-D views (batch dims may have stride 0)."""
    As = cuda.shared.array((BK, AS_ROW), out.dtype)
    Bs = cuda.shared.array((BK, BN), out.dtype)
    acc = cuda.local.array((TM, TN), out.dtype)
    ra = cuda.local.array(TM, out.dtype)
    rb = cuda.local.array(TN, out.dtype)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    tid = ty * TX + tx
    B0, B1, M, K = a.shape
    N = b.shape[3]
    row0 = cuda.blockIdx.y * BM
    col0 = cuda.blockIdx.x * BN
    for z in range(cuda.blockIdx.z, B0 * B1, cuda.gridDim.z):
        z0 = z // B1
        z1 = z - z0 * B1
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0
        for k0 in range(0, K, BK):
            for e in range(tid, BM * BK, TX * TY):
                mm = e // BK
                kk = e - mm * BK
                r = row0 + mm
                c = k0 + kk
                As[kk, mm] = a[z0, z1, r, c] if (r < M and c < K) else 0
            for e in range(tid, BK * BN, TX * TY):
                kk = e // BN
                nn = e - kk * BN
                r = k0 + kk
                c = col0 + nn
                Bs[kk, nn] = b[z0, z1, r, c] if (r < K and c < N) else 0
            cuda.syncthreads()
            for kk in range(BK):
                for i in range(TM):
                    ra[i] = As[kk, ty + i * TY]
                for j in range(TN):
                    rb[j] = Bs[kk, tx + j * TX]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += ra[i] * rb[j]
            cuda.syncthreads()
        for i in range(TM):
            r = row0 + ty + i * TY
            if r < M:
                for j in range(TN):
                    c = col0 + tx + j * TX
                    if c < N:
                        out[z0, z1, r, c] = acc[i, j]


def _batch_layout(a, b, out):
    """Merged batch shape and (out, a, b) byte strides, broadcast dims at stride 0."""
    batch = tuple(out.shape)[:-2]
    strides = []
    for x in (out, a, b):
        strides.append(tuple(0 if n == 1 and m != 1 else s for n, s, m in
                             zip(tuple(x.shape)[:-2], tuple(x.strides)[:-2], batch)))
    if not batch:
        return (1,), [(0,), (0,), (0,)]
    return merged_layout(batch, strides)


def _launch(a, b, out, stream):
    (M, K), N = tuple(a.shape)[-2:], tuple(b.shape)[-1]
    shape, (so, sa, sb) = _batch_layout(a, b, out)
    lead, tail = shape[:-2], shape[-2:]
    if len(tail) == 1:
        tail = (1,) + tail
        so, sa, sb = ((0,) + so, (0,) + sa, (0,) + sb)
    nb = len(tail)
    z = tail[0] * tail[1]
    blocks = ((N + BN - 1) // BN, (M + BM - 1) // BM, min(z, MAX_GRID_Z))
    for idx in itertools.product(*(range(n) for n in lead)):
        off = [sum(i * s for i, s in zip(idx, st[:-nb])) for st in (so, sa, sb)]
        views = [strided_view(x, tail + mat, st[-nb:] + tuple(x.strides)[-2:], o)
                 for x, st, o, mat in zip((out, a, b), (so, sa, sb), off,
                                          ((M, N), (M, K), (K, N)))]
        matmul_kernel[blocks, (TX, TY), stream](views[1], views[2], views[0])


def matmul(a, b, out, stream=0):
    """out = a @ b (device arrays of one dtype, batch dims broadcast to out's)."""
    from . import copy
    if out.size == 0:
        return
    if tuple(a.shape)[-1] == 0:
        copy.fill(out, out.dtype.type(0), stream)
        return
    if out.dtype == np.float16:
        tmp = [cuda.device_array(x.shape, np.float32, stream=stream) for x in (a, b, out)]
        copy.copy(tmp[0], a, stream)
        copy.copy(tmp[1], b, stream)
        _launch(tmp[0], tmp[1], tmp[2], stream)
        copy.copy(out, tmp[2], stream)
        return
    _launch(a, b, out, stream)


def typecheck_signatures():
    from numba import types as nt
    for t in (nt.float32, nt.float64, nt.int64, nt.int32):
        arr = nt.Array(t, 4, "A")
        yield (f"matmul[{t}]", matmul_kernel.py_func, (arr, arr, arr))
