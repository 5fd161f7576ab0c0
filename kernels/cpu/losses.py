"""Fused loss kernels on CPU: one pass forward, one pass backward (`nbtorch/ops/loss_fused.py`
routes mse/l1/smooth_l1/huber/bce/bce_with_logits/kl_div/nll_loss here on CPU).

The composed forms cost a kernel pass and an autograd node per elementwise op (smooth_l1:
sub, abs, compare, two multiplies, subtract, where, mean, and as many backward); these
kernels compute the same formulas (PyTorch's CPU kernels', see each body) on flat arrays:

    forward:   out[i] = loss(x[i], t[i]) * w[i]          ('none'), or
               total  = sum_i loss(x[i], t[i]) * w[i]    ('mean'/'sum': the caller scales)
    backward:  gx[i]  = dloss/dx(x[i], t[i], c) * w[i]    c = g[i] ('none') or coef

x, t (and the optional weight w, pos_weight pw) are C-contiguous 1-D arrays of one float
type; an absent weight is an empty array (one compiled signature either way). Each body is
computed in the array's type (float32 stays float32: `c(x, v)` constants, the vectorising
float32 exp/log of f32math). A reduction sums the loss values block by block: each block
of BLOCK values is summed in the array's type (vectorised, as `.sum()` sums, see
cpu/reduce.py) and the blocks in float64, without writing the values out.

Per-element coefficient `c`: the backward bodies take the upstream gradient already
multiplied by the reduction's scale (1/numel for 'mean'), so `c` is one scalar for a
reduced loss and g[i] for 'none'.
"""
import math

import numba
import numpy as np
from numba import types
from numba.extending import overload, register_jitable

from ..f32math import (_exp_f32, _log_reduced_f32, c, fexp, flog, flog1p, inline_into_loops,
                       select)
from ..scalar_activation import _sigmoid
from .reduce import _block_sum

__all__ = ["mse_forward", "mse_backward", "l1_forward", "l1_backward",
           "smooth_l1_forward", "smooth_l1_backward", "huber_forward", "huber_backward",
           "bce_forward", "bce_backward", "bce_logits_forward", "bce_logits_backward",
           "bce_logits_pw_forward", "bce_logits_pw_backward", "kl_forward", "kl_backward",
           "kl_log_forward", "kl_log_backward", "nll_forward", "nll_backward", "BLOCK"]

_JIT = dict(cache=True, error_model="numpy")
_BODY = dict(error_model="numpy", inline="always")
BLOCK = 1024


# ---- shared steps ---------------------------------------------------------------------

@numba.njit(**_JIT)
def _finish_block(seg, w, lo, reduce):
    """seg *= w[lo:lo + seg.size] when a weight is given (w.size); then seg's sum as a
    float64 when reducing (else 0.0)."""
    if w.size:
        ws = w[lo:lo + seg.size]
        for i in range(seg.size):
            seg[i] = seg[i] * ws[i]
    if reduce:
        return float(_block_sum(seg, bool(False)))
    return 0.0


@numba.njit(**_JIT)
def _scratch(x, out, reduce):
    """Where a block's values go: a block-sized scratch when reducing, else `out`."""
    return np.empty(min(BLOCK, x.size), x.dtype) if reduce else out


# ---- bodies: loss(x, t[, p]) and its derivative times c --------------------------------

@register_jitable(**_BODY)
def _mse(x, t):
    d = x - t
    return d * d


@register_jitable(**_BODY)
def _mse_grad(x, t, g):
    return (x - t) * c(x, 2.0) * g               # PyTorch's: (x - t) * norm * grad


@register_jitable(**_BODY)
def _l1_grad(x, t, g):
    d = x - t                                     # sign(d), 0 for 0 and NaN (abs' backward)
    return (select(d > 0, c(x, 1.0), c(x, 0.0)) - select(d < 0, c(x, 1.0), c(x, 0.0))) * g


@register_jitable(**_BODY)
def _smooth_l1(x, t, beta):
    z = abs(x - t)
    return select(z < beta, c(x, 0.5) * z * z / beta, z - c(x, 0.5) * beta)


@register_jitable(**_BODY)
def _smooth_l1_grad(x, t, beta, g):
    d = x - t
    inner = d * g / beta
    return select(d <= -beta, -g, select(d >= beta, g, inner))


@register_jitable(**_BODY)
def _huber(x, t, delta):
    z = abs(x - t)
    return select(z < delta, c(x, 0.5) * z * z, delta * (z - c(x, 0.5) * delta))


@register_jitable(**_BODY)
def _huber_grad(x, t, delta, g):
    d = x - t
    return select(d <= -delta, -g * delta, select(d >= delta, g * delta, d * g))


@register_jitable(**_BODY)
def _bce(x, t):
    """PyTorch's: (t - 1) max(log1p(-x), -100) - t max(log(x), -100)."""
    lo = c(x, -100.0)
    return (t - c(x, 1.0)) * max(flog1p(-x), lo) - t * max(flog(x), lo)


@register_jitable(**_BODY)
def _bce_grad(x, t, g):
    return g * (x - t) / max((c(x, 1.0) - x) * x, c(x, 1e-12))


def _softplus_neg(x):
    """-log(sigmoid(x)) = log1p(exp(-|x|)) - min(x, 0): finite for every finite x (the
    log1p term is at most log 2)."""
    return math.log1p(math.exp(-abs(x))) - min(x, 0.0)


@register_jitable(error_model="numpy")
def _softplus_neg_f32(x):
    """float32 `_softplus_neg` as f32math's softplus computes log(1 + e**-|x|): from the
    reduced argument of e**-|x| (in (0, 1]), without log1p's division (on 131,072 normal
    samples: 1.3e-7 largest relative error, and exp then log1p 1.8e-7 and a third slower).
    Unlike softplus it has no overflow cut-off: -|x| never overflows."""
    inline_into_loops()
    t = _exp_f32(-abs(x))
    high = t > np.float32(0.41421356237309503)
    r = _log_reduced_f32(select(high, (t - np.float32(1.0)) * np.float32(0.5), t),
                         select(high, np.float32(1.0), np.float32(0.0)))
    return r - select(x < 0, x, np.float32(0.0))


@overload(_softplus_neg, jit_options=dict(error_model="numpy"), inline="always")
def _softplus_neg_overload(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: _softplus_neg_f32(x)
    return lambda x: math.log1p(math.exp(-abs(x))) - select(x < 0, x, c(x, 0.0))


@register_jitable(**_BODY)
def _bce_logits(x, t):
    return (c(x, 1.0) - t) * x + _softplus_neg(x)


@register_jitable(**_BODY)
def _bce_logits_grad(x, t, g):
    return (_sigmoid(x) - t) * g


@register_jitable(**_BODY)
def _bce_logits_pw(x, t, pw):
    return (c(x, 1.0) - t) * x + ((pw - c(x, 1.0)) * t + c(x, 1.0)) * _softplus_neg(x)


@register_jitable(**_BODY)
def _bce_logits_pw_grad(x, t, pw, g):
    pt = pw * t                                   # PyTorch's: ((pw t + 1 - t) s - pw t) g
    return ((pt + c(x, 1.0) - t) * _sigmoid(x) - pt) * g


@register_jitable(**_BODY)
def _kl(x, t):
    """xlogy(t, t) - t x: 0 where t is 0, NaN where t < 0 (log of a negative)."""
    return t * flog(select(t != 0, t, c(x, 1.0))) - t * x


@register_jitable(**_BODY)
def _kl_log(x, t):
    return fexp(t) * (t - x)


# ---- forward kernels: fill `out` ('none') or return the float64 total -----------------
# One per loss (a kernel per body compiles only what a program uses); all the same loop.

@numba.njit(**_JIT)
def mse_forward(x, t, w, out, reduce):
    buf, total = _scratch(x, out, reduce), 0.0
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts = (buf[:hi - lo] if reduce else out[lo:hi]), x[lo:hi], t[lo:hi]
        for i in range(seg.size):
            seg[i] = _mse(xs[i], ts[i])
        total += _finish_block(seg, w, lo, reduce)
    return total


@numba.njit(**_JIT)
def l1_forward(x, t, w, out, reduce):
    buf, total = _scratch(x, out, reduce), 0.0
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts = (buf[:hi - lo] if reduce else out[lo:hi]), x[lo:hi], t[lo:hi]
        for i in range(seg.size):
            seg[i] = abs(xs[i] - ts[i])
        total += _finish_block(seg, w, lo, reduce)
    return total


@numba.njit(**_JIT)
def smooth_l1_forward(x, t, w, beta, out, reduce):
    buf, total, p = _scratch(x, out, reduce), 0.0, x.dtype.type(beta)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts = (buf[:hi - lo] if reduce else out[lo:hi]), x[lo:hi], t[lo:hi]
        for i in range(seg.size):
            seg[i] = _smooth_l1(xs[i], ts[i], p)
        total += _finish_block(seg, w, lo, reduce)
    return total


@numba.njit(**_JIT)
def huber_forward(x, t, w, delta, out, reduce):
    buf, total, p = _scratch(x, out, reduce), 0.0, x.dtype.type(delta)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts = (buf[:hi - lo] if reduce else out[lo:hi]), x[lo:hi], t[lo:hi]
        for i in range(seg.size):
            seg[i] = _huber(xs[i], ts[i], p)
        total += _finish_block(seg, w, lo, reduce)
    return total


@numba.njit(**_JIT)
def _outside_unit_interval(a):
    """True when some value is not in [0, 1] (NaN included)."""
    bad = False
    for i in range(a.size):
        v = a[i]
        bad |= not (v >= 0 and v <= 1)
    return bad


@numba.njit(**_JIT)
def bce_forward(x, t, w, out, reduce):
    """(total, status): status 1 when an input is outside [0, 1], 2 a target (input
    first, as PyTorch checks); nothing is computed then."""
    if _outside_unit_interval(x):
        return 0.0, 1
    if _outside_unit_interval(t):
        return 0.0, 2
    buf, total = _scratch(x, out, reduce), 0.0
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts = (buf[:hi - lo] if reduce else out[lo:hi]), x[lo:hi], t[lo:hi]
        for i in range(seg.size):
            seg[i] = _bce(xs[i], ts[i])
        total += _finish_block(seg, w, lo, reduce)
    return total, 0


@numba.njit(**_JIT)
def bce_logits_forward(x, t, w, out, reduce):
    buf, total = _scratch(x, out, reduce), 0.0
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts = (buf[:hi - lo] if reduce else out[lo:hi]), x[lo:hi], t[lo:hi]
        for i in range(seg.size):
            seg[i] = _bce_logits(xs[i], ts[i])
        total += _finish_block(seg, w, lo, reduce)
    return total


@numba.njit(**_JIT)
def bce_logits_pw_forward(x, t, w, pw, out, reduce):
    buf, total = _scratch(x, out, reduce), 0.0
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts = (buf[:hi - lo] if reduce else out[lo:hi]), x[lo:hi], t[lo:hi]
        ps = pw[lo:hi]
        for i in range(seg.size):
            seg[i] = _bce_logits_pw(xs[i], ts[i], ps[i])
        total += _finish_block(seg, w, lo, reduce)
    return total


@numba.njit(**_JIT)
def kl_forward(x, t, w, out, reduce):
    buf, total = _scratch(x, out, reduce), 0.0
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts = (buf[:hi - lo] if reduce else out[lo:hi]), x[lo:hi], t[lo:hi]
        for i in range(seg.size):
            seg[i] = _kl(xs[i], ts[i])
        total += _finish_block(seg, w, lo, reduce)
    return total


@numba.njit(**_JIT)
def kl_log_forward(x, t, w, out, reduce):
    buf, total = _scratch(x, out, reduce), 0.0
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts = (buf[:hi - lo] if reduce else out[lo:hi]), x[lo:hi], t[lo:hi]
        for i in range(seg.size):
            seg[i] = _kl_log(xs[i], ts[i])
        total += _finish_block(seg, w, lo, reduce)
    return total


# ---- backward kernels: gx = dloss/dx * (g[i] if g.size else coef) * w -----------------
# One loop per kernel: a reduced loss's coefficient is read from a block of its copies, as
# a 'none' loss's gradient is read from g (one vectorised loop to compile, not two).

@numba.njit(**_JIT)
def _coefficients(g, coef, lo, hi, copies):
    """The upstream gradients of elements lo:hi: g's, or `copies` of coef (g empty)."""
    return g[lo:hi] if g.size else copies[:hi - lo]


@numba.njit(**_JIT)
def _copies(gx, g, coef):
    """BLOCK copies of coef in gx's type where g is empty (else none)."""
    return np.full(0 if g.size else min(BLOCK, gx.size), coef, gx.dtype)


@numba.njit(**_JIT)
def mse_backward(x, t, w, g, coef, gx):
    copies = _copies(gx, g, coef)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts, gs = gx[lo:hi], x[lo:hi], t[lo:hi], _coefficients(g, coef, lo, hi, copies)
        for i in range(seg.size):
            seg[i] = _mse_grad(xs[i], ts[i], gs[i])
        _finish_block(seg, w, lo, False)


@numba.njit(**_JIT)
def l1_backward(x, t, w, g, coef, gx):
    copies = _copies(gx, g, coef)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts, gs = gx[lo:hi], x[lo:hi], t[lo:hi], _coefficients(g, coef, lo, hi, copies)
        for i in range(seg.size):
            seg[i] = _l1_grad(xs[i], ts[i], gs[i])
        _finish_block(seg, w, lo, False)


@numba.njit(**_JIT)
def smooth_l1_backward(x, t, w, beta, g, coef, gx):
    copies, p = _copies(gx, g, coef), x.dtype.type(beta)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts, gs = gx[lo:hi], x[lo:hi], t[lo:hi], _coefficients(g, coef, lo, hi, copies)
        for i in range(seg.size):
            seg[i] = _smooth_l1_grad(xs[i], ts[i], p, gs[i])
        _finish_block(seg, w, lo, False)


@numba.njit(**_JIT)
def huber_backward(x, t, w, delta, g, coef, gx):
    copies, p = _copies(gx, g, coef), x.dtype.type(delta)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts, gs = gx[lo:hi], x[lo:hi], t[lo:hi], _coefficients(g, coef, lo, hi, copies)
        for i in range(seg.size):
            seg[i] = _huber_grad(xs[i], ts[i], p, gs[i])
        _finish_block(seg, w, lo, False)


@numba.njit(**_JIT)
def bce_backward(x, t, w, g, coef, gx):
    copies = _copies(gx, g, coef)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts, gs = gx[lo:hi], x[lo:hi], t[lo:hi], _coefficients(g, coef, lo, hi, copies)
        for i in range(seg.size):
            seg[i] = _bce_grad(xs[i], ts[i], gs[i])
        _finish_block(seg, w, lo, False)


@numba.njit(**_JIT)
def bce_logits_backward(x, t, w, g, coef, gx):
    copies = _copies(gx, g, coef)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts, gs = gx[lo:hi], x[lo:hi], t[lo:hi], _coefficients(g, coef, lo, hi, copies)
        for i in range(seg.size):
            seg[i] = _bce_logits_grad(xs[i], ts[i], gs[i])
        _finish_block(seg, w, lo, False)


@numba.njit(**_JIT)
def bce_logits_pw_backward(x, t, w, pw, g, coef, gx):
    copies = _copies(gx, g, coef)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, xs, ts, gs = gx[lo:hi], x[lo:hi], t[lo:hi], _coefficients(g, coef, lo, hi, copies)
        ps = pw[lo:hi]
        for i in range(seg.size):
            seg[i] = _bce_logits_pw_grad(xs[i], ts[i], ps[i], gs[i])
        _finish_block(seg, w, lo, False)


@numba.njit(**_JIT)
def kl_backward(x, t, w, g, coef, gx):
    """d/dx (xlogy(t, t) - t x) = -t."""
    copies = _copies(gx, g, coef)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, ts, gs = gx[lo:hi], t[lo:hi], _coefficients(g, coef, lo, hi, copies)
        for i in range(seg.size):
            seg[i] = -(gs[i] * ts[i])
        _finish_block(seg, w, lo, False)


@numba.njit(**_JIT)
def kl_log_backward(x, t, w, g, coef, gx):
    """d/dx (exp(t) (t - x)) = -exp(t)."""
    copies = _copies(gx, g, coef)
    for lo in range(0, x.size, BLOCK):
        hi = min(lo + BLOCK, x.size)
        seg, ts, gs = gx[lo:hi], t[lo:hi], _coefficients(g, coef, lo, hi, copies)
        for i in range(seg.size):
            seg[i] = -(gs[i] * fexp(ts[i]))
        _finish_block(seg, w, lo, False)


# ---- nll_loss: x (N, C, D) log-probabilities, target (N, D) class indices --------------

@numba.njit(**_JIT)
def nll_forward(x, target, weight, ignore_index, out):
    """loss[n, d] = -x[n, target[n, d], d] * weight[target[n, d]] (weight: empty for
    none; an ignored target's loss and weight are 0). Fills out (N, D) when out.size
    ('none'); returns (sum of the losses, sum of the weights, status) with the sums in
    float64 and status -1, or the flat position of the first target out of [0, C)
    (nothing is computed then: targets are checked first)."""
    N, C, D = x.shape
    for n in range(N):
        for d in range(D):
            k = target[n, d]
            if k != ignore_index and (k < 0 or k >= C):
                return 0.0, 0.0, n * D + d
    one = x.dtype.type(1.0)
    total = 0.0
    wsum = 0.0
    for n in range(N):
        for d in range(D):
            k = target[n, d]
            v = x.dtype.type(0.0)
            if k != ignore_index:
                wk = weight[k] if weight.size else one
                v = -(x[n, k, d] * wk)
                wsum += float(wk)
                total += float(v)
            if out.size:
                out[n, d] = v
    return total, wsum, -1


@numba.njit(**_JIT)
def nll_backward(target, weight, ignore_index, g, coef, gx):
    """gx (N, C, D) = 0 except gx[n, target[n, d], d] = -weight[target] * c, with c =
    g[n, d] when g.size ('none'), else coef (targets are the forward's, checked)."""
    N, C, D = gx.shape
    flat = gx.reshape(gx.size)
    for i in range(flat.size):
        flat[i] = 0
    one = gx.dtype.type(1.0)
    cf = gx.dtype.type(coef)
    for n in range(N):
        for d in range(D):
            k = target[n, d]
            if k != ignore_index:
                wk = weight[k] if weight.size else one
                gx[n, k, d] = -(wk * (g[n, d] if g.size else cf))
