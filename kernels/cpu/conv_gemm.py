"""Convolution one image at a time in one kernel: im2col of the image into a small
buffer, then its GEMM (OpenBLAS called by address: cblas.py) while the columns are
still in cache, for every image of a batch range.

conv.py's batch path writes a chunk's columns (up to 1 MiB) and runs a batched
`np.matmul` over them from Python: on LeNet's small planes the columns leave L1 before
the product reads them, and each chunk pays a few Python calls. One thread, float32:
LeNet c2 (64x6x12x12, 5x5) forward 218 -> 147 us, c1 (64x1x28x28) 323 -> 164 us.

Layouts as conv.py's: x (N, C, D, H, W), out / grad_out (N, O, L), w2 (O, C/g*kk), all
C-contiguous and of one float dtype; `cols` (1, C*kk, L) holds one image's columns (the
batch's are not kept for the weight gradient: redone in cache they cost less than
written out and read back). `mode`: DENSE runs conv_dense.py's im2col/col2im (no
padding, every window inside the input); PADDED runs them on a copy of the image in
`pad` (1, C, Dp, Hp, Wp; the caller zeroes its border), the input gradient summed there
and its interior copied out; POINTWISE reads x itself as the columns. Windows that may
leave the padded input stay on conv.py's batch path (conv_volume.py's general kernels
here made a cold forward+backward compile in 5.4 s; 3.7 s without them, 2.0 s for the
batch path alone).
Products are the per-image ones conv.py's `np.matmul` runs, so forward and input
gradient values are the same bits; the weight gradient accumulates the images' products
into one sum in the GEMM (beta = 1) instead of adding a chunk's products first, which
changes its last bits (float32 rounding).
Callers check the shapes and that every dimension of every product is at least 1.
"""
import numba

from . import conv_dense
from .cblas import NO_TRANS, TRANS, gemm

__all__ = ["forward", "grad_input", "grad_weight", "DENSE", "POINTWISE", "PADDED"]

DENSE, POINTWISE, PADDED = 1, 2, 3


@numba.njit(cache=True, nogil=True)
def _columns(x, n, cols, geom, mode, pad):
    """cols[0] = im2col(x[n]) (mode DENSE, or PADDED: pad's border is zero)."""
    if mode == DENSE:
        conv_dense._im2col_dense(x[n:n + 1], cols, geom)
        return
    pd, ph, pw = geom[6], geom[7], geom[8]
    d, h, w = x.shape[2], x.shape[3], x.shape[4]
    for c in range(x.shape[1]):
        for z in range(d):
            for i in range(h):
                src, dst = x[n, c, z, i], pad[0, c, pd + z, ph + i, pw:pw + w]
                for j in range(w):
                    dst[j] = src[j]
    conv_dense._im2col_dense(pad, cols, geom)


@numba.njit(cache=True, nogil=True)
def forward(address, x, w2, bias, has_bias, out, cols, pad, n0, n1, geom, groups, mode):
    """out[n] = W2 @ im2col(x[n]) (+ bias) per group, for n in [n0, n1).

    for n: col = im2col(x[n]) (x[n] itself when pointwise)
        for g: out[n, g*og:(g+1)*og] = w2[g*og:(g+1)*og] @ col[g*rows:(g+1)*rows]
        out[n, o, :] += bias[o]
    """
    n_o, rows = w2.shape
    length = out.shape[2]
    og, n_c = n_o // groups, x.shape[1]
    xf, wf, of, cf = x.ravel(), w2.ravel(), out.ravel(), cols.ravel()
    for n in range(n0, n1):
        if mode != POINTWISE:
            _columns(x, n, cols, geom, mode, pad)
        for g in range(groups):
            c_off = (n * n_o + g * og) * length
            if mode == POINTWISE:
                gemm(address, NO_TRANS, NO_TRANS, og, length, rows, 1.0, wf, g * og * rows,
                     rows, xf, (n * n_c + g * rows) * length, length, 0.0, of, c_off, length)
            else:
                gemm(address, NO_TRANS, NO_TRANS, og, length, rows, 1.0, wf, g * og * rows,
                     rows, cf, g * rows * length, length, 0.0, of, c_off, length)
        if has_bias:
            for o in range(n_o):
                row, b = out[n, o], bias[o]
                for i in range(length):
                    row[i] += b


@numba.njit(cache=True, nogil=True)
def grad_input(address, g3, w2, gx, cols, pad, n0, n1, geom, groups, mode):
    """gx[n] = col2im(W2^T @ g3[n]) per group, for n in [n0, n1) (gx (N, C, D, H, W) is
    overwritten; pointwise: the product is gx[n] itself; PADDED: summed in `pad`)."""
    n_o, rows = w2.shape
    length = g3.shape[2]
    og, n_c = n_o // groups, gx.shape[1]
    gf, wf, xf, cf = g3.ravel(), w2.ravel(), gx.ravel(), cols.ravel()
    for n in range(n0, n1):
        for g in range(groups):
            b_off = (n * n_o + g * og) * length
            if mode == POINTWISE:
                gemm(address, TRANS, NO_TRANS, rows, length, og, 1.0, wf, g * og * rows, rows,
                     gf, b_off, length, 0.0, xf, (n * n_c + g * rows) * length, length)
            else:
                gemm(address, TRANS, NO_TRANS, rows, length, og, 1.0, wf, g * og * rows, rows,
                     gf, b_off, length, 0.0, cf, g * rows * length, length)
        if mode == DENSE:
            conv_dense._col2im_dense(cols, gx[n:n + 1], geom)
        elif mode == PADDED:                        # summed in pad, its interior copied
            conv_dense._col2im_dense(cols, pad, geom)
            pd, ph, pw = geom[6], geom[7], geom[8]
            d, h, w = gx.shape[2], gx.shape[3], gx.shape[4]
            for c in range(n_c):
                for z in range(d):
                    for i in range(h):
                        src, dst = pad[0, c, pd + z, ph + i, pw:pw + w], gx[n, c, z, i]
                        for j in range(w):
                            dst[j] = src[j]


@numba.njit(cache=True, nogil=True)
def grad_weight(address, x, g3, acc, cols, pad, n0, n1, geom, groups, mode):
    """acc[g] (rows, og) += sum over n in [n0, n1) of im2col(x[n])[g] @ g3[n, g]^T, the
    images added one by one into the sum (acc is not cleared here)."""
    n_o, length = g3.shape[1], g3.shape[2]
    rows, og = acc.shape[1], acc.shape[2]
    n_c = x.shape[1]
    xf, gf, af, cf = x.ravel(), g3.ravel(), acc.ravel(), cols.ravel()
    for n in range(n0, n1):
        if mode != POINTWISE:
            _columns(x, n, cols, geom, mode, pad)
        for g in range(groups):
            b_off = (n * n_o + g * og) * length
            if mode == POINTWISE:
                gemm(address, NO_TRANS, TRANS, rows, og, length, 1.0, xf,
                     (n * n_c + g * rows) * length, length, gf, b_off, length,
                     1.0, af, g * rows * og, og)
            else:
                gemm(address, NO_TRANS, TRANS, rows, og, length, 1.0, cf, g * rows * length,
                     length, gf, b_off, length, 1.0, af, g * rows * og, og)
