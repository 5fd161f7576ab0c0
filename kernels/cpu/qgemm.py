"""The uint8 x int8 GEMM behind quantized Linear and Conv2d, requantization fused.

A GEMM accumulates ``uint8 * int8`` products in int32 and corrects for the zero points
afterwards, while the int32 tile is still in cache (fbgemm's order of operations)::

    acc[m, n] = sum_k a[m, k] * b[n, k]                                     (int32)
    raw[m, n] = acc - za * bsum[n] - zb[n] * asum[m] + K * za * zb[n]
    static:  out[m, n] = clamp(rint((raw + bias[n] / (sa sb[n])) * sa sb[n] / so) + zo)
    dynamic: out[m, n] = raw * (sa * sb[n]) + bias[n]                       (float32)

Two engines compute ``acc``, chosen per call by whether the weight was packed for VNNI:

* VNNI (CPUs with AVX-512 VNNI): 4 rows x 64 columns per tile through ``vpdpbusd``
  (`kernels/cpu/vnni.py`), weights packed once in 16-column panels of 4-byte k-groups,
  K blocked so that a block of panels stays in L1 (without: 1024x1024 weights fell from
  600 to 270 GOP/s). One Zen 4 core: 680-740 GOP/s for the products alone (M 256-1024,
  K, N 512-1024), 430-550 with the requantizing epilogue; NumPy's float32 BLAS peaks
  near 190 GFLOP/s on this machine.
* A plain Numba loop (`_dot_block`, any CPU): TILE_M activation rows dotted with TILE_N
  weight rows, K contiguous in both. What the compiler emitted (numba 0.68.1 / LLVM 20,
  Zen 4 reported as "rocketlake"): asked for 512-bit vectors, the k loop becomes
  ``vpmovzxbd``/``vpmovsxbd`` (bytes widened to int32 lanes) feeding ``vpdpwssd zmm``,
  the 16-bit VNNI pair dot product (16 MACs an instruction, 4 accumulators): LLVM matches
  the widened multiply-add, never the byte forms ``vpdpbusd``/``vpmaddubsw``. 56 GOP/s
  on the same problem; 18 GOP/s at LLVM's default 256 bits (``vpdpwssd ymm``).

``nbtorch.kernels.inspect("quantized_linear", dtype=nbtorch.uint8)`` shows both.
Layouts: a (M, K) uint8 C-contiguous, b (N, K) int8 C-contiguous (the layer's weight),
`out` (M, N), possibly a strided view (conv writes NCHW). Callers validate shapes.
"""
import numba
import numpy as np

from . import vnni
from .simd import _own_function_with_512bit_vectors

__all__ = ["pack", "pack_conv", "qgemm", "linear_requant", "linear_dynamic", "im2col_u8",
           "im2col_nhwc", "conv2d_requant", "row_sums"]

TILE_M = 32          # loop engine: TILE_N weight rows (TILE_N * K bytes) stay in L1/L2
TILE_N = 64
CHUNK_BYTES = 1 << 20   # conv (VNNI): im2col columns of a chunk of images, GEMMed in cache
K_GROUPS = 64           # VNNI: k-groups (of 4) per block of B panels
M_CHUNK = 256           # VNNI: rows of A whose int32 tile (64 KiB) stays in L2


def pack(w):
    """The VNNI panels of weight `w` (N, K) int8, or None where the CPU has no VNNI."""
    return vnni.pack_weight(w) if vnni.AVAILABLE else None


def pack_conv(w):
    """The VNNI panels of a conv weight (O, C, kh, kw) in (O, kh, kw, C) order (the
    channels-last columns of `im2col_nhwc`), or None without VNNI."""
    return pack(np.ascontiguousarray(w.transpose(0, 2, 3, 1)).reshape(w.shape[0], -1))


@numba.njit(cache=True)
def row_sums(a, out):
    """out[m] = sum_k a[m, k] (int32)."""
    for m in range(a.shape[0]):
        s = np.int32(0)
        for k in range(a.shape[1]):
            s += np.int32(a[m, k])
        out[m] = s


# ---- engine 1: the Numba loop --------------------------------------------------------

@numba.njit(cache=True)
def _dot_block(a, b, acc, m0, m1, n0, n1):
    """acc[m - m0, n - n0] = sum_k int32(a[m, k]) * int32(b[n, k]) for the tile; a
    function of its own so that LLVM vectorises its k loop at 512 bits."""
    _own_function_with_512bit_vectors()
    K = a.shape[1]
    for m in range(m0, m1):
        ar = a[m]
        for n in range(n0, n1):
            br = b[n]
            s = np.int32(0)
            for k in range(K):
                s += np.int32(ar[k]) * np.int32(br[k])
            acc[m - m0, n - n0] = s


# ---- engine 2: VNNI ------------------------------------------------------------------

@numba.njit(cache=True)
def _vnni_tile(ap, bp, acc, m0, c0, p0, groups, n_panels, g0, g1, accumulate):
    """acc[c0:c0+4, :16*n_panels] (+)= ap[m0:m0+4] . panels p0.. over k-groups g0..g1
    (n_panels becomes a literal for the intrinsic)."""
    if n_panels == 4:
        vnni.tile(ap, bp, acc, m0, c0, p0, groups, 4, g0, g1, accumulate)
    elif n_panels == 3:
        vnni.tile(ap, bp, acc, m0, c0, p0, groups, 3, g0, g1, accumulate)
    elif n_panels == 2:
        vnni.tile(ap, bp, acc, m0, c0, p0, groups, 2, g0, g1, accumulate)
    else:
        vnni.tile(ap, bp, acc, m0, c0, p0, groups, 1, g0, g1, accumulate)


@numba.njit(cache=True)
def _vnni_block(ap, m0, m1, bp, acc, p0, n_panels, groups):
    """acc[:m1-m0, :16*n_panels] = ap[m0:m1] . panels p0..p0+n_panels, K in blocks of
    K_GROUPS groups: a block of panels (n_panels * K_GROUPS * 64 bytes <= 16 KiB) stays
    in L1 while every 4-row tile of A passes it."""
    for g0 in range(0, groups, K_GROUPS):
        g1 = min(groups, g0 + K_GROUPS)
        for r in range(m0, m1, 4):
            _vnni_tile(ap, bp, acc, r, r - m0, p0, groups, n_panels, g0, g1, g0 > 0)


def _padded(a):
    """`a` with rows and columns padded with zeros to multiples of 4 (VNNI's layout)."""
    m, k = a.shape
    m4, k4 = -(-m // 4) * 4, -(-max(k, 1) // 4) * 4
    if (m4, k4) == (m, k):
        return a
    ap = np.zeros((m4, k4), np.uint8)
    ap[:m, :k] = a
    return ap


# ---- epilogues (one tile of int32 accumulators -> outputs) ----------------------------

@numba.njit(cache=True)
def _column_offsets(n0, n1, za, zb, bsum, k):
    """off[j] = K*za*zb[n] - za*bsum[n] for n = n0 + j (int32), and whether any zb[n]."""
    off = np.empty(n1 - n0, np.int32)
    any_zb = False
    for j in range(n1 - n0):
        off[j] = np.int32(k * za * zb[n0 + j] - za * bsum[n0 + j])
        any_zb = any_zb or zb[n0 + j] != 0
    return off, any_zb


@numba.njit(cache=True)
def _store_requant(acc, m0, m1, n0, n1, za, zb, bsum, asum, k, bias_q, mult, zo, lo, hi,
                   out):
    """out[m, n] = clamp(rint((raw + bias_q[n]) * mult[n]), lo, hi) + zo for the tile,
    raw = acc[m - m0, n - n0] + off[n] - zb[n] * asum[m] in int32. Row by row over
    contiguous columns, int32 kept int32 (Numba's int64 promotion would not vectorise):
    4x faster than the plain double loop."""
    _own_function_with_512bit_vectors()
    off, any_zb = _column_offsets(n0, n1, za, zb, bsum, k)
    bq, mu, fz = bias_q[n0:n1], mult[n0:n1], np.float32(zo)
    for m in range(m0, m1):
        a_row, o_row = acc[m - m0], out[m, n0:n1]
        if any_zb:
            for j in range(n1 - n0):
                raw = np.int32(a_row[j] + np.int32(off[j] - zb[n0 + j] * asum[m]))
                v = np.rint((np.float32(raw) + bq[j]) * mu[j])
                o_row[j] = np.int32(min(max(v, lo), hi) + fz)
        else:
            for j in range(n1 - n0):
                v = np.rint((np.float32(np.int32(a_row[j] + off[j])) + bq[j]) * mu[j])
                o_row[j] = np.int32(min(max(v, lo), hi) + fz)


@numba.njit(cache=True)
def _store_dynamic(acc, m0, m1, n0, n1, za, bsum, scale, bias, out):
    """out[m, n] = float32(acc - za * bsum[n]) * scale[n] + bias[n] for the tile."""
    _own_function_with_512bit_vectors()
    off = np.empty(n1 - n0, np.int32)
    for j in range(n1 - n0):
        off[j] = np.int32(-za * bsum[n0 + j])
    sc, bi = scale[n0:n1], bias[n0:n1]
    for m in range(m0, m1):
        a_row, o_row = acc[m - m0], out[m, n0:n1]
        for j in range(n1 - n0):
            o_row[j] = np.float32(np.int32(a_row[j] + off[j])) * sc[j] + bi[j]


# ---- drivers: tiles in cache order, each stored as soon as it is summed ----------------

@numba.njit(cache=True)
def _requant_loop(a, za, b, zb, bsum, asum, bias_q, mult, zo, lo, hi, out):
    M, K = a.shape
    acc = np.empty((TILE_M, TILE_N), np.int32)
    for n0 in range(0, b.shape[0], TILE_N):
        n1 = min(b.shape[0], n0 + TILE_N)
        for m0 in range(0, M, TILE_M):
            m1 = min(M, m0 + TILE_M)
            _dot_block(a, b, acc, m0, m1, n0, n1)
            _store_requant(acc, m0, m1, n0, n1, za, zb, bsum, asum, K, bias_q, mult, zo,
                           lo, hi, out)


@numba.njit(cache=True)
def _requant_vnni(ap, m, k, za, bp, n, zb, bsum, asum, bias_q, mult, zo, lo, hi, out):
    acc = np.empty((M_CHUNK, 64), np.int32)
    panels, groups = (n + 15) // 16, ap.shape[1] // 4
    for p0 in range(0, panels, 4):
        n_panels = min(4, panels - p0)
        for m0 in range(0, m, M_CHUNK):
            m1 = min(m, m0 + M_CHUNK)
            _vnni_block(ap, m0, m1, bp, acc, p0, n_panels, groups)
            _store_requant(acc, m0, m1, p0 * 16, min(n, (p0 + n_panels) * 16), za, zb,
                           bsum, asum, k, bias_q, mult, zo, lo, hi, out)


@numba.njit(cache=True)
def _dynamic_loop(a, za, b, bsum, scale, bias, out):
    M = a.shape[0]
    acc = np.empty((TILE_M, TILE_N), np.int32)
    for n0 in range(0, b.shape[0], TILE_N):
        n1 = min(b.shape[0], n0 + TILE_N)
        for m0 in range(0, M, TILE_M):
            m1 = min(M, m0 + TILE_M)
            _dot_block(a, b, acc, m0, m1, n0, n1)
            _store_dynamic(acc, m0, m1, n0, n1, za, bsum, scale, bias, out)


@numba.njit(cache=True)
def _dynamic_vnni(ap, m, za, bp, n, bsum, scale, bias, out):
    acc = np.empty((M_CHUNK, 64), np.int32)
    panels, groups = (n + 15) // 16, ap.shape[1] // 4
    for p0 in range(0, panels, 4):
        n_panels = min(4, panels - p0)
        for m0 in range(0, m, M_CHUNK):
            m1 = min(m, m0 + M_CHUNK)
            _vnni_block(ap, m0, m1, bp, acc, p0, n_panels, groups)
            _store_dynamic(acc, m0, m1, p0 * 16, min(n, (p0 + n_panels) * 16), za, bsum,
                           scale, bias, out)


# ---- launchers (the registry's kernels) ------------------------------------------------

def linear_requant(a, za, b, bp, zb, bsum, bias_q, mult, zo, qmin, qmax, relu, out):
    """Quantized Linear/Conv tile loop with uint8 output (see the module docstring):
    mult[n] = sa * sb[n] / so, bias_q[n] = bias[n] / (sa * sb[n]) (float32); `bp` the
    VNNI panels of `b` or None; relu clamps at zo instead of qmin."""
    asum = np.zeros(a.shape[0], np.int32)
    if zb.any():
        row_sums(a, asum)
    lo, hi = np.float32((zo if relu else qmin) - zo), np.float32(qmax - zo)
    if bp is None:
        _requant_loop(a, za, b, zb, bsum, asum, bias_q, mult, zo, lo, hi, out)
    else:
        _requant_vnni(_padded(a), a.shape[0], a.shape[1], za, bp, b.shape[0], zb, bsum,
                      asum, bias_q, mult, zo, lo, hi, out)


def linear_dynamic(a, za, b, bp, bsum, scale, bias, out):
    """Dynamic quantized Linear: float32 out[m, n] = (a[m].b[n] - za*bsum[n]) * scale[n]
    + bias[n] with scale[n] = sa * sb[n] (symmetric weights)."""
    if bp is None:
        _dynamic_loop(a, za, b, bsum, scale, bias, out)
    else:
        _dynamic_vnni(_padded(a), a.shape[0], za, bp, b.shape[0], bsum, scale, bias, out)


@numba.njit(cache=True)
def qgemm(a, b, out):
    """out = a @ b.T in int32 (uint8 x int8) by the loop engine: a reference."""
    acc = np.empty((TILE_M, TILE_N), np.int32)
    for n0 in range(0, b.shape[0], TILE_N):
        n1 = min(b.shape[0], n0 + TILE_N)
        for m0 in range(0, a.shape[0], TILE_M):
            m1 = min(a.shape[0], m0 + TILE_M)
            _dot_block(a, b, acc, m0, m1, n0, n1)
            for m in range(m0, m1):
                for n in range(n0, n1):
                    out[m, n] = acc[m - m0, n - n0]


# ---- convolution ---------------------------------------------------------------------

@numba.njit(cache=True)
def im2col_u8(x, col, zx, kh, kw, sh, sw, ph, pw, dh, dw):
    """x (C, H, W) uint8 -> col rows p = oh*OW + ow, columns (c*kh + i)*kw + j (K
    contiguous); padding reads zx (the input's zero point, i.e. the real value 0).
    Rows and columns of `col` past OH*OW and C*kh*kw are left as they are."""
    C, H, W = x.shape
    OH = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    for p in range(OH * OW):
        oh = p // OW
        ow = p - oh * OW
        row = col[p]
        for c in range(C):
            for i in range(kh):
                h = oh * sh - ph + i * dh
                base = (c * kh + i) * kw
                if h < 0 or h >= H:
                    for j in range(kw):
                        row[base + j] = zx
                    continue
                for j in range(kw):
                    w = ow * sw - pw + j * dw
                    row[base + j] = x[c, h, w] if 0 <= w < W else zx


@numba.njit(cache=True)
def im2col_nhwc(xh, col, zx, kh, kw, sh, sw, ph, pw, dh, dw, oh_n, ow_n):
    """Channels last: xh (H, W, C) uint8 -> col rows p = oh*OW + ow, columns
    (i*kw + j)*C + c, so each tap copies C contiguous bytes (zx where it falls in the
    padding). Pairs with weights packed in (O, kh, kw, C) order."""
    H, W, C = xh.shape
    for p in range(oh_n * ow_n):
        oh = p // ow_n
        ow = p - oh * ow_n
        row = col[p]
        for i in range(kh):
            h = oh * sh - ph + i * dh
            for j in range(kw):
                w = ow * sw - pw + j * dw
                base = (i * kw + j) * C
                if 0 <= h < H and 0 <= w < W:
                    src = xh[h, w]
                    for c in range(C):
                        row[base + c] = src[c]
                else:
                    for c in range(C):
                        row[base + c] = zx


@numba.njit(cache=True)
def _conv_loop(x, zx, w2, zw, wsum, bias_q, mult, zo, lo, hi, out, col, geom):
    """Every image: im2col into `col` (M, K), then the loop engine into out[n]."""
    kh, kw, sh, sw, ph, pw, dh, dw = geom
    o_ch, m = out.shape[1], out.shape[2] * out.shape[3]
    asum = np.zeros(m, np.int32)
    for n in range(x.shape[0]):
        im2col_u8(x[n], col, zx, kh, kw, sh, sw, ph, pw, dh, dw)
        if zw.any():
            row_sums(col, asum)
        _requant_loop(col, zx, w2, zw, wsum, asum, bias_q, mult, zo, lo, hi,
                      out[n].reshape(o_ch, m).T)


@numba.njit(cache=True)
def _conv_vnni(x, zx, k, bp, zw, wsum, bias_q, mult, zo, lo, hi, out2d, col, geom,
               per_chunk, channels_last):
    """Chunks of `per_chunk` images of x (N, H, W, C), or (N, 1, H, W) when not
    `channels_last`: im2col of each into consecutive rows of `col`, then one VNNI GEMM
    over the chunk into rows of out2d (N*OH*OW, O)."""
    kh, kw, sh, sw, ph, pw, dh, dw, oh_n, ow_n = geom
    n_img, m = x.shape[0], oh_n * ow_n
    for n0 in range(0, n_img, per_chunk):
        n1 = min(n_img, n0 + per_chunk)
        rows = (n1 - n0) * m
        for n in range(n0, n1):
            rows_n = col[(n - n0) * m:(n - n0 + 1) * m]
            if channels_last:
                im2col_nhwc(x[n], rows_n, zx, kh, kw, sh, sw, ph, pw, dh, dw, oh_n, ow_n)
            else:                               # one channel: both layouts agree
                im2col_u8(x[n], rows_n, zx, kh, kw, sh, sw, ph, pw, dh, dw)
        asum = np.zeros(rows, np.int32)
        if zw.any():
            row_sums(col[:rows, :k], asum)
        _requant_vnni(col, rows, k, zx, bp, out2d.shape[1], zw, wsum, asum, bias_q, mult,
                      zo, lo, hi, out2d[n0 * m:n1 * m])


def conv2d_requant(x, zx, w, bp, zw, wsum, bias_q, mult, zo, relu, out, stride, padding,
                   dilation):
    """Quantized Conv2d (groups=1), uint8 output. x (N, C, H, W) uint8, w (O, C, kh, kw)
    int8. VNNI (`bp`: the weight packed in (O, kh, kw, C) order, see `pack_conv`):
    channels last, chunks of images (about CHUNK_BYTES of columns) are unfolded into one
    column buffer and multiplied in one GEMM, then transposed back to NCHW.
    Loop engine: per image, the GEMM writes out[n] (O, OH, OW) through a transposed view."""
    o_ch, oh, ow = out.shape[1:]
    w2 = w.reshape(o_ch, -1)
    m, k = oh * ow, w2.shape[1]
    geom = (w.shape[2], w.shape[3], stride[0], stride[1], padding[0], padding[1],
            dilation[0], dilation[1])
    lo, hi = np.float32((zo if relu else 0) - zo), np.float32(255 - zo)
    if bp is None:
        col = np.empty((m, k), np.uint8)
        _conv_loop(x, zx, w2, zw, wsum, bias_q, mult, zo, lo, hi, out, col, geom)
        return
    k4 = -(-k // 4) * 4
    per_chunk = max(1, min(x.shape[0], CHUNK_BYTES // (m * k4)))
    col = np.zeros((-(-per_chunk * m // 4) * 4, k4), np.uint8)
    out2d = np.empty((x.shape[0] * m, o_ch), np.uint8)
    channels_last = x.shape[1] > 1
    xh = np.ascontiguousarray(x.transpose(0, 2, 3, 1)) if channels_last else x
    _conv_vnni(xh, zx, k, bp, zw, wsum, bias_q, mult, zo, lo, hi, out2d, col,
               geom + (oh, ow), per_chunk, channels_last)
    out[...] = out2d.reshape(x.shape[0], oh, ow, o_ch).transpose(0, 3, 1, 2)
