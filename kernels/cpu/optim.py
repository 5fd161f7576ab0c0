"""Fused optimizer updates: one pass over a parameter per step, in place.

This module holds the conventions shared by every rule and the rules without
running squares (SGD, ASGD, Rprop); `optim_adam.py` holds the Adam family
and `optim_adaptive.py` RMSprop, Adagrad and Adadelta.

Each update rule has a scalar function (`*_element`) holding PyTorch's
formula for one element, a serial and a `parallel=True` loop over it, and a
chooser (`sgd_step`, `adam_step`, ...) that derives the per-step scalars
(bias corrections, decayed rates) and picks the loop by size. The chooser is
the "cpu" kernel of the op of the same name (`nbtorch/ops/optim_updates.py`),
declared in `kernels/cpu/table.py`.

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

The formulas round where PyTorch's single-tensor updates round: its CPU
kernels fuse ``add(alpha=)``, ``addcmul`` and ``lerp`` into one FMA, so the
scalar functions use `fma` and `lerp` of `kernels/fma.py` there, and a
trajectory matches PyTorch's bit for bit rather than drifting by an ulp a step.

The scalar functions are plain Python underneath (`adam_element.py_func`),
using only arithmetic and `math`, so a CUDA kernel can compile the very same
formula with ``cuda.jit(device=True)``. Set ``NUMBA_DISABLE_JIT=1`` to step
through them in a debugger.
"""
import math

import numba
import numpy as np

from ..fma import fma
from . import openmp

__all__ = ["sgd_step", "asgd_step", "rprop_step", "PARALLEL_MIN_SIZE"]

# Parameters with at least this many elements use the parallel loop. Threads halve a
# large update, but when another process holds a core the omp layer's fork-join waits
# for a descheduled thread, which turned a sub-millisecond step into many milliseconds;
# so they are kept for tensors large enough to bound that risk (figures: benchmarks/).
PARALLEL_MIN_SIZE = 1 << 20

_JIT = dict(cache=True, error_model="numpy")
_UNUSED = {np.dtype(t): np.empty(0, t) for t in (np.float32, np.float64)}


def _pick(serial, parallel, n):
    """The parallel loop for big parameters, unless OpenMP may not run here (openmp.py)."""
    return parallel if n >= PARALLEL_MIN_SIZE and openmp.USABLE else serial


def _or_unused(buf, param):
    """`buf`, or a private empty array of `param`'s dtype where `buf` is None. The loops
    must not touch it behind a run-time flag: with the flag a constant in a loop of its
    own (each rule's `_*_loop`, inlined once per value), LLVM neither checks it for
    overlap with the operands (an empty array lying inside one of their ranges sent the
    whole update to the scalar loop) nor reads it with masked loads (over untouched pages:
    a 401K-element Adam update took 10 ms instead of 0.2)."""
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
        g = fma(p, weight_decay, g)
    if momentum != 0:
        if first_step:
            buf = g
        else:
            buf = fma(g, one_minus_dampening, buf * momentum)
        if nesterov:
            g = fma(buf, momentum, g)
        else:
            g = buf
    return fma(g, -lr, p), buf


@numba.njit(inline="always", **_JIT)
def _sgd_loop(param, grad, momentum_buffer, lr, weight_decay, momentum, one_minus_dampening,
              nesterov, maximize, first_step, use_buf):
    """The element loop of `sgd_step_serial` and `sgd_step_parallel` (prange is range in
    the serial one), inlined with `use_buf` a constant: the loop without momentum never
    touches the buffer (see `_or_unused`)."""
    t = param.dtype.type
    lr, weight_decay, momentum = t(lr), t(weight_decay), t(momentum)
    one_minus_dampening = t(one_minus_dampening)
    zero = t(0)
    for i in numba.prange(param.size):
        b = momentum_buffer[i] if use_buf and not first_step else zero
        p, b = sgd_element(param[i], grad[i], b, lr, weight_decay, momentum,
                           one_minus_dampening, nesterov, maximize, first_step)
        param[i] = p
        if use_buf:
            momentum_buffer[i] = b


@numba.njit(inline="always", **_JIT)
def _sgd_versions(param, grad, momentum_buffer, lr, weight_decay, momentum,
                  one_minus_dampening, nesterov, maximize, first_step):
    """`_sgd_loop` with `use_buf` (momentum != 0) made a constant."""
    if momentum != 0:
        _sgd_loop(param, grad, momentum_buffer, lr, weight_decay, momentum,
                  one_minus_dampening, nesterov, maximize, first_step, True)
    else:
        _sgd_loop(param, grad, momentum_buffer, lr, weight_decay, momentum,
                  one_minus_dampening, nesterov, maximize, first_step, False)


@numba.njit(**_JIT)
def sgd_step_serial(param, grad, momentum_buffer, lr, weight_decay, momentum,
                    one_minus_dampening, nesterov, maximize, first_step):
    """for i: param[i], buf[i] = sgd_element(param[i], grad[i], buf[i], ...).

    `momentum_buffer` is used only when momentum != 0; on the `first_step` it
    is only written (set to the gradient: PyTorch's buffer init).
    """
    _sgd_versions(param, grad, momentum_buffer, lr, weight_decay, momentum,
                  one_minus_dampening, nesterov, maximize, first_step)


@numba.njit(parallel=True, **_JIT)
def sgd_step_parallel(param, grad, momentum_buffer, lr, weight_decay, momentum,
                      one_minus_dampening, nesterov, maximize, first_step):
    """`sgd_step_serial` with the element loop split across threads."""
    _sgd_versions(param, grad, momentum_buffer, lr, weight_decay, momentum,
                  one_minus_dampening, nesterov, maximize, first_step)


def sgd_step(param, grad, momentum_buffer, lr, weight_decay, momentum, dampening,
             nesterov, maximize, first_step):
    """SGD update of flat `param` in place; `first_step`: the buffer is new."""
    _pick(sgd_step_serial, sgd_step_parallel, param.size)(
        param, grad, _or_unused(momentum_buffer, param), float(lr), float(weight_decay),
        float(momentum), 1.0 - dampening, bool(nesterov), bool(maximize),
        bool(first_step))


# ---------------------------------------------------------------------------
# ASGD
# ---------------------------------------------------------------------------
@numba.njit(**_JIT)
def asgd_element(p, g, ax, decay, eta, mu, weight_decay, maximize, average):
    """One element of torch.optim.ASGD: ``p = p * decay - eta * g``, then the
    running average ``ax += (p - ax) * mu`` (or ``ax = p`` while mu is 1,
    i.e. not `average`). Returns (param, ax).
    """
    if maximize:
        g = -g
    if weight_decay != 0:
        g = fma(p, weight_decay, g)
    p = fma(g, -eta, p * decay)
    if average:
        ax = ax + (p - ax) * mu
    else:
        ax = p
    return p, ax


@numba.njit(**_JIT)
def asgd_step_serial(param, grad, ax, decay, eta, mu, weight_decay, maximize, average):
    """for i: param[i], ax[i] = asgd_element(param[i], grad[i], ax[i], ...)."""
    t = param.dtype.type
    decay, eta, mu, weight_decay = t(decay), t(eta), t(mu), t(weight_decay)
    for i in range(param.size):
        p, a = asgd_element(param[i], grad[i], ax[i], decay, eta, mu, weight_decay,
                            maximize, average)
        param[i] = p
        ax[i] = a


@numba.njit(parallel=True, **_JIT)
def asgd_step_parallel(param, grad, ax, decay, eta, mu, weight_decay, maximize, average):
    """`asgd_step_serial` with the element loop split across threads."""
    t = param.dtype.type
    decay, eta, mu, weight_decay = t(decay), t(eta), t(mu), t(weight_decay)
    for i in numba.prange(param.size):
        p, a = asgd_element(param[i], grad[i], ax[i], decay, eta, mu, weight_decay,
                            maximize, average)
        param[i] = p
        ax[i] = a


def asgd_step(param, grad, ax, eta, lambd, mu, weight_decay, maximize):
    """ASGD update of flat `param` and its average `ax` in place, with this
    step's rate `eta` and averaging weight `mu` (the optimizer's state)."""
    eta, mu = float(eta), float(mu)
    _pick(asgd_step_serial, asgd_step_parallel, param.size)(
        param, grad, ax, 1.0 - float(lambd) * eta, eta, mu, float(weight_decay),
        bool(maximize), mu != 1.0)


# ---------------------------------------------------------------------------
# Rprop
# ---------------------------------------------------------------------------
@numba.njit(**_JIT)
def rprop_element(p, g, prev, step_size, etaminus, etaplus, step_size_min, step_size_max,
                  maximize):
    """One element of torch.optim.Rprop: the step size grows by `etaplus` while
    the gradient keeps its sign and shrinks by `etaminus` when it flips (that
    gradient then counts as 0); ``p -= sign(g) * step_size``.

    Returns (param, prev, step_size). A NaN sign counts as 0, as torch.sign's.
    """
    if maximize:
        g = -g
    s = g * prev
    zero = etaminus - etaminus           # 0 in the dtype (etaminus is finite)
    if s > 0:
        step_size = step_size * etaplus
    elif s < 0:
        step_size = step_size * etaminus
        g = zero
    if step_size < step_size_min:        # clamp_(min, max); NaN stays NaN
        step_size = step_size_min
    if step_size > step_size_max:
        step_size = step_size_max
    if g > 0:
        p = p - step_size
    elif g < 0:
        p = p + step_size
    else:
        p = p - zero * step_size
    return p, g, step_size


@numba.njit(**_JIT)
def rprop_step_serial(param, grad, prev, step_size, etaminus, etaplus, step_size_min,
                      step_size_max, maximize):
    """for i: param[i], prev[i], step_size[i] = rprop_element(...)."""
    t = param.dtype.type
    etaminus, etaplus = t(etaminus), t(etaplus)
    step_size_min, step_size_max = t(step_size_min), t(step_size_max)
    for i in range(param.size):
        p, g, s = rprop_element(param[i], grad[i], prev[i], step_size[i], etaminus, etaplus,
                                step_size_min, step_size_max, maximize)
        param[i] = p
        prev[i] = g
        step_size[i] = s


@numba.njit(parallel=True, **_JIT)
def rprop_step_parallel(param, grad, prev, step_size, etaminus, etaplus, step_size_min,
                        step_size_max, maximize):
    """`rprop_step_serial` with the element loop split across threads."""
    t = param.dtype.type
    etaminus, etaplus = t(etaminus), t(etaplus)
    step_size_min, step_size_max = t(step_size_min), t(step_size_max)
    for i in numba.prange(param.size):
        p, g, s = rprop_element(param[i], grad[i], prev[i], step_size[i], etaminus, etaplus,
                                step_size_min, step_size_max, maximize)
        param[i] = p
        prev[i] = g
        step_size[i] = s


def rprop_step(param, grad, prev, step_size, etaminus, etaplus, step_size_min,
               step_size_max, maximize):
    """Rprop update of flat `param`, `prev` and `step_size` in place."""
    _pick(rprop_step_serial, rprop_step_parallel, param.size)(
        param, grad, prev, step_size, float(etaminus), float(etaplus), float(step_size_min),
        float(step_size_max), bool(maximize))
