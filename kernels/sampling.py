"""Per-element samplers (Gamma, Poisson, Binomial) and the Gamma's reparameterisation
gradient, written once for the CPU (`cpu/sampling.py`) and CUDA (`cuda/sampling.py`) loops.

Every element i draws from its own counter-based stream: its n-th uniform is
Philox-4x32-10 (Salmon et al., SC'11) of the counter (i, n) under a 64-bit key
taken from nbtorch's generator. An element's sample is thus a pure function of
(key, i, its parameters), whatever the device, thread count or grid, and a
rejection loop can draw as many uniforms as it needs. All arithmetic is float64.

The helpers are ``register_jitable``: Numba compiles them into whichever loop
calls them, ``njit`` or ``cuda.jit``.
"""
import math

import numpy as np
from numba.extending import register_jitable

__all__ = ["philox", "uniform", "normal", "gamma_one", "poisson_one", "binomial_one",
           "gamma_grad_one", "key"]

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_S21 = np.uint64(21)
_MASK53 = np.uint64((1 << 53) - 1)
_TWO_PI = 6.283185307179586


def key(seed):
    """The two 32-bit key words (as uint64) of a 63-bit seed."""
    return np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)


@register_jitable
def philox(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10 of a 4-word counter and a 2-word key (uint64 words holding uint32)."""
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        n0 = ((p1 >> _S32) ^ c1 ^ k0) & _MASK
        n2 = ((p0 >> _S32) ^ c3 ^ k1) & _MASK
        c1 = p1 & _MASK
        c3 = p0 & _MASK
        c0 = n0
        c2 = n2
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
    return c0, c1, c2, c3


@register_jitable
def uniform(i, n, k0, k1):
    """The n-th uniform of element i's stream: 53 random bits, strictly inside (0, 1)."""
    x0, x1, x2, x3 = philox(np.uint64(i) & _MASK, np.uint64(i) >> _S32, np.uint64(n) & _MASK,
                            np.uint64(n) >> _S32, k0, k1)
    bits = ((x0 << _S21) ^ x1) & _MASK53
    return (np.float64(bits) + 0.5) * (1.0 / 9007199254740992.0)


@register_jitable
def normal(i, n, k0, k1):
    """A standard normal from uniforms n and n+1 of element i (Box-Muller)."""
    u1 = uniform(i, n, k0, k1)
    u2 = uniform(i, n + 1, k0, k1)
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(_TWO_PI * u2)


@register_jitable
def gamma_one(alpha, i, k0, k1):
    """A Gamma(alpha, 1) sample by Marsaglia and Tsang (2000); alpha < 1 is boosted:
    Gamma(alpha) = Gamma(alpha + 1) * U**(1/alpha), in logs so tiny alphas stay finite."""
    if not alpha > 0.0:
        return 0.0 if alpha == 0.0 else math.nan
    if alpha == math.inf:
        return math.inf
    a = alpha + 1.0 if alpha < 1.0 else alpha
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    n = 0
    while True:
        z = normal(i, n, k0, k1)
        u = uniform(i, n + 2, k0, k1)
        n += 3
        v = 1.0 + c * z
        if v <= 0.0:
            continue
        v = v * v * v
        if u < 1.0 - 0.0331 * (z * z) * (z * z) or \
                math.log(u) < 0.5 * z * z + d * (1.0 - v + math.log(v)):
            if alpha < 1.0:
                return math.exp(math.log(d * v) + math.log(uniform(i, n, k0, k1)) / alpha)
            return d * v


@register_jitable
def poisson_one(lam, i, k0, k1):
    """A Poisson(lam) count: multiplying uniforms below 10, else Hormann's transformed
    rejection with squeeze, PTRS (1993)."""
    if not lam > 0.0:
        return 0.0 if lam == 0.0 else math.nan
    if lam == math.inf:
        return math.inf
    n = 0
    if lam < 10.0:
        limit = math.exp(-lam)
        prod = uniform(i, n, k0, k1)
        k = 0.0
        while prod > limit:
            n += 1
            prod *= uniform(i, n, k0, k1)
            k += 1.0
        return k
    slam = math.sqrt(lam)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    while True:
        u = uniform(i, n, k0, k1) - 0.5
        v = uniform(i, n + 1, k0, k1)
        n += 2
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return k
        if k < 0.0 or (us < 0.013 and v > us):
            continue
        if (math.log(v) + math.log(inv_alpha) - math.log(a / (us * us) + b)
                <= -lam + k * loglam - math.lgamma(k + 1.0)):
            return k


@register_jitable
def binomial_one(count, prob, i, k0, k1):
    """A Binomial(count, prob) count: inversion while count * p < 10, else Hormann's BTRS
    (1993); p > 1/2 samples the failures."""
    if not (count >= 0.0 and prob >= 0.0 and prob <= 1.0):
        return math.nan
    if count == 0.0 or prob == 0.0:
        return 0.0
    if prob == 1.0:
        return count
    flip = prob > 0.5
    p = 1.0 - prob if flip else prob
    q = 1.0 - p
    n = 0
    if count * p < 10.0:
        s = p / q
        a = (count + 1.0) * s
        r0 = math.exp(count * math.log1p(-p))
        bound = min(count, count * p + 10.0 * math.sqrt(count * p * q + 1.0))
        while True:
            u = uniform(i, n, k0, k1)
            n += 1
            r = r0
            k = 0.0
            while u > r and k <= bound:
                u -= r
                k += 1.0
                r *= a / k - s
            if k <= bound:
                return count - k if flip else k
    spq = math.sqrt(count * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = count * p + 0.5
    vr = 0.92 - 4.2 / b
    alpha = (2.83 + 5.1 / b) * spq
    lpq = math.log(p / q)
    m = math.floor((count + 1.0) * p)
    h = math.lgamma(m + 1.0) + math.lgamma(count - m + 1.0)
    while True:
        u = uniform(i, n, k0, k1) - 0.5
        v = uniform(i, n + 1, k0, k1)
        n += 2
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + c)
        if k < 0.0 or k > count:
            continue
        if us >= 0.07 and v <= vr:
            return count - k if flip else k
        v = math.log(v * alpha / (a / (us * us) + b))
        if v <= h - math.lgamma(k + 1.0) - math.lgamma(count - k + 1.0) + (k - m) * lpq:
            return count - k if flip else k


@register_jitable
def _psi(x):
    """digamma for x > 0: recurrence up to 10, then the asymptotic series."""
    shift = 0.0
    while x < 10.0:
        shift -= 1.0 / x
        x += 1.0
    z = 1.0 / (x * x)
    series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (
        1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12.0))))))
    return shift + math.log(x) - 0.5 / x - series


@register_jitable
def gamma_grad_one(x, alpha):
    """dx/dalpha of a Gamma(alpha, 1) sample x at fixed CDF value (implicit
    reparameterisation): -(dP/dalpha) / pdf(x), with P the regularised incomplete gamma.

    Below x = alpha + 1, P's power series differentiated term by term; above, Q = 1 - P's
    continued fraction (modified Lentz) carried with its derivative (forward mode). Both
    are divided by the density analytically, so nothing underflows.
    """
    if not (x > 0.0 and alpha > 0.0) or x == math.inf or alpha == math.inf:
        return 0.0 if x == 0.0 else math.nan
    logx = math.log(x)
    if x < alpha + 1.0:
        # P/pdf = sum_n s_n, s_0 = x/alpha, s_n+1 = s_n x/(alpha+n+1); term n carries
        # d/dalpha log(term_n) = log x - psi(alpha + n + 1)
        s = x / alpha
        psi = _psi(alpha + 1.0)
        total = s * (logx - psi)
        mag = s
        k = 1.0
        while k < 100000.0:
            s *= x / (alpha + k)
            psi += 1.0 / (alpha + k)
            total += s * (logx - psi)
            mag += s
            if s < 1e-17 * mag:
                break
            k += 1.0
        return -total
    # Q/pdf = x h, h = the continued fraction 1/(b0 + a1/(b1 + ...)), b0 = x + 1 - alpha;
    # dQ/dalpha / pdf = x (h (log x - psi(alpha)) + dh/dalpha)
    tiny = 1e-300
    b = x + 1.0 - alpha
    db = -1.0
    c = 1.0 / tiny
    dc = 0.0
    d = 1.0 / b
    dd = -db / (b * b)
    h = d
    dh = dd
    k = 1.0
    while k < 100000.0:
        an = -k * (k - alpha)
        dan = k
        b += 2.0
        d_new = an * d + b
        dd = dan * d + an * dd + db
        if abs(d_new) < tiny:
            d_new = tiny
        c_new = b + an / c
        dc = db + (dan * c - an * dc) / (c * c)
        if abs(c_new) < tiny:
            c_new = tiny
        d = 1.0 / d_new
        dd = -dd * d * d
        c = c_new
        delta = d * c
        ddelta = dd * c + d * dc
        dh_new = dh * delta + h * ddelta
        h *= delta
        # the derivative must converge too: at an integer alpha the fraction ends (a_k = 0,
        # delta = 1) while a_k's derivative keeps the tail in play
        done = abs(delta - 1.0) < 1e-16 and abs(dh_new - dh) <= 1e-16 * abs(dh_new)
        dh = dh_new
        if done:
            break
        k += 1.0
    return x * (h * (logx - _psi(alpha)) + dh)
