"""Fused updates of the Adam family (Adam/AdamW, Adamax, NAdam, RAdam): one pass over a
parameter per step, in place.

The layout, scalar conventions and the serial/parallel pair per rule are those
of `kernels/cpu/optim.py` (read its docstring first); the `*_element`
functions are compiled for CUDA too (`kernels/cuda/optim.py`).
"""
import math

import numba

from ..fma import fma, lerp
from .optim import _JIT, _or_unused, _pick

__all__ = ["adam_step", "adamax_step", "nadam_step", "radam_step", "adam_scalars",
           "nadam_scalars", "radam_scalars"]


# ---------------------------------------------------------------------------
# Adam / AdamW
# ---------------------------------------------------------------------------
@numba.njit(**_JIT)
def adam_element(p, g, m, v, vmax, decay, weight_decay, one_minus_beta1, beta2,
                 one_minus_beta2, eps, step_size, bias_correction2_sqrt, amsgrad,
                 maximize, decoupled):
    """One element of torch.optim.Adam (AdamW when `decoupled`: p *= decay first).

    Returns (param, exp_avg, exp_avg_sq, max_exp_avg_sq).
    """
    if maximize:
        g = -g
    if decoupled:
        p = p * decay
    elif weight_decay != 0:
        g = fma(p, weight_decay, g)
    m = lerp(m, g, one_minus_beta1)
    v = fma(one_minus_beta2 * g, g, v * beta2)
    if amsgrad:
        if v > vmax or v != v:       # torch.maximum: NaN propagates
            vmax = v
        denom = math.sqrt(vmax) / bias_correction2_sqrt + eps
    else:
        denom = math.sqrt(v) / bias_correction2_sqrt + eps
    return p - step_size * m / denom, m, v, vmax


@numba.njit(inline="always", **_JIT)
def _adam_loop(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay, weight_decay, beta1,
               beta2, eps, step_size, bias_correction2_sqrt, amsgrad, maximize, decoupled):
    """The element loop of `adam_step_serial` and `adam_step_parallel` (prange is range in
    the serial one), inlined into each twice: with `amsgrad` a constant, the loop without
    it never touches `max_exp_avg_sq`. (Touched behind a run-time flag, the unused buffer
    stood in LLVM's overlap check and in its masked loads: by where the heap had put the
    empty array standing for it, a 784x512 float32 update took 0.2 ms, 1.5 ms (the
    scalar loop, the check failed) or 10 ms (masked loads over untouched pages).)"""
    t = param.dtype.type
    decay, weight_decay, eps, step_size = t(decay), t(weight_decay), t(eps), t(step_size)
    one_minus_beta1, one_minus_beta2 = t(1.0 - beta1), t(1.0 - beta2)
    beta2, bias_correction2_sqrt = t(beta2), t(bias_correction2_sqrt)
    zero = t(0)
    for i in numba.prange(param.size):
        vmax = max_exp_avg_sq[i] if amsgrad else zero
        p, m, v, vmax = adam_element(
            param[i], grad[i], exp_avg[i], exp_avg_sq[i], vmax, decay, weight_decay,
            one_minus_beta1, beta2, one_minus_beta2, eps, step_size,
            bias_correction2_sqrt, amsgrad, maximize, decoupled)
        param[i] = p
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if amsgrad:
            max_exp_avg_sq[i] = vmax


@numba.njit(inline="always", **_JIT)
def _adam_versions(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay, weight_decay,
                   beta1, beta2, eps, step_size, bias_correction2_sqrt, amsgrad, maximize,
                   decoupled):
    """`_adam_loop` with `amsgrad` made a constant."""
    if amsgrad:
        _adam_loop(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay, weight_decay,
                   beta1, beta2, eps, step_size, bias_correction2_sqrt, True, maximize,
                   decoupled)
    else:
        _adam_loop(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay, weight_decay,
                   beta1, beta2, eps, step_size, bias_correction2_sqrt, False, maximize,
                   decoupled)


@numba.njit(**_JIT)
def adam_step_serial(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay,
                     weight_decay, beta1, beta2, eps, step_size, bias_correction2_sqrt,
                     amsgrad, maximize, decoupled):
    """for i: param[i], exp_avg[i], exp_avg_sq[i], max_exp_avg_sq[i] = adam_element(...).

    `max_exp_avg_sq` is used only when `amsgrad`.
    """
    _adam_versions(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay, weight_decay,
                   beta1, beta2, eps, step_size, bias_correction2_sqrt, amsgrad, maximize,
                   decoupled)


@numba.njit(parallel=True, **_JIT)
def adam_step_parallel(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay,
                       weight_decay, beta1, beta2, eps, step_size, bias_correction2_sqrt,
                       amsgrad, maximize, decoupled):
    """`adam_step_serial` with the element loop split across threads."""
    _adam_versions(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay, weight_decay,
                   beta1, beta2, eps, step_size, bias_correction2_sqrt, amsgrad, maximize,
                   decoupled)


def adam_scalars(lr, beta1, beta2, weight_decay, step, decoupled):
    """Per-step Python floats of Adam: (decay, step_size, bias_correction2_sqrt).

    `step` counts this update (1 on the first). Shared with the CUDA kernel.
    """
    decay = 1.0 - lr * weight_decay if decoupled else 1.0
    step_size = lr / (1.0 - beta1 ** step)
    return decay, step_size, (1.0 - beta2 ** step) ** 0.5


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps,
              weight_decay, step, amsgrad, maximize, decoupled):
    """Adam (AdamW if `decoupled`) update of flat `param` in place; `step` >= 1."""
    decay, step_size, bc2_sqrt = adam_scalars(float(lr), float(beta1), float(beta2),
                                              float(weight_decay), float(step), decoupled)
    _pick(adam_step_serial, adam_step_parallel, param.size)(
        param, grad, exp_avg, exp_avg_sq, _or_unused(max_exp_avg_sq, param), decay,
        float(weight_decay), float(beta1), float(beta2), float(eps), step_size, bc2_sqrt,
        bool(amsgrad), bool(maximize), bool(decoupled))


# ---------------------------------------------------------------------------
# Adamax
# ---------------------------------------------------------------------------
@numba.njit(**_JIT)
def adamax_element(p, g, m, u, weight_decay, one_minus_beta1, beta2, eps, clr, maximize):
    """One element of torch.optim.Adamax: the second moment is an exponentially
    weighted infinity norm ``u = max(beta2 u, |g| + eps)``; returns (param, exp_avg, exp_inf).
    """
    if maximize:
        g = -g
    if weight_decay != 0:
        g = fma(p, weight_decay, g)
    m = lerp(m, g, one_minus_beta1)
    a = u * beta2
    b = abs(g) + eps
    u = a if (a > b or a != a) else b      # torch.maximum: NaN propagates
    return p - clr * m / u, m, u


@numba.njit(**_JIT)
def adamax_step_serial(param, grad, exp_avg, exp_inf, weight_decay, beta1, beta2, eps, clr,
                       maximize):
    """for i: param[i], exp_avg[i], exp_inf[i] = adamax_element(...)."""
    t = param.dtype.type
    weight_decay, one_minus_beta1, beta2 = t(weight_decay), t(1.0 - beta1), t(beta2)
    eps, clr = t(eps), t(clr)
    for i in range(param.size):
        p, m, u = adamax_element(param[i], grad[i], exp_avg[i], exp_inf[i], weight_decay,
                                 one_minus_beta1, beta2, eps, clr, maximize)
        param[i] = p
        exp_avg[i] = m
        exp_inf[i] = u


@numba.njit(parallel=True, **_JIT)
def adamax_step_parallel(param, grad, exp_avg, exp_inf, weight_decay, beta1, beta2, eps, clr,
                         maximize):
    """`adamax_step_serial` with the element loop split across threads."""
    t = param.dtype.type
    weight_decay, one_minus_beta1, beta2 = t(weight_decay), t(1.0 - beta1), t(beta2)
    eps, clr = t(eps), t(clr)
    for i in numba.prange(param.size):
        p, m, u = adamax_element(param[i], grad[i], exp_avg[i], exp_inf[i], weight_decay,
                                 one_minus_beta1, beta2, eps, clr, maximize)
        param[i] = p
        exp_avg[i] = m
        exp_inf[i] = u


def adamax_step(param, grad, exp_avg, exp_inf, lr, beta1, beta2, eps, weight_decay, step,
                maximize):
    """Adamax update of flat `param` in place; `step` >= 1 (rate lr / (1 - beta1^step))."""
    clr = float(lr) / (1.0 - float(beta1) ** float(step))
    _pick(adamax_step_serial, adamax_step_parallel, param.size)(
        param, grad, exp_avg, exp_inf, float(weight_decay), float(beta1), float(beta2),
        float(eps), clr, bool(maximize))


# ---------------------------------------------------------------------------
# NAdam
# ---------------------------------------------------------------------------
@numba.njit(**_JIT)
def nadam_element(p, g, m, v, decay, weight_decay, one_minus_beta1, beta2, one_minus_beta2,
                  bias_correction2, eps, grad_coef, avg_coef, maximize, decoupled):
    """One element of torch.optim.NAdam (decoupled: p *= decay instead of L2):
    ``p += grad_coef g / denom + avg_coef m / denom``, ``denom = sqrt(v / bc2) + eps``.

    Returns (param, exp_avg, exp_avg_sq).
    """
    if maximize:
        g = -g
    if weight_decay != 0:
        if decoupled:
            p = p * decay
        else:
            g = fma(p, weight_decay, g)
    m = lerp(m, g, one_minus_beta1)
    v = fma(one_minus_beta2 * g, g, v * beta2)
    denom = math.sqrt(v / bias_correction2) + eps
    p = p + grad_coef * g / denom
    return p + avg_coef * m / denom, m, v


@numba.njit(**_JIT)
def nadam_step_serial(param, grad, exp_avg, exp_avg_sq, decay, weight_decay, beta1, beta2,
                      bias_correction2, eps, grad_coef, avg_coef, maximize, decoupled):
    """for i: param[i], exp_avg[i], exp_avg_sq[i] = nadam_element(...)."""
    t = param.dtype.type
    decay, weight_decay, one_minus_beta1 = t(decay), t(weight_decay), t(1.0 - beta1)
    one_minus_beta2, beta2, bias_correction2 = t(1.0 - beta2), t(beta2), t(bias_correction2)
    eps, grad_coef, avg_coef = t(eps), t(grad_coef), t(avg_coef)
    for i in range(param.size):
        p, m, v = nadam_element(param[i], grad[i], exp_avg[i], exp_avg_sq[i], decay,
                                weight_decay, one_minus_beta1, beta2, one_minus_beta2,
                                bias_correction2, eps, grad_coef, avg_coef, maximize,
                                decoupled)
        param[i] = p
        exp_avg[i] = m
        exp_avg_sq[i] = v


@numba.njit(parallel=True, **_JIT)
def nadam_step_parallel(param, grad, exp_avg, exp_avg_sq, decay, weight_decay, beta1, beta2,
                        bias_correction2, eps, grad_coef, avg_coef, maximize, decoupled):
    """`nadam_step_serial` with the element loop split across threads."""
    t = param.dtype.type
    decay, weight_decay, one_minus_beta1 = t(decay), t(weight_decay), t(1.0 - beta1)
    one_minus_beta2, beta2, bias_correction2 = t(1.0 - beta2), t(beta2), t(bias_correction2)
    eps, grad_coef, avg_coef = t(eps), t(grad_coef), t(avg_coef)
    for i in numba.prange(param.size):
        p, m, v = nadam_element(param[i], grad[i], exp_avg[i], exp_avg_sq[i], decay,
                                weight_decay, one_minus_beta1, beta2, one_minus_beta2,
                                bias_correction2, eps, grad_coef, avg_coef, maximize,
                                decoupled)
        param[i] = p
        exp_avg[i] = m
        exp_avg_sq[i] = v


def nadam_scalars(lr, beta2, weight_decay, mu, mu_next, mu_product, step, decoupled):
    """Per-step Python floats of NAdam: (decay, bias_correction2, grad_coef, avg_coef).

    `mu` and `mu_next` are this step's and the next step's momentum
    coefficients, `mu_product` the product of every mu so far (this one
    included). Shared with the CUDA kernel.
    """
    decay = 1.0 - lr * weight_decay if decoupled else 1.0
    grad_coef = -lr * (1.0 - mu) / (1.0 - mu_product)
    avg_coef = (-lr * mu_next) / (1.0 - mu_product * mu_next)
    return decay, 1.0 - beta2 ** step, grad_coef, avg_coef


def nadam_step(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, mu,
               mu_next, mu_product, step, decoupled, maximize):
    """NAdam update of flat `param` in place; `step` >= 1."""
    decay, bc2, grad_coef, avg_coef = nadam_scalars(
        float(lr), float(beta2), float(weight_decay), float(mu), float(mu_next),
        float(mu_product), float(step), decoupled)
    _pick(nadam_step_serial, nadam_step_parallel, param.size)(
        param, grad, exp_avg, exp_avg_sq, decay, float(weight_decay), float(beta1),
        float(beta2), bc2, float(eps), grad_coef, avg_coef, bool(maximize), bool(decoupled))


# ---------------------------------------------------------------------------
# RAdam
# ---------------------------------------------------------------------------
@numba.njit(**_JIT)
def radam_element(p, g, m, v, decay, weight_decay, one_minus_beta1, beta2, one_minus_beta2,
                  bias_correction1, lr, bias_correction2_sqrt, rect, one, eps, rectify,
                  maximize, decoupled):
    """One element of torch.optim.RAdam (decoupled: p *= decay instead of L2).

    While the variance of the adaptive rate is intractable (`rectify` False)
    the step is plain momentum: ``p -= lr m / bc1``; then
    ``p -= lr m / bc1 * sqrt(bc2) / (sqrt(v) + eps) * rect``. (`one` is 1 in
    the parameter's dtype: PyTorch divides a number by a tensor as
    ``reciprocal() * number``.) Returns (param, exp_avg, exp_avg_sq).
    """
    if maximize:
        g = -g
    if weight_decay != 0:
        if decoupled:
            p = p * decay
        else:
            g = fma(p, weight_decay, g)
    m = lerp(m, g, one_minus_beta1)
    v = fma(one_minus_beta2 * g, g, v * beta2)
    corrected = m / bias_correction1
    if rectify:
        adaptive_lr = one / (math.sqrt(v) + eps) * bias_correction2_sqrt
        return p - corrected * lr * adaptive_lr * rect, m, v
    return p - corrected * lr, m, v


@numba.njit(**_JIT)
def radam_step_serial(param, grad, exp_avg, exp_avg_sq, decay, weight_decay, beta1, beta2,
                      bias_correction1, lr, bias_correction2_sqrt, rect, eps, rectify,
                      maximize, decoupled):
    """for i: param[i], exp_avg[i], exp_avg_sq[i] = radam_element(...)."""
    t = param.dtype.type
    decay, weight_decay, one_minus_beta1 = t(decay), t(weight_decay), t(1.0 - beta1)
    one_minus_beta2, beta2, bias_correction1 = t(1.0 - beta2), t(beta2), t(bias_correction1)
    lr, bias_correction2_sqrt, rect, eps = t(lr), t(bias_correction2_sqrt), t(rect), t(eps)
    one = t(1)
    for i in range(param.size):
        p, m, v = radam_element(param[i], grad[i], exp_avg[i], exp_avg_sq[i], decay,
                                weight_decay, one_minus_beta1, beta2, one_minus_beta2,
                                bias_correction1, lr, bias_correction2_sqrt, rect, one, eps,
                                rectify, maximize, decoupled)
        param[i] = p
        exp_avg[i] = m
        exp_avg_sq[i] = v


@numba.njit(parallel=True, **_JIT)
def radam_step_parallel(param, grad, exp_avg, exp_avg_sq, decay, weight_decay, beta1, beta2,
                        bias_correction1, lr, bias_correction2_sqrt, rect, eps, rectify,
                        maximize, decoupled):
    """`radam_step_serial` with the element loop split across threads."""
    t = param.dtype.type
    decay, weight_decay, one_minus_beta1 = t(decay), t(weight_decay), t(1.0 - beta1)
    one_minus_beta2, beta2, bias_correction1 = t(1.0 - beta2), t(beta2), t(bias_correction1)
    lr, bias_correction2_sqrt, rect, eps = t(lr), t(bias_correction2_sqrt), t(rect), t(eps)
    one = t(1)
    for i in numba.prange(param.size):
        p, m, v = radam_element(param[i], grad[i], exp_avg[i], exp_avg_sq[i], decay,
                                weight_decay, one_minus_beta1, beta2, one_minus_beta2,
                                bias_correction1, lr, bias_correction2_sqrt, rect, one, eps,
                                rectify, maximize, decoupled)
        param[i] = p
        exp_avg[i] = m
        exp_avg_sq[i] = v


def radam_scalars(lr, beta1, beta2, weight_decay, step, decoupled):
    """Per-step Python floats of RAdam: (decay, bias_correction1,
    bias_correction2_sqrt, rect, rectify), rectify when the approximated SMA
    length rho_t exceeds 5. Shared with the CUDA kernel."""
    decay = 1.0 - lr * weight_decay if decoupled else 1.0
    bias_correction1 = 1.0 - beta1 ** step
    bias_correction2 = 1.0 - beta2 ** step
    rho_inf = 2.0 / (1.0 - beta2) - 1.0
    rho_t = rho_inf - 2.0 * step * (beta2 ** step) / bias_correction2
    rectify = rho_t > 5.0
    rect = 1.0
    if rectify:
        rect = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t)) ** 0.5
    return decay, bias_correction1, bias_correction2 ** 0.5, rect, rectify


def radam_step(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step,
               decoupled, maximize):
    """RAdam update of flat `param` in place; `step` >= 1."""
    decay, bc1, bc2_sqrt, rect, rectify = radam_scalars(
        float(lr), float(beta1), float(beta2), float(weight_decay), float(step), decoupled)
    _pick(radam_step_serial, radam_step_parallel, param.size)(
        param, grad, exp_avg, exp_avg_sq, decay, float(weight_decay), float(beta1),
        float(beta2), bc1, float(lr), bc2_sqrt, rect, float(eps), rectify, bool(maximize),
        bool(decoupled))
