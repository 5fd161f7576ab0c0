"""Index resampling of the last three dims in one pass: F.pad's reflect, replicate and
circular modes and F.interpolate's nearest modes. Each is a separable gather, out[a, z,
r, c] = x[a, zi[z], ri[r], ci[c]], which the op layer used to run as one gather per
axis (pool.gather_axis, and its scatter-add backward per axis: 8.3 ms for a reflect pad
of 16x32x32x32 forward and backward, the last axis's scatter walking one element per
row). Here every output row is written once, in order, over flat unsigned offsets.

Layout: x (A, D, H, W) and out (A, OD, OH, OW) C-contiguous (1-D and 2-D resampling are
D = 1 or D = H = 1); zi (OD,), ri (OH,), ci (OW,) int64 source indices, all in range
(the op layer builds and checks them; these kernels do no bounds checks).

The forward copies values: its arrays are bit views (one compilation per item size,
whatever the dtype). The backward sums, in float32 or float64, each input position's
gradients in the order the per-axis scatters summed them (depth, then rows, then
columns, each in increasing output index from zero): the same bits.

Few loops on purpose: each vectorised loop costs compile time (both kernels, two
dtypes each: ~2.4 s of CPU cold, measured).

Op layer: ``nbtorch/ops/resampling_index.py``.
"""
import numba
import numpy as np

__all__ = ["gather_rows", "scatter_rows", "inverse"]


@numba.njit(cache=True, nogil=True)
def gather_rows(x, out, zi, ri, ci, c0, c1):
    """out[a, z, r, :] = x[a, zi[z], ri[r], ci]: per output row, columns [c0, c1) (where
    ci[c] = ci[c0] + c - c0: a padded row's interior) as one contiguous copy, the others
    (borders, nearest columns) gathered; a row reading the same source row as the row
    before it (replicated edges, nearest upscaling) is a copy of that row.

    for a, z, r: out[a, z, r, c0:c1] = x[a, zi[z], ri[r], ci[c0]:ci[c0] + c1 - c0]
                 out[a, z, r, c]     = x[a, zi[z], ri[r], ci[c]]   (c outside [c0, c1))
    """
    d, h, w = x.shape[1], x.shape[2], x.shape[3]
    od, oh, ow = out.shape[1], out.shape[2], out.shape[3]
    xf, of = x.reshape(x.size), out.reshape(out.size)
    s0 = ci[c0] if c1 > c0 else 0
    o = 0
    for a in range(out.shape[0]):
        prev = -1
        for z in range(od):
            zb = a * d + zi[z]
            for r in range(oh):
                src = zb * h + ri[r]
                if src == prev:              # the row before, again
                    arr, i0, dst, n = of, o - ow, o, ow
                else:
                    i = src * w
                    for part in range(2):    # the border columns
                        lo = 0 if part == 0 else c1
                        hi = c0 if part == 0 else ow
                        for c in range(lo, hi):
                            of[np.uint64(o + c)] = xf[np.uint64(i + ci[c])]
                    arr, i0, dst, n = xf, i + s0, o + c0, c1 - c0
                    prev = src
                for c in range(n):
                    of[np.uint64(dst + c)] = arr[np.uint64(i0 + c)]
                o += ow


@numba.njit(cache=True, nogil=True)
def scatter_rows(g, gx, zp, zo, zlo, rp, ro, rlo, cp, co, clo, c0, c1, cs, buf):
    """The adjoint of gather_rows: gx[a, z, r, c] = sum of g over the output positions
    reading it. Axis tables in CSR form: output indices reading input index i are
    order[ptr[i]:ptr[i + 1]], increasing (`inverse`); an input index whose only reader
    is i + lo (a padded axis's interior) is "plain"; columns [c0, c1) are plain (the
    caller checks), the others are summed one by one; cs > 0 says that every column c is
    read by the outputs [c * cs, (c + 1) * cs) (nearest upscaling by an integer factor):
    the column sums then run as cs strided passes over the row, in the same order
    (16K rows of 64 columns: 1.2 ms one by one -> 0.36). buf: 2 * OW + 1 zeros of g's
    dtype, the scratch rows R and T and a typed zero (one buffer per concurrent call).

    for a, z, r:  T_o = 0 + sum over oz reading z of g[a, oz, o, :]   (depth first)
                  R   = 0 + sum over o reading r of T_o                (then rows)
                  gx[a, z, r, c] = R[c + clo] + 0       (plain columns: one contiguous pass)
                  gx[a, z, r, c] = 0 + sum over oc reading c of R[oc]  (the others)

    These are the per-axis scatter-adds' sums in their order (each from zero, output
    indices increasing), so the result is theirs bit for bit; a plain row is read from g
    directly (0 + v is v but for the sign of zero, which the final + 0 restores).
    """
    d, h, w = gx.shape[1], gx.shape[2], gx.shape[3]
    od, oh, ow = g.shape[1], g.shape[2], g.shape[3]
    gf, gxf = g.reshape(g.size), gx.reshape(gx.size)
    R = buf[:ow]
    T = buf[ow:2 * ow]
    zero = buf[2 * ow]
    o = 0
    for a in range(gx.shape[0]):
        for z in range(d):
            zpl = zp[z + 1] - zp[z] == 1 and zo[zp[z]] == z + zlo
            for r in range(h):
                if zpl and rp[r + 1] - rp[r] == 1 and ro[rp[r]] == r + rlo:
                    src = gf
                    sb = ((a * od + z + zlo) * oh + r + rlo) * ow
                else:
                    for c in range(ow):
                        R[c] = zero
                    for jr in range(rp[r], rp[r + 1]):
                        orow = ro[jr]
                        for c in range(ow):
                            T[c] = zero
                        for jz in range(zp[z], zp[z + 1]):
                            b = ((a * od + zo[jz]) * oh + orow) * ow
                            for c in range(ow):
                                T[c] += gf[np.uint64(b + c)]
                        for c in range(ow):
                            R[c] += T[c]
                    src = buf
                    sb = 0
                if cs > 0:
                    for c in range(w):
                        gxf[np.uint64(o + c)] = zero
                    for k in range(cs):
                        i0 = sb + k
                        for c in range(w):
                            gxf[np.uint64(o + c)] += src[np.uint64(i0 + c * cs)]
                else:
                    i0 = sb + c0 + clo
                    dst = o + c0
                    for c in range(c1 - c0):
                        gxf[np.uint64(dst + c)] = src[np.uint64(i0 + c)] + zero
                    for part in range(2):
                        lo = 0 if part == 0 else c1
                        hi = c0 if part == 0 else w
                        for c in range(lo, hi):
                            acc = zero
                            for jc in range(cp[c], cp[c + 1]):
                                acc += src[np.uint64(sb + co[jc])]
                            gxf[np.uint64(o + c)] = acc
                o += w


def inverse(index, size):
    """CSR form of the inverse of an index table: (ptr (size + 1,), order) with the output
    positions reading input i at order[ptr[i]:ptr[i + 1]], increasing (int64)."""
    index = np.asarray(index, np.int64)
    order = np.argsort(index, kind="stable").astype(np.int64)
    ptr = np.zeros(size + 1, np.int64)
    np.cumsum(np.bincount(index, minlength=size), out=ptr[1:])
    return ptr, order
