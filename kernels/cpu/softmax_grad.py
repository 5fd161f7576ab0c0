"""The gradients of softmax and log-softmax over contiguous rows, one row at a time.

The composite backward (`ops/softmax.py`) makes four passes and four tensors:
softmax ``gy = g * y; gy - y * gy.sum(-1, keepdim=True)``, log-softmax
``g - exp(y) * g.sum(-1, keepdim=True)``. Here each row runs those very steps while
it stays in cache: the same products and differences (no fast-math, so no fused
multiply-add), the row sum by the reductions' `_row_sum` (blocked, float64 between
blocks) rounded to the row's type as the sum kernel stores it, the exp by the
elementwise op and log-softmax's sums by the sum op beforehand: the composite's bits. 256x512 float32 softmax backward: four
kernel calls and their tensors (~120 us) become one pass.
"""
import numba
import numpy as np

from .reduce import _row_sum

__all__ = ["softmax_grad_rows"]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def softmax_grad_rows(g, y, out, sums, log, r0, r1):
    """out[r] = the softmax gradient of rows r0:r1 of g given the forward's output y, or
    with `log` the log-softmax gradient given y = exp(the forward's output) and the sums
    of g's rows (the elementwise exp's and the sum op's own bits: the float32 exp loop
    differs by size, a sum of an expanded g by layout); g, y, out (rows, n) C-contiguous,
    sums (rows,) (unread without `log`), one dtype."""
    zero = 0.0
    for r in range(r0, r1):
        gr, yr, o = g[r], y[r], out[r]
        n = gr.size
        if log:
            s = sums[r]
            for i in range(n):
                o[i] = gr[i] - yr[i] * s
        else:
            for i in range(n):
                o[i] = gr[i] * yr[i]
            s = o.dtype.type(_row_sum(o, zero, bool(False)) * 1.0)
            for i in range(n):
                o[i] = o[i] - yr[i] * s
