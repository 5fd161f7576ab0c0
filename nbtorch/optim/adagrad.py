"""Adagrad, as torch.optim.Adagrad."""
from .._tensor import Tensor
from ..ops.optim_updates import adagrad_update
from ._differentiable import adagrad_step
from ._sparse import adagrad_sparse_update
from .optimizer import (Optimizer, bump_step, check_hyper, check_implementation_flags,
                        check_lr, new_step, zeros_state)

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad: step sizes shrinking with the sum of squared gradients.

    Per parameter (t = step count): ``g = grad (+ weight_decay * p)``,
    ``sum += g^2``, ``p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(sum) + eps)``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (default 1e-2).
        lr_decay: learning-rate decay (default 0).
        weight_decay: L2 penalty (default 0).
        initial_accumulator_value: starting value of the sums (default 0).
        eps: added to the denominator (default 1e-10).
        maximize: ascend the objective instead of descending it.
        foreach, fused: accepted for compatibility.
        differentiable: run the update as autograd-recorded tensor ops (PyTorch's).

    Example:
        >>> opt = torch.optim.Adagrad(model.parameters(), lr=0.1)
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        check_lr(lr)
        check_hyper(0.0 <= lr, f"Invalid learning rate: {lr}")
        check_hyper(0.0 <= lr_decay, f"Invalid lr_decay value: {lr_decay}")
        check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
        check_hyper(0.0 <= initial_accumulator_value,
                    f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
        check_implementation_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)
        for group in self.param_groups:     # PyTorch creates Adagrad's state eagerly
            for p in group["params"]:
                self._init_state(p, group)

    def share_memory(self):
        """Move the accumulated sums to shared memory (Hogwild training across processes)."""
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["sum"].share_memory_()

    def _init_state(self, param, group):
        state = self.state[param]
        state["step"] = new_step()
        state["sum"] = zeros_state(param, float(group["initial_accumulator_value"]))
        return state

    def _update(self, param, grad, group):
        state = self.state[param] or self._init_state(param, group)
        if grad.is_sparse:
            return self._sparse_update(param, grad, state, group)
        if group["differentiable"]:
            return adagrad_step(param, grad, state, group)
        adagrad_update(param, grad, state["sum"], bump_step(state["step"]), lr=group["lr"],
                       lr_decay=group["lr_decay"], weight_decay=group["weight_decay"],
                       eps=group["eps"], maximize=group["maximize"])

    def _sparse_update(self, param, grad, state, group):
        """PyTorch's sparse Adagrad: only the rows the gradient touches move."""
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        step = bump_step(state["step"])
        lr = group["lr"]
        lr = lr.item() if isinstance(lr, Tensor) else lr
        clr = lr / (1 + (step - 1) * group["lr_decay"])
        adagrad_sparse_update(param, -grad if group["maximize"] else grad, state["sum"], clr,
                              group["eps"])
