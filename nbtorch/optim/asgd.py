"""Averaged stochastic gradient descent, as torch.optim.ASGD."""
from ..ops.optim_updates import asgd_update
from ._differentiable import asgd_step
from .optimizer import (Optimizer, bump_step, check_hyper, check_implementation_flags,
                        check_lr, new_scalar, new_step, zeros_state)

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """ASGD: SGD with a decaying rate and a running average of the iterates.

    Per parameter (t = step count): ``g = grad (+ weight_decay * p)``,
    ``p = p (1 - lambd eta) - eta g``; the average ``ax = p`` until step t0, then
    ``ax += (p - ax) mu``; afterwards ``eta = lr / (1 + lambd lr t)^alpha`` and
    ``mu = 1 / max(1, t - t0)``. The average is ``optimizer.state[p]["ax"]``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (default 1e-2).
        lambd: decay term (default 1e-4).
        alpha: power of the rate's decay (default 0.75).
        t0: step from which averaging starts (default 1e6).
        weight_decay: L2 penalty (default 0).
        maximize: ascend the objective instead of descending it.
        foreach: accepted for compatibility (updates are always fused).
        capturable: CUDA parameters only (CPU ones are refused at `step()`, as PyTorch).
        differentiable: run the update as autograd-recorded tensor ops (PyTorch's).

    Example:
        >>> opt = torch.optim.ASGD(model.parameters(), lr=0.01, t0=100)
    """

    _sparse_grad_error = "ASGD does not support sparse gradients"
    _capturable_tensors = ("params, mus, etas, and state_steps",) * 2

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        check_lr(lr)
        check_hyper(0.0 <= lr, f"Invalid learning rate: {lr}")
        check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        check_implementation_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, param, grad, group):
        state = self.state[param]
        if not state:
            state["step"] = new_step()
            state["eta"] = new_scalar(group["lr"])
            state["mu"] = new_scalar(1.0)
            state["ax"] = zeros_state(param)
        if group["differentiable"]:
            return asgd_step(param, grad, state, group)
        asgd_update(param, grad, state["ax"], state["eta"], state["mu"],
                    bump_step(state["step"]), lr=group["lr"], lambd=group["lambd"],
                    alpha=group["alpha"], t0=group["t0"], weight_decay=group["weight_decay"],
                    maximize=group["maximize"])
