"""RAdam (rectified Adam), as torch.optim.RAdam."""
from ..ops.optim_updates import radam_update
from ._differentiable import radam_step
from .adam import check_adam_hyper
from .optimizer import (Optimizer, bump_step, check_implementation_flags, new_step,
                        zeros_state)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """RAdam: Adam whose adaptive rate is switched on (and rectified) only once the
    variance of its estimate is tractable.

    Per parameter (t = step count): m and v as in Adam;
    ``rho_inf = 2 / (1 - beta2) - 1``, ``rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)``;
    while ``rho_t <= 5``: ``p -= lr m / (1 - beta1^t)``; afterwards
    ``p -= lr m / (1 - beta1^t) * sqrt(1 - beta2^t) / (sqrt(v) + eps) * r_t`` with the
    rectification
    ``r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (default 1e-3).
        betas: running-average coefficients (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty, or decoupled decay with `decoupled_weight_decay`
            (default 0).
        decoupled_weight_decay: decay the weights directly (``p *= 1 - lr wd``).
        maximize: ascend the objective instead of descending it.
        foreach: accepted for compatibility (updates are always fused).
        capturable: CUDA parameters only (CPU ones are refused at `step()`, as PyTorch).
        differentiable: run the update as autograd-recorded tensor ops (PyTorch's).

    Example:
        >>> opt = torch.optim.RAdam(model.parameters(), lr=1e-3)
    """

    _sparse_grad_error = "RAdam does not support sparse gradients"

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        check_adam_hyper(lr, betas, eps, weight_decay)
        check_implementation_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, param, grad, group):
        state = self.state[param]
        if not state:
            state["step"] = new_step()
            state["exp_avg"] = zeros_state(param)
            state["exp_avg_sq"] = zeros_state(param)
        if group["differentiable"]:
            return radam_step(param, grad, state, group)
        beta1, beta2 = group["betas"]
        radam_update(param, grad, state["exp_avg"], state["exp_avg_sq"],
                     bump_step(state["step"]), lr=group["lr"], beta1=beta1, beta2=beta2,
                     eps=group["eps"], weight_decay=group["weight_decay"],
                     decoupled=group["decoupled_weight_decay"], maximize=group["maximize"])
