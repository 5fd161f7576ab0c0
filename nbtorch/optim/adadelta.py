"""Adadelta, as torch.optim.Adadelta."""
from ..ops.optim_updates import adadelta_update
from ._differentiable import adadelta_step
from .optimizer import (Optimizer, bump_step, check_hyper, check_implementation_flags,
                        check_lr, new_step, zeros_state)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """Adadelta: steps scaled by the ratio of running RMS of past updates and gradients.

    Per parameter: ``g = grad (+ weight_decay * p)``,
    ``sq = rho sq + (1 - rho) g^2``, ``delta = sqrt(acc + eps) / sqrt(sq + eps) g``,
    ``acc = rho acc + (1 - rho) delta^2``, ``p -= lr delta``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: coefficient scaling delta (default 1.0).
        rho: coefficient of the running averages (default 0.9).
        eps: added inside the square roots (default 1e-6).
        weight_decay: L2 penalty (default 0).
        maximize: ascend the objective instead of descending it.
        foreach: accepted for compatibility (updates are always fused).
        capturable: CUDA parameters only (CPU ones are refused at `step()`, as PyTorch).
        differentiable: run the update as autograd-recorded tensor ops (PyTorch's).

    Example:
        >>> opt = torch.optim.Adadelta(model.parameters())
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    _sparse_grad_error = "Adadelta does not support sparse gradients"
    _capturable_xla = (False, False)          # PyTorch's capturable message

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        check_lr(lr)
        check_hyper(0.0 <= lr, f"Invalid learning rate: {lr}")
        check_hyper(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
        check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        check_implementation_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, param, grad, group):
        state = self.state[param]
        if not state:
            state["step"] = new_step()
            state["square_avg"] = zeros_state(param)
            state["acc_delta"] = zeros_state(param)
        if group["differentiable"]:
            return adadelta_step(param, grad, state, group)
        bump_step(state["step"])
        adadelta_update(param, grad, state["square_avg"], state["acc_delta"], lr=group["lr"],
                        rho=group["rho"], eps=group["eps"], weight_decay=group["weight_decay"],
                        maximize=group["maximize"])
