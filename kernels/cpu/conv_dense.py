"""im2col/col2im for windows that never leave the input: the padding is done beforehand.

conv.py's general kernels find, per kernel tap, the output box whose windows stay in
the input, and zero the rest: per tap a few divisions, views and range checks. With
small output planes (LeNet's 8x8: 64 elements per tap) that overhead, and row copies
of 8-24 elements that LLVM leaves scalar, cost more than the copying itself. Here the
input is first copied into a zero-padded buffer (kd*kh*kw times smaller than the
columns), so every window is inside it and each tap is a run of plain row copies,
in 8-element blocks (the last one overlapping) that LLVM makes single vector moves.
One thread, float32, a 16-image chunk: LeNet c2 (6x12x12, 5x5) im2col 81 -> 20 us,
col2im 61 -> 40; LeNet c1 (1x28x28) 34 -> 26 / 38 -> 35; 16x28x28 3x3 p1 (8 images)
im2col 358 -> 258 us. col2im's adds stay one element at a time: 8-element blocks
ran 1.4-2x slower (a tap's block reloads what the previous tap just stored, shifted
by one element, and waits for the store).

Same layouts as conv.py: x (N, C, D, H, W) C-contiguous, columns (N, C*kd*kh*kw,
OD*OH*OW). The results are bit-identical to conv.py's kernels (copies; col2im adds
each input element's contributions in the same tap order).
"""
import numba
import numpy as np

__all__ = ["fits", "im2col_dense", "col2im_dense", "im2col_block", "col2im_block_add"]

_U = np.uint64


def fits(geom, in_size):
    """Whether every window of `geom` (conv.py's 15-int tuple) lies in the input of
    spatial sizes in_size (3 ints) padded by geom's padding: then the dense kernels apply."""
    kd, kh, kw, sd, sh, sw, pd, ph, pw, dd, dh, dw, od_n, oh_n, ow_n = geom
    d, h, w = in_size
    return ((od_n - 1) * sd + (kd - 1) * dd < d + 2 * pd
            and (oh_n - 1) * sh + (kh - 1) * dh < h + 2 * ph
            and (ow_n - 1) * sw + (kw - 1) * dw < w + 2 * pw)


@numba.njit(inline="always")
def _copy8(dst, d, src, s):
    """dst[d:d+8] = src[s:s+8]: all loads before the stores, so LLVM emits one vector move
    (a loop of 8 stayed scalar: 0.25 vs 0.03 ns per element)."""
    a0, a1, a2, a3 = src[s], src[s + _U(1)], src[s + _U(2)], src[s + _U(3)]
    a4, a5, a6, a7 = src[s + _U(4)], src[s + _U(5)], src[s + _U(6)], src[s + _U(7)]
    dst[d], dst[d + _U(1)], dst[d + _U(2)], dst[d + _U(3)] = a0, a1, a2, a3
    dst[d + _U(4)], dst[d + _U(5)], dst[d + _U(6)], dst[d + _U(7)] = a4, a5, a6, a7


@numba.njit(inline="always")
def _copy_rows(cf, db, xf, ib, oh_n, ow_n, row_step):
    """oh_n rows of ow_n >= 8 contiguous elements, xf[ib + k*row_step:][:ow_n] ->
    cf[db + k*ow_n:][:ow_n], each in 8-element blocks, the last one overlapping."""
    last = _U(ow_n - 8)
    for _ in range(oh_n):
        t = _U(0)
        while t < last:
            _copy8(cf, db + t, xf, ib + t)
            t += _U(8)
        _copy8(cf, db + last, xf, ib + last)
        db += _U(ow_n)
        ib += _U(row_step)


@numba.njit(cache=True, nogil=True)
def _im2col_dense(xp, col, geom):
    """xp (N, C, Dp, Hp, Wp), padded so that no window leaves it -> col (geom's padding unused).

    for n, c, kz, ki, kj, od, oh, ow (rows of col in order):
        col[n, (c*kd + kz)*kh*kw + ki*kw + kj, (od*OH + oh)*OW + ow]
            = xp[n, c, od*sd + kz*dd, oh*sh + ki*dh, ow*sw + kj*dw]
    """
    kd, kh, kw, sd, sh, sw, _, _, _, dd, dh, dw, od_n, oh_n, ow_n = geom
    n_b, n_c, d, h, w = xp.shape
    xf, cf = xp.ravel(), col.ravel()
    hw = h * w
    blocks = sw == 1 and ow_n >= 8
    db = 0                                   # running offset into col: rows in order
    for v in range(n_b * n_c):
        xb = v * d * hw
        for kz in range(kd):
            for ki in range(kh):
                for kj in range(kw):
                    for od in range(od_n):
                        zb = xb + (od * sd + kz * dd) * hw + ki * dh * w + kj * dw
                        if blocks:
                            _copy_rows(cf, _U(db), xf, _U(zb), oh_n, ow_n, sh * w)
                            db += oh_n * ow_n
                            continue
                        for oh in range(oh_n):
                            ib = zb + oh * sh * w
                            for t in range(ow_n):
                                cf[_U(db + t)] = xf[_U(ib + t * sw)]
                            db += ow_n


@numba.njit(cache=True, nogil=True)
def _col2im_dense(col, xp, geom):
    """Adjoint of _im2col_dense: xp (N, C, Dp, Hp, Wp) = 0, then every column element is
    added to its window position, taps in order (conv.py's order)."""
    kd, kh, kw, sd, sh, sw, _, _, _, dd, dh, dw, od_n, oh_n, ow_n = geom
    n_b, n_c, d, h, w = xp.shape
    xf, cf = xp.ravel(), col.ravel()
    for t in range(xf.size):
        xf[t] = 0
    hw = h * w
    sb = 0
    for v in range(n_b * n_c):
        xb = v * d * hw
        for kz in range(kd):
            for ki in range(kh):
                for kj in range(kw):
                    for od in range(od_n):
                        zb = xb + (od * sd + kz * dd) * hw + ki * dh * w + kj * dw
                        for oh in range(oh_n):
                            ib = zb + oh * sh * w
                            if sw == 1:
                                for t in range(ow_n):
                                    xf[_U(ib + t)] += cf[_U(sb + t)]
                            else:
                                for t in range(ow_n):
                                    xf[_U(ib + t * sw)] += cf[_U(sb + t)]
                            sb += ow_n


@numba.njit(cache=True, nogil=True)
def im2col_block(xp, n, col, geom, r0, r1):
    """The columns of output rows [r0, r1) (rows of OW positions, (od, oh) flattened) of
    image n of xp (N, C, Dp, Hp, Wp), padded so that no window leaves it, written flat into
    col as (C*kd*kh*kw, (r1 - r0)*OW) rows.

    for c, kz, ki, kj (column row q), od*OH + oh in [r0, r1) (k-th), ow:
        col.flat[(q*(r1-r0) + k)*OW + ow] = xp[n, c, od*sd + kz*dd, oh*sh + ki*dh, ow*sw + kj*dw]
    A block of rows lets conv_gemm.py keep one image's columns in L2 and its GEMMs small
    (see there); the values are _im2col_dense's. Whole rows keep _im2col_dense's speed
    (blocks of any positions, a row split at each end, ran 2x slower).
    """
    kd, kh, kw, sd, sh, sw, _, _, _, dd, dh, dw, od_n, oh_n, ow_n = geom
    n_c, d, h, w = xp.shape[1], xp.shape[2], xp.shape[3], xp.shape[4]
    xf, cf = xp.ravel(), col.ravel()
    hw = h * w
    blocks = sw == 1 and ow_n >= 8
    od0, oh0 = r0 // oh_n, r0 % oh_n
    db = 0
    for c in range(n_c):
        xb = (n * n_c + c) * d * hw
        for kz in range(kd):
            for ki in range(kh):
                for kj in range(kw):
                    tb = xb + kz * dd * hw + ki * dh * w + kj * dw
                    od, oh, r = od0, oh0, r0
                    while r < r1:                       # a run of rows in one depth slice
                        run = min(oh_n - oh, r1 - r)
                        ib = tb + od * sd * hw + oh * sh * w
                        if blocks:
                            _copy_rows(cf, _U(db), xf, _U(ib), run, ow_n, sh * w)
                            db += run * ow_n
                        else:
                            for _ in range(run):
                                for t in range(ow_n):
                                    cf[_U(db + t)] = xf[_U(ib + t * sw)]
                                db += ow_n
                                ib += sh * w
                        r += run
                        oh, od = 0, od + 1


@numba.njit(cache=True, nogil=True)
def col2im_block_add(col, xp, n, geom, r0, r1):
    """Adjoint of im2col_block: adds the columns of output rows [r0, r1) in col to their
    window positions in image n of xp (not cleared here), column rows in order."""
    kd, kh, kw, sd, sh, sw, _, _, _, dd, dh, dw, od_n, oh_n, ow_n = geom
    n_c, d, h, w = xp.shape[1], xp.shape[2], xp.shape[3], xp.shape[4]
    xf, cf = xp.ravel(), col.ravel()
    hw = h * w
    od0, oh0 = r0 // oh_n, r0 % oh_n
    sb = 0
    for c in range(n_c):
        xb = (n * n_c + c) * d * hw
        for kz in range(kd):
            for ki in range(kh):
                for kj in range(kw):
                    tb = xb + kz * dd * hw + ki * dh * w + kj * dw
                    od, oh, r = od0, oh0, r0
                    while r < r1:
                        run = min(oh_n - oh, r1 - r)
                        ib = tb + od * sd * hw + oh * sh * w
                        for _ in range(run):
                            if sw == 1:
                                for t in range(ow_n):
                                    xf[_U(ib + t)] += cf[_U(sb + t)]
                            else:
                                for t in range(ow_n):
                                    xf[_U(ib + t * sw)] += cf[_U(sb + t)]
                            sb += ow_n
                            ib += sh * w
                        r += run
                        oh, od = 0, od + 1


def _padded_shape(x, geom):
    pd, ph, pw = geom[6:9]
    n, c, d, h, w = x.shape
    return (n, c, d + 2 * pd, h + 2 * ph, w + 2 * pw)


def im2col_dense(x, col, geom, workspace):
    """col (N, C*kk, L) from x (N, C, D, H, W); `geom` must `fits` x. A padded x is built in
    `workspace(shape)` (a scratch array of that shape) first."""
    pd, ph, pw = geom[6:9]
    if pd or ph or pw:
        xp = workspace(_padded_shape(x, geom))
        xp[...] = 0
        d, h, w = x.shape[2:]
        xp[:, :, pd:pd + d, ph:ph + h, pw:pw + w] = x
        x = xp
    _im2col_dense(x, col, geom)


def col2im_dense(col, x, geom, workspace):
    """x (N, C, D, H, W) = the sum of col's windows; `geom` must `fits` x (padded: summed in
    a `workspace` buffer, then its interior copied out)."""
    pd, ph, pw = geom[6:9]
    if not (pd or ph or pw):
        _col2im_dense(col, x, geom)
        return
    xp = workspace(_padded_shape(x, geom))
    _col2im_dense(col, xp, geom)
    d, h, w = x.shape[2:]
    x[...] = xp[:, :, pd:pd + d, ph:ph + h, pw:pw + w]
