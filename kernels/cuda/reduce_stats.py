"""Statistics reductions on CUDA: var (with mean), logsumexp, vector norms.

Contracts of kernels/cpu/reduce_stats.py over a C-contiguous (outer, n, inner)
float array into (outer, inner); the walks of reduce.py (`plan`: a block per
output with `block_reduce`, or a thread per output). Float64 accumulation,
two passes where a shift is needed::

    var:       m = sum(a)/n;   var = sum((a - m)^2) / max(n - correction, 0)
    logsumexp: m = max(a);     out = m + log(sum(exp(a - m)))   (+-inf max: m itself)
    norm p:    (sum |a|^p)^(1/p);  p = +-inf: max/min |a|;  p = 0: count of non-zeros

Norms of a few long rows (``x.norm()`` of a big parameter) run in row parts
as reduce.py's sums do (`split_rows`): unfinished partial sums, then the norm.
"""
import math

from numba import cuda

from ..shared import norm_finish, norm_term
from ._launch import THREADS, grid
from .reduce import (BLOCK, MAX, MIN, SUM, combine, plan, reduce_all, split_parts,
                     split_rows, walk)

__all__ = ["var", "logsumexp", "norm", "typecheck_signatures"]

T_ID, T_SQDEV, T_EXP, T_NORM, T_ABS = 0, 1, 2, 3, 4  # element terms


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
        return norm_term(float(abs(v)), p)
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


VAR, LSE, NORM, NORM_PARTS, NORM_OF_PARTS = 0, 1, 2, 3, 4   # stats (parts: split rows)


@cuda.jit(cache=True)
def stats_kernel(a, out, aux, stat, p, rows):
    """var (aux = mean; p = correction), logsumexp, or the p-norm of a[o, :, k]
    (NORM_PARTS: the unfinished sum of terms; NORM_OF_PARTS: the norm from those)."""
    sh = cuda.shared.array(BLOCK, out.dtype)
    outer, n, inner = a.shape
    t0, tstep, i0, istep = walk(rows)
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
        elif p == math.inf or p == -math.inf:       # NORM*: max/min |a| (of parts: of a)
            r = _terms_all(sh, a, o, k, i0, istep, rows, MAX if p > 0 else MIN,
                           T_ID if stat == NORM_OF_PARTS else T_ABS, 0.0, p)
        else:                                        # NORM_PARTS: sums of terms, unfinished
            r = _terms_all(sh, a, o, k, i0, istep, rows, SUM,
                           T_ID if stat == NORM_OF_PARTS else T_NORM, 0.0, p)
            if stat != NORM_PARTS:
                r = norm_finish(r, p)
        if i0 == 0:
            out[o, k] = r


def _stats(a3, out2, aux2, stat, p, stream):
    if out2.size:
        geometry, rows = plan(a3)
        stats_kernel[geometry + (stream,)](a3, out2, aux2, stat, float(p), rows)


def var(a3, var2, mean2, correction, stream=0):
    """var2[o, k] = sum_i (a3[o,i,k] - m)^2 / max(n - correction, 0), mean2[o, k] = m."""
    _stats(a3, var2, mean2, VAR, correction, stream)


def logsumexp(a3, out2, stream=0):
    """out2[o, k] = m + log(sum_i exp(a3[o,i,k] - m)), m the max (+-inf max: the result)."""
    _stats(a3, out2, out2, LSE, 0.0, stream)


def norm(a3, out2, p, stream=0):
    """out2[o, k] = (sum_i |a3[o,i,k]|^p)^(1/p); p = +-inf: max/min |a|; p = 0: count != 0."""
    if out2.size and split_parts(a3) > 1:          # a few long rows: parts, then their norm
        def part(view, dst):
            stats_kernel[grid(dst.size * THREADS) + (stream,)](view, dst, dst, NORM_PARTS,
                                                               float(p), True)

        def combine_parts(partial3):
            stats_kernel[grid(out2.size * THREADS) + (stream,)](
                partial3, out2, out2, NORM_OF_PARTS, float(p), True)
        split_rows(a3, out2.dtype, part, combine_parts, stream)
        return
    _stats(a3, out2, out2, NORM, p, stream)


def typecheck_signatures():
    from numba import types as nt
    for t in (nt.float32, nt.float64):
        arr = nt.Array(t, 3, "C")
        out = nt.Array(t, 2, "C")
        yield (f"stats[{t}]", stats_kernel.py_func,
               (arr, out, out, nt.int64, nt.float64, nt.boolean))
