"""Adaptive average and max pooling on (P, H, W) planes (PyTorch's windows:
start = floor(i * in / out), end = ceil((i + 1) * in / out)). Output size 1 (global
average pooling, every ResNet head) is a per-plane mean; sizes that divide the input
reuse the fixed-window kernels of `pool.py` (the same values and indices); other sizes
walk their windows here.
"""
import numba
import numpy as np

from .pool import (_over_planes, _volumes, adaptive_ranges, avg_pool2d_backward,
                   avg_pool2d_forward, max_pool2d_forward)

__all__ = ["adaptive_avg_pool2d_forward", "adaptive_avg_pool2d_backward",
           "adaptive_max_pool2d_forward"]


@numba.njit(cache=True, nogil=True, fastmath={"reassoc"})
def _plane_means(x, out):
    """out[p] = mean(x[p, :]) for planes x (P, S): global average pooling. Vectorised sums
    of 1,024-element blocks in x's dtype, added in float64 (float64 all along: 127 us for
    2048x784 float32, one thread; blocked: 73; the old 4-D loop 1.34 ms)."""
    n = x.shape[1]
    for p in range(x.shape[0]):
        row = x[p]
        total = 0.0
        for b in range(0, n, 1024):
            acc = row[np.uint64(b)]
            for j in range(b + 1, min(b + 1024, n)):
                acc += row[np.uint64(j)]
            total += acc
        out[p] = total / n


@numba.njit(cache=True, nogil=True)
def _plane_fill(g, gx):
    """gx[p, :] = g[p] / S: the gradient of global average pooling."""
    n = gx.shape[1]
    for p in range(gx.shape[0]):
        v = g[p] / n
        row = gx[p]
        for j in range(n):
            row[np.uint64(j)] = v


@numba.njit(cache=True, nogil=True)
def _adaptive_avg_planes(x, out, win):
    """out[p, i, j, k] = mean(x[p, window(i, j, k)]), each window summed in float64 in the
    order z, r, c (the old 4-D loop's order: same values). A row of outputs accumulates
    side by side (independent add chains) over flat unsigned offsets: 32x64x28x28 -> 7x7
    1.65 -> ~0.3 ms (one latency-bound chain per output before)."""
    zs, ze, hs, he, ws, we = win
    h, w = x.shape[2], x.shape[3]
    od_n, oh_n, ow_n = out.shape[1], out.shape[2], out.shape[3]
    plane = x.shape[1] * h * w
    xf, of = x.ravel(), out.ravel()
    acc = np.empty(ow_n, np.float64)
    o = 0
    for p in range(x.shape[0]):
        pb = p * plane
        for i in range(od_n):
            for j in range(oh_n):
                for k in range(ow_n):
                    acc[k] = 0.0
                for z in range(zs[i], ze[i]):
                    for r in range(hs[j], he[j]):
                        b = pb + (z * h + r) * w
                        for k in range(ow_n):
                            a = acc[k]
                            for c in range(ws[k], we[k]):
                                a += xf[np.uint64(b + c)]
                            acc[k] = a
                for k in range(ow_n):
                    n = (ze[i] - zs[i]) * (he[j] - hs[j]) * (we[k] - ws[k])
                    of[np.uint64(o)] = acc[k] / n
                    o += 1


@numba.njit(cache=True, nogil=True)
def _adaptive_avg_planes_backward(g, gx, win):
    """_adaptive_avg_backward over flat per-plane offsets (same order, same values)."""
    zs, ze, hs, he, ws, we = win
    h, w = gx.shape[2], gx.shape[3]
    od_n, oh_n, ow_n = g.shape[1], g.shape[2], g.shape[3]
    plane = gx.shape[1] * h * w
    gf, gxf = g.ravel(), gx.ravel()
    for t in range(gxf.size):
        gxf[np.uint64(t)] = 0
    o = 0
    for p in range(g.shape[0]):
        pb = p * plane
        for i in range(od_n):
            for j in range(oh_n):
                for k in range(ow_n):
                    n = (ze[i] - zs[i]) * (he[j] - hs[j]) * (we[k] - ws[k])
                    v = gf[np.uint64(o)] / n
                    o += 1
                    for z in range(zs[i], ze[i]):
                        for r in range(hs[j], he[j]):
                            b = pb + (z * h + r) * w
                            for c in range(ws[k], we[k]):
                                gxf[np.uint64(b + c)] += v


@numba.njit(cache=True, nogil=True)
def _adaptive_max_planes(x, out, idx, win):
    """_adaptive_max over flat per-plane offsets, branch-free selects (same taps in the
    same order: same values and indices; NaN wins, the last NaN kept)."""
    zs, ze, hs, he, ws, we = win
    h, w = x.shape[2], x.shape[3]
    od_n, oh_n, ow_n = out.shape[1], out.shape[2], out.shape[3]
    plane = x.shape[1] * h * w
    xf, of, jf = x.ravel(), out.ravel(), idx.ravel()
    o = 0
    for p in range(x.shape[0]):
        pb = p * plane
        for i in range(od_n):
            for j in range(oh_n):
                for k in range(ow_n):
                    best = -np.inf
                    arg = (zs[i] * h + hs[j]) * w + ws[k]
                    for z in range(zs[i], ze[i]):
                        for r in range(hs[j], he[j]):
                            b = (z * h + r) * w
                            for c in range(ws[k], we[k]):
                                v = xf[np.uint64(pb + b + c)]
                                s = (v > best) | (v != v)
                                best = v if s else best
                                arg = b + c if s else arg
                    of[np.uint64(o)] = best
                    jf[np.uint64(o)] = arg
                    o += 1


def _windows(in_shape, out_shape):
    """The adaptive windows (zs, ze, hs, he, ws, we) of (P, D, H, W) -> (P, OD, OH, OW)."""
    win = ()
    for d in (1, 2, 3):
        win += adaptive_ranges(in_shape[d], out_shape[d])
    return win


def _even_windows(in_shape, out_shape):
    """(kh, kw) when 2-D adaptive windows are plain pooling windows (sizes divisible: the
    windows tile the plane, kernel = stride), else None. Those run avg/max pooling's fast
    kernels, which visit the same taps in the same order (same values and indices):
    32x64x28x28 -> 7x7 1.04 ms -> ~0.1 ms, one thread."""
    if len(in_shape) != 3:
        return None
    (h, w), (oh, ow) = in_shape[1:], out_shape[1:]
    if h % oh or w % ow:
        return None
    return h // oh, w // ow


def adaptive_avg_pool2d_forward(x, out):
    """Adaptive average pooling of x (P, *S) to out (P, *OS), 2 or 3 spatial dims.
    Output size 1 (global pooling) is a row mean; planes split over threads by size."""
    p = x.shape[0]
    if p == 0:
        return
    if out.size == p:
        _over_planes(_plane_means, p, x.size, x.reshape(p, -1), out.reshape(p), ())
        return
    k = _even_windows(x.shape, out.shape)
    if k is not None:
        avg_pool2d_forward(x, out, k, k, (0, 0), True, None)
        return
    x, out = _volumes(x), _volumes(out)
    _over_planes(_adaptive_avg_planes, p, x.size, x, out, (_windows(x.shape, out.shape),))


def adaptive_avg_pool2d_backward(grad_out, grad_in):
    """grad_in (P, *S) of adaptive average pooling from grad_out (P, *OS)."""
    p = grad_in.shape[0]
    if p == 0:
        return
    if grad_out.size == p:
        _over_planes(_plane_fill, p, grad_in.size, grad_out.reshape(p), grad_in.reshape(p, -1),
                     ())
        return
    k = _even_windows(grad_in.shape, grad_out.shape)
    if k is not None:
        avg_pool2d_backward(grad_out, grad_in, k, k, (0, 0), True, None)
        return
    g, gx = _volumes(grad_out), _volumes(grad_in)
    _over_planes(_adaptive_avg_planes_backward, p, gx.size, g, gx, (_windows(gx.shape, g.shape),))


def adaptive_max_pool2d_forward(x, out, indices):
    """Adaptive max pooling of x (P, *S) to out (P, *OS) with int64 flat indices."""
    p = x.shape[0]
    if p == 0:
        return
    k = _even_windows(x.shape, out.shape)
    if k is not None:
        max_pool2d_forward(x, out, indices, k, k, (0, 0), (1, 1))
        return
    x, out = _volumes(x), _volumes(out)
    _over_planes(_adaptive_max_planes, p, x.size, x, out, _volumes(indices),
                 (_windows(x.shape, out.shape),))
