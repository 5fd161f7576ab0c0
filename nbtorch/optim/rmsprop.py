"""RMSprop (optionally centered, with momentum), as torch.optim.RMSprop."""
from ..ops.optim_updates import rmsprop_update
from ._differentiable import rmsprop_step
from .optimizer import (Optimizer, bump_step, check_hyper, check_implementation_flags,
                        check_lr, new_step, zeros_state)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop: divide the gradient by a running root mean square of it.

    Per parameter: ``g = grad (+ weight_decay * p)``,
    ``sq = alpha sq + (1 - alpha) g^2``, ``avg = sqrt(sq) + eps`` (centered:
    ``ga = alpha ga + (1 - alpha) g`` and ``avg = sqrt(sq - ga^2) + eps``);
    with momentum ``buf = momentum buf + g / avg`` and ``p -= lr * buf``,
    else ``p -= lr * g / avg``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (default 1e-2).
        alpha: smoothing constant (default 0.99).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty (default 0).
        momentum: momentum factor (default 0).
        centered: normalise by an estimate of the gradient's variance.
        maximize: ascend the objective instead of descending it.
        foreach: accepted for compatibility.
        capturable: CUDA parameters only (CPU ones are refused at `step()`, as PyTorch).
        differentiable: run the update as autograd-recorded tensor ops (PyTorch's).

    Example:
        >>> opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, momentum=0.9)
    """

    _sparse_grad_error = "RMSprop does not support sparse gradients"
    _capturable_xla = (True, True)            # PyTorch's capturable message

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        check_lr(lr)
        check_hyper(0.0 <= lr, f"Invalid learning rate: {lr}")
        check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
        check_hyper(0.0 <= momentum, f"Invalid momentum value: {momentum}")
        check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        check_hyper(0.0 <= alpha, f"Invalid alpha value: {alpha}")
        check_implementation_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                        maximize=maximize, differentiable=differentiable)
        super().__init__(params, defaults)

    def _update(self, param, grad, group):
        state = self.state[param]
        momentum, centered = group["momentum"], group["centered"]
        if not state:
            state["step"] = new_step()
            state["square_avg"] = zeros_state(param)
            if momentum > 0:
                state["momentum_buffer"] = zeros_state(param)
            if centered:
                state["grad_avg"] = zeros_state(param)
        if group["differentiable"]:
            return rmsprop_step(param, grad, state, group)
        bump_step(state["step"])
        rmsprop_update(param, grad, state["square_avg"],
                       state["grad_avg"] if centered else None,
                       state["momentum_buffer"] if momentum > 0 else None,
                       lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
                       weight_decay=group["weight_decay"], momentum=momentum,
                       centered=centered, maximize=group["maximize"])
