"""CPU pooling and resampling kernels (Numba).

Pooling layout: x is (P, D, H, W) C-contiguous float32/float64 with P = N*C
volumes (callers reshape NC*; the launchers take 2 or 3 spatial dims and run
2-D pooling with D = 1, 1-D with D = H = 1: one signature per dtype for all);
outputs (P, OD, OH, OW). Max-pool indices are int64 flat offsets into one
input volume ((z*H + h)*W + w; h*W + w in 2-D), as in PyTorch.  2-D windows that all
lie inside the input (no padding, no partial ceil_mode window: the common case) run
fast kernels without per-tap range checks, their planes split over threads from
SPLIT_MIN_WORK (batch_threads.py); other windows run the general kernels, serial or
prange over volumes by size.

Resampling along one axis (used by ``F.pad`` and ``F.interpolate``): x is
(A, L, B), the axis in the middle; padding and nearest are an index gather,
linear interpolation a two-tap weighted gather; separable modes (bilinear,
reflect/replicate/constant padding of several dims) apply them axis by axis.
Callers validate shapes and indices; kernels do no bounds checks.
"""

import numba
import numpy as np

from ..shared import avg_window, copy_into
from . import batch_threads, openmp

__all__ = [
    "adaptive_ranges",
    "max_pool2d_forward", "max_pool2d_backward",
    "avg_pool2d_forward", "avg_pool2d_backward",
    "take_planes",
    "gather_axis", "gather_axis_backward", "lerp_axis", "lerp_axis_backward",
]

# Work (output elements x window taps) from which the prange variants run.  Kept
# high: in a network pooling runs between BLAS calls whose idle threads spin, and
# a parallel region next to them measured several times slower on 2 cores.
PARALLEL_MIN_ELEMENTS = 1 << 22
# Work from which the fast (windows inside the input) kernels and max-pool's scatter split
# their planes over Python threads instead (batch_threads.py: no OpenMP region beside BLAS).
# LeNet's poolings (221K and 66K taps) stay serial, as its convolutions (conv.py).
SPLIT_MIN_WORK = 1 << 20


def _big(out_size, kernel):
    """True when the prange variant runs: work from PARALLEL_MIN_ELEMENTS, and OpenMP
    usable here (not in a child forked after its threads started: openmp.py)."""
    return out_size * int(np.prod(np.asarray(kernel))) >= PARALLEL_MIN_ELEMENTS and openmp.USABLE


def _over_planes(kernel, n_planes, work, *arrays_then_args):
    """kernel(*arrays[b0:b1], *args) over plane ranges on threads, or once over all planes.
    arrays_then_args: the per-plane arrays, then a tuple of the remaining arguments."""
    *arrays, args = arrays_then_args
    parts = batch_threads.ranges(n_planes, work, SPLIT_MIN_WORK)
    if parts is None:
        kernel(*arrays, *args)
        return
    batch_threads.run(lambda b0, b1: kernel(*(a[b0:b1] for a in arrays), *args), parts,
                      (kernel, work.bit_length()))


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
def _max_volume(xv, outv, idxv, geom):
    """out[od, oh, ow] = max over the dilated window, idx = its flat offset (z*H + h)*W + w.

    NaN wins (and the last NaN is kept), like PyTorch; an all -inf window keeps
    the first in-range tap; a window with no tap in range gives -inf and index -1.
    2-D pooling is D = kd = 1.
    """
    kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw = geom
    d, h, w = xv.shape
    od_n, oh_n, ow_n = outv.shape
    xf = xv.ravel()                 # flat offsets: 3-D indexing cost ~25% (measured)
    for od in range(od_n):
        zs = od * sd - pd
        zlo, zhi = _tap_range(zs, dd, kd, d)
        for oh in range(oh_n):
            hs = oh * sh - ph
            klo, khi = _tap_range(hs, dh, kh, h)
            for ow in range(ow_n):
                ws = ow * sw - pw
                llo, lhi = _tap_range(ws, dw, kw, w)
                best = -np.inf
                arg = -1
                if zlo < zhi and klo < khi and llo < lhi:
                    arg = ((zs + zlo * dd) * h + hs + klo * dh) * w + ws + llo * dw
                for kz in range(zlo, zhi):
                    z = zs + kz * dd
                    for ki in range(klo, khi):
                        base = (z * h + hs + ki * dh) * w + ws
                        for kj in range(llo, lhi):
                            v = xf[base + kj * dw]
                            if v > best or v != v:
                                best = v
                                arg = base + kj * dw
                outv[od, oh, ow] = best
                idxv[od, oh, ow] = arg


@numba.njit(cache=True)
def _max_serial(x, out, idx, geom):
    """for p: _max_volume(x[p], out[p], idx[p])."""
    for p in range(x.shape[0]):
        _max_volume(x[p], out[p], idx[p], geom)


@numba.njit(cache=True, parallel=True)
def _max_parallel(x, out, idx, geom):
    """for p in prange: _max_volume(x[p], out[p], idx[p])."""
    for p in numba.prange(x.shape[0]):
        _max_volume(x[p], out[p], idx[p], geom)


def _volumes(a):
    """(P, *S) with 1-3 spatial dims (C-contiguous) viewed as (P, D, H, W)."""
    return a.reshape((a.shape[0],) + (1,) * (4 - a.ndim) + a.shape[1:])


def _as_3d(values, fill):
    values = tuple(int(v) for v in values)
    return (fill,) * (3 - len(values)) + values


@numba.njit(cache=True, nogil=True)
def _max_inside(x, out, idx, geom):
    """2-D max pooling of planes x (P, H, W) whose windows all lie inside the plane.

    The common case (no padding, no partial ceil_mode window) without the per-tap
    range checks, branch-free (selects: random data mispredicts a branch half the
    time) and over flat unsigned offsets: 64x6x24x24 2x2 measured 614 -> 308 us,
    single thread. Same taps in the same order as _max_volume: same values and indices.
    """
    kh, kw, sh, sw, dh, dw = geom
    w = x.shape[2]
    oh_n, ow_n = out.shape[1], out.shape[2]
    plane = x.shape[1] * w
    xf, of, jf = x.ravel(), out.ravel(), idx.ravel()
    o = 0
    for p in range(x.shape[0]):
        pb = p * plane
        for oh in range(oh_n):
            for ow in range(ow_n):
                base = oh * sh * w + ow * sw
                best = xf[np.uint64(pb + base)]
                arg = base
                for ki in range(kh):
                    for kj in range(kw):
                        j = base + ki * dh * w + kj * dw
                        v = xf[np.uint64(pb + j)]
                        c = (v > best) | (v != v)      # NaN wins, the last NaN is kept
                        best = v if c else best
                        arg = j if c else arg
                of[np.uint64(o)] = best
                jf[np.uint64(o)] = arg
                o += 1


@numba.njit(cache=True, nogil=True)
def _max_2x2(x, out, idx):
    """_max_inside for the classic 2x2 window of stride 2: the four taps unrolled, the
    winner kept as a small int32 offset (64x6x24x24: 304 -> 118 us, 64x16x8x8: 93 -> 41,
    one thread). Same taps in the same order: same values and indices.

    for p, oh, ow: out, idx = max/argmax of x[p, 2oh:2oh+2, 2ow:2ow+2] (NaN wins, ties
    keep the first tap)
    """
    w = np.int32(x.shape[2])
    for p in range(x.shape[0]):
        for oh in range(out.shape[1]):
            r0, r1, o, jo = x[p, 2 * oh], x[p, 2 * oh + 1], out[p, oh], idx[p, oh]
            base = np.int32(2 * oh) * w
            for ow in range(out.shape[2]):
                a, b, c, d = r0[2 * ow], r0[2 * ow + 1], r1[2 * ow], r1[2 * ow + 1]
                best, tap = a, np.int32(0)
                k = (b > best) | (b != b)
                best, tap = (b, np.int32(1)) if k else (best, tap)
                k = (c > best) | (c != c)
                best, tap = (c, w) if k else (best, tap)
                k = (d > best) | (d != d)
                best, tap = (d, w + np.int32(1)) if k else (best, tap)
                o[ow] = best
                jo[ow] = np.int64(base + np.int32(2 * ow) + tap)


def _inside_2d(x_shape, out_shape, kernel, stride, padding, dilation):
    """2-D windows (the op layer lifts 1-D pooling to 2-D) that all lie inside the input:
    no padding, none cut by ceil_mode."""
    if len(kernel) != 2 or any(padding):
        return False
    return all((o - 1) * s + d * (k - 1) < n for o, s, d, k, n in
               zip(out_shape[1:], stride, dilation, kernel, x_shape[1:]))


def max_pool2d_forward(x, out, indices, kernel, stride, padding, dilation):
    """Max pooling of x (P, *S) into out (P, *OS) with int64 argmax indices (flat offsets
    into one input plane/volume); 2 or 3 spatial dims (max_pool1d/2d/3d)."""
    if _inside_2d(x.shape, out.shape, kernel, stride, padding, dilation):
        geom = tuple(kernel) + tuple(stride) + tuple(dilation)
        if geom == (2, 2, 2, 2, 1, 1):
            _over_planes(_max_2x2, x.shape[0], out.size * 4, x, out, indices, ())
            return
        _over_planes(_max_inside, x.shape[0], out.size * geom[0] * geom[1], x, out, indices,
                     (geom,))
        return
    geom = _as_3d(kernel, 1) + _as_3d(stride, 1) + _as_3d(padding, 0) + _as_3d(dilation, 1)
    big = _big(out.size, kernel)
    (_max_parallel if big else _max_serial)(_volumes(x), _volumes(out), _volumes(indices), geom)


@numba.njit(cache=True)
def _scatter_plane(gp, idxp, gxp):
    """gx = 0; for each output cell with idx >= 0: gx[idx] += g (windows may overlap)."""
    for j in range(gxp.shape[0]):
        gxp[j] = 0
    for i in range(gp.shape[0]):
        if idxp[i] >= 0:
            gxp[idxp[i]] += gp[i]


@numba.njit(cache=True, nogil=True)
def _scatter_serial(g, idx, gx):
    """for p: _scatter_plane(g[p], idx[p], gx[p]) (each plane owns its gx plane, so plane
    ranges run on threads side by side)."""
    for p in range(g.shape[0]):
        _scatter_plane(g[p], idx[p], gx[p])


def max_pool2d_backward(grad_out, indices, grad_in):
    """grad_in (P, *S) = scatter-add of grad_out (P, *OS) at the flat argmax indices.

    Also the backward of adaptive max pooling and the forward of max unpooling.
    Indices must be in [-1, prod(S)) (-1: skipped).
    """
    p = grad_in.shape[0]
    g, idx, gx = grad_out.reshape(p, -1), indices.reshape(p, -1), grad_in.reshape(p, -1)
    _over_planes(_scatter_serial, p, grad_in.size // 8, g, idx, gx, ())   # ~1/8 of a tap's cost


@numba.njit(cache=True)
def take_planes(x, indices, out):
    """out (P, M)[p, i] = x (P, S)[p, indices[p, i]]: the adjoint of max-pool backward.

    Used for double backward of max pooling (gradients picked at the argmax).
    """
    for p in range(x.shape[0]):
        xp, ip, op = x[p], indices[p], out[p]
        for i in range(ip.shape[0]):
            op[i] = xp[ip[i]] if ip[i] >= 0 else 0


# ---------------------------------------------------------------- average pooling

@numba.njit(cache=True)
def _avg_volume(xv, outv, geom, count_include_pad, divisor):
    """out[od, oh, ow] = sum(window) / (divisor or count); sums kept in float64."""
    kd, kh, kw, sd, sh, sw, pd, ph, pw = geom
    d, h, w = xv.shape
    od_n, oh_n, ow_n = outv.shape
    for od in range(od_n):
        z0, z1, zc = avg_window(od, sd, pd, kd, d, count_include_pad)
        for oh in range(oh_n):
            h0, h1, hc = avg_window(oh, sh, ph, kh, h, count_include_pad)
            for ow in range(ow_n):
                w0, w1, wc = avg_window(ow, sw, pw, kw, w, count_include_pad)
                acc = 0.0
                for z in range(z0, z1):
                    for r in range(h0, h1):
                        for c in range(w0, w1):
                            acc += xv[z, r, c]
                div = divisor if divisor > 0 else zc * hc * wc
                outv[od, oh, ow] = acc / div if z0 < z1 and h0 < h1 and w0 < w1 else 0.0


@numba.njit(cache=True)
def _avg_volume_backward(gv, gxv, geom, count_include_pad, divisor):
    """gx = 0; for each output cell: gx[window] += g / (divisor or count)."""
    kd, kh, kw, sd, sh, sw, pd, ph, pw = geom
    d, h, w = gxv.shape
    od_n, oh_n, ow_n = gv.shape
    gxv[:, :, :] = 0
    for od in range(od_n):
        z0, z1, zc = avg_window(od, sd, pd, kd, d, count_include_pad)
        for oh in range(oh_n):
            h0, h1, hc = avg_window(oh, sh, ph, kh, h, count_include_pad)
            for ow in range(ow_n):
                w0, w1, wc = avg_window(ow, sw, pw, kw, w, count_include_pad)
                div = divisor if divisor > 0 else zc * hc * wc
                if z0 >= z1 or h0 >= h1 or w0 >= w1:
                    continue
                v = gv[od, oh, ow] / div
                for z in range(z0, z1):
                    for r in range(h0, h1):
                        for c in range(w0, w1):
                            gxv[z, r, c] += v


@numba.njit(cache=True, parallel=True)
def _avg_parallel(x, out, geom, count_include_pad, divisor):
    """for p in prange: _avg_volume(x[p], out[p])."""
    for p in numba.prange(x.shape[0]):
        _avg_volume(x[p], out[p], geom, count_include_pad, divisor)


@numba.njit(cache=True)
def _avg_serial(x, out, geom, count_include_pad, divisor):
    """for p: _avg_volume(x[p], out[p])."""
    for p in range(x.shape[0]):
        _avg_volume(x[p], out[p], geom, count_include_pad, divisor)


@numba.njit(cache=True, parallel=True)
def _avg_backward_parallel(g, gx, geom, count_include_pad, divisor):
    """for p in prange: _avg_volume_backward(g[p], gx[p])."""
    for p in numba.prange(g.shape[0]):
        _avg_volume_backward(g[p], gx[p], geom, count_include_pad, divisor)


@numba.njit(cache=True)
def _avg_backward_serial(g, gx, geom, count_include_pad, divisor):
    """for p: _avg_volume_backward(g[p], gx[p])."""
    for p in range(g.shape[0]):
        _avg_volume_backward(g[p], gx[p], geom, count_include_pad, divisor)


@numba.njit(cache=True, nogil=True)
def _avg_inside(x, out, geom, div):
    """2-D average pooling of planes x (P, H, W) whose windows all lie inside the plane:
    out = (window sum in float64) / div, the taps in _avg_volume's order (same values).
    Flat offsets: 64x16x8x8 2x2 measured 173 -> 57 us (2-D views per row: 103 us)."""
    kh, kw, sh, sw = geom
    h, w = x.shape[1], x.shape[2]
    oh_n, ow_n = out.shape[1], out.shape[2]
    xf, of = x.ravel(), out.ravel()
    fdiv = np.float64(div)
    o = 0
    for p in range(x.shape[0]):
        for oh in range(oh_n):
            for ow in range(ow_n):
                b = (p * h + oh * sh) * w + ow * sw
                acc = 0.0
                for ki in range(kh):
                    for kj in range(kw):
                        acc += xf[b + ki * w + kj]
                of[o] = acc / fdiv
                o += 1


@numba.njit(cache=True, nogil=True)
def _avg_inside_backward(g, gx, geom, div):
    """Adjoint of _avg_inside: gx = 0; gx[window] += g / div, in _avg_volume_backward's order."""
    kh, kw, sh, sw = geom
    h, w = gx.shape[1], gx.shape[2]
    oh_n, ow_n = g.shape[1], g.shape[2]
    gf, gxf = g.ravel(), gx.ravel()
    for t in range(gxf.size):
        gxf[t] = 0
    fdiv = np.float64(div)
    o = 0
    for p in range(g.shape[0]):
        for oh in range(oh_n):
            for ow in range(ow_n):
                b = (p * h + oh * sh) * w + ow * sw
                v = gf[o] / fdiv
                o += 1
                for ki in range(kh):
                    for kj in range(kw):
                        gxf[b + ki * w + kj] += v


def avg_pool2d_forward(x, out, kernel, stride, padding, count_include_pad, divisor_override):
    """Average pooling of x (P, *S) into out (P, *OS), 2 or 3 spatial dims;
    divisor_override None or > 0."""
    if _inside_2d(x.shape, out.shape, kernel, stride, padding, (1,) * len(kernel)):
        div = int(divisor_override or kernel[-1] * kernel[-2])
        _over_planes(_avg_inside, x.shape[0], out.size * kernel[0] * kernel[1], x, out,
                     (tuple(kernel) + tuple(stride), div))
        return
    geom = _as_3d(kernel, 1) + _as_3d(stride, 1) + _as_3d(padding, 0)
    div = int(divisor_override or 0)
    big = _big(out.size, kernel)
    (_avg_parallel if big else _avg_serial)(_volumes(x), _volumes(out), geom,
                                            bool(count_include_pad), div)


def avg_pool2d_backward(grad_out, grad_in, kernel, stride, padding, count_include_pad,
                        divisor_override):
    """grad_in (P, *S) of average pooling from grad_out (P, *OS)."""
    if _inside_2d(grad_in.shape, grad_out.shape, kernel, stride, padding, (1,) * len(kernel)):
        div = int(divisor_override or kernel[-1] * kernel[-2])
        _over_planes(_avg_inside_backward, grad_in.shape[0], grad_in.size, grad_out, grad_in,
                     (tuple(kernel) + tuple(stride), div))
        return
    geom = _as_3d(kernel, 1) + _as_3d(stride, 1) + _as_3d(padding, 0)
    div = int(divisor_override or 0)
    big = _big(grad_out.size, kernel)
    fn = _avg_backward_parallel if big else _avg_backward_serial
    fn(_volumes(grad_out), _volumes(grad_in), geom, bool(count_include_pad), div)


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
