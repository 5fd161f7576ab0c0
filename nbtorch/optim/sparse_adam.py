"""SparseAdam, as torch.optim.SparseAdam: lazy Adam for sparse (COO) gradients.

Only the entries a sparse gradient touches (e.g. the looked-up rows of an
``nn.Embedding(sparse=True)``) move, and their moments; dense gradients are
refused with PyTorch's error.
"""
from .._tensor import Tensor
from ..autograd import enable_grad, no_grad
from ._sparse import sparse_adam_update
from .optimizer import Optimizer, check_hyper, zeros_state

__all__ = ["SparseAdam"]

_DENSE_MESSAGE = "SparseAdam does not support dense gradients, please consider Adam instead"


class SparseAdam(Optimizer):
    """Adam restricted to the entries present in sparse gradients (lazy Adam).

    Args:
        params: parameters or parameter groups to optimize (dense tensors).
        lr: learning rate (default 1e-3).
        betas: running-average coefficients (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        maximize: ascend the objective instead of descending it.

    Example:
        >>> opt = torch.optim.SparseAdam(list(embedding.parameters()), lr=1e-3)
        >>> opt.step()
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_hyper(0.0 < lr, f"Invalid learning rate: {lr}")
        check_hyper(0.0 < eps, f"Invalid epsilon value: {eps}")
        check_hyper(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        check_hyper(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        for kind, test, why in (("Sparse", "is_sparse", "SparseAdam requires dense parameter "
                                                        "tensors"),
                                ("Complex", "is_complex", "SparseAdam does not support complex "
                                                          "parameters")):
            where = [[i, j] for i, group in enumerate(self.param_groups)
                     for j, p in enumerate(group["params"]) if _flag(p, test)]
            if where:
                raise ValueError(f"{kind} params at indices {where}: {why}")

    def step(self, closure=None):
        """Update the entries each sparse gradient touches; returns `closure()`'s loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr = group["lr"]
                lr = lr.item() if isinstance(lr, Tensor) else lr
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not p.grad.is_sparse:
                        raise RuntimeError(_DENSE_MESSAGE)
                    state = self.state[p]
                    if not state:                  # PyTorch keeps the step as an int here
                        state["step"] = 0
                        state["exp_avg"] = zeros_state(p)
                        state["exp_avg_sq"] = zeros_state(p)
                    state["step"] = int(state["step"]) + 1
                    grad = -p.grad if group.get("maximize", False) else p.grad
                    sparse_adam_update(p, grad, state["exp_avg"], state["exp_avg_sq"],
                                       state["step"], lr, beta1, beta2, group["eps"])
        return loss


def _flag(t, name):
    value = getattr(t, name)
    return value() if callable(value) else value
