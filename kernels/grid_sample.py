"""grid_sample's per-point maths, written once for both devices (``register_jitable``).

A sampling point is a grid entry (x, y[, z]) in [-1, 1]. `point_coords` maps it to
pixel coordinates as PyTorch does (unnormalise by align_corners, then the padding
mode's clip or reflection, each with its derivative). Interpolation is a short list
of taps: tap k of a point is (flat input index or -1 when outside, weight, d weight /
d ix, d iy, d iz), so the kernels are the same three loops for every mode:

    forward:    out[c]          = sum_k w_k * in[c, idx_k]
    grad_input: gin[c, idx_k]  += w_k * gout[c]
    grad_grid:  g_x = mult_x * sum_k dwx_k * sum_c in[c, idx_k] * gout[c]   (y, z alike)

Modes: 0 bilinear (2**nd taps: the corners around the point), 1 nearest (one tap,
half to even as nearbyint), 2 bicubic (16 taps, A = -0.75, each tap's position
padded on its own, 2-D only). Padding: 0 zeros, 1 border, 2 reflection.
"""
import math

from numba.extending import register_jitable

__all__ = ["point_coords", "n_taps", "tap"]

BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
_A = -0.75


@register_jitable
def _finite(v):
    return abs(v) < math.inf                 # False for inf and NaN


@register_jitable
def _clip(v, size):
    """(v clipped to [0, size - 1], its derivative); NaN goes to 0, as PyTorch's."""
    if not v > 0:
        return 0.0, 0.0
    hi = size - 1.0
    if v >= hi:
        return hi, 0.0
    return v, 1.0


@register_jitable
def _reflect(v, twice_low, twice_high):
    """(v reflected into [low, high] by mirror folds, its derivative: +-1)."""
    if twice_low == twice_high:
        return 0.0, 0.0
    if not _finite(v):
        return math.nan, 0.0                 # the clip after it sends NaN to 0
    lo = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    v = v - lo
    sign = 1.0
    if v < 0:
        sign = -1.0
        v = -v
    flips = math.floor(v / span)
    extra = v - flips * span              # fmod(v, span) for v >= 0 (Numba has no fmod)
    if flips % 2 == 0:
        return extra + lo, sign
    return span - extra + lo, -sign


@register_jitable
def _pad(v, size, padding, align):
    """(coordinate after the padding mode, its derivative)."""
    if padding == BORDER:
        return _clip(v, size)
    if padding == REFLECTION:
        if align:
            v, g = _reflect(v, 0.0, 2.0 * (size - 1))
        else:
            v, g = _reflect(v, -1.0, 2.0 * size - 1)
        v, g2 = _clip(v, size)
        return v, g * g2
    return v, 1.0


@register_jitable
def _unnormalize(coord, size, align):
    if align:
        return (coord + 1.0) / 2.0 * (size - 1), (size - 1) / 2.0
    return ((coord + 1.0) * size - 1.0) / 2.0, size / 2.0


@register_jitable
def _coord(coord, size, mode, padding, align):
    v, m = _unnormalize(coord, size, align)
    if mode == BICUBIC:                   # each tap is padded on its own
        return v, m
    v, g = _pad(v, size, padding, align)
    return v, m * g


@register_jitable
def point_coords(gx, gy, gz, W, H, D, mode, padding, align):
    """(ix, iy, iz, dix/dgx, diy/dgy, diz/dgz) of one grid point (iz = 0 when D == 1)."""
    ix, mx = _coord(gx, W, mode, padding, align)
    iy, my = _coord(gy, H, mode, padding, align)
    iz, mz = 0.0, 0.0
    if D > 1 or gz != 0.0:
        iz, mz = _coord(gz, D, mode, padding, align)
    return ix, iy, iz, mx, my, mz


@register_jitable
def n_taps(mode, nd):
    if mode == NEAREST:
        return 1
    if mode == BICUBIC:
        return 16
    return 4 if nd == 2 else 8


@register_jitable
def _cubic(i, t):
    """Weight of tap i (at offset i - 1 from floor) for fraction t, and d/dt of it."""
    if i == 0:
        x = t + 1.0
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A, \
            -((-3 * _A * (-1 - t) - 10 * _A) * (-1 - t) - 8 * _A)
    if i == 1:
        return ((_A + 2) * t - (_A + 3)) * t * t + 1, \
            -((-3 * (_A + 2) * (-t) - 2 * (_A + 3)) * (-t))
    if i == 2:
        x = 1.0 - t
        return ((_A + 2) * x - (_A + 3)) * x * x + 1, -((3 * (_A + 2) * x - 2 * (_A + 3)) * x)
    x = 2.0 - t
    return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A, -((3 * _A * x - 10 * _A) * x + 8 * _A)


@register_jitable
def _nearbyint(v):
    if not _finite(v):
        return v                             # out of bounds in every comparison
    r = math.floor(v)
    d = v - r
    if d > 0.5 or (d == 0.5 and r % 2 != 0):
        r += 1.0
    return r


@register_jitable
def tap(k, ix, iy, iz, W, H, D, mode, padding, align):
    """(flat index or -1, weight, dw/dix, dw/diy, dw/diz) of tap k."""
    if mode != NEAREST and not (_finite(ix) and _finite(iy) and _finite(iz)):
        return 0, math.nan, math.nan, math.nan, math.nan    # NaN out, as PyTorch's weights
    if mode == NEAREST:
        x, y, z = _nearbyint(ix), _nearbyint(iy), _nearbyint(iz)
        w, wx, wy, wz = 1.0, 0.0, 0.0, 0.0
    elif mode == BICUBIC:
        i = k % 4
        j = k // 4
        x0, y0 = math.floor(ix), math.floor(iy)
        cx, gx = _cubic(i, ix - x0)
        cy, gy = _cubic(j, iy - y0)
        x, _ = _pad(x0 - 1.0 + i, W, padding, align)
        y, _ = _pad(y0 - 1.0 + j, H, padding, align)
        z = 0.0
        w, wx, wy, wz = cx * cy, gx * cy, cx * gy, 0.0
    else:
        x0, y0, z0 = math.floor(ix), math.floor(iy), math.floor(iz)
        tx, ty, tz = ix - x0, iy - y0, iz - z0
        bx, by, bz = k & 1, (k >> 1) & 1, (k >> 2) & 1
        ax = tx if bx else 1.0 - tx
        ay = ty if by else 1.0 - ty
        az = tz if bz else 1.0 - tz
        sx = 1.0 if bx else -1.0
        sy = 1.0 if by else -1.0
        sz = 1.0 if bz else -1.0
        x, y, z = x0 + bx, y0 + by, z0 + bz
        w, wx, wy, wz = ax * ay * az, sx * ay * az, ax * sy * az, ax * ay * sz
    if not (x >= 0 and x < W and y >= 0 and y < H and z >= 0 and z < D):
        return -1, 0.0, 0.0, 0.0, 0.0
    return (int(z) * H + int(y)) * W + int(x), w, wx, wy, wz
