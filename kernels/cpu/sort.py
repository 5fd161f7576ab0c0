"""Sorting and counting kernels: row sorts (stable), unique runs, bincount, histc,
searchsorted.

`sort_rows` sorts every row of a C-contiguous (rows, n) array with a stable
merge sort; NaN sorts as the largest value (last ascending, first descending)
and equal values keep their order in both directions, as PyTorch's stable sort.
"""
import numba
import numpy as np
from numba import prange

from ..halves import is_half
from . import openmp
from ..shared import sorted_runs, search_sorted


@numba.njit(cache=True)
def _before(x, y):
    """x sorts before y: ascending, NaN last (NumPy's and PyTorch's order)."""
    return x < y or (y != y and x == x)


@numba.njit(cache=True)
def _merge_pass(keys, src, dst, width):
    """Merge the sorted runs of `width` in src into dst; on ties the left run first."""
    n = src.size
    for lo in range(0, n, 2 * width):
        mid = min(lo + width, n)
        hi = min(lo + 2 * width, n)
        i, j = lo, mid
        for k in range(lo, hi):
            if j < hi and (i >= mid or _before(keys[src[j]], keys[src[i]])):
                dst[k] = src[j]
                j += 1
            else:
                dst[k] = src[i]
                i += 1


@numba.njit(cache=True)
def stable_argsort(keys, order, tmp):
    """order = the stable ascending argsort of 1-D `keys` (NaN last), by insertion-sorted
    runs of 16 merged bottom-up; `tmp` is scratch of the same size. (Numba's own
    np.argsort(kind="mergesort") compiles for 6-7 s a signature; this, well under 1 s.)"""
    n = keys.size
    for i in range(n):
        order[i] = i
    for lo in range(0, n, 16):                     # insertion sort within runs of 16
        for i in range(lo + 1, min(lo + 16, n)):
            v = order[i]
            j = i
            while j > lo and _before(keys[v], keys[order[j - 1]]):
                order[j] = order[j - 1]
                j -= 1
            order[j] = v
    width, in_order = 16, True
    while width < n:
        if in_order:
            _merge_pass(keys, order, tmp, width)
        else:
            _merge_pass(keys, tmp, order, width)
        in_order = not in_order
        width *= 2
    if not in_order:
        for i in range(n):
            order[i] = tmp[i]


@numba.njit(cache=True)
def sort_rows(a, values, indices, descending):
    """for r: indices[r] = stable argsort of a[r] (descending: by -value, ties in order);
    values[r] = a[r][indices[r]]."""
    rows, n = a.shape
    buf = np.empty(n, a.dtype)
    order = np.empty(n, np.int64)
    tmp = np.empty(n, np.int64)
    for r in range(rows):
        row = a[r]
        if descending:
            # a stable ascending sort of the reversed row, read backwards, is a
            # stable descending sort of the row
            for i in range(n):
                buf[i] = row[n - 1 - i]
            stable_argsort(buf, order, tmp)
            for i in range(n):
                src = n - 1 - order[n - 1 - i]
                indices[r, i] = src
                values[r, i] = row[src]
        else:
            for i in range(n):
                buf[i] = row[i]
            stable_argsort(buf, order, tmp)
            for i in range(n):
                indices[r, i] = order[i]
                values[r, i] = row[order[i]]


@numba.njit(cache=True)
def unique_sorted(values, order, uniques, inverse, counts):
    """Runs of equal values in sorted `values` (`shared.sorted_runs`); their number."""
    return sorted_runs(values, order, uniques, inverse, counts)


@numba.njit(cache=True)
def bincount(x, weights, out):
    """out[x[i]] += weights[i] (weights of size 0: += 1); x validated non-negative."""
    if weights.size == 0:
        for i in range(x.size):
            out[x[i]] += 1
    else:
        for i in range(x.size):
            out[x[i]] += weights[i]


@numba.njit(cache=True)
def histc(x, out, lo, hi):
    """out[b] = #{x in bin b} for `out.size` equal bins over [lo, hi]; others ignored."""
    bins = out.size
    width = (hi - lo) / bins
    for i in range(x.size):
        v = x[i]
        if v >= lo and v <= hi:
            b = int((v - lo) / width) if width > 0 else 0
            if b >= bins:
                b = bins - 1
            out[b] += 1


@numba.njit(cache=True)
def mode_rows(values, indices, out_values, out_indices):
    """For each sorted row (stable sort: `values`, original `indices`): the value of the
    longest run of equal values (the smallest on ties) and the last index it came from."""
    rows, n = values.shape
    for r in range(rows):
        v = values[r]
        best_len = 0
        best_end = 0
        start = 0
        for i in range(1, n + 1):
            if i == n or v[i] != v[i - 1]:
                if i - start > best_len:
                    best_len = i - start
                    best_end = i - 1
                start = i
        out_values[r] = v[best_end]
        out_indices[r] = indices[r, best_end]


@numba.njit(cache=True)
def searchsorted_rows(seq, vals, out, right):
    """out[r, j] = insertion point of vals[r, j] in the sorted row seq[r] (seq[0] for every r
    when seq has one row; `shared.search_sorted`)."""
    shared_row = seq.shape[0] == 1
    for r in range(vals.shape[0]):
        row = seq[0] if shared_row else seq[r]
        for j in range(vals.shape[1]):
            out[r, j] = search_sorted(row, vals[r, j], right)


# ---- launchers: the "cpu" kernels of sort, mode, unique (kernels/cpu/table.py) --------
# (bincount and histc are registered as the kernels above, called as they are)

def sort(a2, values2, indices2, descending):
    if a2.dtype == np.bool_:                       # bools sort as uint8 (same order)
        a2, values2 = a2.view(np.uint8), values2.view(np.uint8)
    sort_rows(a2, values2, indices2, descending)


def topk(a2, values2, indices2, largest):
    """The k = values2.shape[1] best of each C-contiguous row of a2 (k >= 1), best first,
    ties by index. Rows in parallel from TOPK_PARALLEL_MIN elements (and 8 rows)."""
    if a2.dtype == np.bool_:
        a2, values2 = a2.view(np.uint8), values2.view(np.uint8)
    if a2.size >= TOPK_PARALLEL_MIN and a2.shape[0] >= 8 and openmp.USABLE:
        topk_rows_parallel(a2, values2, indices2, largest)
    else:
        topk_rows(a2, values2, indices2, largest)


def mode(values2, indices2, out_values1, out_indices1):
    if values2.dtype == np.bool_:
        values2, out_values1 = values2.view(np.uint8), out_values1.view(np.uint8)
    mode_rows(values2, indices2, out_values1, out_indices1)


def unique_runs(values, order, uniques, inverse, counts):
    """The number of distinct values; fills uniques/inverse/counts from sorted values."""
    return int(unique_sorted(values, order, uniques, inverse, counts))


def searchsorted(seq2, vals2, out2, right):
    """The "cpu" kernel of searchsorted: seq2 (1 or rows, n) sorted rows, vals2 and out2
    (rows, m) (out int64 or int32), both inputs of one dtype (halves compare in float32)."""
    if is_half(seq2.dtype):
        seq2, vals2 = seq2.astype(np.float32), vals2.astype(np.float32)
    elif seq2.dtype == np.bool_:
        seq2, vals2 = seq2.view(np.uint8), vals2.view(np.uint8)
    searchsorted_rows(seq2, vals2, out2, right)


# ---- topk: a per-row selection (the k best so far), not a sort ------------------------
# Order of the result: the better value first (NaN above every number, as `_before`),
# equal values (or NaNs) by the lower index: the first k of the stable sort, exactly.

SELECT_BLOCK = 64     # elements tested at once against the worst kept value
TOPK_PARALLEL_MIN = 1 << 18
INSERT_MAX = 16       # up to this k the kept values are a sorted buffer, above a heap


@numba.njit(cache=True)
def _enters(v, worst, largest):
    """v displaces the worst kept value (ties go to the lower index, already kept)."""
    return _before(worst, v) if largest else _before(v, worst)


@numba.njit(cache=True)
def _ahead(x, ix, y, iy, largest):
    """(x, ix) ranks before (y, iy) in topk's order."""
    if _enters(x, y, largest):
        return True
    if _enters(y, x, largest):
        return False
    return ix < iy


@numba.njit(cache=True)
def _any_enters(seg, worst, largest):
    """Some v of seg would displace `worst` (`_enters`): a branch-free count that LLVM
    vectorises, so most blocks are skipped whole after the first few."""
    hits = 0
    live = worst == worst
    if largest:
        for i in range(seg.size):
            v = seg[i]
            hits += (worst < v) | ((v != v) & live)
    else:
        for i in range(seg.size):
            v = seg[i]
            hits += (v < worst) | ((v == v) & (not live))
    return hits != 0


@numba.njit(cache=True)
def _sift_down(hv, hi, p, size, largest):
    """Restore the heap below p: every parent ranks after (is worse than) its children."""
    while True:
        c = 2 * p + 1
        if c >= size:
            return
        if c + 1 < size and _ahead(hv[c], hi[c], hv[c + 1], hi[c + 1], largest):
            c += 1                                  # the worse child
        if _ahead(hv[c], hi[c], hv[p], hi[p], largest):
            return
        hv[p], hv[c] = hv[c], hv[p]
        hi[p], hi[c] = hi[c], hi[p]
        p = c


@numba.njit(cache=True)
def _keep(hv, hi, size, v, i, largest, sorted_buffer):
    """Add (v, i) to the kept values: a later index, so after any equal value. A sorted
    buffer (best first) shifts the worse ones down; a heap (worst at the root) sifts up.
    Returns the worst kept value when the buffer is full."""
    if sorted_buffer:
        p = size
        while p > 0 and _enters(v, hv[p - 1], largest):
            if p < hv.size:
                hv[p] = hv[p - 1]
                hi[p] = hi[p - 1]
            p -= 1
        if p < hv.size:
            hv[p] = v
            hi[p] = i
        return hv[hv.size - 1]
    if size == hv.size:                             # replace the root
        hv[0] = v
        hi[0] = i
        _sift_down(hv, hi, 0, size, largest)
        return hv[0]
    hv[size] = v
    hi[size] = i
    c = size
    while c > 0:
        p = (c - 1) // 2
        if _ahead(hv[c], hi[c], hv[p], hi[p], largest):
            break
        hv[p], hv[c] = hv[c], hv[p]
        hi[p], hi[c] = hi[c], hi[p]
        c = p
    return hv[0]


@numba.njit(cache=True)
def _select_row(row, hv, hi, out_v, out_i, largest):
    """out_v/out_i = the k = out_v.size best of row, in topk order. The k best so far
    are kept (k <= INSERT_MAX: a sorted buffer, else a heap: O(n log k) on ascending
    rows); an element enters only when strictly better than the worst kept, tested a
    block at a time (1024x512 float32 topk(5) serial kernel ~1.3 ms on the busy VM; the
    scalar scan of blocks that hold an entrant dominates)."""
    k = out_v.size
    n = row.size
    sorted_buffer = k <= INSERT_MAX
    worst = row[0]
    for i in range(k):
        worst = _keep(hv, hi, i, row[i], i, largest, sorted_buffer)
    for b in range(k, n, SELECT_BLOCK):
        e = min(b + SELECT_BLOCK, n)
        if not _any_enters(row[b:e], worst, largest):
            continue
        for i in range(b, e):
            v = row[i]
            if _enters(v, worst, largest):
                worst = _keep(hv, hi, k, v, i, largest, sorted_buffer)
    if sorted_buffer:
        for t in range(k):
            out_v[t] = hv[t]
            out_i[t] = hi[t]
        return
    for t in range(k - 1, -1, -1):                  # pop the worst into the last place
        out_v[t] = hv[0]
        out_i[t] = hi[0]
        hv[0] = hv[t]
        hi[0] = hi[t]
        _sift_down(hv, hi, 0, t, largest)


@numba.njit(cache=True)
def topk_rows(a, values, indices, largest):
    """values[r], indices[r] = the k = values.shape[1] best of a[r] (1 <= k <= n)."""
    k = values.shape[1]
    hv = np.empty(k, a.dtype)
    hi = np.empty(k, np.int64)
    for r in range(a.shape[0]):
        _select_row(a[r], hv, hi, values[r], indices[r], largest)


@numba.njit(cache=True, parallel=True)
def topk_rows_parallel(a, values, indices, largest):
    """topk_rows with ranges of rows in prange (scratch per range)."""
    rows = a.shape[0]
    k = values.shape[1]
    tasks = min(rows, 16)
    for t in prange(tasks):
        hv = np.empty(k, a.dtype)
        hi = np.empty(k, np.int64)
        for r in range(t * rows // tasks, (t + 1) * rows // tasks):
            _select_row(a[r], hv, hi, values[r], indices[r], largest)
