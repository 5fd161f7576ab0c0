"""Matrix-multiply kernels: BLAS through NumPy (the default) and a packed Numba GEMM.

Every launcher has the same contract, the one the ``matmul`` op registers:

    launcher(a, b, out)    a: (..., M, K), b: (..., K, N), out: (..., M, N)

`a` and `b` are raw NumPy arrays of one dtype whose batch dims broadcast (NumPy
rules, same number of dims) to `out`'s; `out` is allocated by the caller and
fully overwritten. Any strides are accepted (views, transposes, expanded
batch dims).

Two float launchers, chosen by the op layer through the registry:

- `matmul_blas` (default) calls ``np.matmul(a, b, out=out)`` **from Python**.
  This departs from "every kernel is Numba" on purpose: ``np.dot`` inside an
  ``@njit`` function needs SciPy (not a dependency), while NumPy's matmul
  reaches the machine's BLAS (OpenBLAS) without it. DESIGN.md measured BLAS
  at 3-4x the best hand-tiled Numba kernel, and issue 2 asks to keep the
  faster one as the default. How many OpenBLAS threads a call uses, and whether a
  batch is split over the threads one product each, is `kernels/cpu/blas.py`'s
  business (`_blas_core`).
- `matmul_numba` is a textbook Goto-style GEMM written with ``numba.njit``:
  pack A into MR-row strips and B into NR-column panels (zero padded), then a
  parallel loop over (batch, panel, strip) tiles runs a register-blocked
  micro-kernel whose MR x NR accumulator lives on the stack, so LLVM keeps it
  in vector registers. Select it for experiments with
  ``nbtorch.ops.linalg.use_cpu_matmul("numba")``.

BLAS stays 2-3x faster on the project machine (benchmarks/bench_matmul.py).
What mattered, for readers who want to push it further: an accumulator from ``np.zeros`` is
stored back to memory on every k step (LLVM cannot prove it unaliased) ->
~40% slower; with the r loop innermost over a stack tile LLVM keeps 16 ymm
accumulators (4 x 32 float32) and issues 16 FMAs per 4 loads; with the loops
the other way round it vectorised across rows into gathers/scatters (10x
slower); a signed k index costs ~15% in wraparound checks. MR, NR and KC are
module constants (Numba freezes globals at compile time; editing this file
invalidates the on-disk cache). With ``NUMBA_DISABLE_JIT=1`` the GEMM runs as
plain Python (the stack tile becomes ``np.zeros``) for stepping through.

Integer dtypes go to `matmul_loops` (a plain i-k-j loop; PyTorch's CPU integer
matmul is not BLAS either). float16 and bfloat16 compute in float32 (Numba
has neither) and round once at the end.
"""
import math

import numba
import numpy as np
from llvmlite import ir
from numba import prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from nbtorch.kernels.cpu import batch_threads, blas, cblas, gemm_rows, openmp, workers
from nbtorch.kernels.cpu.copy import transpose_into
from nbtorch.kernels.halves import is_half

__all__ = ["matmul_blas", "matmul_numba", "matmul_loops", "pack_panels", "gemm_tile",
           "gemm_packed", "gemm_packed_serial", "LAUNCHERS", "MR", "NR", "KC"]

MR = 4     # rows of A per micro-tile (broadcast scalars per k step)
NR = 32    # columns of B per panel (vector width x 4 for float32 on AVX2/AVX-512)
KC = 256   # depth of one k block: a KC x NR panel of B stays in L1/L2
PARALLEL_MIN_WORK = 128 ** 3  # multiply-adds from which the tile loop runs in parallel
SPLIT_ROWS_MIN_WORK = 1 << 20  # ...from which a 2-D product up to blas.SMALL_WORK splits
                               # its rows over the spinning helpers (gemm_rows.py); below,
                               # ~20 us of work, a split saved too little for its hand-off
SWAP_MIN_ROWS = 2             # 2-D products with this many rows ...
SWAP_MAX_ROWS = 64            # ... up to this many and a wide result run transposed
                              # (`_transposed_pays`)
_TILE = MR * NR


# ---- the Numba GEMM ------------------------------------------------------------

@intrinsic
def _stack_tile(typingctx, dtype):
    """Pointer to MR*NR elements on the stack: unlike an np.empty buffer, LLVM may keep it
    in registers (heap buffers are stored back to memory on every k step)."""
    elem = dtype.dtype
    sig = types.CPointer(elem)(dtype)

    def codegen(context, builder, signature, args):
        llty = context.get_data_type(elem)
        buf = cgutils.alloca_once(builder, ir.ArrayType(llty, _TILE))
        return builder.bitcast(buf, llty.as_pointer())
    return sig, codegen


if numba.config.DISABLE_JIT:
    def _new_tile(dtype):
        """A zeroed MR*NR accumulator (plain NumPy when stepping through as Python)."""
        return np.zeros(_TILE, dtype)
else:
    @numba.njit(cache=True, inline="always")
    def _new_tile(dtype):
        """A zeroed MR*NR accumulator on the stack."""
        acc = numba.carray(_stack_tile(dtype), _TILE)
        for q in range(_TILE):
            acc[q] = 0
        return acc


@numba.njit(cache=True)
def pack_panels(src, dst):
    """Copy src (batch, K, N) into zero-padded column panels dst (batch, P, K, W).

    for t, p, k: dst[t, p, k, :w] = src[t, k, p*W : p*W + w];  dst[t, p, k, w:] = 0
    B is packed as is (W = NR); A is packed through its transpose (W = MR), so
    each micro-kernel step reads MR values of A and NR of B contiguously.
    """
    batch, K, N = src.shape
    P, W = dst.shape[1], dst.shape[3]
    for t in range(batch):
        for p in range(P):
            j0 = p * W
            w = min(W, N - j0)
            for k in range(K):
                row = dst[t, p, k]
                seg = src[t, k]
                for j in range(w):
                    row[j] = seg[j0 + j]
                for j in range(w, W):
                    row[j] = 0


@numba.njit(cache=True, fastmath={"contract"})
def gemm_tile(ap, bp, out, tile, k0):
    """One MR x NR tile of out += A[:, k0:k0+KC] @ B[k0:k0+KC, :] (= on the first block).

    tile -> (t, p, s), panel-major so consecutive tiles reuse one B panel;
    acc[MR, NR] = 0                                  (on the stack: vector registers)
    for k in k0..k0+KC: for j: for r: acc[r, j] += ap[t, s, k, r] * bp[t, p, k, j]
    out[t, s*MR : +MR, p*NR : +NR] (+)= acc          (clipped at the edges)
    """
    M, N = out.shape[1], out.shape[2]
    S, K = ap.shape[1], ap.shape[2]
    P = bp.shape[1]
    t = tile // (P * S)
    rest = tile - t * (P * S)
    p = rest // S
    s = rest - p * S
    acc = _new_tile(out.dtype)
    a_strip = ap[t, s]
    b_panel = bp[t, p]
    for k in range(k0, min(K, k0 + KC)):
        uk = np.uintp(k)          # unsigned: no negative-index wraparound per step
        a_k = a_strip[uk]
        b_k = b_panel[uk]
        for j in range(NR):
            b_kj = b_k[j]
            for r in range(MR):
                acc[r * NR + j] += a_k[r] * b_kj
    i0 = s * MR
    j0 = p * NR
    for r in range(min(MR, M - i0)):
        dst = out[t, i0 + r]
        if k0 == 0:
            for j in range(min(NR, N - j0)):
                dst[j0 + j] = acc[r * NR + j]
        else:
            for j in range(min(NR, N - j0)):
                dst[j0 + j] += acc[r * NR + j]


@numba.njit(cache=True, parallel=True)
def gemm_packed(ap, bp, out):
    """out (batch, M, N) = A @ B from strips ap (batch, S, K, MR) and panels bp (batch, P, K, NR).

    for k0 in 0, KC, 2KC, ...:          (serial: out accumulates block after block)
      prange over tiles: gemm_tile(ap, bp, out, tile, k0)
    """
    n_tiles = out.shape[0] * bp.shape[1] * ap.shape[1]
    for k0 in range(0, ap.shape[2], KC):
        for tile in prange(n_tiles):
            gemm_tile(ap, bp, out, tile, k0)


@numba.njit(cache=True)
def gemm_packed_serial(ap, bp, out):
    """`gemm_packed` on one thread (small problems: a parallel launch costs more)."""
    n_tiles = out.shape[0] * bp.shape[1] * ap.shape[1]
    for k0 in range(0, ap.shape[2], KC):
        for tile in range(n_tiles):
            gemm_tile(ap, bp, out, tile, k0)


# ---- integer loops -------------------------------------------------------------

@numba.njit(cache=True)
def matmul_loops(a, b, out):
    """out (batch, M, N) = a (batch, M, K) @ b (batch, K, N) by plain loops (integer dtypes).

    for t, i: out[t, i, :] = 0; for k: out[t, i, :] += a[t, i, k] * b[t, k, :]
    Row-order traversal; integer overflow wraps as in PyTorch.
    """
    batch, M, N = out.shape
    K = a.shape[2]
    for t in range(batch):
        for i in range(M):
            row = out[t, i]
            row[:] = 0
            for k in range(K):
                a_ik = a[t, i, k]
                b_k = b[t, k]
                for j in range(N):
                    row[j] += a_ik * b_k[j]


# ---- launchers (Python: shape plumbing, dtype routing) -------------------------

def _as_batches(a, b, out):
    """3-D views (batch, ., .) of a, b and out with the batch dims broadcast."""
    batch = out.shape[:-2]
    n = math.prod(batch)
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    a3 = np.broadcast_to(a, batch + (M, K)).reshape(n, M, K)
    b3 = np.broadcast_to(b, batch + (K, N)).reshape(n, K, N)
    return a3, b3, out.reshape(n, M, N)


def _blas_ready(x):
    """x, or a contiguous copy when neither of its last two dims has unit stride
    (NumPy would then skip BLAS and run its slow generic loop)."""
    unit = x.itemsize
    if x.strides[-1] == unit or x.strides[-2] == unit or x.size == 0:
        return x
    return np.ascontiguousarray(x)


_ROUTES = {}     # NumPy dtype -> "half" | "int" | "float" (asking a dtype its name is slow)


def _route(dtype):
    route = _ROUTES.get(dtype)
    if route is None:
        route = "half" if is_half(dtype) else "int" if dtype.kind in "iu" else "float"
        _ROUTES[dtype] = route
    return route


def _run(core, a, b, out):
    """Route by dtype: halves via float32, integers to `matmul_loops`, floats to `core`."""
    route = _route(out.dtype)
    if route == "float":
        core(a, b, out)
    elif route == "half":
        tmp = np.empty(out.shape, np.float32)
        core(a.astype(np.float32), b.astype(np.float32), tmp)
        out[...] = tmp
    elif out.flags.c_contiguous:
        matmul_loops(*_as_batches(a, b, out))
    else:
        tmp = np.empty(out.shape, out.dtype)
        matmul_loops(*_as_batches(a, b, tmp))
        out[...] = tmp


def _blas_core(a, b, out):
    """np.matmul, with OpenBLAS's threads used where they pay (kernels/cpu/blas.py).

    Batches of at least `blas.SPLIT_MIN_WORK` multiply-adds in all split over the CPU
    helper threads in ranges of their first dim, OpenBLAS on one thread per range (and
    for the whole call when the helpers back off). A product above `blas.SMALL_WORK`
    is left to OpenBLAS's own threads, which split it best on idle cores (on a busy
    machine they stall, but a choice by load would make values depend on it: see
    blas.py). A product of a few rows times a wide matrix (a small batch through a
    Linear) runs transposed, at any size (`_transposed_pays`). An outer product (k = 1,
    a batch of one's weight gradient) goes to gemm_rows at any size: NumPy's matmul runs
    it in its own loop, not BLAS (1024x1 @ 1x784: 881 us, split cblas calls 53, the same
    bits). Smaller products from
    `SPLIT_ROWS_MIN_WORK` split their rows over the spinning helpers (gemm_rows.py,
    OpenBLAS on one thread per range); the rest run on one OpenBLAS thread (at most
    64^3 multiply-adds, OpenBLAS uses one anyway)."""
    a, b = _blas_ready(a), _blas_ready(b)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    work = m * k * n
    if (work <= blas.OWN_ONE_THREAD_WORK and k != 1 and n < 512 and out.ndim == 2
            and a.ndim == 2):       # a small 2-D product: the last case below, found first
        cblas.matmul(a, b, out)
        return
    batch = math.prod(out.shape[:-2]) if out.ndim > 2 else 1
    if out.ndim > 2 and batch == 1 and a.ndim == b.ndim == out.ndim:
        a, b, out = a.reshape(m, k), b.reshape(k, n), out.reshape(m, n)   # views
    if out.ndim == 2:
        if (k == 1 and gemm_rows.SUPPORTED         # an outer product: NumPy's matmul skips
                and gemm_rows.matmul(a, b, out, workers.NUM_THREADS)):   # BLAS for it
            return
        if _transposed_pays(m, n, work, b) and out.flags.c_contiguous and out.dtype.char in "fd":
            if blas.OWN_ONE_THREAD_WORK < work <= blas.SMALL_WORK:
                blas.one_thread(_transposed_product, a, b, out)
            else:
                _transposed_product(a, b, out)
            return
        if work > blas.SMALL_WORK:
            cblas.matmul(a, b, out)
            return
        if (work >= SPLIT_ROWS_MIN_WORK and gemm_rows.SUPPORTED
                and gemm_rows.matmul(a, b, out, workers.NUM_THREADS)):
            return
    elif batch * work >= blas.SPLIT_MIN_WORK and a.ndim == b.ndim == out.ndim:
        parts = batch_threads.ranges(out.shape[0], batch * work, blas.SPLIT_MIN_WORK)
        if parts is None:
            blas.one_thread(cblas.matmul, a, b, out)
        else:
            batch_threads.run(lambda b0, b1: cblas.matmul(
                _first(a, b0, b1), _first(b, b0, b1), out[b0:b1]), parts,
                ("bmm", out.dtype.char, (batch * work).bit_length()))
        return
    if work > blas.OWN_ONE_THREAD_WORK:
        blas.one_thread(cblas.matmul, a, b, out)
    else:
        cblas.matmul(a, b, out)


def _transposed_pays(m, n, work, b):
    """Whether a 2-D product of `m` rows and `n` columns (`work` multiply-adds) runs
    faster as (b^T @ a^T)^T: a few rows times a wide matrix stored transposed (a
    Linear's ``x @ w.t()``: b's unit stride down its rows), where OpenBLAS's direct call
    is slow (see `_transposed_product`); from 32 rows up to `blas.SMALL_WORK` the rows
    split over the helpers instead (gemm_rows.py). With a row-major b the transposed
    call won or lost by shape (two threads, us, direct / transposed: 32x144 @ 144x784
    87/61, 16x64 @ 64x2048 50/66, 32x1024 @ 1024x256 111/124), so b stays as it is."""
    return (SWAP_MIN_ROWS <= m <= SWAP_MAX_ROWS and n >= 4 * m
            and b.strides[0] == b.itemsize
            and (n >= 512 or (m >= 4 and work > blas.OWN_ONE_THREAD_WORK))
            and (m < gemm_rows.MIN_ROWS or work > blas.SMALL_WORK))


def _transposed_product(a, b, out):
    """out = a @ b computed as (b^T @ a^T)^T, then a tiled copy (`copy.transpose_into`,
    ~10 us for 32x1024 float32) back into out. For a few rows (a small batch) times a
    wide matrix, OpenBLAS's direct call is slow: its two threads split the columns of
    its column-major output, which for out (m, n) row-major are the m rows, and on one
    thread its packed path costs 2-3x its small-matrix one. Measured (AMD EPYC, OpenBLAS
    0.3.31 SkylakeX kernels, float32, us, direct / transposed + copy) for x (m, k) @
    W^T (k, n), W^T a view (the layout `_transposed_pays` asks for): above
    `blas.SMALL_WORK` (two threads) k=1024 n=1024 m=8 402/195, m=32 639/410, m=64
    967/757, m=128 1644/1451 but k=784 n=512 m=128 593/578, m=256 1104/1147, and in the
    MLP step m=128 cost 25-60 us (hence `SWAP_MAX_ROWS`); m=2 k=1024 n=4096 1607/599,
    m=4 k=2048 n=2048 1658/868, m=1 equal (a GEMV); on one thread (from a grid of k
    64-1024, n 128-2048, m 1-31: 5.5 ms saved in all under `_transposed_pays`'s rule, six
    cases up to 1.6 us slower) k=256 n=512 m=4 75/33, m=8 85/46, k=128 n=1024 m=2 70/26.
    Each element is one dot product either way: float32 gave the same bits in every
    shape tried with the SkylakeX kernels, not with the Haswell kernels of nbtorch's own
    copy (blas_private.py: within rounding; there the swap still paid, two threads, us,
    direct / transposed: m=8 k=1024 n=1024 181/152, m=2 k=1024 n=4096 901/538, m=64
    361/374); float64 differed in the last bits in some (k=300, n=700, m=48: 3e-14)."""
    m, n = out.shape
    t = np.empty((n, m), out.dtype)
    cblas.matmul(b.T, a.T, t)
    transpose_into(t, out)


def _first(x, b0, b1):
    """x[b0:b1] along the first (batch) dim, or x itself where that dim broadcasts."""
    return x if x.shape[0] == 1 else x[b0:b1]


def _numba_core(a, b, out):
    if not out.flags.c_contiguous:
        tmp = np.empty(out.shape, out.dtype)
        _numba_core(a, b, tmp)
        out[...] = tmp
        return
    if out.size == 0:
        return
    a3, b3, out3 = _as_batches(a, b, out)
    batch, M, K = a3.shape
    N = b3.shape[2]
    if K == 0:
        out[...] = 0
        return
    ap = np.empty((batch, -(-M // MR), K, MR), out.dtype)
    bp = np.empty((batch, -(-N // NR), K, NR), out.dtype)
    pack_panels(a3.transpose(0, 2, 1), ap)
    pack_panels(b3, bp)
    big = batch * M * N * K >= PARALLEL_MIN_WORK and openmp.USABLE
    gemm = gemm_packed if big else gemm_packed_serial
    gemm(ap, bp, out3)


def matmul_blas(a, b, out):
    """out = a @ b through NumPy's BLAS (the default CPU matmul kernel)."""
    _run(_blas_core, a, b, out)


def matmul_numba(a, b, out):
    """out = a @ b through the packed Numba GEMM (`gemm_packed`); for experiments."""
    _run(_numba_core, a, b, out)


LAUNCHERS = {"blas": matmul_blas, "numba": matmul_numba}
