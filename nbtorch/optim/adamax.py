"""Adamax (Adam with an infinity norm), as torch.optim.Adamax."""
from ..ops.optim_updates import adamax_update
from ._differentiable import adamax_step
from .adam import check_adam_hyper
from .optimizer import (Optimizer, bump_step, check_implementation_flags, new_step,
                        zeros_state)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """Adamax: Adam whose second moment is an exponentially weighted infinity norm.

    Per parameter (t = step count): ``g = grad (+ weight_decay * p)``,
    ``m = beta1 m + (1 - beta1) g``, ``u = max(beta2 u, |g| + eps)``,
    ``p -= lr / (1 - beta1^t) * m / u``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (default 2e-3).
        betas: coefficients of the running average and of the norm (default (0.9, 0.999)).
        eps: added to |g| (default 1e-8).
        weight_decay: L2 penalty (default 0).
        maximize: ascend the objective instead of descending it.
        foreach: accepted for compatibility (updates are always fused).
        capturable: CUDA parameters only (CPU ones are refused at `step()`, as PyTorch).
        differentiable: run the update as autograd-recorded tensor ops (PyTorch's).

    Example:
        >>> opt = torch.optim.Adamax(model.parameters(), lr=2e-3)
    """

    _sparse_grad_error = "Adamax does not support sparse gradients"

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        check_adam_hyper(lr, betas, eps, weight_decay)
        check_implementation_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, param, grad, group):
        state = self.state[param]
        if not state:
            state["step"] = new_step()
            state["exp_avg"] = zeros_state(param)
            state["exp_inf"] = zeros_state(param)
        if group["differentiable"]:
            return adamax_step(param, grad, state, group)
        beta1, beta2 = group["betas"]
        adamax_update(param, grad, state["exp_avg"], state["exp_inf"], bump_step(state["step"]),
                      lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                      weight_decay=group["weight_decay"], maximize=group["maximize"])
