"""Gather/scatter through precomputed element offsets: the kernels behind advanced
indexing, `gather`, `scatter`, `index_select`, `take`, `masked_select` and friends.

The op layer turns any index expression into int64 storage offsets (validated
against the bounds first: these kernels check nothing), so two loops serve them all.
"""
import numba
import numpy as np

from ..halves import bits, is_half
from ..shared import reduce_segment


@numba.njit(cache=True)
def take(src, offsets, out):
    """for i: out[i] = src[offsets[i]]  (out contiguous, 1-D view)."""
    for i in range(offsets.size):
        out[i] = src[offsets[i]]


@numba.njit(cache=True)
def put(dst, offsets, values):
    """for i: dst[offsets[i]] = values[i]  (last write wins on repeats)."""
    for i in range(offsets.size):
        dst[offsets[i]] = values[i]


@numba.njit(cache=True)
def put_add(dst, offsets, values):
    """for i: dst[offsets[i]] += values[i]  (repeats accumulate: index_add, scatter_add)."""
    for i in range(offsets.size):
        dst[offsets[i]] += values[i]


@numba.njit(cache=True)
def nonzero_flat(mask, out):
    """Write the flat positions of true elements of `mask` into `out`; return the count."""
    n = 0
    for i in range(mask.size):
        if mask[i]:
            out[n] = i
            n += 1
    return n


# ---- launchers: the "cpu" kernels of take and put (kernels/cpu/table.py) --------------
# `src`/`dst`: a tensor's whole flat storage; `out`/`values`: contiguous 1-D arrays.

def take_any(src, offsets, out):
    take(bits(src), offsets, bits(out))


def put_any(dst, offsets, values, accumulate):
    if accumulate:
        if is_half(dst.dtype):           # accumulate in float32, round once
            tmp = dst.astype(np.float32)
            put_add(tmp, offsets, values.astype(np.float32))
            dst[...] = tmp
        elif dst.dtype == np.bool_:
            put(bits(dst), offsets, bits(values))   # add on bools is logical or of ones
        else:
            put_add(dst, offsets, values)
    else:
        put(bits(dst), offsets, bits(values))


def nonzero(a):
    """The (n, a.ndim) int64 coordinates of a's nonzero elements, in row-major order (the
    "cpu" kernel of nonzero: its output size depends on the data, so it returns it)."""
    flat = np.ascontiguousarray(a).reshape(-1)
    if is_half(flat.dtype):
        flat = flat.astype(np.float32)
    pos = np.empty(flat.size, np.int64)
    n = nonzero_flat(flat.view(np.uint8) if flat.dtype == np.bool_ else flat, pos)
    if not a.ndim:
        return np.zeros((n, 0), np.int64)
    return np.ascontiguousarray(np.stack(np.unravel_index(pos[:n], a.shape), axis=1),
                                dtype=np.int64)


# ---- scatter reductions: scatter_reduce, index_reduce, scatter(reduce=...) ---------------

@numba.njit(cache=True)
def segment_reduce(dst, targets, starts, values, mode, include_self):
    """for s: dst[targets[s]] = reduce(dst[targets[s]], values[starts[s]:starts[s + 1]])
    (shared.reduce_segment; segments are the runs of equal sorted target offsets)."""
    for s in range(targets.size):
        reduce_segment(dst, targets[s], values, starts[s], starts[s + 1], mode, include_self)


def scatter_reduce(dst, targets, starts, values, mode, include_self):
    """The "cpu" kernel of scatter_reduce: `dst` a whole flat storage, `targets` the distinct
    storage offsets written (int64), `starts` (len(targets) + 1) the bounds of each one's
    run in `values` (contiguous 1-D, grouped by target); mode as shared.reduce_segment.
    float16/bfloat16 reduce in float32 (rounded once per target), bool as uint8."""
    if is_half(dst.dtype):
        tmp = dst.astype(np.float32)
        segment_reduce(tmp, targets, starts, values.astype(np.float32), mode, include_self)
        dst[...] = tmp.astype(dst.dtype)
    elif dst.dtype == np.bool_:          # or/and as max/min of 0/1 (the op maps the mode)
        segment_reduce(dst.view(np.uint8), targets, starts, values.view(np.uint8), mode,
                       include_self)
    else:
        segment_reduce(dst, targets, starts, values, mode, include_self)


@numba.njit(cache=True)
def add_rows(dst, index, src):
    """dst[o, index[j], :] += src[o, j, :] for 3-D C-contiguous dst (outer, size, inner)
    and src (outer, len(index), inner); indices in [0, size), repeats accumulate in j
    order (the order `put_add` adds them in, so the same sums)."""
    outer, m, inner = src.shape
    for o in range(outer):
        for j in range(m):
            d = dst[o, index[j]]
            s = src[o, j]
            for k in range(np.uint64(inner)):
                d[k] += s[k]


# ---- direct kernels along a dim (no offset arrays): tril/triu, one_hot, gather/scatter,
# mask compaction. Callers validate indices; the move-only ones take same-width uint
# views (WORDS), so one specialisation serves every dtype of a width.

WORDS = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.uint64}


def words(a):
    """`a` as unsigned words of its element width (complex128: two uint64 per element)."""
    return a.view(WORDS[a.dtype.itemsize])


@numba.njit(cache=True)
def tri_copy(src, out, diagonal, lower, width):
    """out[b, i] = src[b, i] on the kept side of the `diagonal`-th diagonal (columns
    j - i <= diagonal for lower, >= for upper), zeros on the other: one pass per row
    (3-D C-contiguous word views, `width` words an element; src may be out)."""
    nb, m, n = out.shape
    cols = n // width
    for b in range(nb):
        for i in range(m):
            k = i + diagonal + 1 if lower else i + diagonal
            k = min(max(k, 0), cols) * width
            s = src[b, i]
            o = out[b, i]
            uk = np.uint64(k)
            if lower:
                for j in range(uk):
                    o[j] = s[j]
                for j in range(uk, np.uint64(n)):
                    o[j] = 0
            else:
                for j in range(uk):
                    o[j] = 0
                for j in range(uk, np.uint64(n)):
                    o[j] = s[j]


@numba.njit(cache=True)
def one_hot_rows(vals, out):
    """out[i] = 0 with out[i, vals[i]] = 1 (vals checked to lie in [0, out.shape[1]))."""
    n, c = out.shape
    for i in range(n):
        row = out[i]
        for j in range(np.uint64(c)):
            row[j] = 0
        row[vals[i]] = 1


@numba.njit(cache=True)
def gather_rows(src, base, index, sd, sl, out):
    """out[r, j] = src[base[r] + index[r, j] * sd + j * sl]: gather along a dim with `src`
    a flat storage, `index` (rows, last) int64 already checked, base the row offsets.
    Offsets are cast to uint64 (they are never negative: no wraparound select per load)
    and a gather along the last dim of a contiguous tensor has a loop of its own: 256x512
    float32 along dim 1, 85 -> 52 us."""
    rows, last = index.shape
    for r in range(rows):
        b, row, dst = base[r], index[r], out[r]
        if sl == 0 and sd == 1:
            for j in range(last):
                dst[j] = src[np.uint64(b + row[j])]
        else:
            for j in range(last):
                dst[j] = src[np.uint64(b + row[j] * sd + j * sl)]


@numba.njit(cache=True)
def scatter_rows(dst, base, index, sd, sl, values):
    """dst[base[r] + index[r, j] * sd + j * sl] = values[r, j] in row-major order (the
    last write wins, as `put`)."""
    rows, last = index.shape
    for r in range(rows):
        b, row, src = base[r], index[r], values[r]
        for j in range(last):
            dst[np.uint64(b + row[j] * sd + j * sl)] = src[j]


@numba.njit(cache=True)
def scatter_add_rows(dst, base, index, sd, sl, values):
    """scatter_rows adding: repeats accumulate in row-major order, the order `put_add`
    adds them in (the same sums, bit for bit)."""
    rows, last = index.shape
    for r in range(rows):
        b, row, src = base[r], index[r], values[r]
        for j in range(last):
            dst[np.uint64(b + row[j] * sd + j * sl)] += src[j]


@numba.njit(cache=True)
def compress(src, mask, out):
    """out = src[mask] for flat src and uint8 0/1 mask, out.size the count of ones;
    branch-free (always store, advance by the mask) up to the last one."""
    if out.size == 0:
        return
    last = mask.size - 1
    while mask[last] == 0:
        last -= 1
    n = 0
    for i in range(last + 1):
        out[n] = src[i]
        n += np.int64(mask[i])


@numba.njit(cache=True)
def first_outside(index, size):
    """The position of the first index outside [0, size) in flat int64 `index`, or -1:
    no temporaries (the mask and selection NumPy made cost ~6 us on 4096). Each block of
    4,096 is checked by a branch-free loop that vectorises (v lies in [0, size) when
    neither v nor size - 1 - v is negative: one OR of sign bits), and only a block
    holding a bad index is searched: 131K indices 73 -> 16 us (an early-exit loop, or a
    boolean OR, runs scalar)."""
    n = index.size
    last = np.int64(size) - 1
    for lo in range(0, n, 4096):
        hi = min(lo + 4096, n)
        block = index[lo:hi]
        signs = np.int64(0)
        for i in range(block.size):
            v = block[i]
            signs |= v | (last - v)
        if signs < 0:
            for i in range(lo, hi):
                if index[i] < 0 or index[i] >= size:
                    return i
    return -1
