"""Fused updates of the Adam family: one pass over a parameter per step, in place.

The layout, scalar conventions and the serial/parallel pair per rule are those
of `kernels/cpu/optim.py` (read its docstring first); the `*_element`
functions are compiled for CUDA too (`kernels/cuda/optim.py`).
"""
import math

import numba

from .optim import _JIT, _or_unused, _pick

__all__ = ["adam_step", "adam_scalars"]


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
        g = g + weight_decay * p
    m = m + one_minus_beta1 * (g - m)
    v = beta2 * v + one_minus_beta2 * g * g
    if amsgrad:
        if v > vmax or v != v:       # torch.maximum: NaN propagates
            vmax = v
        denom = math.sqrt(vmax) / bias_correction2_sqrt + eps
    else:
        denom = math.sqrt(v) / bias_correction2_sqrt + eps
    return p - step_size * m / denom, m, v, vmax


@numba.njit(**_JIT)
def adam_step_serial(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay,
                     weight_decay, beta1, beta2, eps, step_size, bias_correction2_sqrt,
                     amsgrad, maximize, decoupled):
    """for i: param[i], exp_avg[i], exp_avg_sq[i], max_exp_avg_sq[i] = adam_element(...).

    `max_exp_avg_sq` is used only when `amsgrad`.
    """
    t = param.dtype.type
    decay, weight_decay, eps, step_size = t(decay), t(weight_decay), t(eps), t(step_size)
    one_minus_beta1, one_minus_beta2 = t(1.0 - beta1), t(1.0 - beta2)
    beta2, bias_correction2_sqrt = t(beta2), t(bias_correction2_sqrt)
    zero = t(0)
    for i in range(param.size):
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


@numba.njit(parallel=True, **_JIT)
def adam_step_parallel(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay,
                       weight_decay, beta1, beta2, eps, step_size, bias_correction2_sqrt,
                       amsgrad, maximize, decoupled):
    """`adam_step_serial` with the element loop split across threads."""
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


def adam_scalars(lr, beta1, beta2, weight_decay, step, decoupled):
    """Per-step Python floats of Adam: (decay, step_size, bias_correction2_sqrt).

    `step` counts this update (1 on the first). Shared with the CUDA kernel.
    """
    decay = 1.0 - lr * weight_decay if decoupled else 1.0
    step_size = lr / (1.0 - beta1 ** step)
    return decay, step_size, math.sqrt(1.0 - beta2 ** step)


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps,
              weight_decay, step, amsgrad, maximize, decoupled):
    """Adam (AdamW if `decoupled`) update of flat `param` in place; `step` >= 1."""
    decay, step_size, bc2_sqrt = adam_scalars(float(lr), float(beta1), float(beta2),
                                              float(weight_decay), float(step), decoupled)
    _pick(adam_step_serial, adam_step_parallel, param.size)(
        param, grad, exp_avg, exp_avg_sq, _or_unused(max_exp_avg_sq, param), decay,
        float(weight_decay), float(beta1), float(beta2), float(eps), step_size, bc2_sqrt,
        bool(amsgrad), bool(maximize), bool(decoupled))
