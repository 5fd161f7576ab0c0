"""Differentiable optimizer steps (``differentiable=True``), as PyTorch's.

The fused kernels update parameters outside autograd. With
``differentiable=True`` PyTorch runs the update as ordinary tensor ops with
gradients enabled, so the updated parameters (typically non-leaf clones, as in
meta-learning) carry a graph back to the gradients, the state and the
hyper-parameters. These functions are those updates, op for op as PyTorch's
single-tensor implementations (so float32 results match too).
"""
from ..ops.pointwise_select import maximum

__all__ = ["sgd_step", "adam_step"]


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
