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
from ..autograd import Function
from ._common import check_same_device

__all__ = ["ctc_loss"]

_WHERE = "(while checking arguments for ctc_loss_allocate_outputs)"


class CTCNegLogLikelihood(Function):
    """nll[n] = -log p(target_n | log_probs[:input_lengths[n], n]) for (T, N, C) log_probs.

    Takes the caller's targets and lengths (tensors or int sequences) and reads them on the
    host itself, so a graph capture (`nbtorch.compile`) replays it with each call's values;
    returns (nll, alpha, target lengths as a tensor): the last two carry no gradient and
    are there for the backward node and the 'mean' reduction (graph values, not constants).
    """

    @staticmethod
    def forward(ctx, lp, targets, input_lengths, target_lengths, blank, zero_infinity):
        raw = _host_args(lp, targets, input_lengths, target_lengths)
        T, N, _ = lp.shape
        tl = raw[2]
        S = 2 * (int(tl.max()) if N else 0) + 1
        alpha = empty((N, T, S), lp.dtype, lp.device)
        nll = empty((N,), lp.dtype, lp.device)
        get_kernel("ctc_loss_forward", lp.device.type)(
            lp._array, *(a._array for a in _device_args(raw, lp.device)), int(blank),
            alpha._array, nll._array)
        tl_t = _int64(tl, lp.device)
        ctx.mark_non_differentiable(alpha, tl_t)
        given = (targets, input_lengths, target_lengths)
        ctx.save_for_backward(lp, alpha, nll,
                              *(t if isinstance(t, Tensor) else None for t in given))
        ctx.python_args = tuple(None if isinstance(t, Tensor) else t for t in given)
        ctx.flags = (int(blank), bool(zero_infinity))
        return nll, alpha, tl_t         # zero_infinity's masking follows, as a recorded op

    @staticmethod
    def backward(ctx, grad_nll, _g_alpha, _g_tl):
        lp, alpha, nll, *tensors = ctx.saved_tensors
        args = [t if t is not None else p for t, p in zip(tensors, ctx.python_args)]
        grad = CTCGrad.apply(grad_nll, lp, alpha, nll, *args, *ctx.flags)
        return grad, None, None, None, None, None


class CTCGrad(Function):
    """The gradient with respect to log_probs from the saved alpha and nll (the beta
    recursion), the targets and lengths read again here (see CTCNegLogLikelihood)."""

    @staticmethod
    def forward(ctx, grad_nll, lp, alpha, nll, targets, input_lengths, target_lengths, blank,
                zero_infinity):
        raw = _host_args(lp, targets, input_lengths, target_lengths)
        beta = empty(tuple(alpha.shape), lp.dtype, lp.device)
        grad = empty(tuple(lp.shape), lp.dtype, lp.device)
        g = grad_nll.to(lp.dtype).contiguous()
        get_kernel("ctc_loss_backward", lp.device.type)(
            lp._array, *(a._array for a in _device_args(raw, lp.device)), blank,
            alpha._array, beta._array, nll._array, g._array, zero_infinity, grad._array)
        return grad

    @staticmethod
    def backward(ctx, gg):              # create_graph=True through ctc_loss: PyTorch's words
        raise RuntimeError("derivative for _ctc_loss_backward is not implemented")


def _host_args(lp, targets, input_lengths, target_lengths):
    """(flat labels, their offsets, target lengths, input lengths) as host int64 arrays,
    checked as PyTorch checks them."""
    T, N, C = lp.shape
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
    return flat, offsets, tl, il


def _int64(a, device):
    from .creation import tensor
    return tensor(np.asarray(a, np.int64), device=device)


def _device_args(raw, device):
    """The kernels' (labels, offsets, target lengths, input lengths) on `device`."""
    flat, offsets, tl, il = raw
    return (_int64(flat if flat.size else np.zeros(1, np.int64), device),
            _int64(offsets, device), _int64(tl, device), _int64(il, device))


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
    work = lp if lp.dtype in (_dtype.float32, _dtype.float64) else lp.to(_dtype.float32)
    nll, _, tl = CTCNegLogLikelihood.apply(work.contiguous(), targets, input_lengths,
                                           target_lengths, blank, bool(zero_infinity))
    if zero_infinity:                   # impossible alignments: 0, and no gradient
        nll = nll.masked_fill(nll == float("inf"), 0.0)
    nll = nll.to(lp.dtype)
    if reduction == "mean":
        return (nll / tl.clamp(min=1).to(nll.dtype)).mean()
    if reduction == "sum":
        return nll.sum()
    return nll.squeeze(0) if unbatched else nll
