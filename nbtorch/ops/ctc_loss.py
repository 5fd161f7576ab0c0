"""Connectionist temporal classification loss: ``ctc_loss``.

The per-sample negative log-likelihood and its gradient are Numba kernels (the alpha
and beta recursions of `kernels/ctc.py`, a sample per loop step on the CPU, a thread
per sample on CUDA); the reductions are ordinary ops. The gradient with respect to
``log_probs`` is PyTorch's: exp(lp) - posterior, which is the true gradient once it
passes back through the log_softmax that produced ``lp`` (so gradcheck it through one,
as PyTorch's own tests do).
"""
import numpy as np

from .. import _dtype
from .._registry import get_kernel
from .._tensor import Tensor, empty
from ..autograd import Function, grad_mode
from ..autograd.function import delayed_error
from ._common import check_same_device

__all__ = ["ctc_loss"]

_WHERE = "(while checking arguments for ctc_loss_allocate_outputs)"


class CTCNegLogLikelihood(Function):
    """nll[n] = -log p(target_n | log_probs[:input_lengths[n], n]) for (T, N, C) log_probs."""

    @staticmethod
    def forward(ctx, lp, targets, offsets, tlen, ilen, blank, zero_infinity):
        T, N, _ = lp.shape
        S = 2 * (int(tlen.max().item()) if N else 0) + 1
        lpc = lp.contiguous()
        alpha = empty((N, T, S), lp.dtype, lp.device)
        nll = empty((N,), lp.dtype, lp.device)
        get_kernel("ctc_loss_forward", lp.device.type)(
            lpc._array, targets._array, offsets._array, tlen._array, ilen._array, int(blank),
            alpha._array, nll._array)
        ctx.save_for_backward(lpc)
        ctx.raw = (targets, offsets, tlen, ilen, int(blank), alpha, nll, bool(zero_infinity))
        if zero_infinity:
            return nll.masked_fill(nll == float("inf"), 0.0)
        return nll

    @staticmethod
    def backward(ctx, grad_nll):
        lpc, = ctx.saved_tensors
        targets, offsets, tlen, ilen, blank, alpha, nll, zero_inf = ctx.raw
        beta = empty(tuple(alpha.shape), lpc.dtype, lpc.device)
        grad = empty(tuple(lpc.shape), lpc.dtype, lpc.device)
        g = grad_nll.to(lpc.dtype).contiguous()
        get_kernel("ctc_loss_backward", lpc.device.type)(
            lpc._array, targets._array, offsets._array, tlen._array, ilen._array, blank,
            alpha._array, beta._array, nll._array, g._array, zero_inf, grad._array)
        if grad_mode.is_grad_enabled():     # create_graph=True: the kernel records nothing
            grad = delayed_error(grad, "derivative for _ctc_loss_backward is not "
                                       "implemented", (lpc, grad_nll))   # PyTorch's words
        return grad, None, None, None, None, None, None


def _lengths(name, value, N, device):
    """An int64 (N,) tensor of lengths from a tensor, list or tuple, checked as PyTorch does."""
    if isinstance(value, Tensor):
        if value.dtype.is_floating_point or value.dtype is _dtype.bool:
            raise RuntimeError(f"{name} must be integral")
        arr = value.detach().cpu().numpy().reshape(-1).astype(np.int64)
    else:
        arr = np.asarray(value, dtype=np.int64).reshape(-1)
    if arr.size != N:
        raise RuntimeError(f"{name} must be of size batch_size")
    if arr.size and arr.min() < 0:
        raise RuntimeError(f"Expected {name} to have value at least 0, but got value "
                           f"{arr.min()} {_WHERE}")
    return arr


def _flat_targets(targets, tl, N):
    """(labels as flat int64, offset of each sample's labels) from padded or concatenated
    targets."""
    arr = targets.detach().cpu().numpy().astype(np.int64)
    if arr.ndim == 1:
        if arr.size != tl.sum():
            raise RuntimeError(f"Expected tensor to have size {tl.sum()} at dimension 0, but "
                               f"got size {arr.size} for argument #2 'targets' {_WHERE}")
        return arr, np.concatenate([[0], np.cumsum(tl)[:-1]]).astype(np.int64)
    if arr.ndim != 2:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {arr.ndim}-dimensional tensor "
                           f"for argument #2 'targets' {_WHERE}")
    if N and tl.max() > arr.shape[1]:
        raise RuntimeError(f"Expected tensor to have size at least {tl.max()} at dimension 1, "
                           f"but got size {arr.shape[1]} for argument #2 'targets' {_WHERE}")
    return arr.reshape(-1), np.arange(N, dtype=np.int64) * arr.shape[1]


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The CTC loss of label sequences against per-frame log-probabilities.

    Args:
        log_probs: (T, N, C) or unbatched (T, C), log-softmaxed over C.
        targets: (N, S) padded labels or the N sequences concatenated (1-D).
        input_lengths, target_lengths: (N,) tensors or sequences of ints.
        blank: the blank label; reduction: 'mean' (each loss divided by its target
            length, then averaged), 'sum' or 'none'; zero_infinity: impossible
            alignments give 0 (and no gradient) instead of inf.

    Example:
        >>> lp = nbtorch.randn(10, 2, 5).log_softmax(2)
        >>> ctc_loss(lp, nbtorch.tensor([[1, 2], [3, 4]]), [10, 8], [2, 2]).shape
        torch.Size([])
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if not log_probs.dtype.is_floating_point:
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for "
                                  f"'{_dtype.type_name(log_probs.dtype)}'")
    unbatched = log_probs.dim() == 2
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    if unbatched and targets.dim() == 1:
        targets = targets.unsqueeze(0)
    if lp.dim() != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs of 2 or 3 dimensions, got "
                           f"{log_probs.dim()}")
    check_same_device("ctc_loss", log_probs, targets)
    if lp.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    T, N, C = lp.shape
    if not 0 <= blank < C:
        raise RuntimeError("blank must be in label range")
    il = _lengths("input_lengths", input_lengths, N, lp.device)
    tl = _lengths("target_lengths", target_lengths, N, lp.device)
    if il.size and il.max() > T:
        raise RuntimeError(f"Expected input_lengths to have value at most {T}, but got value "
                           f"{il.max()} {_WHERE}")
    flat, offsets = _flat_targets(targets, tl, N)
    used = np.concatenate([flat[o:o + n] for o, n in zip(offsets, tl)]) if N else flat[:0]
    if used.size and (used.min() < 0 or used.max() >= C):
        raise RuntimeError(f"ctc_loss: target labels must lie in [0, {C}), got "
                           f"{used.min() if used.min() < 0 else used.max()}")
    from .creation import tensor
    dev = lp.device
    work = lp if lp.dtype in (_dtype.float32, _dtype.float64) else lp.to(_dtype.float32)
    nll = CTCNegLogLikelihood.apply(
        work, tensor(flat if flat.size else np.zeros(1, np.int64), device=dev),
        tensor(offsets, device=dev), tensor(tl, device=dev), tensor(il, device=dev), blank,
        bool(zero_infinity)).to(lp.dtype)
    if reduction == "mean":
        div = tensor(np.maximum(tl, 1), dtype=nll.dtype, device=dev)
        return (nll / div).mean()
    if reduction == "sum":
        return nll.sum()
    return nll.squeeze(0) if unbatched else nll
