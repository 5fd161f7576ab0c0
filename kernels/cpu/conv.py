"""CPU convolution kernels: im2col/col2im in Numba, the GEMM through NumPy's BLAS.

Layouts: inputs NCHW C-contiguous float32/float64; weights (O, C/groups, kh, kw);
the column buffer is (C*kh*kw, N, OH*OW), row ``(c*kh + ki)*kw + kj``: batch
inside the rows, so ONE GEMM covers the whole batch (measured: a single
32x144x25088 GEMM 1.0 ms against 1.8 ms for 32 batched 32x144x784 ones, and
2.0 ms against 4.5 ms for the weight gradient).  ``unfold``/``fold`` convert to
PyTorch's (N, C*kh*kw, L) layout.  1-D convolution uses these kernels with H = 1.

Three primitives cover convolution and every derivative of it:

* ``conv2d_forward``      out = W @ im2col(x) (+ bias)
* ``conv2d_grad_input``   gx  = col2im(W^T @ gout)       (= conv_transpose2d)
* ``conv2d_grad_weight``  gw  = gout @ im2col(x)^T       (batch summed by the GEMM)

The GEMM is ``np.matmul(..., out=)`` called from Python: DESIGN.md measured
BLAS at ~190 GFLOP/s against 48-62 for the best hand-tiled Numba GEMM.
Callers validate shapes; the kernels do no bounds checks.
"""
import threading

import numba
import numpy as np

__all__ = [
    "conv_output_size", "im2col", "col2im", "unfold", "fold", "swap_leading_axes", "channel_sum",
    "conv2d_forward", "conv2d_grad_input", "conv2d_grad_weight",
    "release_workspace",
]

# Work below this many column elements runs serially (prange costs ~2 us/launch).
PARALLEL_MIN_ELEMENTS = 32768


def conv_output_size(size, kernel, stride, padding, dilation):
    """Output length of a convolution along one dim: floor((L+2p-d(k-1)-1)/s)+1."""
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


@numba.njit(cache=True)
def _valid_range(off, stride, in_len, out_len):
    """Output positions o with 0 <= o*stride + off < in_len, as [lo, hi)."""
    lo = max(0, (-off + stride - 1) // stride)
    hi = min(out_len, max(0, (in_len - 1 - off) // stride + 1))
    return lo, max(lo, hi)



@numba.njit(cache=True)
def _im2col_plane(xp, col, c, n, geom):
    """One input plane xp = x[n, c] (H, W) -> rows col[c*kh*kw + ki*kw + kj, n, :].

    for ki, kj, oh, ow: col[c*kk + ki*kw + kj, n, oh*OW + ow]
                            = xp[oh*sh - ph + ki*dh, ow*sw - pw + kj*dw]  (0 outside)
    The in-range box [olo, ohi) x [lo, hi) is found once per (ki, kj), so the
    inner loop is a plain copy (a contiguous slice when sw == 1).
    """
    kh, kw, sh, sw, ph, pw, dh, dw, oh_n, ow_n = geom
    h, w = xp.shape
    xf = xp.ravel()
    for ki in range(kh):
        hoff = ki * dh - ph
        olo, ohi = _valid_range(hoff, sh, h, oh_n)
        for kj in range(kw):
            row = col[(c * kh + ki) * kw + kj, n]
            woff = kj * dw - pw
            lo, hi = _valid_range(woff, sw, w, ow_n)
            row[:olo * ow_n] = 0
            row[ohi * ow_n:] = 0
            for oh in range(olo, ohi):
                ob = oh * ow_n
                ib = (oh * sh + hoff) * w + woff
                for t in range(lo):
                    row[ob + t] = 0
                for t in range(hi, ow_n):
                    row[ob + t] = 0
                if sw == 1:
                    row[ob + lo:ob + hi] = xf[ib + lo:ib + hi]
                else:
                    for t in range(lo, hi):
                        row[ob + t] = xf[ib + t * sw]


@numba.njit(cache=True)
def _col2im_plane(col, xp, c, n, geom):
    """Adjoint of _im2col_plane: xp = x[n, c] gets its kh*kw column rows added back.

    xp = 0; for ki, kj, oh, ow (in range):
        xp[oh*sh - ph + ki*dh, ow*sw - pw + kj*dw] += col[c*kk + ki*kw + kj, n, oh*OW + ow]
    """
    kh, kw, sh, sw, ph, pw, dh, dw, oh_n, ow_n = geom
    h, w = xp.shape
    xf = xp.ravel()
    xf[:] = 0
    for ki in range(kh):
        hoff = ki * dh - ph
        olo, ohi = _valid_range(hoff, sh, h, oh_n)
        for kj in range(kw):
            row = col[(c * kh + ki) * kw + kj, n]
            woff = kj * dw - pw
            lo, hi = _valid_range(woff, sw, w, ow_n)
            for oh in range(olo, ohi):
                ob = oh * ow_n
                ib = (oh * sh + hoff) * w + woff
                for t in range(lo, hi):
                    xf[ib + t * sw] += row[ob + t]


@numba.njit(cache=True)
def _im2col_serial(x, col, geom):
    """x (N, C, H, W) -> col (C*kh*kw, N, OH*OW), one (n, c) plane after another."""
    n_b, n_c = x.shape[0], x.shape[1]
    for p in range(n_b * n_c):
        n, c = p // n_c, p % n_c
        _im2col_plane(x[n, c], col, c, n, geom)


@numba.njit(cache=True, parallel=True)
def _im2col_parallel(x, col, geom):
    """Same as _im2col_serial with the (n, c) planes spread over threads."""
    n_b, n_c = x.shape[0], x.shape[1]
    for p in numba.prange(n_b * n_c):
        n, c = p // n_c, p % n_c
        _im2col_plane(x[n, c], col, c, n, geom)


@numba.njit(cache=True)
def _col2im_serial(col, x, geom):
    """col (C*kh*kw, N, OH*OW) -> x (N, C, H, W) (overwritten), plane by plane."""
    n_b, n_c = x.shape[0], x.shape[1]
    for p in range(n_b * n_c):
        n, c = p // n_c, p % n_c
        _col2im_plane(col, x[n, c], c, n, geom)


@numba.njit(cache=True, parallel=True)
def _col2im_parallel(col, x, geom):
    """Same as _col2im_serial; each thread owns whole planes, so no races."""
    n_b, n_c = x.shape[0], x.shape[1]
    for p in numba.prange(n_b * n_c):
        n, c = p // n_c, p % n_c
        _col2im_plane(col, x[n, c], c, n, geom)


def _geometry(kernel, stride, padding, dilation, out_hw):
    """The 10-int tuple the plane kernels unpack (one tuple type, one signature)."""
    return (int(kernel[0]), int(kernel[1]), int(stride[0]), int(stride[1]),
            int(padding[0]), int(padding[1]), int(dilation[0]), int(dilation[1]),
            int(out_hw[0]), int(out_hw[1]))


def im2col(x, col, kernel, stride, padding, dilation, out_hw):
    """Fill col (C*kh*kw, N, OH*OW) from x (N, C, H, W); out_hw = (OH, OW)."""
    geom = _geometry(kernel, stride, padding, dilation, out_hw)
    fn = _im2col_parallel if col.size >= PARALLEL_MIN_ELEMENTS else _im2col_serial
    fn(x, col, geom)


def col2im(col, x, kernel, stride, padding, dilation, out_hw):
    """Overwrite x (N, C, H, W) with the sum of the windows in col (C*kh*kw, N, OH*OW)."""
    geom = _geometry(kernel, stride, padding, dilation, out_hw)
    fn = _col2im_parallel if col.size >= PARALLEL_MIN_ELEMENTS else _col2im_serial
    fn(col, x, geom)


@numba.njit(cache=True)
def swap_leading_axes(src, dst):
    """dst (B, A, L) = src (A, B, L) with the first two axes swapped (rows copied whole).

    for a, b: dst[b, a, :] = src[a, b, :]
    """
    n_a, n_b, _ = src.shape
    for a in range(n_a):
        for b in range(n_b):
            dst[b, a, :] = src[a, b, :]


@numba.njit(cache=True)
def _swap_add_bias(src, bias, dst):
    """dst (N, O, L) = src (O, N, L) swapped, plus bias[o] (the conv output epilogue).

    for o, n: dst[n, o, :] = src[o, n, :] + bias[o]
    """
    n_o, n_b, _ = src.shape
    for o in range(n_o):
        b = bias[o]
        for n in range(n_b):
            dst[n, o, :] = src[o, n, :] + b


@numba.njit(cache=True, fastmath={"reassoc"})
def channel_sum(g, out):
    """Bias gradient: out[c] = sum_{n, l} g[n, c, l] for g (N, C, L), summed in float64.

    for c: acc = 0.0 (float64); for n: acc += sum(g[n, c, :]); out[c] = acc
    """
    n_b, n_c, _ = g.shape
    for c in range(n_c):
        acc = 0.0
        for n in range(n_b):
            acc += np.float64(np.sum(g[n, c]))
        out[c] = acc


_local = threading.local()


def _workspace(slot, n_elems, dtype):
    """A reusable per-thread scratch buffer (fresh np.empty page-faults ~80 ms/GB)."""
    bufs = getattr(_local, "bufs", None)
    if bufs is None:
        bufs = _local.bufs = {}
    key = (slot, np.dtype(dtype).char)
    buf = bufs.get(key)
    if buf is None or buf.size < n_elems:
        buf = bufs[key] = np.empty(n_elems, dtype=dtype)
    return buf[:n_elems]


def release_workspace():
    """Free the scratch buffers held by this thread."""
    _local.bufs = {}


def _columns(x, kernel, stride, padding, dilation, out_hw):
    """im2col of x into the scratch buffer, as a (C*kh*kw, N*OH*OW) matrix."""
    n_b, n_c = x.shape[:2]
    rows, cols = n_c * kernel[0] * kernel[1], n_b * out_hw[0] * out_hw[1]
    col = _workspace("col", rows * cols, x.dtype).reshape(rows, n_b, -1)
    im2col(x, col, kernel, stride, padding, dilation, out_hw)
    return col.reshape(rows, cols)


def _channel_major(a, slot):
    """a (N, C, H, W) -> scratch (C, N*H*W) copy (the batch inside each channel row)."""
    n_b, n_c = a.shape[:2]
    dst = _workspace(slot, a.size, a.dtype).reshape(n_c, n_b, -1)
    swap_leading_axes(a.reshape(n_b, n_c, -1), dst)
    return dst.reshape(n_c, -1)


def conv2d_forward(x, weight, bias, out, stride, padding, dilation, groups):
    """out (N, O, OH, OW) = conv2d(x, weight) + bias; arrays C-contiguous, bias may be None.

    col = im2col(x); per group g: out_t[g] = W[g].reshape(O/g, -1) @ col[g]   (one BLAS GEMM)
    out[n, o] = out_t[o, n] + bias[o]                                          (one pass)
    """
    n_b, n_o, oh_n, ow_n = out.shape
    kernel = weight.shape[2:]
    col = _columns(x, kernel, stride, padding, dilation, (oh_n, ow_n))
    w2 = weight.reshape(n_o, -1)
    rows, og = w2.shape[1], n_o // groups
    out_t = _workspace("out", out.size, out.dtype).reshape(n_o, -1)
    for g in range(groups):
        np.matmul(w2[g * og:(g + 1) * og], col[g * rows:(g + 1) * rows],
                  out=out_t[g * og:(g + 1) * og])
    if bias is None:
        bias = np.zeros(n_o, dtype=out.dtype)
    _swap_add_bias(out_t.reshape(n_o, n_b, -1), bias, out.reshape(n_b, n_o, -1))


def conv2d_grad_input(grad_out, weight, grad_in, stride, padding, dilation, groups):
    """grad_in (N, C, H, W) = col2im(W^T @ grad_out); this is also conv_transpose2d.

    gcol[g] = W[g].reshape(O/g, -1)^T @ grad_out_t[g]   (grad_out_t: (O, N*OH*OW));
    grad_in = col2im(gcol).  grad_in's H, W fix the geometry (output_padding included).
    """
    n_b, n_o, oh_n, ow_n = grad_out.shape
    kernel = weight.shape[2:]
    g_t = _channel_major(grad_out, "out")
    w2 = weight.reshape(n_o, -1)
    rows, og = w2.shape[1], n_o // groups
    gcol = _workspace("col", rows * groups * g_t.shape[1], grad_out.dtype)
    gcol = gcol.reshape(rows * groups, -1)
    for g in range(groups):
        np.matmul(w2[g * og:(g + 1) * og].T, g_t[g * og:(g + 1) * og],
                  out=gcol[g * rows:(g + 1) * rows])
    col2im(gcol.reshape(rows * groups, n_b, -1), grad_in, kernel, stride, padding,
           dilation, (oh_n, ow_n))


def conv2d_grad_weight(x, grad_out, grad_w, stride, padding, dilation, groups):
    """grad_w (O, C/g, kh, kw) = grad_out_t @ im2col(x)^T per group (batch summed by the GEMM).

    for g: grad_w[g].reshape(O/g, -1) = grad_out_t[g] (O/g, N*L) @ col[g] (C/g*kk, N*L)^T
    """
    n_b, n_o, oh_n, ow_n = grad_out.shape
    kernel = grad_w.shape[2:]
    col = _columns(x, kernel, stride, padding, dilation, (oh_n, ow_n))
    g_t = _channel_major(grad_out, "out")
    gw2 = grad_w.reshape(n_o, -1)
    rows, og = gw2.shape[1], n_o // groups
    for g in range(groups):
        np.matmul(g_t[g * og:(g + 1) * og], col[g * rows:(g + 1) * rows].T,
                  out=gw2[g * og:(g + 1) * og])


def unfold(x, out, kernel, stride, padding, dilation, out_hw):
    """PyTorch's F.unfold: out (N, C*kh*kw, L) from x (N, C, H, W)."""
    n_b = x.shape[0]
    col = _columns(x, kernel, stride, padding, dilation, out_hw)
    swap_leading_axes(col.reshape(col.shape[0], n_b, -1), out)


def fold(col, out, kernel, stride, padding, dilation, out_hw):
    """PyTorch's F.fold: out (N, C, H, W) = sum of the windows in col (N, C*kh*kw, L)."""
    n_b, rows, length = col.shape
    col_t = _workspace("col", col.size, col.dtype).reshape(rows, n_b, length)
    swap_leading_axes(col, col_t)
    col2im(col_t, out, kernel, stride, padding, dilation, out_hw)
