"""Fused updates that divide by a running root mean square without bias correction
(RMSprop, Adagrad, Adadelta): one pass over a parameter per step, in place.

The layout, scalar conventions and the serial/parallel pair per rule are those
of `kernels/cpu/optim.py` (read its docstring first); the `*_element`
functions are compiled for CUDA too (`kernels/cuda/optim.py`).
"""
import math

import numba

from ..fma import fma, lerp
from .optim import _JIT, _or_unused, _pick

__all__ = ["rmsprop_step", "adagrad_step", "adadelta_step", "adagrad_lr"]


# ---------------------------------------------------------------------------
# RMSprop
# ---------------------------------------------------------------------------
@numba.njit(**_JIT)
def rmsprop_element(p, g, sq, ga, buf, lr, alpha, one_minus_alpha, eps, weight_decay,
                    momentum, centered, maximize):
    """One element of torch.optim.RMSprop.

    Returns (param, square_avg, grad_avg, momentum_buffer).
    """
    if maximize:
        g = -g
    if weight_decay != 0:
        g = fma(p, weight_decay, g)
    sq = fma(one_minus_alpha * g, g, sq * alpha)
    if centered:
        ga = lerp(ga, g, one_minus_alpha)
        avg = math.sqrt(fma(-ga, ga, sq)) + eps
    else:
        avg = math.sqrt(sq) + eps
    if momentum > 0:
        buf = buf * momentum + g / avg
        p = fma(buf, -lr, p)
    else:
        p = p - lr * g / avg
    return p, sq, ga, buf


@numba.njit(inline="always", **_JIT)
def _rmsprop_loop(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha, eps,
                  weight_decay, momentum, centered, maximize, use_buf):
    """The element loop of the RMSprop steps (prange is range in the serial one), inlined
    with `centered` and `use_buf` constants: a loop never touches a buffer it does not
    use (see `optim._or_unused`)."""
    t = param.dtype.type
    lr, one_minus_alpha, alpha, eps = t(lr), t(1.0 - alpha), t(alpha), t(eps)
    weight_decay, momentum = t(weight_decay), t(momentum)
    zero = t(0)
    for i in numba.prange(param.size):
        ga = grad_avg[i] if centered else zero
        b = momentum_buffer[i] if use_buf else zero
        p, sq, ga, b = rmsprop_element(
            param[i], grad[i], square_avg[i], ga, b, lr, alpha, one_minus_alpha, eps,
            weight_decay, momentum, centered, maximize)
        param[i] = p
        square_avg[i] = sq
        if centered:
            grad_avg[i] = ga
        if use_buf:
            momentum_buffer[i] = b


@numba.njit(inline="always", **_JIT)
def _rmsprop_versions(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha, eps,
                      weight_decay, momentum, centered, maximize):
    """`_rmsprop_loop` with its two flags made constants."""
    if centered:
        if momentum > 0:
            _rmsprop_loop(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha,
                          eps, weight_decay, momentum, True, maximize, True)
        else:
            _rmsprop_loop(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha,
                          eps, weight_decay, momentum, True, maximize, False)
    elif momentum > 0:
        _rmsprop_loop(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha, eps,
                      weight_decay, momentum, False, maximize, True)
    else:
        _rmsprop_loop(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha, eps,
                      weight_decay, momentum, False, maximize, False)


@numba.njit(**_JIT)
def rmsprop_step_serial(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha,
                        eps, weight_decay, momentum, centered, maximize):
    """for i: param[i], square_avg[i], grad_avg[i], buf[i] = rmsprop_element(...).

    `grad_avg` is used only when `centered`, `momentum_buffer` only when
    momentum > 0.
    """
    _rmsprop_versions(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha, eps,
                      weight_decay, momentum, centered, maximize)


@numba.njit(parallel=True, **_JIT)
def rmsprop_step_parallel(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha,
                          eps, weight_decay, momentum, centered, maximize):
    """`rmsprop_step_serial` with the element loop split across threads."""
    _rmsprop_versions(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha, eps,
                      weight_decay, momentum, centered, maximize)


def rmsprop_step(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha, eps,
                 weight_decay, momentum, centered, maximize):
    """RMSprop update of flat `param` in place."""
    _pick(rmsprop_step_serial, rmsprop_step_parallel, param.size)(
        param, grad, square_avg, _or_unused(grad_avg, param),
        _or_unused(momentum_buffer, param), float(lr), float(alpha), float(eps),
        float(weight_decay), float(momentum), bool(centered), bool(maximize))


# ---------------------------------------------------------------------------
# Adagrad
# ---------------------------------------------------------------------------
@numba.njit(**_JIT)
def adagrad_element(p, g, s, clr, weight_decay, eps, maximize):
    """One element of torch.optim.Adagrad at decayed rate `clr`; returns (param, sum)."""
    if maximize:
        g = -g
    if weight_decay != 0:
        g = fma(p, weight_decay, g)
    s = fma(g, g, s)
    return p - clr * g / (math.sqrt(s) + eps), s


@numba.njit(**_JIT)
def adagrad_step_serial(param, grad, state_sum, clr, weight_decay, eps, maximize):
    """for i: param[i], state_sum[i] = adagrad_element(param[i], grad[i], state_sum[i], ...)."""
    t = param.dtype.type
    clr, weight_decay, eps = t(clr), t(weight_decay), t(eps)
    for i in range(param.size):
        p, s = adagrad_element(param[i], grad[i], state_sum[i], clr, weight_decay, eps,
                               maximize)
        param[i] = p
        state_sum[i] = s


@numba.njit(parallel=True, **_JIT)
def adagrad_step_parallel(param, grad, state_sum, clr, weight_decay, eps, maximize):
    """`adagrad_step_serial` with the element loop split across threads."""
    t = param.dtype.type
    clr, weight_decay, eps = t(clr), t(weight_decay), t(eps)
    for i in numba.prange(param.size):
        p, s = adagrad_element(param[i], grad[i], state_sum[i], clr, weight_decay, eps,
                               maximize)
        param[i] = p
        state_sum[i] = s


def adagrad_lr(lr, lr_decay, step):
    """Adagrad's rate at `step` (1 on the first update): lr / (1 + (step-1) lr_decay)."""
    return lr / (1.0 + (step - 1) * lr_decay)


def adagrad_step(param, grad, state_sum, lr, lr_decay, weight_decay, eps, step, maximize):
    """Adagrad update of flat `param` in place; `step` >= 1."""
    _pick(adagrad_step_serial, adagrad_step_parallel, param.size)(
        param, grad, state_sum, float(adagrad_lr(lr, lr_decay, step)),
        float(weight_decay), float(eps), bool(maximize))


# ---------------------------------------------------------------------------
# Adadelta
# ---------------------------------------------------------------------------
@numba.njit(**_JIT)
def adadelta_element(p, g, sq, acc, lr, rho, one_minus_rho, eps, weight_decay, maximize):
    """One element of torch.optim.Adadelta: ``sq = rho sq + (1 - rho) g^2``,
    ``delta = sqrt(acc + eps) / sqrt(sq + eps) * g``,
    ``acc = rho acc + (1 - rho) delta^2``, ``p -= lr delta``.

    Returns (param, square_avg, acc_delta).
    """
    if maximize:
        g = -g
    if weight_decay != 0:
        g = fma(p, weight_decay, g)
    sq = fma(one_minus_rho * g, g, sq * rho)
    delta = math.sqrt(acc + eps) / math.sqrt(sq + eps) * g
    acc = fma(one_minus_rho * delta, delta, acc * rho)
    return fma(delta, -lr, p), sq, acc


@numba.njit(**_JIT)
def adadelta_step_serial(param, grad, square_avg, acc_delta, lr, rho, eps, weight_decay,
                         maximize):
    """for i: param[i], square_avg[i], acc_delta[i] = adadelta_element(...)."""
    t = param.dtype.type
    lr, one_minus_rho, rho, eps = t(lr), t(1.0 - rho), t(rho), t(eps)
    weight_decay = t(weight_decay)
    for i in range(param.size):
        p, sq, acc = adadelta_element(param[i], grad[i], square_avg[i], acc_delta[i], lr,
                                      rho, one_minus_rho, eps, weight_decay, maximize)
        param[i] = p
        square_avg[i] = sq
        acc_delta[i] = acc


@numba.njit(parallel=True, **_JIT)
def adadelta_step_parallel(param, grad, square_avg, acc_delta, lr, rho, eps, weight_decay,
                           maximize):
    """`adadelta_step_serial` with the element loop split across threads."""
    t = param.dtype.type
    lr, one_minus_rho, rho, eps = t(lr), t(1.0 - rho), t(rho), t(eps)
    weight_decay = t(weight_decay)
    for i in numba.prange(param.size):
        p, sq, acc = adadelta_element(param[i], grad[i], square_avg[i], acc_delta[i], lr,
                                      rho, one_minus_rho, eps, weight_decay, maximize)
        param[i] = p
        square_avg[i] = sq
        acc_delta[i] = acc


def adadelta_step(param, grad, square_avg, acc_delta, lr, rho, eps, weight_decay, maximize):
    """Adadelta update of flat `param` in place."""
    _pick(adadelta_step_serial, adadelta_step_parallel, param.size)(
        param, grad, square_avg, acc_delta, float(lr), float(rho), float(eps),
        float(weight_decay), bool(maximize))
