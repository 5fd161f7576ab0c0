"""Adam and AMSGrad, as torch.optim.Adam (AdamW shares the kernel: adamw.py)."""
from ..ops.optim_updates import adam_update
from .optimizer import (Optimizer, bump_step, check_hyper, check_implementation_flags,
                        new_step, zeros_state)

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
        foreach, capturable, fused: accepted for compatibility.
        differentiable: must be False.

    Example:
        >>> opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        >>> opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        check_adam_hyper(lr, betas, eps, weight_decay)
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
        beta1, beta2 = group["betas"]
        adam_update(param, grad, state["exp_avg"], state["exp_avg_sq"],
                    state["max_exp_avg_sq"] if amsgrad else None,
                    bump_step(state["step"]), lr=group["lr"], beta1=beta1, beta2=beta2,
                    eps=group["eps"], weight_decay=group["weight_decay"], amsgrad=amsgrad,
                    maximize=group["maximize"],
                    decoupled=group.get("decoupled_weight_decay", False))


def check_adam_hyper(lr, betas, eps, weight_decay):
    """PyTorch's checks of Adam's and AdamW's hyper-parameters."""
    check_hyper(0.0 <= lr, f"Invalid learning rate: {lr}")
    check_hyper(0.0 <= eps, f"Invalid epsilon value: {eps}")
    check_hyper(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
    check_hyper(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    check_hyper(0.0 <= weight_decay, f"Invalid weight_decay value: {weight_decay}")
