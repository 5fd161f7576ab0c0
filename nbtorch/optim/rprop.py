"""Resilient backpropagation, as torch.optim.Rprop."""
from ..ops.optim_updates import rprop_update
from ._differentiable import rprop_step
from .optimizer import (Optimizer, bump_step, check_hyper, check_implementation_flags,
                        check_lr, new_step, zeros_state)

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Rprop: per-element step sizes adapted from the signs of successive gradients.

    Per element: if ``g * prev > 0`` the step size grows by etaplus, if it is
    negative the step size shrinks by etaminus and g counts as 0; step sizes
    are clipped to `step_sizes`; ``p -= sign(g) * step_size`` and ``prev = g``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: initial step size (default 1e-2).
        etas: (etaminus, etaplus), the shrink and growth factors (default (0.5, 1.2)).
        step_sizes: (min, max) step size (default (1e-6, 50)).
        maximize: ascend the objective instead of descending it.
        foreach: accepted for compatibility (updates are always fused).
        capturable: CUDA parameters only (CPU ones are refused at `step()`, as PyTorch).
        differentiable: run the update as autograd-recorded tensor ops (PyTorch's).

    Example:
        >>> opt = torch.optim.Rprop(model.parameters(), lr=0.01)
    """

    _sparse_grad_error = "Rprop does not support sparse gradients"
    _capturable_xla = (True, True)            # PyTorch's capturable message

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        check_lr(lr)
        check_hyper(0.0 <= lr, f"Invalid learning rate: {lr}")
        check_hyper(0.0 < etas[0] < 1.0 < etas[1], f"Invalid eta values: {etas[0]}, {etas[1]}")
        check_implementation_flags(foreach, None, differentiable)
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach,
                        maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _update(self, param, grad, group):
        state = self.state[param]
        if not state:
            state["step"] = new_step()
            state["prev"] = zeros_state(param)
            lr = float(group["lr"])     # a complex parameter steps both parts by lr
            state["step_size"] = zeros_state(param, complex(lr, lr) if param.is_complex()
                                             else lr)
        if group["differentiable"]:
            return rprop_step(param, grad, state, group)
        bump_step(state["step"])
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        rprop_update(param, grad, state["prev"], state["step_size"], etaminus=etaminus,
                     etaplus=etaplus, step_size_min=step_size_min,
                     step_size_max=step_size_max, maximize=group["maximize"])
