"""CPU pooling and resampling kernels (Numba).

Pooling layout: x is (P, H, W) C-contiguous float32/float64 with P = N*C planes
(callers reshape NCHW, and run 1-D pooling with H = 1); outputs (P, OH, OW).
Max-pool indices are int64 flat offsets into one input plane (h*W + w), as in
PyTorch.  Max and average pooling have a serial and a prange-over-planes
variant; the Python wrapper picks by size.

Resampling along one axis (used by ``F.pad`` and ``F.interpolate``): x is
(A, L, B), the axis in the middle; padding and nearest are an index gather,
linear interpolation a two-tap weighted gather; separable modes (bilinear,
reflect/replicate/constant padding of several dims) apply them axis by axis.
Callers validate shapes and indices; kernels do no bounds checks.
"""

import numba
import numpy as np

from ..shared import avg_window, copy_into

__all__ = [
    "adaptive_ranges",
    "max_pool2d_forward", "max_pool2d_backward",
    "avg_pool2d_forward", "avg_pool2d_backward",
    "adaptive_avg_pool2d_forward", "adaptive_avg_pool2d_backward",
    "adaptive_max_pool2d_forward", "take_planes",
    "gather_axis", "gather_axis_backward", "lerp_axis", "lerp_axis_backward",
]

# Work (output elements x window taps) from which the prange variants run.  Kept
# high: in a network pooling runs between BLAS calls whose idle threads spin, and
# a parallel region next to them measured several times slower on 2 cores.
PARALLEL_MIN_ELEMENTS = 1 << 22


def adaptive_ranges(in_size, out_size):
    """Windows of adaptive pooling: [floor(i*L/M), ceil((i+1)*L/M)) as two int64 arrays."""
    i = np.arange(out_size, dtype=np.int64)
    start = (i * in_size) // out_size
    end = -((-(i + 1) * in_size) // out_size)
    return start, end


@numba.njit(cache=True)
def _tap_range(start, step, n_taps, size):
    """Taps t in [lo, hi) with 0 <= start + t*step < size."""
    lo = 0 if start >= 0 else (-start + step - 1) // step
    hi = min(n_taps, max(0, (size - 1 - start) // step + 1))
    return lo, max(lo, hi)


# ---------------------------------------------------------------- max pooling

@numba.njit(cache=True)
def _max_plane(xp, outp, idxp, geom):
    """out[oh, ow] = max over the dilated window, idx = its flat offset h*W + w.

    NaN wins (and the last NaN is kept), like PyTorch; an all -inf window keeps
    the first in-range tap; a window with no tap in range gives -inf and index -1.
    """
    kh, kw, sh, sw, ph, pw, dh, dw = geom
    h, w = xp.shape
    oh_n, ow_n = outp.shape
    for oh in range(oh_n):
        hs = oh * sh - ph
        klo, khi = _tap_range(hs, dh, kh, h)
        for ow in range(ow_n):
            ws = ow * sw - pw
            llo, lhi = _tap_range(ws, dw, kw, w)
            best = -np.inf
            arg = (hs + klo * dh) * w + ws + llo * dw if klo < khi and llo < lhi else -1
            for ki in range(klo, khi):
                r = hs + ki * dh
                for kj in range(llo, lhi):
                    v = xp[r, ws + kj * dw]
                    if v > best or v != v:
                        best = v
                        arg = r * w + ws + kj * dw
            outp[oh, ow] = best
            idxp[oh, ow] = arg


@numba.njit(cache=True)
def _max_serial(x, out, idx, geom):
    """for p: _max_plane(x[p], out[p], idx[p])."""
    for p in range(x.shape[0]):
        _max_plane(x[p], out[p], idx[p], geom)


@numba.njit(cache=True, parallel=True)
def _max_parallel(x, out, idx, geom):
    """for p in prange: _max_plane(x[p], out[p], idx[p])."""
    for p in numba.prange(x.shape[0]):
        _max_plane(x[p], out[p], idx[p], geom)


def max_pool2d_forward(x, out, indices, kernel, stride, padding, dilation):
    """Max pooling of x (P, H, W) into out (P, OH, OW) with int64 argmax indices."""
    geom = tuple(int(v) for v in (*kernel, *stride, *padding, *dilation))
    fn = _max_parallel if out.size * kernel[0] * kernel[1] >= PARALLEL_MIN_ELEMENTS else _max_serial
    fn(x, out, indices, geom)


@numba.njit(cache=True)
def _scatter_plane(gp, idxp, gxp):
    """gx = 0; for each output cell with idx >= 0: gx.flat[idx] += g (windows may overlap)."""
    gxf = gxp.ravel()
    gxf[:] = 0
    gf = gp.ravel()
    idf = idxp.ravel()
    for i in range(gf.shape[0]):
        if idf[i] >= 0:
            gxf[idf[i]] += gf[i]


@numba.njit(cache=True)
def _scatter_serial(g, idx, gx):
    """for p: _scatter_plane(g[p], idx[p], gx[p])."""
    for p in range(g.shape[0]):
        _scatter_plane(g[p], idx[p], gx[p])


@numba.njit(cache=True, parallel=True)
def _scatter_parallel(g, idx, gx):
    """for p in prange: _scatter_plane (each plane owns its gx plane: no races)."""
    for p in numba.prange(g.shape[0]):
        _scatter_plane(g[p], idx[p], gx[p])


def max_pool2d_backward(grad_out, indices, grad_in):
    """grad_in (P, H, W) = scatter-add of grad_out (P, OH, OW) at the argmax indices.

    Also the backward of adaptive max pooling.  Indices must be in [-1, H*W) (-1: skipped).
    """
    fn = _scatter_parallel if grad_in.size >= PARALLEL_MIN_ELEMENTS else _scatter_serial
    fn(grad_out, indices, grad_in)


@numba.njit(cache=True)
def take_planes(x, indices, out):
    """out (P, M)[p, i] = x (P, H*W)[p, indices[p, i]]: the adjoint of max-pool backward.

    Used for double backward of max pooling (gradients picked at the argmax).
    """
    for p in range(x.shape[0]):
        xp, ip, op = x[p], indices[p], out[p]
        for i in range(ip.shape[0]):
            op[i] = xp[ip[i]] if ip[i] >= 0 else 0


# ---------------------------------------------------------------- average pooling

@numba.njit(cache=True)
def _avg_plane(xp, outp, geom, count_include_pad, divisor):
    """out[oh, ow] = sum(window) / (divisor or count); sums kept in float64."""
    kh, kw, sh, sw, ph, pw = geom
    h, w = xp.shape
    oh_n, ow_n = outp.shape
    for oh in range(oh_n):
        h0, h1, hc = avg_window(oh, sh, ph, kh, h, count_include_pad)
        for ow in range(ow_n):
            w0, w1, wc = avg_window(ow, sw, pw, kw, w, count_include_pad)
            acc = 0.0
            for r in range(h0, h1):
                for c in range(w0, w1):
                    acc += xp[r, c]
            div = divisor if divisor > 0 else hc * wc
            outp[oh, ow] = acc / div if h0 < h1 and w0 < w1 else 0.0


@numba.njit(cache=True)
def _avg_plane_backward(gp, gxp, geom, count_include_pad, divisor):
    """gx = 0; for each output cell: gx[window] += g / (divisor or count)."""
    kh, kw, sh, sw, ph, pw = geom
    h, w = gxp.shape
    oh_n, ow_n = gp.shape
    gxp[:, :] = 0
    for oh in range(oh_n):
        h0, h1, hc = avg_window(oh, sh, ph, kh, h, count_include_pad)
        for ow in range(ow_n):
            w0, w1, wc = avg_window(ow, sw, pw, kw, w, count_include_pad)
            div = divisor if divisor > 0 else hc * wc
            if h0 >= h1 or w0 >= w1:
                continue
            v = gp[oh, ow] / div
            for r in range(h0, h1):
                for c in range(w0, w1):
                    gxp[r, c] += v


@numba.njit(cache=True, parallel=True)
def _avg_parallel(x, out, geom, count_include_pad, divisor):
    """for p in prange: _avg_plane(x[p], out[p])."""
    for p in numba.prange(x.shape[0]):
        _avg_plane(x[p], out[p], geom, count_include_pad, divisor)


@numba.njit(cache=True)
def _avg_serial(x, out, geom, count_include_pad, divisor):
    """for p: _avg_plane(x[p], out[p])."""
    for p in range(x.shape[0]):
        _avg_plane(x[p], out[p], geom, count_include_pad, divisor)


@numba.njit(cache=True, parallel=True)
def _avg_backward_parallel(g, gx, geom, count_include_pad, divisor):
    """for p in prange: _avg_plane_backward(g[p], gx[p])."""
    for p in numba.prange(g.shape[0]):
        _avg_plane_backward(g[p], gx[p], geom, count_include_pad, divisor)


@numba.njit(cache=True)
def _avg_backward_serial(g, gx, geom, count_include_pad, divisor):
    """for p: _avg_plane_backward(g[p], gx[p])."""
    for p in range(g.shape[0]):
        _avg_plane_backward(g[p], gx[p], geom, count_include_pad, divisor)


def avg_pool2d_forward(x, out, kernel, stride, padding, count_include_pad, divisor_override):
    """Average pooling of x (P, H, W) into out (P, OH, OW); divisor_override None or > 0."""
    geom = tuple(int(v) for v in (*kernel, *stride, *padding))
    div = int(divisor_override or 0)
    big = out.size * kernel[0] * kernel[1] >= PARALLEL_MIN_ELEMENTS
    (_avg_parallel if big else _avg_serial)(x, out, geom, bool(count_include_pad), div)


def avg_pool2d_backward(grad_out, grad_in, kernel, stride, padding, count_include_pad,
                        divisor_override):
    """grad_in (P, H, W) of average pooling from grad_out (P, OH, OW)."""
    geom = tuple(int(v) for v in (*kernel, *stride, *padding))
    div = int(divisor_override or 0)
    big = grad_out.size * kernel[0] * kernel[1] >= PARALLEL_MIN_ELEMENTS
    fn = _avg_backward_parallel if big else _avg_backward_serial
    fn(grad_out, grad_in, geom, bool(count_include_pad), div)


# ---------------------------------------------------------------- adaptive pooling

@numba.njit(cache=True)
def _adaptive_avg(x, out, hs, he, ws, we):
    """out[p, i, j] = mean(x[p, hs[i]:he[i], ws[j]:we[j]]), summed in float64."""
    for p in range(x.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                acc = 0.0
                for r in range(hs[i], he[i]):
                    for c in range(ws[j], we[j]):
                        acc += x[p, r, c]
                out[p, i, j] = acc / ((he[i] - hs[i]) * (we[j] - ws[j]))


@numba.njit(cache=True)
def _adaptive_avg_backward(g, gx, hs, he, ws, we):
    """gx = 0; gx[p, window(i, j)] += g[p, i, j] / window size."""
    for p in range(g.shape[0]):
        gx[p] = 0
        for i in range(g.shape[1]):
            for j in range(g.shape[2]):
                v = g[p, i, j] / ((he[i] - hs[i]) * (we[j] - ws[j]))
                for r in range(hs[i], he[i]):
                    for c in range(ws[j], we[j]):
                        gx[p, r, c] += v


@numba.njit(cache=True)
def _adaptive_max(x, out, idx, hs, he, ws, we):
    """out[p, i, j] = max of the window (NaN wins), idx = its flat offset r*W + c."""
    w = x.shape[2]
    for p in range(x.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                best = -np.inf
                arg = hs[i] * w + ws[j]
                for r in range(hs[i], he[i]):
                    for c in range(ws[j], we[j]):
                        v = x[p, r, c]
                        if v > best or v != v:
                            best = v
                            arg = r * w + c
                out[p, i, j] = best
                idx[p, i, j] = arg


def adaptive_avg_pool2d_forward(x, out):
    """Adaptive average pooling of x (P, H, W) to out (P, OH, OW)."""
    hs, he = adaptive_ranges(x.shape[1], out.shape[1])
    ws, we = adaptive_ranges(x.shape[2], out.shape[2])
    _adaptive_avg(x, out, hs, he, ws, we)


def adaptive_avg_pool2d_backward(grad_out, grad_in):
    """grad_in (P, H, W) of adaptive average pooling from grad_out (P, OH, OW)."""
    hs, he = adaptive_ranges(grad_in.shape[1], grad_out.shape[1])
    ws, we = adaptive_ranges(grad_in.shape[2], grad_out.shape[2])
    _adaptive_avg_backward(grad_out, grad_in, hs, he, ws, we)


def adaptive_max_pool2d_forward(x, out, indices):
    """Adaptive max pooling of x (P, H, W) to out (P, OH, OW) with int64 indices."""
    hs, he = adaptive_ranges(x.shape[1], out.shape[1])
    ws, we = adaptive_ranges(x.shape[2], out.shape[2])
    _adaptive_max(x, out, indices, hs, he, ws, we)


# ---------------------------------------------------------------- resampling along one axis

@numba.njit(cache=True)
def gather_axis(x, index, fill, out):
    """out (A, M, B)[a, m, :] = x (A, L, B)[a, index[m], :], or fill where index[m] < 0.

    Padding (constant: -1 outside; reflect/replicate/circular: mirrored indices)
    and nearest interpolation are this gather along one axis.
    """
    for a in range(x.shape[0]):
        for m in range(index.shape[0]):
            i = index[m]
            if i < 0:
                out[a, m, :] = fill
            else:
                copy_into(out[a, m], x[a, i])


@numba.njit(cache=True)
def gather_axis_backward(g, index, gx):
    """gx (A, L, B) = 0; gx[a, index[m], :] += g (A, M, B)[a, m, :] where index[m] >= 0."""
    gx[:] = 0
    for a in range(g.shape[0]):
        for m in range(index.shape[0]):
            i = index[m]
            if i >= 0:
                src, dst = g[a, m], gx[a, i]
                for b in range(src.shape[0]):
                    dst[b] += src[b]


@numba.njit(cache=True)
def lerp_axis(x, i0, i1, w0, w1, out):
    """out (A, M, B)[a, m, :] = w0[m]*x[a, i0[m], :] + w1[m]*x[a, i1[m], :] (linear taps)."""
    for a in range(x.shape[0]):
        for m in range(i0.shape[0]):
            x0, x1, dst = x[a, i0[m]], x[a, i1[m]], out[a, m]
            for b in range(dst.shape[0]):
                dst[b] = w0[m] * x0[b] + w1[m] * x1[b]


@numba.njit(cache=True)
def lerp_axis_backward(g, i0, i1, w0, w1, gx):
    """gx (A, L, B) = 0; then gx[a, i0[m], :] += w0[m]*g[a, m, :] and likewise for i1, w1."""
    gx[:] = 0
    for a in range(g.shape[0]):
        for m in range(i0.shape[0]):
            src, d0, d1 = g[a, m], gx[a, i0[m]], gx[a, i1[m]]
            for b in range(src.shape[0]):
                d0[b] += w0[m] * src[b]
                d1[b] += w1[m] * src[b]
