"""Pooling and one-axis resampling on CUDA: one thread per output element, atomics backward.

Contracts and layouts of kernels/cpu/pool.py: pooling on (P, D, H, W) volumes
(P = N*C; 2-D pooling with D = 1), max-pool indices flat offsets (z*H + h)*W + w
within a volume; resampling on
(A, L, B) with the axis in the middle and host index/weight arrays (copied to
the device explicitly)::

    max/avg/adaptive forward: for (p, od, oh, ow) (grid-stride): out = reduce(window)
    backward (windows may overlap): grad_in = 0; for each output cell:
        cuda.atomic.add(grad_in[p, window or argmax], g / count)
    gather_axis: out[a, m, b] = x[a, index[m], b] (fill where index[m] < 0)
    lerp_axis:   out[a, m, b] = w0[m] x[a, i0[m], b] + w1[m] x[a, i1[m], b]

Max: NaN wins (the last NaN kept), an empty window gives -inf and index -1,
exactly as the CPU loops. Sums accumulate in float64.
"""
import math

from numba import cuda

from ..shared import adaptive_window, avg_window
from ._launch import grid
from .index import to_device

__all__ = ["max_pool2d_forward", "max_pool2d_backward", "take_planes", "avg_pool2d_forward",
           "avg_pool2d_backward", "adaptive_avg_pool2d_forward",
           "adaptive_avg_pool2d_backward", "adaptive_max_pool2d_forward", "gather_axis",
           "gather_axis_backward", "lerp_axis", "lerp_axis_backward", "typecheck_signatures"]


@cuda.jit(device=True)
def _cell(t, out):
    """(p, od, oh, ow) of flat output index t."""
    od_n, oh_n, ow_n = out.shape[1], out.shape[2], out.shape[3]
    p = t // (od_n * oh_n * ow_n)
    r = t - p * od_n * oh_n * ow_n
    od = r // (oh_n * ow_n)
    r -= od * oh_n * ow_n
    oh = r // ow_n
    return p, od, oh, r - oh * ow_n


@cuda.jit(device=True)
def _avg_axis_window(o, size, n_out, k, s, pad, count_include_pad, adaptive):
    """(lo, hi, count) of average pooling's window o along one axis."""
    if adaptive:
        lo, hi = adaptive_window(o, size, n_out)
        return lo, hi, hi - lo
    return avg_window(o, s, pad, k, size, count_include_pad)


@cuda.jit(cache=True)
def max_pool_kernel(x, out, idx, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, adaptive):
    """out/idx[p, od, oh, ow] = max of the (dilated or adaptive) window, its flat offset."""
    D, H, W = x.shape[1], x.shape[2], x.shape[3]
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, od, oh, ow = _cell(t, out)
        if adaptive:
            z0, z1 = adaptive_window(od, D, out.shape[1])
            h0, h1 = adaptive_window(oh, H, out.shape[2])
            w0, w1 = adaptive_window(ow, W, out.shape[3])
            z_step, h_step, w_step = 1, 1, 1
        else:
            z0, z1, z_step = od * sd - pd, od * sd - pd + kd * dd, dd
            h0, h1, h_step = oh * sh - ph, oh * sh - ph + kh * dh, dh
            w0, w1, w_step = ow * sw - pw, ow * sw - pw + kw * dw, dw
        best = -math.inf
        arg = -1
        for z in range(z0, z1, z_step):
            if z < 0 or z >= D:
                continue
            for r in range(h0, h1, h_step):
                if r < 0 or r >= H:
                    continue
                for c in range(w0, w1, w_step):
                    if c < 0 or c >= W:
                        continue
                    v = x[p, z, r, c]
                    if arg < 0:
                        arg = (z * H + r) * W + c
                    if v > best or v != v:
                        best = v
                        arg = (z * H + r) * W + c
        out[p, od, oh, ow] = best
        idx[p, od, oh, ow] = arg


@cuda.jit(cache=True)
def scatter_kernel(g, idx, gx):
    """gx[p, idx[p, i]] += g[p, i] (atomic; idx < 0 skipped); gx (P, S) zeroed first."""
    M = g.shape[1]
    for t in range(cuda.grid(1), g.shape[0] * M, cuda.gridsize(1)):
        p = t // M
        i = t - p * M
        k = idx[p, i]
        if k >= 0:
            cuda.atomic.add(gx, (p, k), g[p, i])


@cuda.jit(cache=True)
def take_planes_kernel(x, idx, out):
    """out[p, i] = x[p, idx[p, i]] (0 where idx < 0)."""
    M = out.shape[1]
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p = t // M
        i = t - p * M
        k = idx[p, i]
        out[p, i] = x[p, k] if k >= 0 else 0


@cuda.jit(cache=True)
def avg_pool_kernel(x, out, kd, kh, kw, sd, sh, sw, pd, ph, pw, count_include_pad, divisor,
                    adaptive):
    """out[p, od, oh, ow] = sum(window) / (divisor or count)."""
    D, H, W = x.shape[1], x.shape[2], x.shape[3]
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        p, od, oh, ow = _cell(t, out)
        z0, z1, zc = _avg_axis_window(od, D, out.shape[1], kd, sd, pd, count_include_pad,
                                      adaptive)
        h0, h1, hc = _avg_axis_window(oh, H, out.shape[2], kh, sh, ph, count_include_pad,
                                      adaptive)
        w0, w1, wc = _avg_axis_window(ow, W, out.shape[3], kw, sw, pw, count_include_pad,
                                      adaptive)
        acc = 0.0
        for z in range(z0, z1):
            for r in range(h0, h1):
                for c in range(w0, w1):
                    acc += x[p, z, r, c]
        div = divisor if divisor > 0 else zc * hc * wc
        out[p, od, oh, ow] = acc / div if z0 < z1 and h0 < h1 and w0 < w1 else 0.0


@cuda.jit(cache=True)
def avg_pool_backward_kernel(g, gx, kd, kh, kw, sd, sh, sw, pd, ph, pw, count_include_pad,
                             divisor, adaptive):
    """gx[p, window] += g[p, od, oh, ow] / (divisor or count) (atomic); gx zeroed first."""
    D, H, W = gx.shape[1], gx.shape[2], gx.shape[3]
    for t in range(cuda.grid(1), g.size, cuda.gridsize(1)):
        p, od, oh, ow = _cell(t, g)
        z0, z1, zc = _avg_axis_window(od, D, g.shape[1], kd, sd, pd, count_include_pad,
                                      adaptive)
        h0, h1, hc = _avg_axis_window(oh, H, g.shape[2], kh, sh, ph, count_include_pad,
                                      adaptive)
        w0, w1, wc = _avg_axis_window(ow, W, g.shape[3], kw, sw, pw, count_include_pad,
                                      adaptive)
        if z0 >= z1 or h0 >= h1 or w0 >= w1:
            continue
        div = divisor if divisor > 0 else zc * hc * wc
        v = g[p, od, oh, ow] / div
        for z in range(z0, z1):
            for r in range(h0, h1):
                for c in range(w0, w1):
                    cuda.atomic.add(gx, (p, z, r, c), v)


@cuda.jit(cache=True)
def gather_axis_kernel(x, index, fill, out):
    """out[a, m, b] = x[a, index[m], b], or fill where index[m] < 0."""
    M, B = out.shape[1], out.shape[2]
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        a = t // (M * B)
        r = t - a * M * B
        m = r // B
        b = r - m * B
        i = index[m]
        out[a, m, b] = x[a, i, b] if i >= 0 else fill


@cuda.jit(cache=True)
def gather_axis_backward_kernel(g, index, gx):
    """gx[a, index[m], b] += g[a, m, b] (atomic) where index[m] >= 0; gx zeroed first."""
    M, B = g.shape[1], g.shape[2]
    for t in range(cuda.grid(1), g.size, cuda.gridsize(1)):
        a = t // (M * B)
        r = t - a * M * B
        m = r // B
        b = r - m * B
        if index[m] >= 0:
            cuda.atomic.add(gx, (a, index[m], b), g[a, m, b])


@cuda.jit(cache=True)
def lerp_axis_kernel(x, i0, i1, w0, w1, out):
    """out[a, m, b] = w0[m] x[a, i0[m], b] + w1[m] x[a, i1[m], b]."""
    M, B = out.shape[1], out.shape[2]
    for t in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        a = t // (M * B)
        r = t - a * M * B
        m = r // B
        b = r - m * B
        out[a, m, b] = w0[m] * x[a, i0[m], b] + w1[m] * x[a, i1[m], b]


@cuda.jit(cache=True)
def lerp_axis_backward_kernel(g, i0, i1, w0, w1, gx):
    """gx[a, i0[m], b] += w0[m] g[a, m, b]; likewise i1, w1 (atomic); gx zeroed first."""
    M, B = g.shape[1], g.shape[2]
    for t in range(cuda.grid(1), g.size, cuda.gridsize(1)):
        a = t // (M * B)
        r = t - a * M * B
        m = r // B
        b = r - m * B
        cuda.atomic.add(gx, (a, i0[m], b), w0[m] * g[a, m, b])
        cuda.atomic.add(gx, (a, i1[m], b), w1[m] * g[a, m, b])


def _zero(a, stream):
    from . import copy
    copy.fill(a, a.dtype.type(0), stream)


def _run(kernel, n, stream, *args):
    if n:
        kernel[grid(n) + (stream,)](*args)


def _volumes(a):
    """(P, *S) with 1-3 spatial dims (C-contiguous) as (P, D, H, W)."""
    shape = tuple(a.shape)
    return a.reshape((shape[0],) + (1,) * (4 - len(shape)) + shape[1:])


def _as_3d(values, fill):
    values = tuple(int(v) for v in values)
    return (fill,) * (3 - len(values)) + values


def max_pool2d_forward(x, out, indices, kernel, stride, padding, dilation, stream=0):
    """Max pooling of x (P, *S) into out (P, *OS), 2 or 3 spatial dims, flat int64 indices."""
    geom = _as_3d(kernel, 1) + _as_3d(stride, 1) + _as_3d(padding, 0) + _as_3d(dilation, 1)
    _run(max_pool_kernel, out.size, stream, _volumes(x), _volumes(out), _volumes(indices),
         *geom, False)


def adaptive_max_pool2d_forward(x, out, indices, stream=0):
    _run(max_pool_kernel, out.size, stream, _volumes(x), _volumes(out), _volumes(indices),
         1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 1, True)


def max_pool2d_backward(grad_out, indices, grad_in, stream=0):
    """grad_in (P, *S) = scatter-add of grad_out at the argmax indices (also adaptive, and
    max unpooling)."""
    _zero(grad_in, stream)
    P = grad_out.shape[0]
    _run(scatter_kernel, grad_out.size, stream, grad_out.reshape(P, grad_out.size // P),
         indices.reshape(P, indices.size // P), grad_in.reshape(P, grad_in.size // P))


def take_planes(x, indices, out, stream=0):
    _run(take_planes_kernel, out.size, stream, x, indices, out)


def avg_pool2d_forward(x, out, kernel, stride, padding, count_include_pad, divisor_override,
                       stream=0):
    geom = _as_3d(kernel, 1) + _as_3d(stride, 1) + _as_3d(padding, 0)
    _run(avg_pool_kernel, out.size, stream, _volumes(x), _volumes(out), *geom,
         bool(count_include_pad), int(divisor_override or 0), False)


def avg_pool2d_backward(grad_out, grad_in, kernel, stride, padding, count_include_pad,
                        divisor_override, stream=0):
    _zero(grad_in, stream)
    geom = _as_3d(kernel, 1) + _as_3d(stride, 1) + _as_3d(padding, 0)
    _run(avg_pool_backward_kernel, grad_out.size, stream, _volumes(grad_out),
         _volumes(grad_in), *geom, bool(count_include_pad), int(divisor_override or 0), False)


_ADAPTIVE = (1, 1, 1, 1, 1, 1, 0, 0, 0, False, 0, True)


def adaptive_avg_pool2d_forward(x, out, stream=0):
    _run(avg_pool_kernel, out.size, stream, _volumes(x), _volumes(out), *_ADAPTIVE)


def adaptive_avg_pool2d_backward(grad_out, grad_in, stream=0):
    _zero(grad_in, stream)
    _run(avg_pool_backward_kernel, grad_out.size, stream, _volumes(grad_out),
         _volumes(grad_in), *_ADAPTIVE)


def gather_axis(x, index, fill, out, stream=0):
    _run(gather_axis_kernel, out.size, stream, x, to_device(index, stream),
         out.dtype.type(fill), out)


def gather_axis_backward(g, index, gx, stream=0):
    _zero(gx, stream)
    _run(gather_axis_backward_kernel, g.size, stream, g, to_device(index, stream), gx)


def lerp_axis(x, i0, i1, w0, w1, out, stream=0):
    taps = [to_device(a, stream) for a in (i0, i1, w0, w1)]
    _run(lerp_axis_kernel, out.size, stream, x, *taps, out)


def lerp_axis_backward(g, i0, i1, w0, w1, gx, stream=0):
    _zero(gx, stream)
    taps = [to_device(a, stream) for a in (i0, i1, w0, w1)]
    _run(lerp_axis_backward_kernel, g.size, stream, g, *taps, gx)


def typecheck_signatures():
    from numba import types as nt
    i, b = nt.int64, nt.boolean
    i1, i2, i4 = (nt.Array(nt.int64, d, "C") for d in (1, 2, 4))
    for t in (nt.float32, nt.float64):
        a1, a2, a3, a4 = (nt.Array(t, d, "C") for d in (1, 2, 3, 4))
        yield (f"max_pool[{t}]", max_pool_kernel.py_func, (a4, a4, i4) + (i,) * 12 + (b,))
        yield (f"scatter[{t}]", scatter_kernel.py_func, (a2, i2, a2))
        yield (f"take_planes[{t}]", take_planes_kernel.py_func, (a2, i2, a2))
        yield (f"avg_pool[{t}]", avg_pool_kernel.py_func, (a4, a4) + (i,) * 9 + (b, i, b))
        yield (f"avg_pool_backward[{t}]", avg_pool_backward_kernel.py_func,
               (a4, a4) + (i,) * 9 + (b, i, b))
        yield (f"gather_axis[{t}]", gather_axis_kernel.py_func, (a3, i1, t, a3))
        yield (f"gather_axis_backward[{t}]", gather_axis_backward_kernel.py_func, (a3, i1, a3))
        yield (f"lerp_axis[{t}]", lerp_axis_kernel.py_func, (a3, i1, i1, a1, a1, a3))
        yield (f"lerp_axis_backward[{t}]", lerp_axis_backward_kernel.py_func,
               (a3, i1, i1, a1, a1, a3))
