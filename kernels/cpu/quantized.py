"""CPU int8 kernels: quantize/dequantize, the uint8 x int8 GEMM behind quantized Linear
and Conv2d (requantization fused), and the elementwise/pooling kernels of quantized nets.

Arithmetic is PyTorch's x86 (fbgemm) arithmetic: quantizing multiplies by the float32
``1 / scale``, rounds half to even (``np.rint``) and saturates; a GEMM accumulates
``uint8 * int8`` products in int32 and corrects for the zero points afterwards::

    acc[m, n] = sum_k a[m, k] * b[n, k]                           (int32)
    raw[m, n] = acc - za * colsum_b[n] - zb[n] * rowsum_a[m] + K * za * zb[n]

Layouts: activations (M, K) uint8 C-contiguous, weights (N, K) int8 C-contiguous (the
Linear/Conv2d weight as stored, K contiguous for both operands). Callers validate shapes.

What the compiler emitted (numba 0.68.1 / LLVM 20, Zen 4 reported as "rocketlake",
AVX-512 VNNI): the dot loop of `_dot_block` vectorises at 512 bits (asked for by
`_own_function_with_512bit_vectors`) to ``vpmovzxbd``/``vpmovsxbd`` (bytes widened to
int32 lanes) feeding ``vpdpwssd zmm`` -- the AVX-512 VNNI *16-bit* pair dot product,
16 MACs per instruction, four accumulators unrolled. It does not find ``vpdpbusd`` (the
byte form, 64 MACs per instruction) nor ``vpmaddubsw``: LLVM matches the widened
int32 multiply-add, not the byte pattern. At the default 256-bit width the same loop
is ``vpdpwssd ymm`` and runs 3x slower (18 vs 56 GOP/s, 256x512x512, one core).
``nbtorch.kernels.inspect("quantized_linear", dtype=nbtorch.uint8).asm`` shows it.
"""
import numba
import numpy as np

from ..fma import fma
from .simd import _own_function_with_512bit_vectors

__all__ = ["quantize_per_tensor", "quantize_per_channel", "dequantize_per_tensor",
           "dequantize_per_channel", "qgemm", "linear_requant", "linear_dynamic",
           "im2col_u8", "conv2d_requant", "qadd", "qrelu", "qmax_pool2d",
           "qadaptive_avg_pool2d", "row_sums", "col_sums"]

# Tile of the GEMM: TILE_N weight rows (TILE_N * K bytes, in L1/L2 for K <= 1024) are
# dotted with TILE_M activation rows into a TILE_M x TILE_N int32 block, then the block
# is requantized while it is in cache.
TILE_M = 32
TILE_N = 64


@numba.njit(cache=True)
def quantize_per_tensor(x, out, scale, zero_point, qmin, qmax):
    """for i: out[i] = clamp(rint(fma(x[i], float32(1 / scale), zero_point)), qmin, qmax)

    One rounding of ``x * inv + zero_point`` (fbgemm's AVX2 loop is an FMA): it decides
    ties such as 0.35 / 0.1 + 4."""
    inv = np.float32(1.0) / np.float32(scale)
    z = np.float32(zero_point)
    lo = np.float32(qmin)
    hi = np.float32(qmax)
    for i in range(x.size):
        v = np.rint(fma(x[i], inv, z))
        out[i] = min(np.int64(min(max(v, lo), hi)), qmax)     # float32(2**31 - 1) is 2**31


@numba.njit(cache=True)
def dequantize_per_tensor(q, out, scale, zero_point):
    """for i: out[i] = (q[i] - zero_point) * float32(scale)"""
    s = np.float32(scale)
    z = np.float32(zero_point)
    for i in range(q.size):
        out[i] = (np.float32(q[i]) - z) * s


def _channel_blocks(shape, axis):
    outer = int(np.prod(shape[:axis]))
    inner = int(np.prod(shape[axis + 1:]))
    return outer, shape[axis], inner


@numba.njit(cache=True)
def _quantize_channels(x, out, scales, zps, qmin, qmax):
    """x, out: (outer, C, inner); each channel c with scales[c], zps[c]:
    out = clamp(rint(x * float32(1 / scale) + zp)), two roundings (PyTorch's
    per-channel loop multiplies and adds separately)."""
    for c in range(x.shape[1]):
        inv = np.float32(1.0) / np.float32(scales[c])
        z = np.float32(zps[c])
        lo = np.float32(qmin)
        hi = np.float32(qmax)
        for o in range(x.shape[0]):
            for i in range(x.shape[2]):
                v = min(max(np.rint(x[o, c, i] * inv + z), lo), hi)
                out[o, c, i] = min(np.int64(v), qmax)


@numba.njit(cache=True)
def _dequantize_channels(q, out, scales, zps):
    """out = float32((q - zp) * scale) computed in float64 (the scales are doubles)."""
    for c in range(q.shape[1]):
        s = scales[c]
        z = zps[c]
        for o in range(q.shape[0]):
            for i in range(q.shape[2]):
                out[o, c, i] = np.float32((np.int64(q[o, c, i]) - z) * s)


def quantize_per_channel(x, out, scales, zps, axis, qmin, qmax):
    """Per-channel quantize of C-contiguous `x` into `out` along `axis`."""
    blocks = _channel_blocks(x.shape, axis)
    _quantize_channels(x.reshape(blocks), out.reshape(blocks), scales, zps, qmin, qmax)


def dequantize_per_channel(q, out, scales, zps, axis):
    blocks = _channel_blocks(q.shape, axis)
    _dequantize_channels(q.reshape(blocks), out.reshape(blocks), scales, zps)


# ---- the GEMM ------------------------------------------------------------------------

@numba.njit(cache=True)
def _dot_block(a, b, acc, m0, m1, n0, n1):
    """acc[m - m0, n - n0] = sum_k int32(a[m, k]) * int32(b[n, k]) for the tile.

    A function of its own so that LLVM vectorises its k loop at 512 bits."""
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


@numba.njit(cache=True)
def row_sums(a, out):
    """out[m] = sum_k a[m, k] (int32)."""
    for m in range(a.shape[0]):
        s = np.int32(0)
        for k in range(a.shape[1]):
            s += np.int32(a[m, k])
        out[m] = s


@numba.njit(cache=True)
def col_sums(b, out):
    """out[n] = sum_k b[n, k]: the weight's row sums (its columns in the GEMM)."""
    row_sums(b, out)


@numba.njit(cache=True)
def qgemm(a, b, out):
    """out[m, n] = sum_k a[m, k] * b[n, k], int32 (uint8/int8 operands), tiled."""
    M, N = a.shape[0], b.shape[0]
    acc = np.empty((TILE_M, TILE_N), np.int32)
    for n0 in range(0, N, TILE_N):
        n1 = min(N, n0 + TILE_N)
        for m0 in range(0, M, TILE_M):
            m1 = min(M, m0 + TILE_M)
            _dot_block(a, b, acc, m0, m1, n0, n1)
            for m in range(m0, m1):
                for n in range(n0, n1):
                    out[m, n] = acc[m - m0, n - n0]


@numba.njit(cache=True)
def linear_requant(a, za, b, zb, bsum, bias_q, mult, zo, qmin, qmax, relu, out):
    """Quantized Linear/Conv: uint8 output, requantization fused into the tile loop.

    for each tile: acc = a[m0:m1] . b[n0:n1]^T                       (int32)
        raw = acc - za*bsum[n] - zb[n]*asum[m] + K*za*zb[n]
        out[m, n] = clamp(rint((raw + bias_q[n]) * mult[n]) + zo)  (relu: lower bound zo)
    with mult[n] = sa * sb[n] / so and bias_q[n] = bias[n] / (sa * sb[n]) (float32),
    fbgemm's order of operations. `out` may be strided (conv writes NCHW through a view).
    """
    M, K = a.shape
    N = b.shape[0]
    asum = np.zeros(M, np.int32)
    if zb.any():
        row_sums(a, asum)
    lo = np.float32((zo if relu else qmin) - zo)
    hi = np.float32(qmax - zo)
    acc = np.empty((TILE_M, TILE_N), np.int32)
    for n0 in range(0, N, TILE_N):
        n1 = min(N, n0 + TILE_N)
        for m0 in range(0, M, TILE_M):
            m1 = min(M, m0 + TILE_M)
            _dot_block(a, b, acc, m0, m1, n0, n1)
            for m in range(m0, m1):
                for n in range(n0, n1):
                    raw = (acc[m - m0, n - n0] - za * bsum[n] - zb[n] * asum[m]
                           + K * za * zb[n])
                    v = np.rint((np.float32(raw) + bias_q[n]) * mult[n])
                    out[m, n] = np.int32(min(max(v, lo), hi)) + zo


@numba.njit(cache=True)
def linear_dynamic(a, za, b, bsum, scale, bias, out):
    """Dynamic quantized Linear: float32 output, fused.

    out[m, n] = (a[m] . b[n] - za * bsum[n]) * scale[n] + bias[n],
    scale[n] = sa * sb[n] (symmetric weights: their zero point is 0)."""
    M = a.shape[0]
    N = b.shape[0]
    acc = np.empty((TILE_M, TILE_N), np.int32)
    for n0 in range(0, N, TILE_N):
        n1 = min(N, n0 + TILE_N)
        for m0 in range(0, M, TILE_M):
            m1 = min(M, m0 + TILE_M)
            _dot_block(a, b, acc, m0, m1, n0, n1)
            for m in range(m0, m1):
                for n in range(n0, n1):
                    raw = acc[m - m0, n - n0] - za * bsum[n]
                    out[m, n] = np.float32(raw) * scale[n] + bias[n]


# ---- convolution ---------------------------------------------------------------------

@numba.njit(cache=True)
def im2col_u8(x, col, zx, kh, kw, sh, sw, ph, pw, dh, dw):
    """x (C, H, W) uint8 -> col (OH*OW, C*kh*kw), K contiguous; padding reads zx
    (the input's zero point, i.e. the real value 0).

    for oh, ow, c, i, j: col[oh*OW + ow, (c*kh + i)*kw + j] = x[c, oh*sh - ph + i*dh, ...]
    """
    C, H, W = x.shape
    OW = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    for p in range(col.shape[0]):
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


def conv2d_requant(x, zx, w, zw, wsum, bias_q, mult, zo, relu, out, stride, padding,
                   dilation):
    """Quantized Conv2d (groups=1): im2col of each image, then `linear_requant`
    writing its (OH*OW, O) block straight into out[n] (O, OH, OW) through a transposed
    view. x (N, C, H, W) uint8, w (O, C*kh*kw) int8, out (N, O, OH, OW) uint8."""
    n_img, _, _, _ = x.shape
    o_ch, oh, ow = out.shape[1:]
    kh, kw = w.shape[2], w.shape[3]
    w2 = w.reshape(o_ch, -1)
    col = np.empty((oh * ow, w2.shape[1]), np.uint8)
    for n in range(n_img):
        im2col_u8(x[n], col, zx, kh, kw, stride[0], stride[1], padding[0], padding[1],
                  dilation[0], dilation[1])
        linear_requant(col, zx, w2, zw, wsum, bias_q, mult, zo, 0, 255, relu,
                       out[n].reshape(o_ch, oh * ow).T)


# ---- elementwise and pooling ---------------------------------------------------------

@numba.njit(cache=True)
def qadd(a, za, sa, b, zb, sb, out, so, zo, qmin, qmax, relu):
    """for i: out[i] = clamp(rint((da + db) * float32(1/so)) + zo), with
    da = fma(sa, a[i], -za*sa) (PyTorch's vectorised dequantize), likewise db."""
    inv = np.float32(1.0) / np.float32(so)
    fa, fb = np.float32(sa), np.float32(sb)
    pa, pb = np.float32(-za) * fa, np.float32(-zb) * fb
    lo = np.float32((zo if relu else qmin) - zo)
    hi = np.float32(qmax - zo)
    for i in range(a.size):
        v = fma(fa, np.float32(a[i]), pa) + fma(fb, np.float32(b[i]), pb)
        v = min(max(np.rint(v * inv), lo), hi)
        out[i] = np.int32(v) + zo


@numba.njit(cache=True)
def qrelu(q, out, zero_point):
    """for i: out[i] = max(q[i], zero_point) (the real 0 is the zero point)."""
    for i in range(q.size):
        out[i] = max(q[i], zero_point)


@numba.njit(cache=True)
def qmax_pool2d(x, out, kh, kw, sh, sw, ph, pw):
    """x (P, H, W), out (P, OH, OW): the max of each window, in the integers (the
    affine map is monotonic, so this is the max of the real values)."""
    P, H, W = x.shape
    OH, OW = out.shape[1], out.shape[2]
    for p in range(P):
        for oh in range(OH):
            h0 = oh * sh - ph
            for ow in range(OW):
                w0 = ow * sw - pw
                best = -1
                for i in range(max(h0, 0), min(h0 + kh, H)):
                    for j in range(max(w0, 0), min(w0 + kw, W)):
                        v = np.int32(x[p, i, j])
                        if best < 0 or v > best:
                            best = v
                out[p, oh, ow] = best


@numba.njit(cache=True)
def qadaptive_avg_pool2d(x, out):
    """x (P, H, W) uint8, out (P, OH, OW): window means rounded half to even (PyTorch's
    adaptive windows: start floor(o*H/OH), end ceil((o+1)*H/OH))."""
    P, H, W = x.shape
    OH, OW = out.shape[1], out.shape[2]
    for p in range(P):
        for oh in range(OH):
            h0 = (oh * H) // OH
            h1 = -((-(oh + 1) * H) // OH)
            for ow in range(OW):
                w0 = (ow * W) // OW
                w1 = -((-(ow + 1) * W) // OW)
                s = 0
                for i in range(h0, h1):
                    for j in range(w0, w1):
                        s += np.int32(x[p, i, j])
                n = np.float32((h1 - h0) * (w1 - w0))
                out[p, oh, ow] = np.int32(np.rint(np.float32(s) / n))
