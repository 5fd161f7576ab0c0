"""CPU convolution kernels: im2col/col2im in Numba, the GEMM through NumPy's BLAS.

Layouts: inputs NCDHW C-contiguous float32/float64; weights (O, C/groups, kd, kh, kw);
columns (N, C*kd*kh*kw, OD*OH*OW), row ``((c*kd + kz)*kh + ki)*kw + kj`` -- for
2-D inputs PyTorch's ``F.unfold`` layout, so ``unfold``/``fold`` are im2col/col2im
themselves. The launchers take 1, 2 or 3 spatial dims and run the one volume
kernel (one signature per dtype) with the missing leading dims of size 1.

Three primitives cover convolution and every derivative of it:

* ``conv2d_forward``      out[n] = W @ im2col(x)[n] (+ bias)
* ``conv2d_grad_input``   gx[n]  = col2im(W^T @ gout[n])     (= conv_transpose2d)
* ``conv2d_grad_weight``  gw     = sum_n gout[n] @ im2col(x)[n]^T

The batch is processed in chunks of about ``CHUNK_ELEMENTS`` column elements
(1 MiB of float32), so each chunk's columns are written and read back by the
GEMM while still in cache; the GEMM is one batched ``cblas.matmul`` (np.matmul's)
per chunk and group, writing straight into NCHW (no transposes): chunks that
stay in cache beat whole-batch columns with one big GEMM (benchmarks/bench_conv.py).
DESIGN.md measured BLAS at about 3x the best hand-tiled Numba GEMM, hence BLAS. (One
GEMM over a whole chunk, (O, rows) @ (rows, chunk*L) or the im2row orientation, ran
the forward and input-gradient products 1.5-3x slower than the batched per-image ones
on LeNet's planes, the weight gradient's about as fast: OpenBLAS's small products run
near its peak, so the GEMMs stay per image.) Serial im2col, and unpadded col2im, whose
windows stay inside the padded input run conv_dense.py's leaner kernels (same values).
Large enough batches are split into ranges run on several threads, OpenBLAS on one
thread each (batch_threads.py). The forward can keep the whole batch's columns for
the weight gradient (``conv2d_forward.columns_shape``, the ``columns=`` arguments).
Where NumPy's OpenBLAS GEMM can be called by address (cblas.py; float32/float64), the
three primitives go one image at a time instead (conv_gemm.py: the image's columns are
written and multiplied while in L1/L2, with no Python per chunk): one thread, LeNet c1
forward 323 -> 164 us, c2 218 -> 147; the batch path stays for other dtypes and BLASes.
The general im2col/col2im of one volume live in conv_volume.py.
Callers validate shapes; the kernels do no bounds checks.
"""
import math
import threading

import numba
import numpy as np

from . import batch_threads, blas, cblas, conv_dense, conv_gemm, openmp
from .conv_volume import col2im_volume, im2col_volume

__all__ = [
    "im2col", "col2im", "unfold", "fold", "channel_sum",
    "add_channel_bias", "conv2d_forward", "conv2d_grad_input", "conv2d_grad_weight",
    "conv2d_grad_both", "release_workspace",
]

# Column elements per batch chunk (cache-sized: written by im2col, read by the GEMM).
CHUNK_ELEMENTS = 1 << 18
# The forward keeps whole-batch columns of at most this many bytes for the weight gradient
# (conv2d_forward.columns_shape). One thread, fwd+bwd: LeNet c2 (2.4 MB of columns) 1.49
# -> 1.38 ms kept; LeNet c1 (3.7 MB) the same either way; 32x16x28x28 3x3 (14.4 MB) 10.9
# -> 11.3 ms kept: columns read back from memory cost more than redoing them from the
# 9x smaller input, once they outgrow the caches.
KEEP_COLUMNS_BYTES = 4 << 20
# Convolutions of at least this many multiply-adds per product split the batch into
# ranges run on several threads (batch_threads.py), each range's im2col and (one-thread)
# GEMMs: the per-image GEMMs are too small for OpenBLAS's own threads (2: no faster).
# LeNet's convolutions (5.5M and 9.8M) stay serial: split, its step ran slower (3.42-3.48
# vs 3.21-3.23 ms, two threads), its later ops reading what the other core wrote.
BATCH_SPLIT_MIN_MACS = 1 << 24
# im2col/col2im calls with at least this many column elements run the prange variant.
# Kept high: next to BLAS (whose idle threads spin after each GEMM) a parallel
# region on 2 cores measured up to 10x slower than the serial loop.
PARALLEL_MIN_ELEMENTS = 1 << 22
# conv_gemm.py's per-image products run over blocks of output rows (_block_rows): columns
# of at most COLUMN_BLOCK_BYTES a block (half of L2), pointwise products of at most
# SMALL_GEMM_MACS multiply-adds (OpenBLAS's small-matrix kernels take sgemm/dgemm up to
# 1e6) where that leaves MIN_POINTWISE_BLOCK positions a block.
COLUMN_BLOCK_BYTES = 1 << 19
SMALL_GEMM_MACS = 1000000
MIN_POINTWISE_BLOCK = 256


@numba.njit(cache=True, nogil=True)
def _im2col_serial(x, col, geom):
    """x (N, C, D, H, W) -> col (N, C*kd*kh*kw, OD*OH*OW), one (n, c) volume after another."""
    n_b, n_c = x.shape[0], x.shape[1]
    for p in range(n_b * n_c):
        n, c = p // n_c, p % n_c
        im2col_volume(x[n, c], col, c, n, geom)


@numba.njit(cache=True, parallel=True)
def _im2col_parallel(x, col, geom):
    """Same as _im2col_serial with the (n, c) volumes spread over threads."""
    n_b, n_c = x.shape[0], x.shape[1]
    for p in numba.prange(n_b * n_c):
        n, c = p // n_c, p % n_c
        im2col_volume(x[n, c], col, c, n, geom)


@numba.njit(cache=True, nogil=True)
def _col2im_serial(col, x, geom):
    """col (N, C*kd*kh*kw, OD*OH*OW) -> x (N, C, D, H, W) (overwritten), volume by volume."""
    n_b, n_c = x.shape[0], x.shape[1]
    for p in range(n_b * n_c):
        n, c = p // n_c, p % n_c
        col2im_volume(col, x[n, c], c, n, geom)


@numba.njit(cache=True, parallel=True)
def _col2im_parallel(col, x, geom):
    """Same as _col2im_serial; each thread owns whole volumes, so no races."""
    n_b, n_c = x.shape[0], x.shape[1]
    for p in numba.prange(n_b * n_c):
        n, c = p // n_c, p % n_c
        col2im_volume(col, x[n, c], c, n, geom)


def _as_3d(values, fill):
    """A 1-3 spatial-dim tuple as 3 ints, missing leading dims set to `fill`."""
    values = tuple(int(v) for v in values)
    return (fill,) * (3 - len(values)) + values


def _volumes(x):
    """An (N, C, *S) C-contiguous array with 1-3 spatial dims viewed as (N, C, D, H, W)."""
    return x.reshape(x.shape[:2] + (1,) * (5 - x.ndim) + x.shape[2:])


_GEOMETRIES = {}        # (kernel, stride, padding, dilation, out_size) -> _geometry's tuple


def _geometry(kernel, stride, padding, dilation, out_size):
    """The 15-int tuple the volume kernels unpack (one tuple type, one signature); cached
    per argument tuple (built afresh it cost ~5 us, and a step calls it per chunk)."""
    key = (kernel, stride, padding, dilation, out_size)
    try:
        return _GEOMETRIES[key]
    except (KeyError, TypeError):       # new, or unhashable (lists)
        pass
    geom = (_as_3d(kernel, 1) + _as_3d(stride, 1) + _as_3d(padding, 0) + _as_3d(dilation, 1)
            + _as_3d(out_size, 1))
    try:
        if len(_GEOMETRIES) >= 1024:
            _GEOMETRIES.clear()
        _GEOMETRIES[key] = geom
    except TypeError:
        pass
    return geom


def _dense(geom, xv, col):
    """Whether conv_dense's kernels take this call: every window inside the padded input,
    both arrays C-contiguous (they index them flat)."""
    return (xv.flags.c_contiguous and col.flags.c_contiguous
            and conv_dense.fits(geom, xv.shape[2:]))


def im2col(x, col, kernel, stride, padding, dilation, out_size, serial=False):
    """Fill col (N, C*prod(kernel), prod(out_size)) from x (N, C, *S), 1-3 spatial dims
    (serial: never the prange variant, for calls from several threads at once). Serial
    calls whose windows stay in the padded input take conv_dense.py's kernel (LeNet c2,
    16 images: 81 -> 20 us; 8x16x28x28 3x3 p1 358 -> 258 us; same values)."""
    geom = _geometry(kernel, stride, padding, dilation, out_size)
    xv = _volumes(x)
    if col.size >= PARALLEL_MIN_ELEMENTS and not serial and openmp.USABLE:
        _im2col_parallel(xv, col, geom)
    elif _dense(geom, xv, col):
        conv_dense.im2col_dense(xv, col, geom, lambda shape: _workspace("pad", shape, x.dtype))
    else:
        _im2col_serial(xv, col, geom)


def col2im(col, x, kernel, stride, padding, dilation, out_size, serial=False):
    """Overwrite x (N, C, *S) with the sum of the windows in col (N, C*prod(kernel), L).
    Unpadded serial calls take conv_dense.py's kernel (LeNet c2, 16 images: 61 -> 40 us,
    same values); padded ones stay here (the copy out of conv_dense's padded buffer made
    8x16x28x28 3x3 p1 220 -> 236 us)."""
    geom = _geometry(kernel, stride, padding, dilation, out_size)
    xv = _volumes(x)
    if col.size >= PARALLEL_MIN_ELEMENTS and not serial and openmp.USABLE:
        _col2im_parallel(col, xv, geom)
    elif geom[6:9] == (0, 0, 0) and _dense(geom, xv, col):
        conv_dense.col2im_dense(col, xv, geom, None)
    else:
        _col2im_serial(col, xv, geom)


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


@numba.njit(cache=True, nogil=True)
def add_channel_bias(out, bias):
    """out (N, C, L) += bias[c], in place.

    for n, c: out[n, c, :] += bias[c]
    """
    n_b, n_c, n_l = out.shape
    for n in range(n_b):
        for c in range(n_c):
            row, b = out[n, c], bias[c]
            for i in range(n_l):
                row[i] += b


_local = threading.local()


def _workspace(slot, shape, dtype):
    """A reusable per-thread scratch array (fresh np.empty page-faults ~80 ms/GB)."""
    bufs = getattr(_local, "bufs", None)
    if bufs is None:
        bufs = _local.bufs = {}
    n = 1
    for s in shape:
        n *= s
    key = (slot, np.dtype(dtype).char)
    buf = bufs.get(key)
    if buf is None or buf.size < n:
        buf = bufs[key] = np.empty(n, dtype=dtype)
    return buf[:n].reshape(shape)


def release_workspace():
    """Free the scratch buffers held by this thread."""
    _local.bufs = {}


def _chunks(b0, b1, per_image):
    """Batch ranges [n0, n1) covering [b0, b1), of about CHUNK_ELEMENTS column elements each."""
    step = max(1, min(b1 - b0, CHUNK_ELEMENTS // max(1, per_image)))
    return step, [(n0, min(b1, n0 + step)) for n0 in range(b0, b1, step)]


def _over_batch(fn, n_b, macs):
    """fn(b0, b1, split) over the whole batch: once (split False), or per batch range on
    several threads (split True: batch_threads.py). Returns the list of results.

    Run once, a batch of several images keeps OpenBLAS on one thread too: its per-image
    GEMMs are small or the helper threads were starved (OpenBLAS's threads then ran
    32x16x28x28 3x3 at 43-65 ms instead of ~10 at load 6); a single image's one big
    GEMM may use them."""
    parts = batch_threads.ranges(n_b, macs, BATCH_SPLIT_MIN_MACS)
    if parts is not None:
        return batch_threads.run(lambda b0, b1: fn(b0, b1, True), parts,
                                 (fn.__code__, n_b, macs.bit_length()))
    if n_b > 1:
        return [blas.one_thread(fn, 0, n_b, False)]
    return [fn(0, n_b, False)]


def _is_pointwise(kernel, stride, padding, in_size, out_size):
    """A 1x1(x1), stride-1, unpadded kernel over equal sizes: the columns are the input."""
    return (all(k == 1 for k in kernel) and all(s == 1 for s in stride)
            and all(p == 0 for p in padding) and tuple(in_size) == tuple(out_size))


def _chunk_columns(x, n0, n1, col_buf, kernel, stride, padding, dilation, out_size,
                   kept=None, fill=True, serial=False):
    """Columns (n1-n0, C*kk, L) of x[n0:n1]: a view of x for 1x1 kernels, else im2col into
    the chunk buffer, or into (fill=True) / straight from (fill=False) the kept whole-batch
    columns."""
    if kept is not None:
        col = kept[n0:n1]
        if fill:
            im2col(x[n0:n1], col, kernel, stride, padding, dilation, out_size, serial)
        return col
    if col_buf is None:
        return x[n0:n1].reshape(n1 - n0, x.shape[1], -1)
    col = col_buf[:n1 - n0]
    im2col(x[n0:n1], col, kernel, stride, padding, dilation, out_size, serial)
    return col


def columns_shape(x_shape, w_shape, stride, padding, out_size, itemsize):
    """Shape (N, C*prod(k), prod(OS)) of the columns conv2d_forward can keep for
    conv2d_grad_weight (its `columns=` argument), or None: 1x1 kernels read the input
    itself, columns over KEEP_COLUMNS_BYTES are recomputed instead, and so are those of
    float32/float64 calls that conv_gemm.py's kernels run (an image's columns redone in
    cache beat the batch's written out and read back: forward + weight gradient, one
    thread, LeNet c1 559 -> 434 us, c2 495 -> 471)."""
    if _is_pointwise(w_shape[2:], stride, padding, x_shape[2:], out_size):
        return None
    if itemsize in (4, 8) and cblas.gemm_address(np.float32 if itemsize == 4 else np.float64):
        return None
    shape = (x_shape[0], x_shape[1] * math.prod(w_shape[2:]), math.prod(out_size))
    return shape if shape[0] * shape[1] * shape[2] * itemsize <= KEEP_COLUMNS_BYTES else None


def _gemm_plan(x, w, y, groups, kernel, stride, padding, dilation, out_size):
    """(address, mode, geom, block) when conv_gemm.py's per-image kernels take this call,
    else None:
    x (N, C, *S), w (O, C/g, *k) and y (N, O, *OS) C-contiguous arrays of one float dtype
    whose BLAS GEMM is reachable by address, every product dimension at least 1, an
    image's columns too few for the prange im2col/col2im (one big image keeps them)."""
    dtype = x.dtype
    if not (w.dtype == dtype and y.dtype == dtype and x.flags.c_contiguous
            and w.flags.c_contiguous and y.flags.c_contiguous):
        return None
    if not cblas.gemm_address(dtype) or 0 in w.shape or 0 in y.shape[1:] or w.shape[0] % groups:
        return None
    if y.shape[0] and w[0].size * groups * y[0, 0].size >= PARALLEL_MIN_ELEMENTS:
        return None
    geom = _geometry(kernel, stride, padding, dilation, out_size)
    pointwise = _is_pointwise(kernel, stride, padding, x.shape[2:], out_size)
    block = _block_rows(pointwise, w[0].size, groups, w.shape[0] // groups,
                        math.prod(out_size), geom[14], dtype.itemsize)
    # a block's products by size: large float32 ones on nbtorch's OpenBLAS copy (cblas.py)
    work = (w.shape[0] // groups) * w[0].size * min(block * geom[14], math.prod(out_size))
    address = cblas.gemm_address(dtype, work)
    if pointwise:
        return address, conv_gemm.POINTWISE, geom, block
    if not conv_dense.fits(geom, _volumes(x).shape[2:]):
        return None                     # a window may leave the input: the batch path
    mode = conv_gemm.DENSE if geom[6:9] == (0, 0, 0) else conv_gemm.PADDED
    return address, mode, geom, block


def _block_rows(pointwise, rows, groups, og, length, out_w, itemsize):
    """Output rows (of `out_w` positions; `length` positions in all) per block of
    conv_gemm.py's per-image products: `rows` column rows and `og` outputs per group.
    Measured on one thread, the GEMMs alone, GF/s (forward / input gradient):

    * im2col'd columns over COLUMN_BLOCK_BYTES (half of L2) are written and multiplied
      in blocks within it: 16x32x32x32 3x3, 1.15 MB an image: 63/63 -> 80/88 in 352-
      position blocks (the whole kernels, forward + both gradients: 15.2 -> 12.6 ms);
      8x64x56x56 3x3, 7 MB: 85/96 -> 92/94 (the whole image's columns were then
      measured in cache; im2col'd they come from L3). 32x16x28x28 3x3 (0.44 MB) stays
      whole: in 280-position blocks it ran 89/89 -> 77/80.
    * pointwise products of more than SMALL_GEMM_MACS multiply-adds per group are split
      into blocks within it, OpenBLAS's small-matrix kernels (no packing), where blocks
      of at least MIN_POINTWISE_BLOCK positions do: 1x1 64x32 @ 32x1024 -> 352-position
      blocks 56/64 -> 71/95; 32x16x28x28 3x3's 280-position blocks (1.3e6) did not gain.

    Blocks have near-equal sizes and at least one row."""
    n_rows = length // out_w
    if pointwise:
        limit = SMALL_GEMM_MACS // max(1, og * rows)
        if limit < MIN_POINTWISE_BLOCK:
            return n_rows
    else:
        limit = COLUMN_BLOCK_BYTES // max(1, rows * groups * itemsize)
    if length <= limit:
        return n_rows
    per_block = max(1, limit // out_w)
    parts = -(-n_rows // per_block)             # ceil divisions
    return -(-n_rows // parts)


def _gemm_buffers(x, mode, geom, rows, length):
    """(cols, pad) for conv_gemm's kernels: this thread's column buffer (rows x `length`
    output positions: one block of output rows) and zeroed padded-image buffer
    (1-element stand-ins where a mode reads neither)."""
    shape = (1, 1, 1) if mode == conv_gemm.POINTWISE else (1, rows, length)
    cols = _workspace("col1", shape, x.dtype)
    if mode != conv_gemm.PADDED:
        return cols, _workspace("pad1", (1, 1, 1, 1, 1), x.dtype)
    pad = _workspace("pad1", conv_dense._padded_shape(_volumes(x)[:1], geom), x.dtype)
    pad[...] = 0                # the border; the kernels write the interior per image
    return cols, pad


def conv2d_forward(x, weight, bias, out, stride, padding, dilation, groups, columns=None):
    """out (N, O, *OS) = conv(x (N, C, *S), weight) + bias, 1-3 spatial dims (conv1d/2d/3d);
    arrays C-contiguous, bias may be None. `columns` (shape from `columns_shape`), when
    given, receives the whole batch's im2col columns for conv2d_grad_weight to reuse.

    for each batch chunk (the batch split over the threads): col = im2col(x[chunk]);
        for g: out[chunk, g] = W[g].reshape(O/g, -1) @ col[:, g]   (batched BLAS)
        out[chunk] += bias
    """
    n_b, n_o = out.shape[:2]
    kernel, out_size = weight.shape[2:], out.shape[2:]
    w2 = weight.reshape(n_o, -1)
    rows, og, length = w2.shape[1], n_o // groups, math.prod(out_size)
    out3 = out.reshape(n_b, n_o, length)
    plan = _gemm_plan(x, weight, out, groups, kernel, stride, padding, dilation, out_size)
    if plan is not None and columns is None and (bias is None or bias.dtype == x.dtype):
        address, mode, geom, block = plan
        xv, b = _volumes(x), (bias if bias is not None else w2.reshape(-1)[:0])

        def one_image_at_a_time(b0, b1, split):
            cols, pad = _gemm_buffers(x, mode, geom, rows * groups, block * geom[14])
            conv_gemm.forward(address, xv, w2, b, bias is not None, out3, cols, pad, b0, b1,
                              geom, groups, mode, block)
        _over_batch(one_image_at_a_time, n_b, n_o * rows * length * n_b)
        return
    pointwise = _is_pointwise(kernel, stride, padding, x.shape[2:], out_size)

    def run(b0, b1, split):
        step, chunks = _chunks(b0, b1, rows * groups * length)
        col_buf = None if pointwise or columns is not None else \
            _workspace("col", (step, rows * groups, length), x.dtype)
        for n0, n1 in chunks:
            col = _chunk_columns(x, n0, n1, col_buf, kernel, stride, padding, dilation,
                                 out_size, columns, serial=split)
            for g in range(groups):
                cblas.matmul(w2[g * og:(g + 1) * og], col[:, g * rows:(g + 1) * rows],
                             out3[n0:n1, g * og:(g + 1) * og])
            if bias is not None:
                add_channel_bias(out3[n0:n1], bias)
    _over_batch(run, n_b, n_o * rows * length * n_b)


def conv2d_grad_input(grad_out, weight, grad_in, stride, padding, dilation, groups):
    """grad_in (N, C, *S) = col2im(W^T @ grad_out); this is also conv_transpose1d/2d/3d.

    for each batch chunk (the batch split over the threads):
        for g: gcol[:, g] = W[g].reshape(O/g, -1)^T @ grad_out[chunk, g];
        grad_in[chunk] = col2im(gcol).  grad_in's sizes fix the geometry (output_padding).
    """
    n_b, n_o = grad_out.shape[:2]
    kernel, out_size = weight.shape[2:], grad_out.shape[2:]
    w2 = weight.reshape(n_o, -1)
    rows, og, length = w2.shape[1], n_o // groups, math.prod(out_size)
    g3 = grad_out.reshape(n_b, n_o, length)
    plan = _gemm_plan(grad_in, weight, grad_out, groups, kernel, stride, padding, dilation,
                      out_size)
    if plan is not None:
        address, mode, geom, block = plan
        gv = _volumes(grad_in)

        def one_image_at_a_time(b0, b1, split):
            cols, pad = _gemm_buffers(grad_in, mode, geom, rows * groups, block * geom[14])
            conv_gemm.grad_input(address, g3, w2, gv, cols, pad, b0, b1, geom, groups, mode,
                                 block)
        _over_batch(one_image_at_a_time, n_b, n_o * rows * length * n_b)
        return
    direct = _is_pointwise(kernel, stride, padding, grad_in.shape[2:], out_size)

    def run(b0, b1, split):
        step, chunks = _chunks(b0, b1, rows * groups * length)
        col_buf = None if direct else \
            _workspace("col", (step, rows * groups, length), grad_out.dtype)
        for n0, n1 in chunks:
            if direct:
                gcol = grad_in[n0:n1].reshape(n1 - n0, -1, length)
            else:
                gcol = col_buf[:n1 - n0]
            for g in range(groups):
                cblas.matmul(w2[g * og:(g + 1) * og].T, g3[n0:n1, g * og:(g + 1) * og],
                             gcol[:, g * rows:(g + 1) * rows])
            if not direct:
                col2im(gcol, grad_in[n0:n1], kernel, stride, padding, dilation, out_size,
                       split)
    _over_batch(run, n_b, n_o * rows * length * n_b)


def conv2d_grad_weight(x, grad_out, grad_w, stride, padding, dilation, groups, columns=None):
    """grad_w (O, C/g, *k) = sum_n grad_out[n] @ im2col(x)[n]^T, per group (1-3 spatial dims);
    `columns`: the forward's kept im2col(x), used instead of recomputing it.

    for each batch chunk: col = im2col(x[chunk]);
        for g: grad_w[g] += sum_over_chunk(col[:, g] @ grad_out[chunk, g]^T)^T   (batched BLAS)
    With the batch split over threads each sums its own range; the sums are added at the end.
    """
    n_b, n_o = grad_out.shape[:2]
    kernel, out_size = grad_w.shape[2:], grad_out.shape[2:]
    gw2 = grad_w.reshape(n_o, -1)
    rows, og, length = gw2.shape[1], n_o // groups, math.prod(out_size)
    g3 = grad_out.reshape(n_b, n_o, length)
    plan = _gemm_plan(x, grad_w, grad_out, groups, kernel, stride, padding, dilation,
                      out_size)
    if plan is not None and columns is None:
        address, mode, geom, block = plan
        xv = _volumes(x)
        if mode == conv_gemm.POINTWISE:     # whole images: blocks split the products' long
            block = length // geom[14]      # K, no faster (52 GF/s either way), other bits

        by_output = og > rows               # the larger dim first (conv_gemm.grad_weight)

        def one_image_at_a_time(b0, b1, split):
            cols, pad = _gemm_buffers(x, mode, geom, rows * groups, block * geom[14])
            acc = _weight_sum(groups, og, rows, by_output, grad_w.dtype)
            conv_gemm.grad_weight(address, xv, g3, acc, cols, pad, b0, b1, geom, groups, mode,
                                  block, int(by_output))
            return acc
        _store_weight_sums(_over_batch(one_image_at_a_time, n_b, n_o * rows * length * n_b),
                           gw2, groups, og, rows, by_output)
        return
    pointwise = _is_pointwise(kernel, stride, padding, x.shape[2:], out_size)

    def run(b0, b1, split):
        # chunks bounded by the columns and by the per-image partial products (chunk, rows, O/g)
        step, chunks = _chunks(b0, b1, max(rows * groups * length, og * rows))
        col_buf = None if pointwise or columns is not None else \
            _workspace("col", (step, rows * groups, length), x.dtype)
        part = _workspace("part", (step, rows, og), grad_w.dtype)
        acc = gw2 if b0 == 0 else np.empty_like(gw2)    # a range's own sum (small)
        acc[:] = 0
        for n0, n1 in chunks:
            col = _chunk_columns(x, n0, n1, col_buf, kernel, stride, padding, dilation,
                                 out_size, columns, fill=False, serial=split)
            p = part[:n1 - n0]
            # (rows, L) @ (L, O/g) per image: OpenBLAS ran it 1.3-1.6x faster than the
            # transposed product (O/g, L) @ (L, rows) on LeNet c2 and 32x16x28x28 3x3
            for g in range(groups):
                cblas.matmul(col[:, g * rows:(g + 1) * rows],
                             g3[n0:n1, g * og:(g + 1) * og].transpose(0, 2, 1), p)
                acc[g * og:(g + 1) * og] += (p[0] if n1 - n0 == 1 else p.sum(axis=0)).T
        return acc
    for acc in _over_batch(run, n_b, n_o * rows * length * n_b)[1:]:
        gw2 += acc          # the other ranges' sums, in range order


def conv2d_grad_both(x, grad_out, weight, grad_in, grad_w, stride, padding, dilation,
                     groups):
    """`conv2d_grad_input` and `conv2d_grad_weight` in one pass over the batch, True; False
    (nothing done) where conv_gemm.py's per-image kernels do not take the call (then the
    two are called apart). Each image's output gradient is read by the input gradient's
    product while the weight gradient's left it in cache, and a split batch is dispatched
    once: the same per-image work, so the same bits as the two calls."""
    n_b, n_o = grad_out.shape[:2]
    kernel, out_size = weight.shape[2:], grad_out.shape[2:]
    w2 = weight.reshape(n_o, -1)
    rows, og, length = w2.shape[1], n_o // groups, math.prod(out_size)
    plan = _gemm_plan(x, weight, grad_out, groups, kernel, stride, padding, dilation,
                      out_size)
    if (plan is None or plan[1] == conv_gemm.POINTWISE or grad_in.dtype != x.dtype
            or grad_w.dtype != x.dtype or not grad_in.flags.c_contiguous
            or not grad_w.flags.c_contiguous):
        return False
    address, mode, geom, block = plan
    xv, gv, g3 = _volumes(x), _volumes(grad_in), grad_out.reshape(n_b, n_o, length)
    by_output = og > rows

    def one_image_at_a_time(b0, b1, split):
        cols, pad = _gemm_buffers(x, mode, geom, rows * groups, block * geom[14])
        gpad = pad if mode != conv_gemm.PADDED else _workspace("pad2", pad.shape, x.dtype)
        acc = _weight_sum(groups, og, rows, by_output, grad_w.dtype)
        conv_gemm.grad_both(address, xv, g3, w2, gv, acc, cols, pad, gpad, b0, b1, geom,
                            groups, mode, block, int(by_output))
        return acc
    _store_weight_sums(_over_batch(one_image_at_a_time, n_b, n_o * rows * length * n_b),
                       grad_w.reshape(n_o, -1), groups, og, rows, by_output)
    return True


def _weight_sum(groups, og, rows, by_output, dtype):
    """A batch range's zeroed weight-gradient sum for conv_gemm's kernels: (groups, og,
    rows) when `by_output`, else (groups, rows, og)."""
    return np.zeros((groups, og, rows) if by_output else (groups, rows, og), dtype)


def _store_weight_sums(sums, gw2, groups, og, rows, by_output):
    """gw2 (O, C/g*kk) = the ranges' `_weight_sum`s added in range order (so the values
    depend on the sizes only, not on which thread ran what)."""
    for acc in sums[1:]:
        sums[0] += acc
    gw2.reshape(groups, og, rows)[...] = sums[0] if by_output else sums[0].transpose(0, 2, 1)


conv2d_forward.columns_shape = columns_shape      # the capability the op layer looks for


def unfold(x, out, kernel, stride, padding, dilation, out_hw):
    """PyTorch's F.unfold: out (N, C*kh*kw, L) from x (N, C, H, W) (im2col itself)."""
    im2col(x, out, kernel, stride, padding, dilation, out_hw)


def fold(col, out, kernel, stride, padding, dilation, out_hw):
    """PyTorch's F.fold: out (N, C, H, W) = sum of the windows in col (N, C*kh*kw, L)."""
    col2im(col, out, kernel, stride, padding, dilation, out_hw)
