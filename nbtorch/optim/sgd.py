"""Stochastic gradient descent (optionally with momentum), as torch.optim.SGD."""
from ..ops.optim_updates import sgd_update
from ._differentiable import sgd_step
from .optimizer import (Optimizer, check_hyper, check_implementation_flags, check_lr,
                        required, zeros_state)

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent with optional (Nesterov) momentum.

    Per parameter: ``g = grad (+ weight_decay * p)``; with momentum
    ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` on the first
    step) and ``g = buf`` (Nesterov: ``g + momentum * buf``); ``p -= lr * g``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (default 1e-3).
        momentum: momentum factor (default 0).
        dampening: dampening of the momentum (default 0).
        weight_decay: L2 penalty (default 0).
        nesterov: Nesterov momentum (needs momentum > 0 and dampening 0).
        maximize: ascend the objective instead of descending it.
        foreach, fused: accepted for compatibility (updates are always fused).
        differentiable: run the update as autograd-recorded tensor ops (PyTorch's).

    Example:
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    _foreach_differentiable = True      # PyTorch's foreach SGD records its update

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        check_lr(lr)
        check_hyper(lr is required or lr >= 0.0, f"Invalid learning rate: {lr}")
        check_hyper(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        check_hyper(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        check_hyper(not nesterov or (momentum > 0 and dampening == 0),
                    "Nesterov momentum requires a momentum and zero dampening")
        check_implementation_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        weight_decay=weight_decay, nesterov=nesterov, maximize=maximize,
                        foreach=foreach, differentiable=differentiable, fused=fused)
        super().__init__(params, defaults)

    def _update(self, param, grad, group):
        if grad.is_sparse:      # the touched rows move; a momentum buffer stays dense
            if group["weight_decay"] != 0:
                raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, "
                                   "sparse) instead.")
            grad = grad.to_dense()
        if group["differentiable"]:
            return sgd_step(param, grad, self.state[param], group)
        momentum = group["momentum"]
        buf, first_step = None, False
        if momentum != 0:
            state = self.state[param]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = zeros_state(param)
                first_step = True
        sgd_update(param, grad, buf, lr=group["lr"], momentum=momentum,
                   dampening=group["dampening"], weight_decay=group["weight_decay"],
                   nesterov=group["nesterov"], maximize=group["maximize"],
                   first_step=first_step)
