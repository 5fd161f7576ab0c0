"""Convolution on CUDA: im2col/col2im kernels plus the tiled GEMM of matmul.py.

Contracts and layouts of kernels/cpu/conv.py (NCDHW C-contiguous float32/64, 1-3
spatial dims run as volumes with leading sizes 1; weights (O, C/g, kd, kh, kw);
columns (N, C*kd*kh*kw, OD*OH*OW), row ((c*kd + kz)*kh + ki)*kw + kj)::

    im2col: for (n, row, l) (grid-stride): col[n, row, l] = x[n, c, iz, ih, iw]
            with iz = od*sd-pd+kz*dd, ih = oh*sh-ph+ki*dh, iw = ow*sw-pw+kj*dw
    col2im: for (n, c, z, h, w): x[n, c, z, h, w] = sum of the col entries whose window
            covers (z, h, w) -- a gather per input element, so no atomics
    conv2d_forward:     out[chunk, g] = W[g] @ im2col(x[chunk])[:, g]  (+ bias)
    conv2d_grad_input:  grad_in[chunk] = col2im(W[g]^T @ grad_out[chunk, g])
    conv2d_grad_weight: grad_w[g] = sum_n grad_out[n, g] @ im2col(x)[n, g]^T
                        (batched GEMM into per-image parts, then a sum over the batch)

The batch runs in chunks of about CHUNK_ELEMENTS column elements (scratch from
the caching allocator). Operand views are built with `strided_view` (no copies).
"""
from numba import cuda

from ._launch import SIMULATOR, grid, strided_view
from . import matmul as _mm, reduce as _reduce

__all__ = ["conv2d_forward", "conv2d_grad_input", "conv2d_grad_weight", "channel_sum",
           "unfold", "fold", "typecheck_signatures"]

CHUNK_ELEMENTS = 32 if SIMULATOR else 1 << 26     # (tiny on the simulator: chunks tested)


@cuda.jit(cache=True)
def im2col_kernel(x, col, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, oh_n, ow_n):
    """col[n, ((c*kd + kz)*kh + ki)*kw + kj, (od*OH + oh)*OW + ow] = x[n, c, iz, ih, iw]
    (0 outside the volume); x is (N, C, D, H, W), 2-D convolution D = kd = 1."""
    N, C, D, H, W = x.shape
    rows, L = col.shape[1], col.shape[2]
    kk = kd * kh * kw
    for t in range(cuda.grid(1), N * rows * L, cuda.gridsize(1)):
        n = t // (rows * L)
        r = t - n * rows * L
        row = r // L
        l = r - row * L
        c = row // kk
        k = row - c * kk
        kz = k // (kh * kw)
        k -= kz * kh * kw
        ki = k // kw
        kj = k - ki * kw
        od = l // (oh_n * ow_n)
        m = l - od * oh_n * ow_n
        oh = m // ow_n
        ow = m - oh * ow_n
        iz = od * sd - pd + kz * dd
        ih = oh * sh - ph + ki * dh
        iw = ow * sw - pw + kj * dw
        if 0 <= iz < D and 0 <= ih < H and 0 <= iw < W:
            col[n, row, l] = x[n, c, iz, ih, iw]
        else:
            col[n, row, l] = 0


@cuda.jit(cache=True)
def col2im_kernel(col, x, kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od_n, oh_n, ow_n):
    """x[n, c, z, h, w] = sum over taps (kz, ki, kj) whose output position hits (z, h, w)."""
    N, C, D, H, W = x.shape
    for t in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        n = t // (C * D * H * W)
        r = t - n * C * D * H * W
        c = r // (D * H * W)
        r -= c * D * H * W
        z = r // (H * W)
        r -= z * H * W
        h = r // W
        w = r - h * W
        acc = 0.0
        for kz in range(kd):
            e = z + pd - kz * dd
            if e < 0 or e % sd != 0 or e // sd >= od_n:
                continue
            od = e // sd
            for ki in range(kh):
                a = h + ph - ki * dh
                if a < 0 or a % sh != 0 or a // sh >= oh_n:
                    continue
                oh = a // sh
                for kj in range(kw):
                    b = w + pw - kj * dw
                    if b < 0 or b % sw != 0 or b // sw >= ow_n:
                        continue
                    acc += col[n, ((c * kd + kz) * kh + ki) * kw + kj,
                               (od * oh_n + oh) * ow_n + b // sw]
        x[n, c, z, h, w] = acc


@cuda.jit(cache=True)
def add_channel_bias_kernel(out3, bias):
    """out3[n, c, l] += bias[c]."""
    N, C, L = out3.shape
    for t in range(cuda.grid(1), out3.size, cuda.gridsize(1)):
        n = t // (C * L)
        c = (t - n * C * L) // L
        out3[n, c, t - n * C * L - c * L] += bias[c]


@cuda.jit(cache=True)
def add_into_kernel(dst, src):
    """dst[i] += src[i] (flat, contiguous)."""
    for i in range(cuda.grid(1), dst.size, cuda.gridsize(1)):
        dst[i] += src[i]


def _as_3d(values, fill):
    """A 1-3 spatial-dim tuple as 3 ints, missing leading dims set to `fill`."""
    values = tuple(int(v) for v in values)
    return (fill,) * (3 - len(values)) + values


def _geom(kernel, stride, padding, dilation):
    return _as_3d(kernel, 1) + _as_3d(stride, 1) + _as_3d(padding, 0) + _as_3d(dilation, 1)


def _volumes(a):
    """An (N, C, *S) array with 1-3 spatial dims as an (N, C, D, H, W) view."""
    shape = tuple(a.shape)
    shape = shape[:2] + (1,) * (5 - len(shape)) + shape[2:]
    itemsize = a.dtype.itemsize
    strides = tuple(a.strides)
    strides = strides[:2] + (itemsize,) * (5 - len(strides)) + strides[2:]
    return strided_view(a, shape, strides)


def im2col(x, col, kernel, stride, padding, dilation, out_size, stream=0):
    """Fill col (N, C*prod(kernel), prod(out_size)) from x (N, C, *S), 1-3 spatial dims."""
    if col.size:
        o = _as_3d(out_size, 1)
        im2col_kernel[grid(col.size) + (stream,)](
            _volumes(x), col, *_geom(kernel, stride, padding, dilation), o[1], o[2])


def col2im(col, x, kernel, stride, padding, dilation, out_size, stream=0):
    """Overwrite x (N, C, *S) with the sum of the windows in col (N, C*prod(kernel), L)."""
    if x.size:
        col2im_kernel[grid(x.size) + (stream,)](
            col, _volumes(x), *_geom(kernel, stride, padding, dilation), *_as_3d(out_size, 1))


unfold = im2col
fold = col2im


def _view(base, shape, strides, offset=0):
    """A view of contiguous `base` with element strides/offset (no copy)."""
    s = base.dtype.itemsize
    return strided_view(base, tuple(shape), tuple(v * s for v in strides), offset * s)


def _chunk(n_b, per_image):
    return max(1, min(n_b, CHUNK_ELEMENTS // max(1, per_image)))


def _scratch(shape, dtype, stream):
    return cuda.device_array(tuple(shape), dtype, stream=stream)


def _prod(values):
    n = 1
    for v in values:
        n *= int(v)
    return n


def _batch_view(a, n0, n):
    """a[n0:n0+n] of a C-contiguous (N, ...) device array, as a view."""
    shape = tuple(a.shape)
    per = _prod(shape[1:])
    strides, acc = [], 1
    for d in reversed(shape[1:]):
        strides.insert(0, acc)
        acc *= d
    return _view(a, (n,) + shape[1:], [per] + strides, n0 * per)


def conv2d_forward(x, weight, bias, out, stride, padding, dilation, groups, stream=0):
    """out (N, O, *OS) = conv(x (N, C, *S), weight) + bias, 1-3 spatial dims (bias: None ok)."""
    N, O = out.shape[:2]
    C = x.shape[1]
    kernel, out_size = tuple(weight.shape)[2:], tuple(out.shape)[2:]
    rows, og, L = (C // groups) * _prod(kernel), O // groups, _prod(out_size)
    if out.size == 0:
        return
    step = _chunk(N, rows * groups * L)
    col = _scratch((step, rows * groups, L), x.dtype, stream)
    for n0 in range(0, N, step):
        n = min(step, N - n0)
        cs = _view(col, (n, rows * groups, L), (rows * groups * L, L, 1))
        im2col(_batch_view(x, n0, n), cs, kernel, stride, padding, dilation, out_size, stream)
        for g in range(groups):
            w_g = _view(weight, (1, og, rows), (0, rows, 1), g * og * rows)
            c_g = _view(col, (n, rows, L), (rows * groups * L, L, 1), g * rows * L)
            o_g = _view(out, (n, og, L), (O * L, L, 1), n0 * O * L + g * og * L)
            _mm.matmul(w_g, c_g, o_g, stream)
    if bias is not None:
        add_channel_bias_kernel[grid(out.size) + (stream,)](_view(out, (N, O, L),
                                                                  (O * L, L, 1)), bias)


def conv2d_grad_input(grad_out, weight, grad_in, stride, padding, dilation, groups,
                      stream=0):
    """grad_in (N, C, *S) = col2im(W^T @ grad_out); also conv_transpose1d/2d/3d."""
    N, O = grad_out.shape[:2]
    C = grad_in.shape[1]
    kernel, out_size = tuple(weight.shape)[2:], tuple(grad_out.shape)[2:]
    rows, og, L = (C // groups) * _prod(kernel), O // groups, _prod(out_size)
    if grad_in.size == 0:
        return
    step = _chunk(N, rows * groups * L)
    col = _scratch((step, rows * groups, L), grad_out.dtype, stream)
    for n0 in range(0, N, step):
        n = min(step, N - n0)
        for g in range(groups):
            wt_g = _view(weight, (1, rows, og), (0, 1, rows), g * og * rows)
            g_g = _view(grad_out, (n, og, L), (O * L, L, 1), n0 * O * L + g * og * L)
            c_g = _view(col, (n, rows, L), (rows * groups * L, L, 1), g * rows * L)
            _mm.matmul(wt_g, g_g, c_g, stream)
        cs = _view(col, (n, rows * groups, L), (rows * groups * L, L, 1))
        col2im(cs, _batch_view(grad_in, n0, n), kernel, stride, padding, dilation, out_size,
               stream)


def conv2d_grad_weight(x, grad_out, grad_w, stride, padding, dilation, groups, stream=0):
    """grad_w (O, C/g, *k) = sum_n grad_out[n] @ im2col(x)[n]^T, per group (1-3 spatial dims)."""
    N, O = grad_out.shape[:2]
    C = x.shape[1]
    kernel, out_size = tuple(grad_w.shape)[2:], tuple(grad_out.shape)[2:]
    rows, og, L = (C // groups) * _prod(kernel), O // groups, _prod(out_size)
    if grad_w.size == 0:
        return
    step = _chunk(N, max(rows * groups * L, og * rows))
    col = _scratch((step, rows * groups, L), x.dtype, stream)
    part = _scratch((step, og, rows), grad_w.dtype, stream)
    summed = _scratch((1, og * rows), grad_w.dtype, stream)
    for n0 in range(0, N, step):
        n = min(step, N - n0)
        im2col(_batch_view(x, n0, n), _view(col, (n, rows * groups, L), (rows * groups * L, L, 1)),
               kernel, stride, padding, dilation, out_size, stream)
        for g in range(groups):
            g_g = _view(grad_out, (n, og, L), (O * L, L, 1), n0 * O * L + g * og * L)
            ct_g = _view(col, (n, L, rows), (rows * groups * L, 1, L), g * rows * L)
            p = _view(part, (n, og, rows), (og * rows, rows, 1))
            _mm.matmul(g_g, ct_g, p, stream)
            dst = _view(grad_w, (1, og * rows), (0, 1), g * og * rows)
            _reduce.sum_(_view(part, (1, n, og * rows), (0, og * rows, 1)),
                         dst if n0 == 0 else summed, stream=stream)
            if n0:
                add_into_kernel[grid(og * rows) + (stream,)](
                    _view(grad_w, (og * rows,), (1,), g * og * rows),
                    summed.reshape(og * rows))


def channel_sum(g3, out, stream=0):
    """Bias gradient: out[c] = sum_{n, l} g3[n, c, l] (two reductions: over l, then n)."""
    N, C, L = g3.shape
    if out.size == 0:
        return
    per = _scratch((N * C, 1), g3.dtype, stream)
    _reduce.sum_(g3.reshape(N * C, L, 1), per, stream=stream)
    _reduce.sum_(per.reshape(1, N, C), out.reshape(1, C), stream=stream)


def typecheck_signatures():
    from numba import types as nt
    i = nt.int64
    for t in (nt.float32, nt.float64):
        a5, a3 = nt.Array(t, 5, "A"), nt.Array(t, 3, "A")
        yield (f"im2col[{t}]", im2col_kernel.py_func, (a5, a3) + (i,) * 14)
        yield (f"col2im[{t}]", col2im_kernel.py_func, (a3, a5) + (i,) * 15)
        yield (f"add_channel_bias[{t}]", add_channel_bias_kernel.py_func,
               (a3, nt.Array(t, 1, "C")))
        yield (f"add_into[{t}]", add_into_kernel.py_func,
               (nt.Array(t, 1, "A"), nt.Array(t, 1, "C")))
