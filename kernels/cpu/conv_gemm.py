"""Convolution one image at a time in one kernel: im2col of the image into a small
buffer, then its GEMM (OpenBLAS called by address: cblas.py) while the columns are
still in cache, for every image of a batch range.

conv.py's batch path writes a chunk's columns (up to 1 MiB) and runs a batched
`np.matmul` over them from Python: on LeNet's small planes the columns leave L1 before
the product reads them, and each chunk pays a few Python calls. One thread, float32:
LeNet c2 (64x6x12x12, 5x5) forward 218 -> 147 us, c1 (64x1x28x28) 323 -> 164 us.

Each image's output positions go in blocks of whole output rows (`block` rows, chosen
by conv.py's _block_rows): a block's columns stay in L2 between im2col and the GEMM,
and pointwise products stay within OpenBLAS's small-matrix kernels (one thread, kernels
alone: 16x32x32x32 3x3 forward + both gradients 15.2 -> 12.6 ms; 1x1 32->64 3.9 -> 3.5).

Layouts as conv.py's: x (N, C, D, H, W), out / grad_out (N, O, L), w2 (O, C/g*kk), all
C-contiguous and of one float dtype; `cols` (1, C*kk, block*OW) holds one block's
columns (the batch's are not kept for the weight gradient: redone in cache they cost
less than written out and read back). `mode`: DENSE runs conv_dense.py's
im2col_block/col2im_block_add (no padding, every window inside the input); PADDED runs
them on a copy of the image in `pad` (1, C, Dp, Hp, Wp; the caller zeroes its border),
the input gradient summed there and its interior copied out; POINTWISE reads x itself
as the columns. Windows that may leave the padded input stay on conv.py's batch path
(conv_volume.py's general kernels here made a cold forward+backward compile in 5.4 s;
3.7 s without them, 2.0 s for the batch path alone).
Values: the forward's are the per-image products conv.py's `np.matmul` runs, over fewer
columns (float32: the same bits in every case tested; float64 differed in the last bit
for some shapes, OpenBLAS's kernel for the remaining columns summing in another order;
products above `cblas.PRIVATE_MIN_WORK`, here a block's and in the batch path, run on
nbtorch's own OpenBLAS copy, blas_private.py, and the two paths may then differ in the
last bits);
the input gradient adds an element's contributions block by block (its rounding can
change where a window spans two blocks); the weight gradient accumulates the images'
and blocks' products into one sum in the GEMM (beta = 1) instead of adding a chunk's
products first. All within float rounding of the batch path.
Callers check the shapes and that every dimension of every product is at least 1.
"""
import numba

from . import conv_dense
from .cblas import NO_TRANS, TRANS, gemm

__all__ = ["forward", "grad_input", "grad_weight", "grad_both", "DENSE", "POINTWISE",
           "PADDED"]

DENSE, POINTWISE, PADDED = 1, 2, 3


@numba.njit(cache=True, nogil=True)
def _to_pad(x, n, pad, geom):
    """pad[0]'s interior = x[n] (its border stays as the caller left it: zero)."""
    pd, ph, pw = geom[6], geom[7], geom[8]
    d, h, w = x.shape[2], x.shape[3], x.shape[4]
    for c in range(x.shape[1]):
        for z in range(d):
            for i in range(h):
                src, dst = x[n, c, z, i], pad[0, c, pd + z, ph + i, pw:pw + w]
                for j in range(w):
                    dst[j] = src[j]


@numba.njit(cache=True, nogil=True)
def forward(address, x, w2, bias, has_bias, out, cols, pad, n0, n1, geom, groups, mode,
            block):
    """out[n] = W2 @ im2col(x[n]) (+ bias) per group, for n in [n0, n1), the output in
    blocks of `block` rows (of OW positions; positions [p0, p1) below).

    for n: (PADDED: pad = x[n] with a zero border)
        for each block [p0, p1): col = im2col(x[n])[:, p0:p1] (x[n][:, p0:p1] if pointwise)
            for g: out[n, g*og:(g+1)*og, p0:p1] = w2[g*og:(g+1)*og] @ col[g*rows:(g+1)*rows]
            out[n, o, p0:p1] += bias[o]
    """
    n_o, rows = w2.shape
    length, ow_n = out.shape[2], geom[14]
    n_rows = length // ow_n
    og, n_c = n_o // groups, x.shape[1]
    xf, wf, of, cf = x.ravel(), w2.ravel(), out.ravel(), cols.ravel()
    for n in range(n0, n1):
        if mode == PADDED:
            _to_pad(x, n, pad, geom)
        for r0 in range(0, n_rows, block):
            r1 = min(n_rows, r0 + block)
            p0, m = r0 * ow_n, (r1 - r0) * ow_n
            if mode != POINTWISE:               # one call site: x[n], or its padded copy
                conv_dense.im2col_block(pad if mode == PADDED else x,
                                        0 if mode == PADDED else n, cols, geom, r0, r1)
            for g in range(groups):
                c_off = (n * n_o + g * og) * length + p0
                if mode == POINTWISE:
                    gemm(address, NO_TRANS, NO_TRANS, og, m, rows, 1.0, wf, g * og * rows,
                         rows, xf, (n * n_c + g * rows) * length + p0, length, 0.0, of, c_off,
                         length)
                else:
                    gemm(address, NO_TRANS, NO_TRANS, og, m, rows, 1.0, wf, g * og * rows,
                         rows, cf, g * rows * m, m, 0.0, of, c_off, length)
            if has_bias:
                for o in range(n_o):
                    row, b = out[n, o, p0:p0 + m], bias[o]
                    for i in range(m):
                        row[i] += b


@numba.njit(cache=True, nogil=True)
def _input_image(address, g3, w2, gx, cols, pad, n, geom, groups, mode, block):
    """gx[n] = col2im(W2^T @ g3[n]) per group, `grad_input`'s work for image n."""
    n_o, rows = w2.shape
    length, ow_n = g3.shape[2], geom[14]
    n_rows = length // ow_n
    og, n_c = n_o // groups, gx.shape[1]
    gf, wf, xf, cf, pf = g3.ravel(), w2.ravel(), gx.ravel(), cols.ravel(), pad.ravel()
    image = gx[0].size
    if mode == DENSE:
        for t in range(n * image, (n + 1) * image):
            xf[t] = 0
    elif mode == PADDED:
        for t in range(pf.size):
            pf[t] = 0
    for r0 in range(0, n_rows, block):
        r1 = min(n_rows, r0 + block)
        p0, m = r0 * ow_n, (r1 - r0) * ow_n
        for g in range(groups):
            b_off = (n * n_o + g * og) * length + p0
            if mode == POINTWISE:
                gemm(address, TRANS, NO_TRANS, rows, m, og, 1.0, wf, g * og * rows, rows,
                     gf, b_off, length, 0.0, xf, (n * n_c + g * rows) * length + p0,
                     length)
            else:
                gemm(address, TRANS, NO_TRANS, rows, m, og, 1.0, wf, g * og * rows, rows,
                     gf, b_off, length, 0.0, cf, g * rows * m, m)
        if mode != POINTWISE:
            conv_dense.col2im_block_add(cols, pad if mode == PADDED else gx,
                                        0 if mode == PADDED else n, geom, r0, r1)
    if mode == PADDED:                          # the interior of pad is gx[n]
        pd, ph, pw = geom[6], geom[7], geom[8]
        d, h, w = gx.shape[2], gx.shape[3], gx.shape[4]
        for c in range(n_c):
            for z in range(d):
                for i in range(h):
                    src, dst = pad[0, c, pd + z, ph + i, pw:pw + w], gx[n, c, z, i]
                    for j in range(w):
                        dst[j] = src[j]


@numba.njit(cache=True, nogil=True)
def grad_input(address, g3, w2, gx, cols, pad, n0, n1, geom, groups, mode, block):
    """gx[n] = col2im(W2^T @ g3[n]) per group, for n in [n0, n1), the output positions in
    blocks of `block` rows (gx (N, C, D, H, W) is overwritten; pointwise: the product is gx[n]
    itself; PADDED: summed in `pad`, its interior copied out).

    for n: gx[n] = 0; for each block [p0, p1):
        for g: gcol[g*rows:(g+1)*rows] = w2[g*og:(g+1)*og]^T @ g3[n, g*og:(g+1)*og, p0:p1]
        gx[n] += col2im(gcol)      (each element's contributions in block, then tap order)
    """
    for n in range(n0, n1):
        _input_image(address, g3, w2, gx, cols, pad, n, geom, groups, mode, block)


@numba.njit(cache=True, nogil=True)
def _weight_image(address, x, g3, acc, cols, pad, n, geom, groups, mode, block, by_output):
    """acc += image n's share of the weight gradient, `grad_weight`'s work for image n."""
    n_o, length, ow_n = g3.shape[1], g3.shape[2], geom[14]
    n_rows = length // ow_n
    og = n_o // groups
    rows = acc.shape[2] if by_output else acc.shape[1]
    n_c = x.shape[1]
    xf, gf, af, cf = x.ravel(), g3.ravel(), acc.ravel(), cols.ravel()
    if mode == PADDED:
        _to_pad(x, n, pad, geom)
    for r0 in range(0, n_rows, block):
        r1 = min(n_rows, r0 + block)
        p0, m = r0 * ow_n, (r1 - r0) * ow_n
        if mode != POINTWISE:                   # one call site: x[n], or its padded copy
            conv_dense.im2col_block(pad if mode == PADDED else x,
                                    0 if mode == PADDED else n, cols, geom, r0, r1)
        for g in range(groups):
            b_off = (n * n_o + g * og) * length + p0
            if mode == POINTWISE:               # the columns: x[n] itself
                src, s_off, ld = xf, (n * n_c + g * rows) * length + p0, length
            else:
                src, s_off, ld = cf, g * rows * m, m
            if by_output:
                gemm(address, NO_TRANS, TRANS, og, rows, m, 1.0, gf, b_off, length,
                     src, s_off, ld, 1.0, af, g * rows * og, rows)
            else:
                gemm(address, NO_TRANS, TRANS, rows, og, m, 1.0, src, s_off, ld,
                     gf, b_off, length, 1.0, af, g * rows * og, og)


@numba.njit(cache=True, nogil=True)
def grad_weight(address, x, g3, acc, cols, pad, n0, n1, geom, groups, mode, block,
                by_output):
    """acc[g] (rows, og) += sum over n in [n0, n1) and blocks [p0, p1) of `block` output
    rows of im2col(x[n])[g][:, p0:p1] @ g3[n, g][:, p0:p1]^T, each block's product added
    into the sum by the GEMM (beta = 1; acc is not cleared here). by_output (1 or 0):
    acc[g] is (og, rows) instead, summing g3[n, g][:, p0:p1] @ im2col(x[n])[g][:, p0:p1]^T
    (OpenBLAS runs these products faster with the larger of og and rows first: 1x1
    32 -> 64 over 16x32x32, 48 -> 59 GF/s; 256 -> 64 over 8x56x56, 70 -> 79 the other way)."""
    for n in range(n0, n1):
        _weight_image(address, x, g3, acc, cols, pad, n, geom, groups, mode, block, by_output)


@numba.njit(cache=True, nogil=True)
def grad_both(address, x, g3, w2, gx, acc, cols, pad, gpad, n0, n1, geom, groups, mode,
              block, by_output):
    """`grad_weight` and `grad_input` image after image, for n in [n0, n1): each image's
    output gradient g3[n] is read by the second while the first left it in cache, and a
    split batch is dispatched once (32x16x28x28 3x3 fwd+bwd: see conv.py). `pad` holds x[n]
    padded (its border zero), `gpad` the input gradient's padded sum; `cols` serves both
    in turn. The same per-image work, so the same bits as the two calls."""
    for n in range(n0, n1):
        _weight_image(address, x, g3, acc, cols, pad, n, geom, groups, mode, block, by_output)
        _input_image(address, g3, w2, gx, cols, gpad, n, geom, groups, mode, block)
