"""CPU kernels of quantized tensors: quantize/dequantize (per tensor and per channel) and
the elementwise and pooling ops of quantized nets (the GEMMs: `qgemm.py`).

Arithmetic is PyTorch's x86 (fbgemm) arithmetic: quantizing multiplies by the float32
``1 / scale``, rounds half to even (``np.rint``) and saturates, never wraps. Arrays are
C-contiguous; callers validate shapes and qparams.
"""
import numba
import numpy as np

from ..fma import fma

__all__ = ["quantize_per_tensor", "quantize_per_tensor_int32", "quantize_per_channel", "dequantize_per_tensor",
           "dequantize_per_channel", "qadd", "qrelu", "qmax_pool2d", "qadaptive_avg_pool2d",
           "qbatch_norm", "qmul", "qrequantize_shift"]

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
def quantize_per_tensor_int32(x, out, scale, zero_point, qmin, qmax):
    """for i: out[i] = clamp(rint(float32(x[i] * float32(1 / scale)) + float32(zero_point)))

    fbgemm's scalar (qint32) quantize: the product and the sum each round to float32
    (no FMA), then ties go to even; the clamp is done in double."""
    inv = np.float32(1.0) / np.float32(scale)
    z = np.float32(zero_point)
    for i in range(x.size):
        v = np.float64(np.rint(x[i] * inv + z))
        out[i] = np.int64(min(max(v, np.float64(qmin)), np.float64(qmax)))


@numba.njit(cache=True)
def dequantize_per_tensor(q, out, scale, zero_point):
    """for i: out[i] = float32(int32(q[i] - zero_point)) * float32(scale)

    (exact for 8-bit values; for qint32 the difference is rounded once to float32, as
    PyTorch's dequantize does)."""
    s = np.float32(scale)
    for i in range(q.size):
        out[i] = np.float32(np.int32(np.int64(q[i]) - zero_point)) * s


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
                best = np.int32(-2147483648)   # below every int8/uint8 (qint8 windows
                for i in range(max(h0, 0), min(h0 + kh, H)):     # may be all negative)
                    for j in range(max(w0, 0), min(w0 + kw, W)):
                        v = np.int32(x[p, i, j])
                        if v > best:
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


@numba.njit(cache=True)
def qbatch_norm(x, out, alpha, beta, zin, zout, qmin, qmax, relu):
    """x, out (N, C, L) integers; for each element of channel c:
    out = clamp(rint(fma(alpha[c], x - zin, beta[c])) + zout, zout if relu else qmin, qmax)
    (fbgemm's quantized batch norm: alpha, beta fold the statistics and both scales)."""
    lo = zout if relu else qmin
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            a = alpha[c]
            b = beta[c]
            for i in range(x.shape[2]):
                v = np.rint(fma(a, np.float32(x[n, c, i]) - np.float32(zin), b))
                r = np.int64(min(max(v, np.float32(-1e9)), np.float32(1e9))) + zout
                out[n, c, i] = min(max(r, lo), qmax)


@numba.njit(cache=True)
def qmul(a, za, b, zb, out, multiplier, zo, qmin, qmax, relu):
    """for i: out[i] = clamp(rint(float32((a[i] - za) * (b[i] - zb)) * multiplier) + zo),
    multiplier = float32(sa * sb / so) (fbgemm's qmul: an integer product requantized)."""
    lo = zo if relu else qmin
    for i in range(a.size):
        c = (np.int32(a[i]) - np.int32(za)) * (np.int32(b[i]) - np.int32(zb))
        r = np.int64(np.rint(np.float32(c) * multiplier)) + zo
        out[i] = min(max(r, lo), qmax)


@numba.njit(cache=True)
def qrequantize_shift(a, za, shift, out, multiplier, zo, qmin, qmax, relu):
    """for i: out[i] = clamp(rint(float32(a[i] - za + shift) * multiplier) + zo)
    (add_scalar's requantization, ``requantize_from_int``)."""
    lo = zo if relu else qmin
    for i in range(a.size):
        c = np.int32(a[i]) - np.int32(za) + np.int32(shift)
        r = np.int64(np.rint(np.float32(c) * multiplier)) + zo
        out[i] = min(max(r, lo), qmax)
