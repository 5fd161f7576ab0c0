"""Adafactor, as torch.optim.Adafactor (written with tensor ops: its second moment
of a matrix is factored into row and column means, reductions rather than one
elementwise rule)."""
from .._dtype import finfo
from .._tensor import Tensor
from ..autograd import enable_grad, no_grad
from .optimizer import Optimizer, check_hyper, new_step

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """Adafactor: Adam-like steps with a factored second moment and relative step sizes.

    Per parameter (t = step count): ``beta2_t = 1 - t^beta2_decay``,
    ``rho_t = min(lr, 1/sqrt(t))``, ``alpha = max(eps2, RMS(p)) * rho_t``. A
    matrix (or batch of matrices) keeps running means of its squared gradient's
    rows R and columns C, and estimates the second moment as ``R C / mean(R)``;
    a vector keeps the full running mean V. The update
    ``u = g / sqrt(max(V, eps1^2))`` is clipped to RMS d:
    ``p -= alpha / max(1, RMS(u) / d) * u`` (weight decay: ``p *= 1 - lr wd`` first).

    Args:
        params: parameters or parameter groups to optimize.
        lr: learning rate, caps the relative step (default 1e-2).
        beta2_decay: decay exponent of the second-moment coefficient (default -0.8).
        eps: (eps1, eps2): floor of the second moment (None: the dtype's eps) and of
            the parameter scale (default (None, 1e-3)).
        d: clipping threshold of the update's RMS (default 1.0).
        weight_decay: decoupled weight decay (default 0).
        maximize: ascend the objective instead of descending it.
        foreach: accepted for compatibility.

    Example:
        >>> opt = torch.optim.Adafactor(model.parameters(), lr=1e-2)
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_hyper(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}")
        check_hyper(0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}")
        check_hyper(eps[0] is None or 0.0 <= eps[0],
                    f"epsilon1 should be >= 0 but is: {eps[0]}")
        check_hyper(0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}")
        check_hyper(1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}")
        check_hyper(0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d,
                        weight_decay=weight_decay, foreach=foreach, maximize=maximize)
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One Adafactor step of every parameter with a gradient; returns closure()'s loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                eps1 = group["eps"][0]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if eps1 is None:      # as PyTorch: the first parameter's dtype decides
                        eps1 = finfo(p.dtype).eps
                    self._update_one(p, p.grad, group, eps1)
        return loss

    def _update_one(self, param, grad, group, eps1):
        if grad.is_sparse:
            raise RuntimeError("Adafactor does not support sparse gradients")
        state = self.state[param]
        if not state:
            state["step"] = new_step()
            if grad.dim() > 1:
                state["row_var"] = grad.new_zeros(tuple(grad.shape[:-1]) + (1,))
                state["col_var"] = grad.new_zeros(tuple(grad.shape[:-2]) + (1, grad.shape[-1]))
            else:
                state["variance"] = grad.new_zeros(tuple(grad.shape))
        lr, d = group["lr"], group["d"]
        lr = lr.item() if isinstance(lr, Tensor) else lr
        eps2 = group["eps"][1]
        if group["maximize"]:
            grad = -grad
        state["step"].add_(1)
        t = state["step"].item()
        one_minus_beta2_t = t ** group["beta2_decay"]
        rho_t = min(lr, 1 / (t ** 0.5))
        alpha = max(eps2, param.norm(2).item() / (param.numel() ** 0.5)) * rho_t
        if group["weight_decay"] != 0:
            param.mul_(1 - lr * group["weight_decay"])
        if grad.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_var.lerp_(grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1)),
                          one_minus_beta2_t)
            col_var.lerp_(grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2)),
                          one_minus_beta2_t)
            var_estimate = row_var @ col_var
            var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        else:
            state["variance"].lerp_(grad * grad, one_minus_beta2_t)
            var_estimate = state["variance"].clone()
        update = var_estimate.clamp_(min=eps1 * eps1).rsqrt_()
        update.mul_(grad)
        denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
        param.add_(update, alpha=-alpha / denom)
