"""Differentiable optimizer steps (``differentiable=True``), as PyTorch's.

The fused kernels update parameters outside autograd. With
``differentiable=True`` PyTorch runs the update as ordinary tensor ops with
gradients enabled, so the updated parameters (typically non-leaf clones, as in
meta-learning) carry a graph back to the gradients, the state and the
hyper-parameters. These functions are those updates, op for op as PyTorch's
single-tensor implementations (so float32 results match too).
"""
from ..ops.pointwise_select import maximum
from ..ops.joining import cat

__all__ = ["sgd_step", "adam_step", "rmsprop_step", "adagrad_step", "adadelta_step",
           "adamax_step", "nadam_step", "radam_step", "asgd_step", "rprop_step"]


def sgd_step(param, grad, state, group):
    """SGD: ``g (+ wd p)``, momentum buffer (a detached copy of g on the first step,
    then ``buf = m buf + (1 - dampening) g``), Nesterov, ``p -= lr g``."""
    grad = -grad if group["maximize"] else grad
    if group["weight_decay"] != 0:
        grad = grad.add(param, alpha=group["weight_decay"])
    momentum = group["momentum"]
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = grad.clone().detach()
        else:
            buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
        grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
    lr = group["lr"]
    if hasattr(lr, "dim"):
        param.add_(grad * -lr)
    else:
        param.add_(grad, alpha=-lr)


def adam_step(param, grad, state, group, decoupled):
    """Adam / AdamW with the step count as a tensor (PyTorch's differentiable path):
    ``m.lerp_(g, 1 - b1)``, ``v = b2 v + (1 - b2) g^2``, bias corrections from the
    step tensor, ``p += m / (sqrt(v) / (sqrt(bc2) * -lr/bc1) + eps / (-lr/bc1))``."""
    beta1, beta2 = group["betas"]
    lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
    grad = -grad if group["maximize"] else grad
    step_t = state["step"]
    step_t += 1
    if wd != 0:
        if decoupled:
            param.mul_(1 - lr * wd)
        else:
            grad = grad.add(param, alpha=wd)
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bias_correction1 = 1 - beta1 ** step_t
    bias_correction2 = 1 - beta2 ** step_t
    step_size_neg = (lr / bias_correction1).neg()
    bias_correction2_sqrt = bias_correction2.sqrt()
    if group["amsgrad"]:
        max_sq = state["max_exp_avg_sq"]
        max_sq.copy_(maximum(max_sq.clone(), exp_avg_sq))
        root = max_sq.sqrt()
    else:
        root = exp_avg_sq.sqrt()
    denom = (root / (bias_correction2_sqrt * step_size_neg)).add_(eps / step_size_neg)
    param.addcdiv_(exp_avg.clone(), denom)


def _value(x):
    """A 0-d state tensor's number (PyTorch's ``_get_value`` outside compilation)."""
    return x.item() if hasattr(x, "item") else x


def _lr(group):
    lr = group["lr"]
    return lr.item() if hasattr(lr, "item") else lr


def _grad(param, grad, group, key="weight_decay"):
    """The gradient after maximize and (coupled) weight decay."""
    grad = -grad if group["maximize"] else grad
    if group.get(key, 0) != 0:
        grad = grad.add(param, alpha=group[key])
    return grad


def rmsprop_step(param, grad, state, group):
    """RMSprop (centered, momentum): PyTorch's single-tensor update."""
    lr, alpha, eps, momentum = _lr(group), group["alpha"], group["eps"], group["momentum"]
    state["step"] += 1
    grad = _grad(param, grad, group)
    square_avg = state["square_avg"]
    square_avg.mul_(alpha).addcmul_(grad, grad, value=1 - alpha)
    if group["centered"]:
        grad_avg = state["grad_avg"]
        grad_avg.lerp_(grad, 1 - alpha)
        avg = square_avg.addcmul(grad_avg, grad_avg, value=-1).sqrt_()
    else:
        avg = square_avg.sqrt()
    avg = avg.add(eps)
    if momentum > 0:
        buf = state["momentum_buffer"]
        buf.mul_(momentum).addcdiv_(grad, avg)
        param.add_(buf, alpha=-lr)
    else:
        param.addcdiv_(grad, avg, value=-lr)


def adagrad_step(param, grad, state, group):
    """Adagrad (dense gradients): ``sum += g^2``, ``p -= clr g / (sqrt(sum) + eps)``."""
    state["step"] += 1
    step = _value(state["step"])
    grad = _grad(param, grad, group)
    clr = _lr(group) / (1 + (step - 1) * group["lr_decay"])
    state_sum = state["sum"]
    state_sum.addcmul_(grad, grad, value=1)
    param.addcdiv_(grad, state_sum.sqrt() + group["eps"], value=-clr)


def adadelta_step(param, grad, state, group):
    """Adadelta: PyTorch's single-tensor update."""
    rho, eps = group["rho"], group["eps"]
    state["step"] += 1
    grad = _grad(param, grad, group)
    square_avg, acc_delta = state["square_avg"], state["acc_delta"]
    square_avg.mul_(rho).addcmul_(grad, grad, value=1 - rho)
    std = square_avg.add(eps).sqrt_()
    delta = acc_delta.add(eps).sqrt_().clone()
    delta.div_(std).mul_(grad)
    acc_delta.mul_(rho).addcmul_(delta, delta, value=1 - rho)
    param.add_(delta, alpha=-_lr(group))


def adamax_step(param, grad, state, group):
    """Adamax: the infinity norm through ``amax`` of a stack (differentiable)."""
    beta1, beta2 = group["betas"]
    state["step"] += 1
    grad = _grad(param, grad, group)
    exp_avg, exp_inf = state["exp_avg"], state["exp_inf"]
    exp_avg.lerp_(grad, 1 - beta1)
    norm_buf = cat([exp_inf.mul_(beta2).unsqueeze(0),
                    grad.abs().add_(group["eps"]).unsqueeze_(0)], 0)
    exp_inf.copy_(norm_buf.amax(0, keepdim=False))
    clr = _lr(group) / (1 - beta1 ** _value(state["step"]))
    param.addcdiv_(exp_avg, exp_inf, value=-clr)


def nadam_step(param, grad, state, group):
    """NAdam: the momentum schedule's products kept as tensors (differentiable path)."""
    beta1, beta2 = group["betas"]
    lr, wd, eps = _lr(group), group["weight_decay"], group["eps"]
    grad = -grad if group["maximize"] else grad
    state["step"] += 1
    step = _value(state["step"])
    bias_correction2 = 1 - beta2 ** step
    if wd != 0:
        if group["decoupled_weight_decay"]:
            param.mul_(1 - lr * wd)
        else:
            grad = grad.add(param, alpha=wd)
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * group["momentum_decay"]))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * group["momentum_decay"]))
    mu_product = state["mu_product"]
    mu_product *= mu
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    denom = exp_avg_sq.clone().div(bias_correction2).sqrt().add(eps)
    mu_product_next = mu_product * mu_next
    param.addcdiv_(grad * (-lr * (1.0 - mu) / (1.0 - mu_product)), denom)
    # clones: a product or quotient keeps its input for backward, and the moments
    # change in place next step
    param.addcdiv_(exp_avg.clone() * (-lr * mu_next / (1.0 - mu_product_next)), denom)


def radam_step(param, grad, state, group):
    """RAdam: rectified when the variance estimate is tractable (rho_t > 5)."""
    beta1, beta2 = group["betas"]
    lr, wd, eps = _lr(group), group["weight_decay"], group["eps"]
    grad = -grad if group["maximize"] else grad
    state["step"] += 1
    step = _value(state["step"])
    if wd != 0:
        if group["decoupled_weight_decay"]:
            param.mul_(1 - lr * wd)
        else:
            grad = grad.add(param, alpha=wd)
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.lerp_(grad, 1 - beta1)
    exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
    bias_correction1 = 1 - beta1 ** step
    bias_correction2 = 1 - beta2 ** step
    bias_corrected_exp_avg = exp_avg.clone() / bias_correction1    # (see nadam_step)
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
    if rho_t > 5.0:
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        adaptive_lr = bias_correction2 ** 0.5 / exp_avg_sq.sqrt().add(eps)
        param.add_(bias_corrected_exp_avg * lr * adaptive_lr * rect, alpha=-1.0)
    else:
        param.add_(bias_corrected_exp_avg * lr, alpha=-1.0)


def asgd_step(param, grad, state, group):
    """ASGD: ``p *= 1 - lambd eta``, ``p -= eta g``, the average ``ax`` after t0."""
    lr, lambd, alpha, t0 = _lr(group), group["lambd"], group["alpha"], group["t0"]
    mu, ax, eta = state["mu"], state["ax"], state["eta"]
    grad = _grad(param, grad, group)
    state["step"] += 1
    eta_value = _value(eta)
    param.mul_(1 - lambd * eta_value)
    param.add_(grad, alpha=-eta_value)
    if mu.item() != 1:
        ax.add_(param.sub(ax).mul_(mu))
    else:
        ax.copy_(param)
    step = _value(state["step"])
    eta.fill_(lr / (1 + lambd * lr * step) ** alpha)
    mu.fill_(1 / max(1, step - t0))


def rprop_step(param, grad, state, group):
    """Rprop: per-entry step sizes grown or shrunk by the sign of g * previous g."""
    etaminus, etaplus = group["etas"]
    step_size_min, step_size_max = group["step_sizes"]
    grad = -grad if group["maximize"] else grad
    prev, step_size = state["prev"], state["step_size"]
    state["step"] += 1
    sign = grad.mul(prev.clone()).sign()
    sign[sign.gt(0)] = etaplus
    sign[sign.lt(0)] = etaminus
    sign[sign.eq(0)] = 1
    step_size.mul_(sign).clamp_(step_size_min, step_size_max)
    grad = grad.clone()
    grad[sign.eq(etaminus)] = 0
    param.addcmul_(grad.sign(), step_size, value=-1)
    prev.copy_(grad)
