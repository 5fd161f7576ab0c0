"""softmax / log_softmax along the middle axis of a C-contiguous (outer, n, inner) array.

Same contract as kernels/cpu/softmax.py: ``softmax(a3, out3, log)``. Walks as in
reduce.py: inner == 1, one block per row (max and sum of exps by
`block_reduce`); inner > 1, one thread per column (o, k)::

    m = max_i a[o, i, k];  s = sum_i exp(a[o, i, k] - m)       (float64)
    out[o, i, k] = a - m - log(s)  (log)   or   exp(a - m) / s
"""
import math

from numba import cuda

from .reduce import BLOCK, MAX, SUM, plan, reduce_all, walk

__all__ = ["softmax", "typecheck_signatures"]


@cuda.jit(cache=True)
def softmax_kernel(a, out, log, rows):
    """out[o, :, k] = softmax(a[o, :, k]) (log_softmax if log), max-shifted."""
    sh = cuda.shared.array(BLOCK, out.dtype)
    outer, n, inner = a.shape
    t0, tstep, i0, istep = walk(rows)
    for t in range(t0, outer * inner, tstep):
        o = t // inner
        k = t - o * inner
        m = float(a[o, 0, k])
        for i in range(i0, n, istep):
            v = a[o, i, k]
            m = v if (v > m or v != v) else m
        m = reduce_all(sh, m, MAX, 0.0, rows)
        s = 0.0
        for i in range(i0, n, istep):
            s += math.exp(a[o, i, k] - m)
        s = reduce_all(sh, s, SUM, 0.0, rows)
        if log:
            shift = m + math.log(s)
            for i in range(i0, n, istep):
                out[o, i, k] = a[o, i, k] - shift
        else:
            r = 1.0 / s
            for i in range(i0, n, istep):
                out[o, i, k] = math.exp(a[o, i, k] - m) * r


def softmax(log):
    """The softmax (log=False) or log_softmax launcher ``(a3, out3)``."""
    def launcher(a3, out3, stream=0):
        if out3.size:
            geometry, rows = plan(a3)
            softmax_kernel[geometry + (stream,)](a3, out3, bool(log), rows)
    launcher.__name__ = "log_softmax" if log else "softmax"
    return launcher


def typecheck_signatures():
    from numba import types as nt
    for t in (nt.float32, nt.float64):
        yield (f"softmax[{t}]", softmax_kernel.py_func,
               (nt.Array(t, 3, "C"), nt.Array(t, 3, "C"), nt.boolean, nt.boolean))
