"""NAdam (Adam with Nesterov momentum), as torch.optim.NAdam."""
from ..ops.optim_updates import nadam_update
from ._differentiable import nadam_step
from .adam import check_adam_hyper
from .optimizer import (Optimizer, bump_step, check_hyper, check_implementation_flags,
                        new_scalar, new_step, zeros_state)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """NAdam: Adam with Nesterov momentum and a momentum schedule.

    Per parameter (t = step count): the momentum coefficient
    ``mu_t = beta1 (1 - 0.96^(t momentum_decay) / 2)`` and the product of all
    of them so far ``P_t``; m and v as in Adam; with
    ``denom = sqrt(v / (1 - beta2^t)) + eps``:
    ``p -= lr (1 - mu_t) / (1 - P_t) g / denom + lr mu_{t+1} / (1 - P_t mu_{t+1}) m / denom``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (default 2e-3).
        betas: running-average coefficients (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty, or decoupled decay with `decoupled_weight_decay`
            (default 0).
        momentum_decay: speed of the momentum schedule (default 4e-3).
        decoupled_weight_decay: decay the weights directly (``p *= 1 - lr wd``), as
            AdamW does.
        maximize: ascend the objective instead of descending it.
        foreach: accepted for compatibility (updates are always fused).
        capturable: CUDA parameters only (CPU ones are refused at `step()`, as PyTorch).
        differentiable: run the update as autograd-recorded tensor ops (PyTorch's).

    Example:
        >>> opt = torch.optim.NAdam(model.parameters(), lr=2e-3)
    """

    _sparse_grad_error = "NAdam does not support sparse gradients"
    _capturable_tensors = ("params, mu_products and state_steps",
                           "params, mu_products, and state_steps")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        check_adam_hyper(lr, betas, eps, weight_decay)
        check_hyper(0.0 <= momentum_decay, f"Invalid momentum_decay value: {momentum_decay}")
        check_implementation_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, param, grad, group):
        state = self.state[param]
        if not state:
            state["step"] = new_step()
            state["mu_product"] = new_scalar(1.0)
            state["exp_avg"] = zeros_state(param)
            state["exp_avg_sq"] = zeros_state(param)
        if group["differentiable"]:
            return nadam_step(param, grad, state, group)
        beta1, beta2 = group["betas"]
        nadam_update(param, grad, state["exp_avg"], state["exp_avg_sq"], state["mu_product"],
                     bump_step(state["step"]), lr=group["lr"], beta1=beta1, beta2=beta2,
                     eps=group["eps"], weight_decay=group["weight_decay"],
                     momentum_decay=group["momentum_decay"],
                     decoupled=group["decoupled_weight_decay"], maximize=group["maximize"])
