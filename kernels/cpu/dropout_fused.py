"""Dropout fused with its neighbour in one pass (the Transformer layers in training):
ReLU then dropout, forward and backward, and the residual ``x + dropout(s)`` before a
LayerNorm. Flat contiguous float32/float64 arrays, ``noise`` the 0/1 keep draws and
``keep`` = 1/(1-p) in the arrays' dtype.

Bit for bit what the composite computes: ``relu(h) * (noise / (1 - p))`` forward (the
relu of kernels/scalar.py: 0 where h <= 0, NaN kept) and, backward, the gradient times
the mask, zeroed where h <= 0 (relu_grad on the saved output); ``x + s * mask`` and the
gradient of s, ``g * mask``.
"""
import numba


__all__ = ["relu_dropout", "relu_dropout_backward", "dropout_add", "dropout_grad"]


@numba.njit(cache=True, nogil=True)
def _forward(h, noise, keep, out, lo, hi):
    _relu_masked(h[lo:hi], noise[lo:hi], keep, out[lo:hi])


@numba.njit(cache=True, nogil=True)
def _relu_masked(h, noise, keep, out):
    zero = h.dtype.type(0)
    for i in range(h.size):             # on slices: the loop vectorises
        v = h[i]
        r = v if not v <= 0 else zero
        out[i] = r * (noise[i] * keep)


@numba.njit(cache=True, nogil=True)
def _backward(g, h, noise, keep, out, lo, hi):
    _relu_masked_grad(g[lo:hi], h[lo:hi], noise[lo:hi], keep, out[lo:hi])


@numba.njit(cache=True, nogil=True)
def _relu_masked_grad(g, h, noise, keep, out):
    zero = h.dtype.type(0)
    for i in range(h.size):
        gm = g[i] * (noise[i] * keep)
        out[i] = gm if not h[i] <= 0 else zero


@numba.njit(cache=True, nogil=True)
def _add_masked(x, s, noise, keep, out, lo, hi):
    _add_masked_flat(x[lo:hi], s[lo:hi], noise[lo:hi], keep, out[lo:hi])


@numba.njit(cache=True, nogil=True)
def _add_masked_flat(x, s, noise, keep, out):
    for i in range(x.size):
        out[i] = x[i] + s[i] * (noise[i] * keep)


@numba.njit(cache=True, nogil=True)
def _masked(g, noise, keep, out, lo, hi):
    _masked_flat(g[lo:hi], noise[lo:hi], keep, out[lo:hi])


@numba.njit(cache=True, nogil=True)
def _masked_flat(g, noise, keep, out):
    for i in range(g.size):
        out[i] = g[i] * (noise[i] * keep)


def relu_dropout(h, noise, keep, out):
    """out = relu(h) * noise * keep over flat arrays."""
    keep = h.dtype.type(keep)
    _split(h.size, lambda lo, hi: _forward(h, noise, keep, out, lo, hi))


def relu_dropout_backward(g, h, noise, keep, out):
    """out = g * noise * keep where h > 0 (or NaN), else 0."""
    keep = h.dtype.type(keep)
    _split(h.size, lambda lo, hi: _backward(g, h, noise, keep, out, lo, hi))


def dropout_add(x, s, noise, keep, out):
    """out = x + s * noise * keep over flat arrays (a residual plus a dropped-out branch)."""
    keep = x.dtype.type(keep)
    _split(x.size, lambda lo, hi: _add_masked(x, s, noise, keep, out, lo, hi))


def dropout_grad(g, noise, keep, out):
    """out = g * noise * keep over flat arrays (dropout's backward)."""
    keep = g.dtype.type(keep)
    _split(g.size, lambda lo, hi: _masked(g, noise, keep, out, lo, hi))


def _split(n, work):
    """work(lo, hi) over [0, n), in ranges on the CPU helper threads when large."""
    from . import batch_threads        # on use: no kernel here depends on it
    batch_threads.over_ranges(n, work, 4 * n)
