"""Muon, as torch.optim.Muon (written with tensor ops: its update orthogonalises
the momentum of a weight matrix by Newton-Schulz iterations, a few matmuls)."""
import math

from .._tensor import Tensor
from ..autograd import enable_grad, no_grad
from ..ops.linalg import addmm
from .optimizer import Optimizer, check_hyper, zeros_state

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps, eps):
    """An approximately orthogonal matrix with grad's singular vectors (``U V^T`` of
    its SVD), by `ns_steps` quintic Newton-Schulz iterations
    ``X = a X + (b A + c A A) X`` with ``A = X X^T``, in bfloat16 as PyTorch's."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.bfloat16()
    tall = grad.size(0) > grad.size(1)
    if tall:
        x = x.T
    x.div_(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        x = addmm(x, addmm(gram, gram, gram, beta=b, alpha=c), x, beta=a)
    return x.T if tall else x


def adjust_lr(lr, adjust_lr_fn, shape):
    """lr scaled for a (rows, cols) matrix: sqrt(max(1, rows/cols)) ('original', the
    default) or 0.2 sqrt(max(rows, cols)) ('match_rms_adamw')."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    if adjust_lr_fn == "match_rms_adamw":
        return lr * 0.2 * math.sqrt(max(rows, cols))
    return lr


class Muon(Optimizer):
    """Muon: SGD with (Nesterov) momentum whose update of each 2-D weight is
    orthogonalised, ``p *= 1 - lr wd``, ``p -= adjusted_lr * NS(momentum update)``.

    Only 2-D parameters are accepted (use another optimizer for biases,
    embeddings and norms).

    Args:
        params: 2-D parameters or parameter groups to optimize.
        lr: learning rate (default 1e-3).
        weight_decay: decoupled weight decay (default 0.1).
        momentum: momentum factor (default 0.95).
        nesterov: Nesterov momentum (default True).
        ns_coefficients: (a, b, c) of the Newton-Schulz polynomial.
        eps: floor of the norm the gradient is divided by (default 1e-7).
        ns_steps: Newton-Schulz iterations (default 5).
        adjust_lr_fn: None / 'original' or 'match_rms_adamw' (see `adjust_lr`).

    Example:
        >>> opt = torch.optim.Muon([layer.weight for layer in hidden_layers], lr=0.02)
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_hyper(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}")
        check_hyper(0.0 <= momentum, f"momentum should be >= 0 but is: {momentum}")
        check_hyper(0.0 <= weight_decay, f"weight decay should be >= 0 but is: {weight_decay}")
        check_hyper(adjust_lr_fn is None or adjust_lr_fn in ("original", "match_rms_adamw"),
                    f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(lr=lr, weight_decay=weight_decay, momentum=momentum,
                        nesterov=nesterov, ns_coefficients=ns_coefficients, eps=eps,
                        ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn)
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    def step(self, closure=None):
        """One Muon step of every parameter with a gradient; returns closure()'s loss."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self._update_one(p, p.grad, group)
        return loss

    def _update_one(self, param, grad, group):
        if grad.is_sparse:
            raise RuntimeError("Muon does not support sparse gradients")
        if grad.ndim != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        state = self.state[param]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = zeros_state(grad)
        buf = state["momentum_buffer"]
        lr, momentum = group["lr"], group["momentum"]
        lr = lr.item() if isinstance(lr, Tensor) else lr
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        update = zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                            group["ns_steps"], group["eps"])
        param.mul_(1 - lr * group["weight_decay"])
        # the bfloat16 update widened first: PyTorch adds it in the parameter's dtype
        # (nbtorch's mixed-dtype add_ with alpha rounded alpha * update to bfloat16)
        param.add_(update.to(param.dtype),
                   alpha=-adjust_lr(lr, group["adjust_lr_fn"], param.shape))
