"""The fused CPU path of `cross_entropy` over class indices (kernels/cpu/cross_entropy.py).

`fused_cross_entropy` takes the common classifier case - (M, C) float32/float64
logits on CPU, contiguous, int64 targets (M,), no class weights, no label
smoothing, a 'mean' or 'sum' reduction, no target equal to ignore_index - and
returns None for anything else, which the caller computes with ops
(nn/functional/loss.py). Graph captures and the profiler (APPLY_WRAPPERS) see the
ops as before. The node is PyTorch's NllLossBackward0; its backward runs the
fused kernel, or the same formula with ops when it is itself recorded
(create_graph), so higher derivatives work.
"""
import numpy as np

from .._lazy import kernel_module
from .._tensor import Tensor, empty
from ..autograd import grad_mode
from ..autograd.function import APPLY_WRAPPERS, Function

__all__ = ["fused_cross_entropy"]

_DTYPES = ("float32", "float64")


_PARALLEL_MIN = 1 << 16      # logits from which rows split over Numba's threads


def _row_chunks(x):
    """Ranges of rows to split the kernels over: the thread count for a large batch of
    logits, else 1 (rows are independent: the same values either way)."""
    if x.size < _PARALLEL_MIN or x.shape[0] < 2:
        return 1
    workers, openmp = kernel_module("cpu.workers"), kernel_module("cpu.openmp")
    return min(workers.NUM_THREADS, x.shape[0]) if openmp.USABLE else 1


def fused_cross_entropy(input, target, ignore_index, reduction):
    """The loss as one fused node, or None where the fused path does not apply."""
    if (APPLY_WRAPPERS[0] or reduction == "none" or not isinstance(target, Tensor)
            or input.device.type != "cpu" or target.device.type != "cpu"
            or input.dtype.name not in _DTYPES or target.dtype.name != "int64"):
        return None
    shape, t_shape = input._shape, target._shape
    if len(shape) != 2 or len(t_shape) != 1 or t_shape[0] != shape[0] or shape[0] == 0 \
            or shape[1] == 0:
        return None
    x, t = input._array, target._array
    if not (x.flags.c_contiguous and t.flags.c_contiguous):
        return None
    lse = np.empty(shape[0], np.float64)
    kernels = kernel_module("cpu.cross_entropy")
    chunks = _row_chunks(x)
    if chunks > 1:
        status = kernels.check_targets(t, int(ignore_index), shape[1])
        if status == -1:
            kernels.lse_rows_parallel(x, lse, chunks)
            total = kernels.total_loss(x, t, lse)
    else:
        total, status = kernels.cross_entropy_forward(x, t, int(ignore_index), lse)
    if status == -2:
        return None
    if status >= 0:
        raise IndexError(f"Target {int(t[status])} is out of bounds.")
    scale = 1.0 if reduction == "sum" else 1.0 / shape[0]
    return _FusedCrossEntropy.apply(input, target, lse, total * scale, scale)


class _FusedCrossEntropy(Function):
    """The forward's value comes computed (`fused_cross_entropy`); this node holds what
    the backward needs: the logits, the targets, each row's log-sum-exp, the scale."""

    _backward_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, x, target, lse, value, scale):
        ctx.save_for_backward(x, target)
        ctx.lse, ctx.scale = lse, scale
        out = empty((), x.dtype, x.device)
        out._array[()] = value
        return out

    @staticmethod
    def backward(ctx, grad):
        x, target = ctx.saved_tensors
        if grad_mode.STATE.enabled or APPLY_WRAPPERS[0]:       # recorded: with ops
            probs = x.softmax(1)
            onehot = probs.new_zeros(probs.shape).scatter_(1, target.reshape(-1, 1), 1.0)
            return (probs - onehot) * (grad * ctx.scale), None, None, None, None
        gx = empty(x._shape, x.dtype, x.device)
        coef = float(grad._array) * ctx.scale
        kernels = kernel_module("cpu.cross_entropy")
        chunks = _row_chunks(x._array)
        if chunks > 1:
            kernels.grad_rows_parallel(x._array, target._array, ctx.lse, coef, gx._array,
                                       chunks)
        else:
            kernels.cross_entropy_backward(x._array, target._array, ctx.lse, coef,
                                           gx._array)
        return gx, None, None, None, None
