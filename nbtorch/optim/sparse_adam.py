"""SparseAdam, as torch.optim.SparseAdam: its constructor, checks and state.

PyTorch's SparseAdam updates only the rows a sparse gradient touches (e.g. of
an ``nn.Embedding(sparse=True)``) and refuses dense gradients. nbtorch has no
sparse tensors yet, so every gradient is dense (``Embedding(sparse=True)``
produces a dense one) and `step` raises PyTorch's error for dense gradients;
use Adam, which gives the same result wherever every row has a gradient.
"""
from .._tensor import Tensor
from ..autograd import enable_grad
from .optimizer import Optimizer, check_hyper

__all__ = ["SparseAdam"]

_DENSE_MESSAGE = ("SparseAdam does not support dense gradients, please consider Adam instead "
                  "(nbtorch has no sparse tensors yet, so every gradient is dense, including "
                  "those of nn.Embedding(sparse=True))")


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
        >>> opt.step()     # RuntimeError in nbtorch: gradients are dense
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
        """Raises for the dense gradients nbtorch has (see the module docstring)."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None and not p.grad.is_sparse:
                    raise RuntimeError(_DENSE_MESSAGE)
        return loss


def _flag(t, name):
    value = getattr(t, name)
    return value() if callable(value) else value
