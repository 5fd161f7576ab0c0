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


def adadelta(p, g, state, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0, maximize=False):
    if not state:
        state["step"] = 0
        state["square_avg"] = np.zeros_like(p)
        state["acc_delta"] = np.zeros_like(p)
    g = -g if maximize else g
    state["step"] += 1
    if weight_decay != 0:
        g = g + weight_decay * p
    sq = state["square_avg"] = state["square_avg"] * rho + (1 - rho) * g * g
    delta = np.sqrt(state["acc_delta"] + eps) / np.sqrt(sq + eps) * g
    state["acc_delta"] = state["acc_delta"] * rho + (1 - rho) * delta * delta
    return p - lr * delta


def adamax(p, g, state, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
           maximize=False):
    beta1, beta2 = betas
    if not state:
        state["step"] = 0
        state["exp_avg"] = np.zeros_like(p)
        state["exp_inf"] = np.zeros_like(p)
    g = -g if maximize else g
    state["step"] += 1
    if weight_decay != 0:
        g = g + weight_decay * p
    m = state["exp_avg"] = state["exp_avg"] + (1 - beta1) * (g - state["exp_avg"])
    u = state["exp_inf"] = np.maximum(state["exp_inf"] * beta2, np.abs(g) + eps)
    return p - lr / (1 - beta1 ** state["step"]) * m / u


def _f32(x):
    """PyTorch keeps NAdam's mu_product and ASGD's eta and mu as float32 scalars."""
    return float(np.float32(x))


def nadam(p, g, state, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
          momentum_decay=4e-3, decoupled_weight_decay=False, maximize=False):
    beta1, beta2 = betas
    if not state:
        state["step"] = 0
        state["mu_product"] = 1.0
        state["exp_avg"] = np.zeros_like(p)
        state["exp_avg_sq"] = np.zeros_like(p)
    g = -g if maximize else g
    state["step"] += 1
    t = state["step"]
    if weight_decay != 0:
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * momentum_decay))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * momentum_decay))
    mu_product = state["mu_product"] = _f32(np.float32(state["mu_product"]) * np.float32(mu))
    m = state["exp_avg"] = state["exp_avg"] + (1 - beta1) * (g - state["exp_avg"])
    v = state["exp_avg_sq"] = state["exp_avg_sq"] * beta2 + (1 - beta2) * g * g
    denom = np.sqrt(v / (1 - beta2 ** t)) + eps
    p = p + (-lr * (1 - mu) / (1 - mu_product)) * g / denom
    return p + (-lr * mu_next / (1 - mu_product * mu_next)) * m / denom


def radam(p, g, state, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0,
          decoupled_weight_decay=False, maximize=False):
    beta1, beta2 = betas
    if not state:
        state["step"] = 0
        state["exp_avg"] = np.zeros_like(p)
        state["exp_avg_sq"] = np.zeros_like(p)
    g = -g if maximize else g
    state["step"] += 1
    t = state["step"]
    if weight_decay != 0:
        if decoupled_weight_decay:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
    m = state["exp_avg"] = state["exp_avg"] + (1 - beta1) * (g - state["exp_avg"])
    v = state["exp_avg_sq"] = state["exp_avg_sq"] * beta2 + (1 - beta2) * g * g
    bias_correction1, bias_correction2 = 1 - beta1 ** t, 1 - beta2 ** t
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * t * beta2 ** t / bias_correction2
    if rho_t <= 5:
        return p - m / bias_correction1 * lr
    rect = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
    adaptive_lr = np.sqrt(bias_correction2) / (np.sqrt(v) + eps)
    return p - m / bias_correction1 * lr * adaptive_lr * rect


def asgd(p, g, state, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0.0,
         maximize=False):
    if not state:
        state["step"] = 0
        state["eta"] = _f32(lr)
        state["mu"] = 1.0
        state["ax"] = np.zeros_like(p)
    g = -g if maximize else g
    state["step"] += 1
    if weight_decay != 0:
        g = g + weight_decay * p
    eta = state["eta"]
    p = p * (1 - lambd * eta) - eta * g
    if state["mu"] != 1:
        state["ax"] = state["ax"] + (p - state["ax"]) * state["mu"]
    else:
        state["ax"] = p.copy()
    t = state["step"]
    state["eta"] = _f32(lr / (1 + lambd * lr * t) ** alpha)
    state["mu"] = _f32(1 / max(1, t - t0))
    return p


def rprop(p, g, state, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), maximize=False):
    etaminus, etaplus = etas
    if not state:
        state["step"] = 0
        state["prev"] = np.zeros_like(p)
        state["step_size"] = np.full_like(p, lr)
    g = -g if maximize else g
    state["step"] += 1
    sign = np.sign(g * state["prev"])
    factor = np.where(sign > 0, etaplus, np.where(sign < 0, etaminus, 1.0))
    step_size = state["step_size"] = np.clip(state["step_size"] * factor, *step_sizes)
    g = np.where(sign < 0, 0.0, g)
    state["prev"] = g
    return p - np.sign(g) * step_size


def adafactor(p, g, state, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
              weight_decay=0.0, maximize=False, dtype_eps=np.finfo(np.float32).eps):
    """Adafactor; `dtype_eps` stands for eps1=None (the parameter dtype's machine eps)."""
    eps1 = dtype_eps if eps[0] is None else eps[0]
    if not state:
        state["step"] = 0
        if g.ndim > 1:
            state["row_var"] = np.zeros(g.shape[:-1] + (1,))
            state["col_var"] = np.zeros(g.shape[:-2] + (1, g.shape[-1]))
        else:
            state["variance"] = np.zeros_like(g)
    g = -g if maximize else g
    state["step"] += 1
    t = state["step"]
    beta2_t = t ** beta2_decay                    # PyTorch's one_minus_beta2_t
    alpha = max(eps[1], np.sqrt(np.mean(p * p))) * min(lr, 1 / np.sqrt(t))
    p = p * (1 - lr * weight_decay)
    if g.ndim > 1:
        for key, axis in (("row_var", -1), ("col_var", -2)):
            mean = np.mean(g * g, axis=axis, keepdims=True)
            state[key] = state[key] + beta2_t * (mean - state[key])
        r, c = state["row_var"], state["col_var"]
        var = (r @ c) / np.maximum(np.mean(r, axis=-2, keepdims=True), eps1)
    else:
        state["variance"] = state["variance"] + beta2_t * (g * g - state["variance"])
        var = state["variance"]
    update = g / np.sqrt(np.maximum(var, eps1 * eps1))
    denom = max(1.0, np.sqrt(np.mean(update * update)) / d)
    return p - alpha / denom * update


def newton_schulz(g, coefficients=(3.4445, -4.7750, 2.0315), steps=5, eps=1e-7):
    """Muon's orthogonalisation in float64 (PyTorch's runs in bfloat16)."""
    a, b, c = coefficients
    x = g.T if g.shape[0] > g.shape[1] else g
    x = x / max(np.linalg.norm(x), eps)
    for _ in range(steps):
        gram = x @ x.T
        x = a * x + (b * gram + c * gram @ gram) @ x
    return x.T if g.shape[0] > g.shape[1] else x
