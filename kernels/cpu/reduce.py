"""Reduction kernels over a C-contiguous (outer, n, inner) array into out (outer, inner).

The op layer (nbtorch/ops/reduction.py) views the input so the reduced dims
form the middle axis, without a copy whenever the layout allows. Two walks:

- inner == 1 ("rows"): out[o] = reduce(a[o, :, 0]); the row is cut in blocks
  of BLOCK and each block is reduced in the input type with
  `fastmath={'reassoc'}` (vectorised), block results combined in float64.
- inner > 1 ("walking rows"): for i: acc[:] (op)= a[o, i, :]; memory is read
  in order, never a column with a stride.

NaN propagates through sum, max and min (no `nnan` fast-math flag anywhere).
Parallel variants split the work in tasks (row chunks or column blocks).
"""
import numba
import numpy as np
from numba import prange
from numba import carray
from ..shared import copy_into
from . import openmp
from .prod_rows import prod_rows
from .row_extreme import row_arg_extreme, row_extreme
from .split_rows import run_rows_split, splits_rows

FM = {"reassoc"}
BLOCK = 1024          # elements per vectorised partial
CHUNK = 1 << 16       # elements per parallel task in a row
MAX_SPLITS = 16       # row ranges per slab in a parallel walking-rows kernel


# Constant arguments to shared helpers go in as `bool(True)`, `int(0)`: a bare constant
# is typed Literal[...] and compiles the helper once more beside the kernels that pass a
# variable (softmax's `_row_sum(y, 0.0, False)` beside sum_rows' skip_nan: 0.3-0.4 s).

# ---- sum (also mean, nansum) ----------------------------------------------------

@numba.njit(cache=True, fastmath=FM)
def _block_sum(seg, skip_nan):
    s = seg.dtype.type(0)
    if skip_nan:
        for i in range(seg.size):
            v = seg[i]
            s += v if v == v else 0
    else:
        for i in range(seg.size):
            s += seg[i]
    return s


@numba.njit(cache=True)
def _row_sum(row, zero, skip_nan):
    acc = zero
    n = row.size
    for b in range(0, n, BLOCK):
        acc += _block_sum(row[b:min(b + BLOCK, n)], skip_nan)
    return acc


@numba.njit(cache=True, fastmath=FM)
def _cols_sum_into(a, o, r0, r1, acc, skip_nan):
    """acc[:] += sum of rows a[o, r0:r1, :] (NaN skipped if skip_nan), in memory order."""
    for i in range(r0, r1):
        seg = a[o, i]
        if skip_nan:
            for j in range(seg.size):
                v = seg[j]
                acc[j] += v if v == v else 0
        else:
            for j in range(seg.size):
                acc[j] += seg[j]


@numba.njit(cache=True)
def row_splits(outer, n, inner):
    """How many row ranges a parallel walking-rows kernel gives each slab: enough tasks
    for the threads, each reading whole rows (column blocks would stride across pages)."""
    if outer >= 8:
        return 1
    return max(1, min(n, MAX_SPLITS, (n * inner) // CHUNK))


# Each walk is a kernel of its own (rows, chunks of long rows, walking rows), so a
# program compiles only the walks it runs: one kernel holding all three compiled them
# all on its first call (a transformer block's first `.sum()`: 2.7 s).

@numba.njit(cache=True)
def sum_rows(rows, out, zero, scale, skip_nan):
    """out[o, 0] = scale * sum(rows[o]) (NaN skipped if skip_nan); rows (outer, n).

    `zero`/`scale` have the accumulator type: float64 for floats, int64 for ints.
    """
    for o in range(rows.shape[0]):
        out[o, 0] = _row_sum(rows[o], zero, skip_nan) * scale


@numba.njit(cache=True, parallel=True, fastmath=FM)
def sum_rows_parallel(rows, out, zero, scale, skip_nan):
    """sum_rows with the rows in prange (outer >= 8)."""
    for o in prange(rows.shape[0]):
        out[o, 0] = _row_sum(rows[o], zero, skip_nan) * scale


@numba.njit(cache=True, parallel=True, fastmath=FM)
def sum_row_chunks_parallel(rows, out, zero, scale, skip_nan):
    """sum_rows of a few long rows: chunks of CHUNK in prange, their sums added after."""
    outer, n = rows.shape
    nch = (n + CHUNK - 1) // CHUNK
    part = np.full((outer, nch), zero)
    for t in prange(outer * nch):
        o = t // nch
        c = t - o * nch
        part[o, c] = _row_sum(rows[o, c * CHUNK:min((c + 1) * CHUNK, n)], zero,
                              skip_nan)
    for o in range(outer):
        acc = zero
        for c in range(nch):
            acc += part[o, c]
        out[o, 0] = acc * scale


@numba.njit(cache=True)
def sum_reduce(a, out, zero, scale, skip_nan):
    """out[o, k] = scale * sum_i a[o, i, k] (NaN skipped if skip_nan), inner > 1: whole
    rows added in memory order."""
    outer, n, inner = a.shape
    acc = np.full(inner, zero)
    for o in range(outer):
        acc[:] = zero
        _cols_sum_into(a, o, int(0), n, acc, skip_nan)
        dst = out[o]
        for j in range(inner):
            dst[j] = acc[j] * scale


@numba.njit(cache=True, parallel=True, fastmath=FM)
def sum_reduce_parallel(a, out, zero, scale, skip_nan):
    """sum_reduce with ranges of whole rows in prange, their partial sums added after."""
    outer, n, inner = a.shape
    splits = row_splits(outer, n, inner)
    part = np.full((outer, splits, inner), zero)
    for t in prange(outer * splits):
        o = t // splits
        r = t - o * splits
        _cols_sum_into(a, o, r * n // splits, (r + 1) * n // splits, part[o, r], skip_nan)
    for o in range(outer):      # scalar loops: an array `+=` here is a parallel region
        dst = out[o]            # of its own per range (15 of them: 1.07 ms instead of 0.14
        for j in range(inner):  # for a (2048, 512) column sum); the same order of adds
            acc = part[o, 0, j]
            for r in range(1, splits):
                acc += part[o, r, j]
            dst[j] = acc * scale


# ---- sum rows split over the spinning helpers (split_rows.py) ---------------------
# A ufunc-ABI `cfunc` reduces `count` rows (inner == 1) as the serial row kernel does,
# so a split by rows gives the serial values. 1024x512 float32 sum(1): 42 us serial,
# 20-21 on two threads.

@numba.njit(cache=True)
def _sum_chunk(p, fp, a_ptr, out_ptr, count, dtype):
    """out[r] = scale * sum(row r) for `count` rows of length p[0] (as sum_rows)."""
    out = carray(out_ptr, (count,), dtype)
    rows = carray(a_ptr, (count, p[0]), dtype)
    skip_nan = p[1] != 0
    for r in range(count):
        out[r] = _row_sum(rows[r], fp[1], skip_nan) * fp[0]


def _sum_f32(args, count, steps, data):
    _sum_chunk(carray(args[1], (2,), np.int64), carray(args[2], (2,), np.float64), args[0],
               args[3], count[0], np.float32)


def _sum_f64(args, count, steps, data):
    _sum_chunk(carray(args[1], (2,), np.int64), carray(args[2], (2,), np.float64), args[0],
               args[3], count[0], np.float64)


_SUM_WRAPPERS = {"f": _sum_f32, "d": _sum_f64}


# ---- prod -------------------------------------------------------------------------

@numba.njit(cache=True)
def prod_reduce(a, out, one):
    """out[o, k] = prod_i a[o, i, k], accumulated in the type of `one`."""
    outer, n, inner = a.shape
    for o in range(outer):
        acc = np.full(inner, one)
        for i in range(n):
            seg = a[o, i]
            for j in range(inner):
                acc[j] *= seg[j]
        for j in range(inner):
            out[o, j] = acc[j]


# ---- max / min (values) ------------------------------------------------------------

@numba.njit(cache=True, fastmath=FM)
def _block_max(s):
    """max of s ignoring NaN, in 8 independent lanes (attention.py's; LLVM 22 compiles the
    lanes to scalar `vmaxss`: row_extreme.py's loop is 2x faster)."""
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = s[0]
    nb = s.size // 8 * 8
    for i in range(0, nb, 8):
        b = s[i:i + 8]
        m0 = b[0] if b[0] > m0 else m0
        m1 = b[1] if b[1] > m1 else m1
        m2 = b[2] if b[2] > m2 else m2
        m3 = b[3] if b[3] > m3 else m3
        m4 = b[4] if b[4] > m4 else m4
        m5 = b[5] if b[5] > m5 else m5
        m6 = b[6] if b[6] > m6 else m6
        m7 = b[7] if b[7] > m7 else m7
    for v in (m1, m2, m3, m4, m5, m6, m7):
        m0 = v if v > m0 else m0
    for i in range(nb, s.size):
        m0 = s[i] if s[i] > m0 else m0
    return m0


@numba.njit(cache=True, fastmath=FM)
def _nan_probe(s):
    """Zero unless s holds a NaN or an inf (sum of v * 0, vectorised): a cheap guard
    before an exact NaN search."""
    z = s.dtype.type(0)
    for i in range(s.size):
        z += s[i] * 0
    return z


# max/min of a non-empty row, NaN if it holds one: one vectorised pass (row_extreme.py;
# 256x512 float32 rows 35 -> 15 us); softmax, cross_entropy and logsumexp use it too
_row_extreme = row_extreme


@numba.njit(cache=True, fastmath=FM)
def _cols_extreme_into(a, o, r0, r1, acc, want_max):
    """acc[:] = max (min) of acc and rows a[o, r0:r1, :]; NaN sticks (found by a probe)."""
    for i in range(r0, r1):
        seg = a[o, i]
        if want_max:
            for j in range(seg.size):
                acc[j] = seg[j] if seg[j] > acc[j] else acc[j]
        else:
            for j in range(seg.size):
                acc[j] = seg[j] if seg[j] < acc[j] else acc[j]
        if _nan_probe(seg) != 0:
            for j in range(seg.size):
                if seg[j] != seg[j]:
                    acc[j] = seg[j]


@numba.njit(cache=True)
def cols_extreme(a, out, o, want_max):
    """out[o, :] = max (min) over the rows of slab o (NaN wins)."""
    dst = out[o]
    copy_into(dst, a[o, 0])
    _cols_extreme_into(a, o, int(1), a.shape[1], dst, want_max)


@numba.njit(cache=True)
def extreme_rows(rows, out, want_max):
    """out[o, 0] = max(rows[o]) (min if not want_max); NaN wins. Requires n >= 1."""
    for o in range(rows.shape[0]):
        out[o, 0] = _row_extreme(rows[o], want_max)


@numba.njit(cache=True, parallel=True, fastmath=FM)
def extreme_rows_parallel(rows, out, want_max):
    """extreme_rows with the rows in prange (outer >= 8)."""
    for o in prange(rows.shape[0]):
        out[o, 0] = _row_extreme(rows[o], want_max)


@numba.njit(cache=True, parallel=True, fastmath=FM)
def extreme_row_chunks_parallel(rows, out, want_max):
    """extreme_rows of a few long rows: chunks of CHUNK in prange."""
    outer, n = rows.shape
    nch = (n + CHUNK - 1) // CHUNK
    part = np.empty((outer, nch), rows.dtype)
    for t in prange(outer * nch):
        o = t // nch
        c = t - o * nch
        part[o, c] = _row_extreme(rows[o, c * CHUNK:min((c + 1) * CHUNK, n)], want_max)
    for o in range(outer):
        out[o, 0] = _row_extreme(part[o], want_max)


@numba.njit(cache=True)
def extreme_reduce(a, out, want_max):
    """out[o, k] = max_i a[o, i, k] (min if not want_max), inner > 1; NaN wins."""
    for o in range(a.shape[0]):
        cols_extreme(a, out, o, want_max)


@numba.njit(cache=True, parallel=True, fastmath=FM)
def extreme_reduce_parallel(a, out, want_max):
    """extreme_reduce with ranges of whole rows in prange."""
    outer, n, inner = a.shape
    splits = row_splits(outer, n, inner)
    part = np.empty((outer, splits, inner), a.dtype)
    for t in prange(outer * splits):
        o = t // splits
        r = t - o * splits
        r0 = r * n // splits
        copy_into(part[o, r], a[o, r0])
        _cols_extreme_into(a, o, r0 + 1, (r + 1) * n // splits, part[o, r], want_max)
    for o in range(outer):
        cols_extreme(part, out, o, want_max)


# ---- max / min rows split over the spinning helpers (split_rows.py) ----------------
# As the sum's: a range of rows gives the serial values. float32 amax(1), one thread vs
# two: 256x512 12.8 vs 13.5 us, 512x512 21.5 vs 18, 1024x1000 66 vs 43: from 2^18.
EXTREME_SPLIT_MIN = 1 << 18

@numba.njit(cache=True)
def _extreme_chunk(p, a_ptr, out_ptr, count, dtype):
    """out[r] = max (min unless p[1]) of `count` rows of length p[0] (as extreme_rows)."""
    out = carray(out_ptr, (count,), dtype)
    rows = carray(a_ptr, (count, p[0]), dtype)
    want_max = p[1] != 0
    for r in range(count):
        out[r] = _row_extreme(rows[r], want_max)


def _extreme_f32(args, count, steps, data):
    _extreme_chunk(carray(args[1], (2,), np.int64), args[0], args[3], count[0], np.float32)


def _extreme_f64(args, count, steps, data):
    _extreme_chunk(carray(args[1], (2,), np.int64), args[0], args[3], count[0], np.float64)


_EXTREME_WRAPPERS = {"f": _extreme_f32, "d": _extreme_f64}


# ---- argmax / argmin (value and first index) ----------------------------------------

@numba.njit(cache=True, inline="always")
def _takes(v, m, want_max):
    """v replaces the current best m: strictly better, or the first NaN."""
    if m != m:
        return False
    return v != v or (v > m if want_max else v < m)


@numba.njit(cache=True)
def arg_reduce(a, values, indices, want_max):
    """values/indices[o, k] = max_i a[o, i, k] and its first index i (NaN counts as max)."""
    outer, n, inner = a.shape
    for o in range(outer):
        best = values[o]
        idx = indices[o]
        copy_into(best, a[o, 0])
        idx[:] = 0
        for i in range(1, n):
            seg = a[o, i]
            for j in range(inner):
                if _takes(seg[j], best[j], want_max):
                    best[j] = seg[j]
                    idx[j] = i


# index of the first max (min) of a non-empty row, or of its first NaN: the extreme,
# then the first element equal to it (row_extreme.py; 256x512 float32 50 -> 26 us)
_row_arg = row_arg_extreme


@numba.njit(cache=True)
def arg_rows(rows, values, indices, want_max):
    """values/indices[o, 0] = max (min) of rows[o] and its first index (NaN: the first)."""
    for o in range(rows.shape[0]):
        row = rows[o]
        k = _row_arg(row, want_max)
        values[o, 0] = row[k]
        indices[o, 0] = k


@numba.njit(cache=True, parallel=True)
def arg_rows_parallel(rows, values, indices, want_max):
    """arg_rows with the rows in prange (outer >= 8)."""
    for o in prange(rows.shape[0]):
        row = rows[o]
        k = _row_arg(row, want_max)
        values[o, 0] = row[k]
        indices[o, 0] = k


# ---- count of non-zeros (all, any, count_nonzero) ----------------------------------

@numba.njit(cache=True)
def count_nonzero_reduce(a, out):
    """out[o, k] = #{i : a[o, i, k] != 0} (int64)."""
    outer, n, inner = a.shape
    for o in range(outer):
        acc = out[o]
        acc[:] = 0
        for i in range(n):
            seg = a[o, i]
            for j in range(inner):
                acc[j] += seg[j] != 0


# ---- launchers: the "cpu" kernels of the reduction ops (kernels/cpu/table.py) ---------
# Called with C-contiguous (outer, n, inner) inputs and (outer, inner) outputs; they pick
# the serial or parallel variant and pass the accumulator type.

# Reductions over at least this many elements run in parallel. A parallel region costs
# ~60 us on this 2-core VM with Numba's workers sleeping between regions (nbtorch/
# _threads.py): (N, 512) float32, serial vs parallel, sum over rows / columns and amax:
# N = 128 13/12/15 vs 76/75/77 us, 1024 79/71/100 vs 103/127/127, 2048 176/157/229 vs
# 168/191/226, 4096 372/340/477 vs 238/259/337. (2^16 was measured with spinning workers.)
PARALLEL_MIN_NUMEL = 1 << 20


def use_parallel(a3, scale=1):
    """True when a kernel input is big enough for the parallel kernel variant (from
    PARALLEL_MIN_NUMEL / `scale` elements: costlier kernels pay sooner), and this process
    may run OpenMP threads (not in a child forked after they started)."""
    return a3.size * scale >= PARALLEL_MIN_NUMEL and openmp.USABLE


_ACCUMULATORS = {}                # (is float, value) -> that NumPy scalar: made once


def accumulator(dtype, value):
    """`value` as the accumulator type of `dtype`: float64 for floats, int64 otherwise."""
    key = (dtype.kind == "f", value)
    acc = _ACCUMULATORS.get(key)
    if acc is None:
        acc = _ACCUMULATORS[key] = np.float64(value) if key[0] else np.int64(value)
    return acc


def ordered(a):
    """bool runs as uint8 (same order); every other dtype as is."""
    return a.view(np.uint8) if a.dtype == np.bool_ else a


def pick_walk(a3, rows, rows_parallel, row_chunks_parallel, walking, walking_parallel):
    """The kernel of one reduction family that fits a3, and the array it takes: a3 itself
    when inner > 1 (walking whole rows), else its (outer, n) rows."""
    outer, n, inner = a3.shape
    parallel = use_parallel(a3)
    if inner > 1:
        return (walking_parallel if parallel else walking), a3
    if not parallel:
        return rows, a3.reshape(outer, n)
    return (rows_parallel if outer >= 8 else row_chunks_parallel), a3.reshape(outer, n)


def sum_(a3, out2, scale=1.0, skip_nan=False):
    """out2[o, k] = scale * sum_i a3[o, i, k] (a3 float32/float64/int64)."""
    zero = accumulator(a3.dtype, 0)
    one = accumulator(a3.dtype, 1) if scale == 1.0 else zero.dtype.type(scale)
    if splits_rows(a3, out2):
        run_rows_split("sum", _SUM_WRAPPERS, a3, out2, (a3.shape[1], int(skip_nan)),
                       (float(one), 0.0), sum_rows, a3.reshape(a3.shape[0], a3.shape[1]),
                       out2, zero, one, skip_nan)
        return
    kernel, a = pick_walk(a3, sum_rows, sum_rows_parallel, sum_row_chunks_parallel,
                          sum_reduce, sum_reduce_parallel)
    kernel(a, out2, zero, one, skip_nan)


def prod(a3, out2):
    one = accumulator(a3.dtype, 1)
    if a3.shape[2] == 1 and a3.flags.c_contiguous and out2.flags.c_contiguous:
        prod_rows(a3.reshape(a3.shape[0], a3.shape[1]), out2.reshape(-1), one)   # rows
    else:
        prod_reduce(a3, out2, one)


def count_nonzero(a3, out2):
    count_nonzero_reduce(a3, out2)


def _extreme(a3, out2, want_max):
    if a3.size < EXTREME_SPLIT_MIN and a3.shape[2] == 1 and a3.dtype.char in "fd":
        # float rows below every threshold: straight to the serial rows kernel (-0.6 us)
        extreme_rows(a3.reshape(a3.shape[0], a3.shape[1]), out2, want_max)
        return
    if a3.size >= EXTREME_SPLIT_MIN and splits_rows(a3, out2):
        run_rows_split("extreme", _EXTREME_WRAPPERS, a3, out2, (a3.shape[1], int(want_max)),
                       (0.0, 0.0), extreme_rows, a3.reshape(a3.shape[0], a3.shape[1]),
                       out2, want_max)
        return
    kernel, a = pick_walk(ordered(a3), extreme_rows, extreme_rows_parallel,
                          extreme_row_chunks_parallel, extreme_reduce, extreme_reduce_parallel)
    kernel(a, ordered(out2), want_max)


def amax(a3, out2):
    _extreme(a3, out2, True)


def amin(a3, out2):
    _extreme(a3, out2, False)


def _arg(a3, values2, indices2, want_max):
    a3, values2 = ordered(a3), ordered(values2)
    outer, n, inner = a3.shape
    if inner > 1:
        arg_reduce(a3, values2, indices2, want_max)
    elif use_parallel(a3) and outer >= 8:
        arg_rows_parallel(a3.reshape(outer, n), values2, indices2, want_max)
    else:
        arg_rows(a3.reshape(outer, n), values2, indices2, want_max)


def argmax(a3, values2, indices2):
    _arg(a3, values2, indices2, True)


def argmin(a3, values2, indices2):
    _arg(a3, values2, indices2, False)
