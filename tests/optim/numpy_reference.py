"""PyTorch's optimizer updates written out by hand in NumPy (float64).

Each function follows the single-tensor algorithm of torch.optim (the
`_single_tensor_*` functions, whose order of operations the docs' algorithm
boxes describe): it takes the parameter and gradient, a `state` dict it
updates in place (same keys as PyTorch's optimizer state), the group's
options, and returns the new parameter. No nbtorch import: the tests compare
both the kernels and the optimizers with these.
"""
import numpy as np


def sgd(p, g, state, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
        maximize=False):
    g = -g if maximize else g
    if weight_decay != 0:
        g = g + weight_decay * p
    if momentum != 0:
        buf = state.get("momentum_buffer")
        buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
        state["momentum_buffer"] = buf
        g = g + momentum * buf if nesterov else buf
    return p - lr * g


def adam(p, g, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
         maximize=False, decoupled=False):
    """Adam; AdamW when `decoupled` (the weight decay multiplies the parameter)."""
    beta1, beta2 = betas
    if not state:
        state["step"] = 0
        state["exp_avg"] = np.zeros_like(p)
        state["exp_avg_sq"] = np.zeros_like(p)
        if amsgrad:
            state["max_exp_avg_sq"] = np.zeros_like(p)
    g = -g if maximize else g
    state["step"] += 1
    t = state["step"]
    if decoupled:
        p = p * (1 - lr * weight_decay)
    elif weight_decay != 0:
        g = g + weight_decay * p
    m = state["exp_avg"] = beta1 * state["exp_avg"] + (1 - beta1) * g
    v = state["exp_avg_sq"] = beta2 * state["exp_avg_sq"] + (1 - beta2) * g * g
    bias_correction1 = 1 - beta1 ** t
    bias_correction2 = 1 - beta2 ** t
    if amsgrad:
        v = state["max_exp_avg_sq"] = np.maximum(state["max_exp_avg_sq"], v)
    denom = np.sqrt(v) / np.sqrt(bias_correction2) + eps
    return p - lr / bias_correction1 * m / denom


def adamw(p, g, state, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False,
          maximize=False):
    return adam(p, g, state, lr, betas, eps, weight_decay, amsgrad, maximize, decoupled=True)


def rmsprop(p, g, state, lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0,
            centered=False, maximize=False):
    if not state:
        state["step"] = 0
        state["square_avg"] = np.zeros_like(p)
        if momentum > 0:
            state["momentum_buffer"] = np.zeros_like(p)
        if centered:
            state["grad_avg"] = np.zeros_like(p)
    g = -g if maximize else g
    state["step"] += 1
    if weight_decay != 0:
        g = g + weight_decay * p
    sq = state["square_avg"] = alpha * state["square_avg"] + (1 - alpha) * g * g
    if centered:
        ga = state["grad_avg"] = alpha * state["grad_avg"] + (1 - alpha) * g
        avg = np.sqrt(sq - ga * ga) + eps
    else:
        avg = np.sqrt(sq) + eps
    if momentum > 0:
        buf = state["momentum_buffer"] = momentum * state["momentum_buffer"] + g / avg
        return p - lr * buf
    return p - lr * g / avg


def adagrad(p, g, state, lr, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0,
            eps=1e-10, maximize=False):
    if not state:
        state["step"] = 0
        state["sum"] = np.full_like(p, initial_accumulator_value)
    g = -g if maximize else g
    state["step"] += 1
    if weight_decay != 0:
        g = g + weight_decay * p
    clr = lr / (1 + (state["step"] - 1) * lr_decay)
    s = state["sum"] = state["sum"] + g * g
    return p - clr * g / (np.sqrt(s) + eps)
