"""A product's epilogues in one pass each, for compiled graphs (`fx.passes.epilogue`).

- `bias_relu_`: out = relu(out + bias) in place over a fresh product: what
  `Linear` + `ReLU` do in two passes (NumPy's row add, then the ReLU kernel into a
  new buffer), with the same bits (one float add, then the ReLU body's select).
- `relu_grad_colsum`: r = relu_grad(g, y) and s = r.sum(0) in one pass: the ReLU's
  gradient and the bias gradient of the Linear before it. The column sums accumulate
  in float64, row after row, as `reduce.sum_reduce` (the serial walk a sum over dim 0
  takes below `reduce.PARALLEL_MIN_NUMEL`) does, so the same bits.

Both take C-contiguous 2-D float32/float64 arrays (the caller checks), one compiled
specialisation per dtype, on one thread: the graph pass uses them up to
`reduce.PARALLEL_MIN_NUMEL` elements, where the unfused ops run serially too.
"""
import numba
import numpy as np

__all__ = ["bias_relu_", "relu_grad_colsum"]


@numba.njit(cache=True)
def bias_relu_(out, bias):
    """out[i, j] = relu(out[i, j] + bias[j]) (NaN stays NaN, -0.0 and below give 0)."""
    zero = out.dtype.type(0)
    for i in range(out.shape[0]):
        row = out[i]
        for j in range(row.size):
            t = row[j] + bias[j]
            row[j] = zero if t <= 0 else t


@numba.njit(cache=True)
def relu_grad_colsum(g, y, r, s):
    """r[i, j] = g[i, j] where y[i, j] > 0 (else 0); s[j] = sum_i r[i, j], in float64."""
    zero = r.dtype.type(0)
    n = g.shape[1]
    acc = np.zeros(n, np.float64)
    for i in range(g.shape[0]):
        gi, yi, ri = g[i], y[i], r[i]
        for j in range(n):
            v = zero if yi[j] <= 0 else gi[j]
            ri[j] = v
            acc[j] += v
    for j in range(n):
        s[j] = acc[j]
