"""Batch, layer and group normalisation on CUDA: one block per channel / row / group.

Contracts of kernels/cpu/norm.py (x3 (N, C, S) or x2 (M, K) C-contiguous;
float64 statistics; weight/bias arrays of x's dtype, ones/zeros when absent).
Each block owns one normalisation set and does, with `block_reduce` sums::

    stats:    d = x - x[first]; s1 = sum d; s2 = sum d*d   (float64, shifted one pass)
              mean = shift + s1/M; var = max(s2/M - (s1/M)^2, 0); rstd = 1/sqrt(var+eps)
    forward:  out = (x - mean) * rstd * w + b            (same block, no second launch)
    backward: per-set sums of dy and dy*(x - mean) by block reduction, then gx in
              the same block; layer norm's gw/gb (sums over rows) take one thread per
              column, group norm's one thread per channel over per-(n, c) sums.
"""
import math

import numpy as np
from numba import cuda

from ..shared import group_norm_input_grad, group_norm_terms
from ._launch import THREADS, grid
from .reduce import BLOCK, SUM, block_reduce

__all__ = ["batch_norm_forward_train", "batch_norm_forward_eval", "batch_norm_update_running",
           "batch_norm_backward", "layer_norm_forward", "layer_norm_backward",
           "group_norm_forward", "group_norm_backward", "typecheck_signatures"]


@cuda.jit(device=True)
def _bsum(sh, v):
    return block_reduce(sh, v, SUM, 0.0)


# ---- batch norm: elements of channel c are x3[e // S, c, e % S], e < N*S --------------

@cuda.jit(cache=True)
def bn_forward_kernel(x3, w, b, eps, out3, mean, var, invstd, rm, rv, train):
    """Per channel (a block each): stats (train) or running stats (eval), then the affine."""
    sh = cuda.shared.array(BLOCK, mean.dtype)
    N, C, S = x3.shape
    M = N * S
    tid, nt = cuda.threadIdx.x, cuda.blockDim.x
    for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
        if train:
            shift = float(x3[0, c, 0])
            s1 = 0.0
            s2 = 0.0
            for e in range(tid, M, nt):
                d = x3[e // S, c, e % S] - shift
                s1 += d
                s2 += d * d
            s1 = _bsum(sh, s1) / M
            s2 = _bsum(sh, s2) / M
            m = shift + s1
            v = max(s2 - s1 * s1, 0.0)
        else:
            m = float(rm[c])
            v = float(rv[c])
        r = 1.0 / math.sqrt(v + eps)
        if tid == 0:
            mean[c] = m
            invstd[c] = r
            if train:
                var[c] = v
        scale = w[c] * r
        offset = b[c] - m * scale
        for e in range(tid, M, nt):
            n = e // S
            s = e - n * S
            out3[n, c, s] = x3[n, c, s] * scale + offset


@cuda.jit(cache=True)
def bn_update_running_kernel(rm, rv, mean, var, momentum, unbias, has_rm, has_rv):
    """running = (1 - momentum) * running + momentum * stat (var unbiased)."""
    for c in range(cuda.grid(1), mean.size, cuda.gridsize(1)):
        if has_rm:
            rm[c] = rm[c] * (1.0 - momentum) + momentum * mean[c]
        if has_rv:
            rv[c] = rv[c] * (1.0 - momentum) + momentum * var[c] * unbias


@cuda.jit(cache=True)
def bn_backward_kernel(dy3, x3, mean, invstd, w, gx3, gw, gb, batch_stats, compute_gx):
    """Per channel: gb = sum dy; gw = sum dy*(x-mean)*invstd; gx in the same block."""
    sh = cuda.shared.array(BLOCK, mean.dtype)
    N, C, S = x3.shape
    M = N * S
    tid, nt = cuda.threadIdx.x, cuda.blockDim.x
    for c in range(cuda.blockIdx.x, C, cuda.gridDim.x):
        mu = mean[c]
        sdy = 0.0
        sdyx = 0.0
        for e in range(tid, M, nt):
            g = float(dy3[e // S, c, e % S])
            sdy += g
            sdyx += g * (x3[e // S, c, e % S] - mu)
        sdy = _bsum(sh, sdy)
        sdyx = _bsum(sh, sdyx)
        r = invstd[c]
        if tid == 0:
            gb[c] = sdy
            gw[c] = sdyx * r
        if compute_gx:
            k = w[c] * r
            mdy = sdy / M if batch_stats else 0.0
            proj = r * r * sdyx / M if batch_stats else 0.0
            for e in range(tid, M, nt):
                n = e // S
                s = e - n * S
                gx3[n, c, s] = k * (dy3[n, c, s] - mdy - (x3[n, c, s] - mu) * proj)


# ---- layer norm (rows of x2) and group norm (contiguous groups of x3[n]) --------------

@cuda.jit(device=True)
def _mean_rstd(sh, x3, n, c0, count, eps):
    """(mean, rstd) of the `count` elements x3[n, c0 + e // S, e % S], block-wide."""
    tid, nt = cuda.threadIdx.x, cuda.blockDim.x
    S = x3.shape[2]
    shift = float(x3[n, c0, 0])
    s1 = 0.0
    s2 = 0.0
    for e in range(tid, count, nt):
        d = x3[n, c0 + e // S, e % S] - shift
        s1 += d
        s2 += d * d
    s1 = _bsum(sh, s1) / count
    s2 = _bsum(sh, s2) / count
    return shift + s1, 1.0 / math.sqrt(max(s2 - s1 * s1, 0.0) + eps)


@cuda.jit(cache=True)
def ln_forward_kernel(x3, w, b, eps, out3, mean, rstd):
    """Row r of x3 (M, 1, K) (a block each): out = (x - mean) * rstd * w + b."""
    sh = cuda.shared.array(BLOCK, mean.dtype)
    M, K = x3.shape[0], x3.shape[2]
    tid, nt = cuda.threadIdx.x, cuda.blockDim.x
    for r in range(cuda.blockIdx.x, M, cuda.gridDim.x):
        m, rs = _mean_rstd(sh, x3, r, 0, K, eps)
        if tid == 0:
            mean[r] = m
            rstd[r] = rs
        for k in range(tid, K, nt):
            out3[r, 0, k] = (x3[r, 0, k] - m) * rs * w[k] + b[k]


@cuda.jit(cache=True)
def ln_backward_rows_kernel(dy2, x2, mean, rstd, w, gx2):
    """gx = rstd * (dy*w - sum(dy*w)/K - xhat * sum(dy*w*xhat)/K), a block per row."""
    sh = cuda.shared.array(BLOCK, mean.dtype)
    M, K = x2.shape
    tid, nt = cuda.threadIdx.x, cuda.blockDim.x
    for r in range(cuda.blockIdx.x, M, cuda.gridDim.x):
        m = mean[r]
        rs = rstd[r]
        sg = 0.0
        sgx = 0.0
        for k in range(tid, K, nt):
            g = dy2[r, k] * float(w[k])
            sg += g
            sgx += g * (x2[r, k] - m) * rs
        a = _bsum(sh, sg) / K
        c = _bsum(sh, sgx) / K
        for k in range(tid, K, nt):
            gx2[r, k] = rs * (dy2[r, k] * w[k] - a - (x2[r, k] - m) * rs * c)


@cuda.jit(cache=True)
def ln_backward_params_kernel(dy2, x2, mean, rstd, gw, gb):
    """gw[k] = sum_r dy*xhat, gb[k] = sum_r dy: a thread per column (coalesced rows)."""
    M, K = x2.shape
    for k in range(cuda.grid(1), K, cuda.gridsize(1)):
        sw = 0.0
        sb = 0.0
        for r in range(M):
            d = float(dy2[r, k])
            sw += d * (x2[r, k] - mean[r]) * rstd[r]
            sb += d
        gw[k] = sw
        gb[k] = sb


@cuda.jit(cache=True)
def gn_forward_kernel(x3, G, w, b, eps, out3, mean, rstd):
    """Group i = n*G + g (a block each): stats over channels g*Cg..(g+1)*Cg, then affine."""
    sh = cuda.shared.array(BLOCK, mean.dtype)
    N, C, S = x3.shape
    Cg = C // G
    tid, nt = cuda.threadIdx.x, cuda.blockDim.x
    for i in range(cuda.blockIdx.x, N * G, cuda.gridDim.x):
        n = i // G
        c0 = (i - n * G) * Cg
        m, rs = _mean_rstd(sh, x3, n, c0, Cg * S, eps)
        if tid == 0:
            mean[i] = m
            rstd[i] = rs
        for e in range(tid, Cg * S, nt):
            c = c0 + e // S
            s = e % S
            a = rs * w[c]
            out3[n, c, s] = x3[n, c, s] * a + (b[c] - m * a)


@cuda.jit(cache=True)
def gn_backward_groups_kernel(dy3, x3, mean, rstd, w, G, gx3, ds, db, compute_gx):
    """Per group: ds/db[n, c] = sums of dy*(x-mean) and dy over s; then gx (same block)."""
    sh = cuda.shared.array(BLOCK, mean.dtype)
    N, C, S = x3.shape
    Cg = C // G
    tid, nt = cuda.threadIdx.x, cuda.blockDim.x
    for i in range(cuda.blockIdx.x, N * G, cuda.gridDim.x):
        n = i // G
        c0 = (i - n * G) * Cg
        m = mean[i]
        rs = rstd[i]
        sum_g = 0.0
        sum_gx = 0.0
        for c in range(c0, c0 + Cg):
            a = 0.0
            d = 0.0
            for s in range(tid, S, nt):
                g = float(dy3[n, c, s])
                d += g
                a += g * (x3[n, c, s] - m)
            a = _bsum(sh, a)
            d = _bsum(sh, d)
            if tid == 0:
                ds[n, c] = a
                db[n, c] = d
            sum_g += w[c] * d
            sum_gx += w[c] * a
        if compute_gx:
            mg, proj = group_norm_terms(sum_g, sum_gx, rs, Cg * S)
            for e in range(tid, Cg * S, nt):
                c = c0 + e // S
                s = e % S
                gx3[n, c, s] = group_norm_input_grad(dy3[n, c, s], x3[n, c, s], w[c], m, rs,
                                                     mg, proj)


@cuda.jit(cache=True)
def gn_backward_params_kernel(rstd, G, ds, db, gw, gb):
    """gw[c] = sum_n ds[n, c] * rstd[n*G + c // Cg]; gb[c] = sum_n db[n, c]."""
    N, C = ds.shape
    Cg = C // G
    for c in range(cuda.grid(1), C, cuda.gridsize(1)):
        sw = 0.0
        sb = 0.0
        for n in range(N):
            sw += ds[n, c] * rstd[n * G + c // Cg]
            sb += db[n, c]
        gw[c] = sw
        gb[c] = sb


# ---- launchers -----------------------------------------------------------------------

def _blocks(items):
    """A block per item (grid-stride beyond the grid limit)."""
    return grid(max(items, 1) * THREADS)


def batch_norm_forward_train(x3, weight, bias, eps, out3, mean, var, invstd, stream=0):
    bn_forward_kernel[_blocks(x3.shape[1]) + (stream,)](
        x3, weight, bias, float(eps), out3, mean, var, invstd, mean, var, True)


def batch_norm_forward_eval(x3, weight, bias, running_mean, running_var, eps, out3, mean,
                            invstd, stream=0):
    bn_forward_kernel[_blocks(x3.shape[1]) + (stream,)](
        x3, weight, bias, float(eps), out3, mean, invstd, invstd, running_mean, running_var,
        False)


def batch_norm_update_running(running_mean, running_var, mean, var, momentum, count,
                              stream=0):
    if running_mean is None and running_var is None:
        return
    rm = mean if running_mean is None else running_mean
    rv = rm if running_var is None else running_var
    bn_update_running_kernel[grid(mean.size) + (stream,)](
        rm, rv, mean, var, float(momentum), count / max(count - 1, 1),
        running_mean is not None, running_var is not None)


def batch_norm_backward(dy3, x3, mean, invstd, weight, gx3, gw, gb, batch_stats=True,
                        compute_gx=True, stream=0):
    bn_backward_kernel[_blocks(x3.shape[1]) + (stream,)](
        dy3, x3, mean, invstd, weight, gx3, gw, gb, bool(batch_stats), bool(compute_gx))


def layer_norm_forward(x2, w, b, eps, out2, mean, rstd, stream=0):
    if x2.shape[1]:
        M, K = x2.shape
        ln_forward_kernel[_blocks(M) + (stream,)](x2.reshape(M, 1, K), w, b, float(eps),
                                                  out2.reshape(M, 1, K), mean, rstd)


def layer_norm_backward(dy2, x2, mean, rstd, w, gx2, gw, gb, compute_gx=True, stream=0):
    if compute_gx and x2.size:
        ln_backward_rows_kernel[_blocks(x2.shape[0]) + (stream,)](dy2, x2, mean, rstd, w, gx2)
    ln_backward_params_kernel[grid(max(x2.shape[1], 1)) + (stream,)](dy2, x2, mean, rstd,
                                                                     gw, gb)


def group_norm_forward(x3, G, w, b, eps, out3, mean, rstd, stream=0):
    if x3.size:
        gn_forward_kernel[_blocks(x3.shape[0] * G) + (stream,)](x3, int(G), w, b, float(eps),
                                                                out3, mean, rstd)


def group_norm_backward(dy3, x3, mean, rstd, w, G, gx3, gw, gb, compute_gx=True, stream=0):
    N, C = x3.shape[0], x3.shape[1]
    ds = cuda.device_array((2, N, C), np.float64, stream=stream)
    if x3.size:
        gn_backward_groups_kernel[_blocks(N * G) + (stream,)](
            dy3, x3, mean, rstd, w, int(G), gx3, ds[0], ds[1], bool(compute_gx))
    else:
        from . import copy
        copy.fill(ds, np.float64(0), stream)
    gn_backward_params_kernel[grid(max(C, 1)) + (stream,)](rstd, int(G), ds[0], ds[1], gw, gb)


def typecheck_signatures():
    from numba import types as nt
    f64, i, b = nt.float64, nt.int64, nt.boolean
    d1 = nt.Array(f64, 1, "C")
    for t in (nt.float32, nt.float64):
        a1, a2, a3 = (nt.Array(t, k, "C") for k in (1, 2, 3))
        yield (f"bn_forward[{t}]", bn_forward_kernel.py_func,
               (a3, a1, a1, f64, a3, d1, d1, d1, a1, a1, b))
        yield (f"bn_update_running[{t}]", bn_update_running_kernel.py_func,
               (a1, a1, d1, d1, f64, f64, b, b))
        yield (f"bn_backward[{t}]", bn_backward_kernel.py_func,
               (a3, a3, d1, d1, a1, a3, d1, d1, b, b))
        yield (f"ln_forward[{t}]", ln_forward_kernel.py_func, (a3, a1, a1, f64, a3, d1, d1))
        yield (f"gn_forward_strided[{t}]", gn_forward_kernel.py_func,
               (nt.Array(t, 3, "A"), i, a1, a1, f64, nt.Array(t, 3, "A"), d1, d1))
        yield (f"ln_backward_rows[{t}]", ln_backward_rows_kernel.py_func,
               (a2, a2, d1, d1, a1, a2))
        yield (f"ln_backward_params[{t}]", ln_backward_params_kernel.py_func,
               (a2, a2, d1, d1, d1, d1))
        yield (f"gn_forward[{t}]", gn_forward_kernel.py_func, (a3, i, a1, a1, f64, a3, d1, d1))
        yield (f"gn_backward_groups[{t}]", gn_backward_groups_kernel.py_func,
               (a3, a3, d1, d1, a1, i, a3, nt.Array(f64, 2, "A"), nt.Array(f64, 2, "A"), b))
    yield ("gn_backward_params", gn_backward_params_kernel.py_func,
           (d1, i, nt.Array(f64, 2, "A"), nt.Array(f64, 2, "A"), d1, d1))
