"""Fused optimizer updates: one pass over a parameter per step, in place.

Each update rule has a scalar function (`*_element`) holding PyTorch's formula
for one element, a serial and a `parallel=True` loop over it, and a chooser
(`sgd_step`, `adam_step`, ...) that derives the per-step scalars (bias
corrections, decayed rates) and picks the loop by size. The chooser is what
the optimizer registers as the "cpu" kernel.

Layout: every array is a flat, contiguous 1-D array of the parameter's dtype
(float32 or float64, all the same dtype); a buffer an option does not use
(e.g. `max_exp_avg_sq` without amsgrad) is passed as None. (The chooser puts
a private empty array there: a view of another argument would make LLVM's
run-time overlap check fail and the loop fall back to scalar code.)

Scalars arrive as Python floats (cheap to pass: building NumPy scalars costs
~0.2 us each) and are cast to the parameter's dtype on entry, so the
arithmetic runs in that dtype as PyTorch's does (float32 math vectorises
twice as wide); one compiled signature per (loop, dtype). `error_model=
"numpy"` lets a division by zero give inf/nan, as in PyTorch, instead of
raising; it is also what lets LLVM vectorise the loops.

The scalar functions are plain Python underneath (`adam_element.py_func`),
using only arithmetic and `math`, so a CUDA kernel can compile the very same
formula with ``cuda.jit(device=True)``. Set ``NUMBA_DISABLE_JIT=1`` to step
through them in a debugger.
"""
import math

import numba
import numpy as np

__all__ = ["sgd_step", "adam_step", "rmsprop_step", "adagrad_step",
           "adam_scalars", "adagrad_lr", "PARALLEL_MIN_SIZE"]

# Parameters with at least this many elements use the parallel loop.
# Measured on the 2-core machine (float32, best of 20-30): Adam serial 1.1 us
# at 1k elements, 17 us at 30k (~50 GB/s in cache), 670 us at 1M; parallel
# 11 us at 30k, 315 us at 1M. A whole MLP 784-512-256-10 Adam step: 390 us
# serial, 225 us parallel on an idle machine -- but 10 ms when another
# process holds a core (the omp layer's fork-join waits for a descheduled
# thread). So threads are kept for tensors large enough to bound that risk.
PARALLEL_MIN_SIZE = 1 << 20

_JIT = dict(cache=True, error_model="numpy")
_UNUSED = {np.dtype(t): np.empty(0, t) for t in (np.float32, np.float64)}


def _pick(serial, parallel, n):
    return parallel if n >= PARALLEL_MIN_SIZE else serial


def _or_unused(buf, param):
    """`buf`, or a private empty array of `param`'s dtype where `buf` is None."""
    return _UNUSED[param.dtype] if buf is None else buf


# ---------------------------------------------------------------------------
# SGD
# ---------------------------------------------------------------------------
@numba.njit(**_JIT)
def sgd_element(p, g, buf, lr, weight_decay, momentum, one_minus_dampening, nesterov,
                maximize, first_step):
    """One element of torch.optim.SGD; returns (new param, new momentum buffer)."""
    if maximize:
        g = -g
    if weight_decay != 0:
        g = g + weight_decay * p
    if momentum != 0:
        if first_step:
            buf = g
        else:
            buf = momentum * buf + one_minus_dampening * g
        if nesterov:
            g = g + momentum * buf
        else:
            g = buf
    return p - lr * g, buf


@numba.njit(**_JIT)
def sgd_step_serial(param, grad, momentum_buffer, lr, weight_decay, momentum,
                    one_minus_dampening, nesterov, maximize, first_step):
    """for i: param[i], buf[i] = sgd_element(param[i], grad[i], buf[i], ...).

    `momentum_buffer` is used only when momentum != 0; on the `first_step` it
    is only written (set to the gradient: PyTorch's buffer init).
    """
    t = param.dtype.type
    lr, weight_decay, momentum = t(lr), t(weight_decay), t(momentum)
    one_minus_dampening = t(one_minus_dampening)
    use_buf = momentum != 0
    zero = t(0)
    for i in range(param.size):
        b = momentum_buffer[i] if use_buf and not first_step else zero
        p, b = sgd_element(param[i], grad[i], b, lr, weight_decay, momentum,
                           one_minus_dampening, nesterov, maximize, first_step)
        param[i] = p
        if use_buf:
            momentum_buffer[i] = b


@numba.njit(parallel=True, **_JIT)
def sgd_step_parallel(param, grad, momentum_buffer, lr, weight_decay, momentum,
                      one_minus_dampening, nesterov, maximize, first_step):
    """`sgd_step_serial` with the element loop split across threads."""
    t = param.dtype.type
    lr, weight_decay, momentum = t(lr), t(weight_decay), t(momentum)
    one_minus_dampening = t(one_minus_dampening)
    use_buf = momentum != 0
    zero = t(0)
    for i in numba.prange(param.size):
        b = momentum_buffer[i] if use_buf and not first_step else zero
        p, b = sgd_element(param[i], grad[i], b, lr, weight_decay, momentum,
                           one_minus_dampening, nesterov, maximize, first_step)
        param[i] = p
        if use_buf:
            momentum_buffer[i] = b


def sgd_step(param, grad, momentum_buffer, lr, weight_decay, momentum, dampening,
             nesterov, maximize, first_step):
    """SGD update of flat `param` in place; `first_step`: the buffer is new."""
    _pick(sgd_step_serial, sgd_step_parallel, param.size)(
        param, grad, _or_unused(momentum_buffer, param), float(lr), float(weight_decay),
        float(momentum), 1.0 - dampening, bool(nesterov), bool(maximize),
        bool(first_step))


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
        g = g + weight_decay * p
    sq = alpha * sq + one_minus_alpha * g * g
    if centered:
        ga = ga + one_minus_alpha * (g - ga)
        avg = math.sqrt(sq - ga * ga) + eps
    else:
        avg = math.sqrt(sq) + eps
    if momentum > 0:
        buf = momentum * buf + g / avg
        p = p - lr * buf
    else:
        p = p - lr * g / avg
    return p, sq, ga, buf


@numba.njit(**_JIT)
def rmsprop_step_serial(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha,
                        eps, weight_decay, momentum, centered, maximize):
    """for i: param[i], square_avg[i], grad_avg[i], buf[i] = rmsprop_element(...).

    `grad_avg` is used only when `centered`, `momentum_buffer` only when
    momentum > 0.
    """
    t = param.dtype.type
    lr, one_minus_alpha, alpha, eps = t(lr), t(1.0 - alpha), t(alpha), t(eps)
    weight_decay, momentum = t(weight_decay), t(momentum)
    use_buf = momentum > 0
    zero = t(0)
    for i in range(param.size):
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


@numba.njit(parallel=True, **_JIT)
def rmsprop_step_parallel(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha,
                          eps, weight_decay, momentum, centered, maximize):
    """`rmsprop_step_serial` with the element loop split across threads."""
    t = param.dtype.type
    lr, one_minus_alpha, alpha, eps = t(lr), t(1.0 - alpha), t(alpha), t(eps)
    weight_decay, momentum = t(weight_decay), t(momentum)
    use_buf = momentum > 0
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
        g = g + weight_decay * p
    s = s + g * g
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
