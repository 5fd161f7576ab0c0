"""Adam and AMSGrad, as torch.optim.Adam (AdamW shares the kernel: adamw.py)."""
from ..ops.optim_updates import adam_update
from ._differentiable import adam_step
from .._tensor import Tensor
from .optimizer import (Optimizer, bump_step, check_hyper, check_implementation_flags,
                        check_lr, new_step, zeros_state)

__all__ = ["Adam"]


class Adam(Optimizer):
    """Adam: per-parameter step sizes from running moments of the gradient.

    Per parameter (t = step count): ``g = grad (+ weight_decay * p)``,
    ``m = beta1 m + (1 - beta1) g``, ``v = beta2 v + (1 - beta2) g^2``
    (amsgrad: ``v_max = max(v_max, v)`` is used instead of v),
    ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate (default 1e-3).
        betas: coefficients of the running averages of the gradient and its
            square (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty added to the gradient (default 0).
        amsgrad: use the AMSGrad variant.
        maximize: ascend the objective instead of descending it.
        decoupled_weight_decay: decay the weights directly, as AdamW does.
        foreach, fused: accepted for compatibility (updates are always fused).
        capturable: CUDA parameters only (CPU ones are refused at `step()`, as PyTorch).
        differentiable: run the update as autograd-recorded tensor ops (PyTorch's).

    Example:
        >>> opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    _sparse_grad_error = ("Adam does not support sparse gradients, please consider "
                          "SparseAdam instead")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_lr(lr, foreach, capturable)
        check_adam_hyper(lr, betas, eps, weight_decay)
        betas = check_adam_betas(betas, foreach, capturable)
        check_implementation_flags(foreach, fused, differentiable)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _update(self, param, grad, group):
        state = self.state[param]
        amsgrad = group["amsgrad"]
        if not state:
            state["step"] = new_step()
            state["exp_avg"] = zeros_state(param)
            state["exp_avg_sq"] = zeros_state(param)
            if amsgrad:
                state["max_exp_avg_sq"] = zeros_state(param)
        if group["differentiable"]:
            return adam_step(param, grad, state, group,
                             group.get("decoupled_weight_decay", False))
        beta1, beta2 = group["betas"]
        adam_update(param, grad, state["exp_avg"], state["exp_avg_sq"],
                    state["max_exp_avg_sq"] if amsgrad else None,
                    bump_step(state["step"]), lr=group["lr"], beta1=beta1, beta2=beta2,
                    eps=group["eps"], weight_decay=group["weight_decay"], amsgrad=amsgrad,
                    maximize=group["maximize"],
                    decoupled=group.get("decoupled_weight_decay", False))


def check_adam_hyper(lr, betas, eps, weight_decay):
    """PyTorch's checks of Adam's and AdamW's hyper-parameters (and Adamax's,
    NAdam's, RAdam's)."""
    check_lr(lr)
    check_hyper(0.0 <= lr, f"Invalid learning rate: {lr}")
    check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
    check_hyper(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
    check_hyper(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")


def check_adam_betas(betas, foreach, capturable):
    """Adam's and AdamW's betas: both floats or both 1-element tensors (PyTorch's
    checks); returns them with tensors as 0-d."""
    floats = all(isinstance(b, float) for b in betas[:2])
    if not (floats or all(isinstance(b, Tensor) for b in betas[:2])):
        raise ValueError("betas must be either both floats or both Tensors")
    out = []
    for i, b in enumerate(betas):
        if isinstance(b, Tensor):
            if not capturable and foreach:
                raise ValueError(f"betas[{i}] as a Tensor is not supported for "
                                 "capturable=False and foreach=True")
            if b.numel() != 1:
                raise ValueError(f"Tensor betas[{i}] must be 1-element")
            b = b.reshape(()) if b.dim() else b
        out.append(b)
    return tuple(out)
