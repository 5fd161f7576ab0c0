"""Reduction kernels over a C-contiguous (outer, n, inner) device array into out (outer, inner).

The same contract as kernels/cpu/reduce.py and reduce_stats.py (the op layer
views the input so the reduced dims are the middle axis). Two walks, chosen by
the launcher:

- "rows" (inner == 1, or few outputs with long reductions; `plan`): one block
  per output (grid-stride over outputs)::

      acc = op-reduce of a[o, t::blockDim, k]     (each thread, accumulator type)
      out[o, k] = block_reduce(acc)               (shared-memory tree, then warp shuffles)

- "columns" (many outputs): one thread per output (o, k), a serial loop over
  i; neighbouring threads read neighbouring addresses (coalesced).

A few very long rows (``x.sum()`` of 10^8 elements) would leave most of the
GPU idle with a block per row: sum/prod/count/amax/amin (and norms, in
reduce_stats.py) then cut each row into P parts (a strided view, no copy),
reduce them into (outer, P) partials, and reduce those in a second launch.

`block_reduce` halves a shared array down to one warp, then finishes with
``shfl_down_sync`` on a GPU; on the simulator (blocks of 4 threads) the tree
runs to the end instead (STYLE.md 13: warp intrinsics with a fallback). Sums
accumulate in float64 per thread (int64 for integers); NaN propagates through
sum, max and min. Ops are integer codes, so one compiled kernel serves
several ops. var/logsumexp/norm live in reduce_stats.py.
"""
import numpy as np
from numba import cuda

from ._launch import SIMULATOR, THREADS, grid, strided_view

__all__ = ["sum_", "prod", "count_nonzero", "extreme", "arg_extreme", "block_reduce",
           "reduce_all", "walk", "plan", "split_parts", "split_rows", "typecheck_signatures"]

SUM, PROD, COUNT, MAX, MIN = 0, 1, 2, 3, 4          # combine codes
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
def walk(rows):
    """(first output, output step, element start, element step) of this thread."""
    if rows:
        return cuda.blockIdx.x, cuda.gridDim.x, cuda.threadIdx.x, cuda.blockDim.x
    return cuda.grid(1), cuda.gridsize(1), 0, 1


# ---- sum / prod / count_nonzero / amax / amin ----------------------------------------

@cuda.jit(cache=True)
def reduce_kernel(a, out, op, zero, scale, skip_nan, rows):
    """out[o, k] = scale * op-reduce_i a[o, i, k] (accumulated in zero's type)."""
    sh = cuda.shared.array(BLOCK, out.dtype)
    outer, inner = a.shape[0], a.shape[2]
    t0, tstep, i0, istep = walk(rows)
    for t in range(t0, outer * inner, tstep):
        o = t // inner
        k = t - o * inner
        acc = _accumulate(a, o, k, i0, istep, op, zero, skip_nan)
        acc = reduce_all(sh, acc, op, zero, rows)
        if i0 == 0:
            out[o, k] = acc * scale if op == SUM else acc


ROWS_MAX_OUTPUTS = 8192          # up to this many outputs, long reductions get a block each
SPLIT_MAX_OUTPUTS = 2 if SIMULATOR else 512      # rows walks this small split long rows
SPLIT_MIN_PART = 4 if SIMULATOR else 8192        # elements per part at least
SPLIT_MAX_BLOCKS = 4 if SIMULATOR else 2048      # parts x outputs at most


def plan(a3):
    """(launch grid, rows walk?) for reducing the middle axis of a3 (outer, n, inner)."""
    outer, n, inner = a3.shape
    outputs = outer * inner
    rows = inner == 1 or (outputs <= ROWS_MAX_OUTPUTS and n > outputs)
    return (grid(outputs * THREADS) if rows else grid(outputs)), rows


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
    if split_parts(a3) > 1:
        one = zero.dtype.type(1)

        def part(view, dst):
            reduce_kernel[grid(dst.size * THREADS) + (stream,)](view, dst, op, zero, one,
                                                                skip_nan, True)

        def combine_parts(partial3):
            reduce_kernel[grid(out2.size * THREADS) + (stream,)](
                partial3, out2, SUM if op == COUNT else op, zero, scale if op == SUM else one,
                False, True)
        split_rows(a3, out2.dtype, part, combine_parts, stream)
        return
    geometry, rows = plan(a3)
    reduce_kernel[geometry + (stream,)](a3, out2, op, zero, scale, skip_nan, rows)


def split_parts(a3):
    """How many parts each row of a few long rows is cut into (1: no split)."""
    outer, n, inner = a3.shape
    if inner != 1 or outer > SPLIT_MAX_OUTPUTS:
        return 1
    return max(1, min(n // SPLIT_MIN_PART, SPLIT_MAX_BLOCKS // outer))


def split_rows(a3, dtype, part, combine_parts, stream):
    """Cut the rows of a3 (outer, n, 1) into `split_parts` equal parts (+ the remainder).

    ``part(view3, partial2)`` reduces the middle axis of each piece (a block per
    output) into its columns of the (outer, P) partials; ``combine_parts(partial3)``
    then reduces the partials viewed as (outer, P, 1).
    """
    outer, n = a3.shape[0], a3.shape[1]
    parts = split_parts(a3)
    m = n // parts
    rest = n - m * parts
    cols = parts + (rest > 0)
    s, ps = a3.dtype.itemsize, np.dtype(dtype).itemsize
    partial = cuda.device_array((outer, cols), dtype, stream=stream)
    # part q of row o is a[o, q*m:(q+1)*m, 0]: the view (outer, m, parts), strides (n, 1, m)
    part(strided_view(a3, (outer, m, parts), (n * s, s, m * s)),
         strided_view(partial, (outer, parts), (cols * ps, ps)))
    if rest:
        part(strided_view(a3, (outer, rest, 1), (n * s, s, s), m * parts * s),
             strided_view(partial, (outer, 1), (cols * ps, ps), parts * ps))
    combine_parts(partial.reshape(outer, cols, 1))


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
def arg_kernel(a, values, indices, want_max, zero, rows):
    """values/indices[o, k] = max_i a[o, i, k] and its first index (NaN counts as max)."""
    shv = cuda.shared.array(BLOCK, values.dtype)
    shi = cuda.shared.array(BLOCK, indices.dtype)
    outer, n, inner = a.shape
    t0, tstep, i0, istep = walk(rows)
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
        geometry, rows = plan(a3)
        arg_kernel[geometry + (stream,)](a3, values2, indices2, bool(want_max),
                                         _acc_zero(a3.dtype), rows)
    launcher.__name__ = "argmax" if want_max else "argmin"
    return launcher


def typecheck_signatures():
    """reduce/arg kernels over every dtype they serve."""
    from numba import types as nt
    arr = lambda t, nd=3: nt.Array(t, nd, "C")      # noqa: E731
    floats = (nt.float32, nt.float64)
    for t in floats + (nt.int64,):
        acc = nt.float64 if t in floats else nt.int64
        yield (f"reduce[{t}]", reduce_kernel.py_func,
               (arr(t), arr(t, 2), nt.int64, acc, acc, nt.boolean, nt.boolean))
    for t in (nt.float32, nt.float64, nt.int64, nt.int32, nt.int16, nt.int8, nt.uint8):
        acc = nt.float64 if t in floats else nt.int64
        yield (f"extreme[{t}]", reduce_kernel.py_func,
               (arr(t), arr(t, 2), nt.int64, acc, acc, nt.boolean, nt.boolean))
        yield (f"count_nonzero[{t}]", reduce_kernel.py_func,
               (arr(t), arr(nt.int64, 2), nt.int64, nt.int64, nt.int64, nt.boolean,
                nt.boolean))
        yield (f"arg[{t}]", arg_kernel.py_func,
               (arr(t), arr(t, 2), arr(nt.int64, 2), nt.boolean, acc, nt.boolean))
