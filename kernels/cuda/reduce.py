"""Reduction kernels over a C-contiguous (outer, n, inner) device array into out (outer, inner).

The same contract as kernels/cpu/reduce.py and reduce_stats.py (the op layer
views the input so the reduced dims are the middle axis). Two walks, chosen by
the launcher:

- inner == 1 ("rows"): one block per row (grid-stride over rows)::

      acc = op-reduce of a[o, t::blockDim, 0]     (each thread, accumulator type)
      out[o, 0] = block_reduce(acc)               (shared-memory tree, then warp shuffles)

- inner > 1 ("columns"): one thread per output (o, k), a serial loop over i;
  neighbouring threads read neighbouring addresses (coalesced).

`block_reduce` halves a shared array down to one warp, then finishes with
``shfl_down_sync`` on a GPU; on the simulator (blocks of 4 threads) the tree
runs to the end instead (STYLE.md 13: warp intrinsics with a fallback). Sums
accumulate in float64 per thread (int64 for integers); NaN propagates through
sum, max and min. Ops are integer codes so one compiled kernel serves several ops.
"""
import math

import numpy as np
from numba import cuda

from ._launch import SIMULATOR, THREADS, grid

__all__ = ["sum_", "prod", "count_nonzero", "extreme", "arg_extreme", "var", "logsumexp",
           "norm", "typecheck_signatures"]

SUM, PROD, COUNT, MAX, MIN = 0, 1, 2, 3, 4          # combine codes
T_ID, T_SQDEV, T_EXP, T_NORM, T_ABS = 0, 1, 2, 3, 4  # stats element terms
BLOCK = 256          # shared array size: the largest block a launcher uses
WARP = 32
FULL_MASK = 0xFFFFFFFF


# ---- device helpers (shared with softmax.py) ---------------------------------------

@cuda.jit(device=True)
def combine(op, x, y):
    """x (op) y; MAX/MIN keep a NaN from either side."""
    if op == PROD:
        return x * y
    if op == MAX:
        return x if (x > y or x != x) else y
    if op == MIN:
        return x if (x < y or x != x) else y
    return x + y


@cuda.jit(device=True)
def block_reduce(sh, v, op, zero):
    """Every thread of the block gets op-reduce(v over the block); blockDim a power of 2.

    Shared-memory tree down to one warp, then warp shuffles in the accumulator type
    of `zero` (shuffles take 32/64-bit values only); the simulator runs the tree out.
    """
    tid = cuda.threadIdx.x
    sh[tid] = v
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s >= WARP or (s > 0 and SIMULATOR):
        if tid < s:
            sh[tid] = combine(op, sh[tid], sh[tid + s])
        cuda.syncthreads()
        s //= 2
    if s > 0:
        if tid < WARP:
            w = sh[tid] + zero
            off = WARP // 2
            while off > 0:
                w = combine(op, w, cuda.shfl_down_sync(FULL_MASK, w, off))
                off //= 2
            if tid == 0:
                sh[0] = w
        cuda.syncthreads()
    r = sh[0]
    cuda.syncthreads()
    return r


@cuda.jit(device=True)
def reduce_all(sh, v, op, zero, in_block):
    """block_reduce(v) when a block shares the output (rows walk), else v itself."""
    if in_block:
        return block_reduce(sh, v, op, zero)
    return v


@cuda.jit(device=True)
def _accumulate(a, o, k, i0, step, op, zero, skip_nan):
    """op-reduce of a[o, i0::step, k] in zero's type (MAX/MIN start from a[o, 0, k])."""
    acc = zero
    if op == MAX or op == MIN:
        acc = a[o, 0, k]
    elif op == PROD:
        acc = zero + 1
    for i in range(i0, a.shape[1], step):
        v = a[o, i, k]
        if op == COUNT:
            acc += 1 if v != 0 else 0
        elif op == SUM:
            if not (skip_nan and v != v):
                acc += v
        else:
            acc = combine(op, acc, v)
    return acc


@cuda.jit(device=True)
def walk(a):
    """(first output, output step, element start, element step, rows walk?) of this thread."""
    outer, inner = a.shape[0], a.shape[2]
    if inner == 1:
        return cuda.blockIdx.x, cuda.gridDim.x, cuda.threadIdx.x, cuda.blockDim.x, True
    return cuda.grid(1), cuda.gridsize(1), 0, 1, False


# ---- sum / prod / count_nonzero / amax / amin ----------------------------------------

@cuda.jit(cache=True)
def reduce_kernel(a, out, op, zero, scale, skip_nan):
    """out[o, k] = scale * op-reduce_i a[o, i, k] (accumulated in zero's type)."""
    sh = cuda.shared.array(BLOCK, out.dtype)
    outer, inner = a.shape[0], a.shape[2]
    t0, tstep, i0, istep, rows = walk(a)
    for t in range(t0, outer * inner, tstep):
        o = t // inner
        k = t - o * inner
        acc = _accumulate(a, o, k, i0, istep, op, zero, skip_nan)
        acc = reduce_all(sh, acc, op, zero, rows)
        if i0 == 0:
            out[o, k] = acc * scale if op == SUM else acc


def _geometry(a3):
    """Launch shape for the rows walk (a block per row) or the columns walk."""
    outer, n, inner = a3.shape
    if inner == 1:
        return grid(outer * THREADS)
    return grid(outer * inner)


def _acc_zero(dtype):
    return np.float64(0.0) if dtype.kind == "f" else np.int64(0)


def _as_kernel_array(a):
    """bool arrays run as uint8 on a GPU (same order); the simulator takes them as they are."""
    if a.dtype != np.bool_ or SIMULATOR:
        return a
    return a.view(np.uint8)


def _launch(a3, out2, op, zero, scale, skip_nan, stream):
    if out2.size == 0:
        return
    a3, out2 = _as_kernel_array(a3), _as_kernel_array(out2)
    reduce_kernel[_geometry(a3) + (stream,)](a3, out2, op, zero, scale, skip_nan)


def sum_(a3, out2, scale=1.0, skip_nan=False, stream=0):
    """out2[o, k] = scale * sum_i a3[o, i, k] (NaN skipped if skip_nan)."""
    zero = _acc_zero(a3.dtype)
    _launch(a3, out2, SUM, zero, zero.dtype.type(scale), bool(skip_nan), stream)


def prod(a3, out2, stream=0):
    """out2[o, k] = prod_i a3[o, i, k]."""
    zero = _acc_zero(a3.dtype)
    _launch(a3, out2, PROD, zero, zero, False, stream)


def count_nonzero(a3, out2, stream=0):
    """out2[o, k] = #{i : a3[o, i, k] != 0} (int64)."""
    _launch(a3, out2, COUNT, np.int64(0), np.int64(0), False, stream)


def extreme(want_max):
    """The amax (want_max) or amin launcher: out2[o, k] = max_i a3[o, i, k]; NaN wins."""
    def launcher(a3, out2, stream=0):
        zero = _acc_zero(a3.dtype)
        _launch(a3, out2, MAX if want_max else MIN, zero, zero, False, stream)
    launcher.__name__ = "amax" if want_max else "amin"
    return launcher


# ---- argmax / argmin --------------------------------------------------------------

@cuda.jit(device=True)
def _arg_takes(v, i, m, j, want_max):
    """(v, i) replaces the best (m, j): better, the first NaN, or equal at a lower index."""
    if m != m:
        return v != v and i < j
    if v != v:
        return True
    if v == m:
        return i < j
    return v > m if want_max else v < m


@cuda.jit(cache=True)
def arg_kernel(a, values, indices, want_max, zero):
    """values/indices[o, k] = max_i a[o, i, k] and its first index (NaN counts as max)."""
    shv = cuda.shared.array(BLOCK, values.dtype)
    shi = cuda.shared.array(BLOCK, indices.dtype)
    outer, n, inner = a.shape
    t0, tstep, i0, istep, rows = walk(a)
    tid = cuda.threadIdx.x
    for t in range(t0, outer * inner, tstep):
        o = t // inner
        k = t - o * inner
        best = a[o, 0, k]
        bi = 0
        for i in range(i0, n, istep):
            if _arg_takes(a[o, i, k], i, best, bi, want_max):
                best = a[o, i, k]
                bi = i
        if rows:
            shv[tid] = best
            shi[tid] = bi
            cuda.syncthreads()
            s = cuda.blockDim.x // 2
            while s > 0:
                if tid < s and _arg_takes(shv[tid + s], shi[tid + s], shv[tid], shi[tid],
                                          want_max):
                    shv[tid] = shv[tid + s]
                    shi[tid] = shi[tid + s]
                cuda.syncthreads()
                s //= 2
            best = shv[0]
            bi = shi[0]
            cuda.syncthreads()
        if i0 == 0:
            values[o, k] = best
            indices[o, k] = bi


def arg_extreme(want_max):
    """The argmax (want_max) or argmin launcher (a3, values2, indices2)."""
    def launcher(a3, values2, indices2, stream=0):
        if values2.size == 0:
            return
        a3, values2 = _as_kernel_array(a3), _as_kernel_array(values2)
        arg_kernel[_geometry(a3) + (stream,)](a3, values2, indices2, bool(want_max),
                                             _acc_zero(a3.dtype))
    launcher.__name__ = "argmax" if want_max else "argmin"
    return launcher


# ---- var / logsumexp / norm (float, two passes where a shift is needed) ---------------

@cuda.jit(device=True)
def _term(kind, v, shift, p):
    if kind == T_SQDEV:
        d = v - shift
        return d * d
    if kind == T_EXP:
        return math.exp(v - shift)
    if kind == T_ABS:
        return float(abs(v))
    if kind == T_NORM:
        x = float(abs(v))
        if p == 2.0:
            return x * x
        if p == 1.0:
            return x
        if p == 0.0:
            return 1.0 if v != 0 else 0.0
        return x ** p
    return float(v)


@cuda.jit(device=True)
def _accumulate_terms(a, o, k, i0, step, op, kind, shift, p):
    """op-reduce of term(a[o, i0::step, k]) in float64 (MAX/MIN start from term(a[o, 0, k]))."""
    acc = 0.0
    if op == MAX or op == MIN:
        acc = _term(kind, a[o, 0, k], shift, p)
    for i in range(i0, a.shape[1], step):
        acc = combine(op, acc, _term(kind, a[o, i, k], shift, p))
    return acc


@cuda.jit(device=True)
def _terms_all(sh, a, o, k, i0, step, rows, op, kind, shift, p):
    v = _accumulate_terms(a, o, k, i0, step, op, kind, shift, p)
    return reduce_all(sh, v, op, 0.0, rows)


VAR, LSE, NORM = 0, 1, 2


@cuda.jit(cache=True)
def stats_kernel(a, out, aux, stat, p):
    """var (aux = mean; p = correction), logsumexp, or the p-norm of a[o, :, k]."""
    sh = cuda.shared.array(BLOCK, out.dtype)
    outer, n, inner = a.shape
    t0, tstep, i0, istep, rows = walk(a)
    for t in range(t0, outer * inner, tstep):
        o = t // inner
        k = t - o * inner
        if stat == VAR:
            mean = _terms_all(sh, a, o, k, i0, istep, rows, SUM, T_ID, 0.0, p) / n
            m2 = _terms_all(sh, a, o, k, i0, istep, rows, SUM, T_SQDEV, mean, p)
            r = m2 / max(n - p, 0.0)
            if i0 == 0:
                aux[o, k] = mean
        elif stat == LSE:
            m = _terms_all(sh, a, o, k, i0, istep, rows, MAX, T_ID, 0.0, p)
            r = m
            if m - m == 0:
                r = m + math.log(_terms_all(sh, a, o, k, i0, istep, rows, SUM, T_EXP, m, p))
        elif p == math.inf or p == -math.inf:
            r = _terms_all(sh, a, o, k, i0, istep, rows, MAX if p > 0 else MIN, T_ABS,
                           0.0, p)
        else:
            s = _terms_all(sh, a, o, k, i0, istep, rows, SUM, T_NORM, 0.0, p)
            if p == 2.0:
                r = math.sqrt(s)
            elif p == 1.0 or p == 0.0:
                r = s
            else:
                r = s ** (1.0 / p)
        if i0 == 0:
            out[o, k] = r


def _stats(a3, out2, aux2, stat, p, stream):
    if out2.size:
        stats_kernel[_geometry(a3) + (stream,)](a3, out2, aux2, stat, float(p))


def var(a3, var2, mean2, correction, stream=0):
    """var2[o, k] = sum_i (a3[o,i,k] - m)^2 / max(n - correction, 0), mean2[o, k] = m."""
    _stats(a3, var2, mean2, VAR, correction, stream)


def logsumexp(a3, out2, stream=0):
    """out2[o, k] = m + log(sum_i exp(a3[o,i,k] - m)), m the max (+-inf max: the result)."""
    _stats(a3, out2, out2, LSE, 0.0, stream)


def norm(a3, out2, p, stream=0):
    """out2[o, k] = (sum_i |a3[o,i,k]|^p)^(1/p); p = +-inf: max/min |a|; p = 0: count != 0."""
    _stats(a3, out2, out2, NORM, p, stream)


def typecheck_signatures():
    """reduce/arg kernels over every dtype they serve, stats kernels over float32/float64."""
    from numba import types as nt
    arr = lambda t, nd=3: nt.Array(t, nd, "C")      # noqa: E731
    floats = (nt.float32, nt.float64)
    for t in floats + (nt.int64,):
        acc = nt.float64 if t in floats else nt.int64
        yield (f"reduce[{t}]", reduce_kernel.py_func,
               (arr(t), arr(t, 2), nt.int64, acc, acc, nt.boolean))
    for t in (nt.float32, nt.float64, nt.int64, nt.int32, nt.int16, nt.int8, nt.uint8):
        acc = nt.float64 if t in floats else nt.int64
        yield (f"extreme[{t}]", reduce_kernel.py_func,
               (arr(t), arr(t, 2), nt.int64, acc, acc, nt.boolean))
        yield (f"count_nonzero[{t}]", reduce_kernel.py_func,
               (arr(t), arr(nt.int64, 2), nt.int64, nt.int64, nt.int64, nt.boolean))
        yield (f"arg[{t}]", arg_kernel.py_func,
               (arr(t), arr(t, 2), arr(nt.int64, 2), nt.boolean, acc))
    for t in floats:
        yield (f"stats[{t}]", stats_kernel.py_func,
               (arr(t), arr(t, 2), arr(t, 2), nt.int64, nt.float64))
