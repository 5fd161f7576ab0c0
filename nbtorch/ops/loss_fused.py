"""Fused CPU paths of the common losses (kernels/cpu/losses.py): one node, one kernel pass
forward and one backward, where the composed form (nn/functional/loss.py) costs a pass and
a node per elementwise op.

`fused_pointwise` covers mse_loss, l1_loss, smooth_l1_loss, huber_loss,
binary_cross_entropy, binary_cross_entropy_with_logits and kl_div; `fused_nll_loss` covers
nll_loss. Each takes float32/float64 CPU tensors of one dtype - input and target of one
shape, a weight or pos_weight that broadcasts to it - and returns None for anything else
(other devices and dtypes, broadcast targets, a 'none' reduction of a non-contiguous input,
a weight that requires grad, a target that requires grad where the gradient is not simply
the input's negated, empty tensors, graph captures and the profiler), which the caller
then computes with ops as before.

The forward saves only its inputs; the backward runs the kernel, or, when it is itself
recorded (create_graph, or a wrapper of Function.apply watching), the same formula with
ops, so higher derivatives work. Node names are PyTorch's (MseLossBackward0, or for
l1_loss and kl_div, which PyTorch composes, the node of its last op).
"""
import math

import numpy as np

from .._lazy import kernel_module
from .._tensor import Tensor, empty
from ..autograd import grad_mode
from ..autograd.function import APPLY_WRAPPERS, Function, renamed
from .creation import zeros, zeros_like
from .pointwise_select import where

__all__ = ["fused_pointwise", "fused_nll_loss"]

_DTYPES = ("float32", "float64")
_EMPTY = {name: np.empty(0, name) for name in _DTYPES}
_EMPTY2 = {name: np.empty((0, 0), name) for name in _DTYPES}

# kind -> (the kernels' argument after (x, t, w): a scalar parameter, pos_weight or none;
#          whether the target's gradient, the input's negated, is taken here)
_KINDS = {
    "mse": (None, True), "l1": (None, True), "smooth_l1": ("param", True),
    "huber": ("param", True), "bce": (None, False), "bce_logits": (None, False),
    "bce_logits_pw": ("pw", False), "kl": (None, False), "kl_log": (None, False),
}


def _flat(a):
    """A tensor's array as a C-contiguous 1-D array (a view where it is contiguous)."""
    return a.reshape(-1) if a.flags.c_contiguous else np.ascontiguousarray(a).reshape(-1)


def _cpu_float(t, dtype):
    return isinstance(t, Tensor) and t.device.type == "cpu" and t.dtype is dtype


def _operand(t, shape, dtype):
    """An optional weight-like operand as a flat array of `shape` (broadcast, copied only
    then); the empty array for None; None where the fused path does not take it."""
    if t is None:
        return _EMPTY[dtype.name]
    if not _cpu_float(t, dtype) or (t._requires_grad and grad_mode.STATE.enabled):
        return None
    a = t._array
    if t._shape != shape:
        try:
            if np.broadcast_shapes(a.shape, shape) != tuple(shape):
                return None
        except ValueError:
            return None
        a = np.broadcast_to(a, shape)
    return _flat(a)


def _divide(a, b):
    """a / b as IEEE division does it (inf or NaN for b == 0, no exception)."""
    if b:
        return a / b
    return math.nan if a == 0 or a != a else math.copysign(math.inf, a)


def fused_pointwise(kind, input, target, reduction, node, param=0.0, weight=None,
                    pos_weight=None, divisor=None):
    """The loss `kind` as one fused node printing `node`, or None where the fused path does
    not apply. reduction: 'none', 'sum' or 'mean'; a 'mean' divides by `divisor` when
    given (kl_div's batch size, or "weight": the weight's sum, as a weighted mse/l1 does)
    else by numel."""
    if APPLY_WRAPPERS[0] or not (isinstance(input, Tensor) and isinstance(target, Tensor)):
        return None
    dtype = input.dtype
    if dtype.name not in _DTYPES or not _cpu_float(target, dtype) or \
            input.device.type != "cpu":
        return None
    shape = input._shape
    if target._shape != shape or input.numel() == 0:
        return None
    if target._requires_grad and grad_mode.STATE.enabled and not _KINDS[kind][1]:
        return None
    x, t = input._array, target._array
    if reduction == "none" and not x.flags.c_contiguous:
        return None              # the composed ops give the input's layout: left to them
    w = _operand(weight, shape, dtype)
    pw = _operand(pos_weight, shape, dtype)
    if w is None or pw is None:
        return None
    if reduction == "none":
        divisor = None
    elif reduction == "sum":
        divisor = 1.0
    elif divisor is None:
        divisor = float(x.size)
    elif divisor == "weight":                 # weighted mse/l1: sum(w loss) / sum(w)
        divisor = float(w.sum(dtype=np.float64))
    spec = (kind, float(param), divisor, _flat(x), _flat(t), w, pw)
    return renamed(_PointwiseLoss, node).apply(input, target, weight, pos_weight, spec)


def _kernel_args(kind, param, x, t, w, pw):
    """The arrays (and parameter) a kernel of `kind` takes, before its outputs."""
    extra = _KINDS[kind][0]
    if extra is None:
        return x, t, w
    return x, t, w, (param if extra == "param" else pw)


class _PointwiseLoss(Function):
    """An elementwise loss, reduced or not, as one node (`fused_pointwise`)."""

    @staticmethod
    def forward(ctx, input, target, weight, pos_weight, spec):
        kind, param, divisor, x, t, w, pw = spec
        reduce = divisor is not None
        out = empty(() if reduce else input._shape, input.dtype, input.device)
        buf = _EMPTY[input.dtype.name] if reduce else out._array.reshape(-1)
        kernel = getattr(kernel_module("cpu.losses"), kind + "_forward")
        total = kernel(*_kernel_args(kind, param, x, t, w, pw), buf, reduce)
        if kind == "bce":
            total, status = total
            if status:
                raise RuntimeError(f"all elements of {'input' if status == 1 else 'target'}"
                                   " should be between 0 and 1")
        if reduce:
            out._array[()] = _divide(total, divisor)
        ctx.save_for_backward(input, target, weight, pos_weight)
        ctx.spec, ctx.weights = spec[:3], (w, pw)   # (views, or the broadcast copies)
        return out

    @staticmethod
    def backward(ctx, grad):
        input, target, weight, pos_weight = ctx.saved_tensors
        kind, param, divisor = ctx.spec
        need_x, need_t = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
        if grad_mode.STATE.enabled or APPLY_WRAPPERS[0]:          # recorded: with ops
            gx = _grad_with_ops(kind, param, divisor, input, target, weight, pos_weight,
                                grad)
            return (gx if need_x else None), (-gx if need_t else None), None, None, None
        dtype, shape = input.dtype, input._shape
        x, t = _flat(input._array), _flat(target._array)
        w, pw = ctx.weights
        g, coef = _upstream(grad, divisor, dtype)
        gx = empty(shape, dtype, input.device)
        flat = gx._array.reshape(-1)
        kernel = getattr(kernel_module("cpu.losses"), kind + "_backward")
        kernel(*_kernel_args(kind, param, x, t, w, pw), g, coef, flat)
        gt = None
        if need_t:                         # mse/l1/smooth_l1/huber: d/dt = -d/dx
            gt = empty(shape, dtype, input.device) if need_x else gx
            np.negative(flat, out=gt._array.reshape(-1))
        return (gx if need_x else None), gt, None, None, None


def _upstream(grad, divisor, dtype):
    """(per-element gradient array or empty, scalar coefficient): a reduced loss's gradient
    divided by the reduction's divisor; a 'none' loss's gradient flat (one value when it is
    an expanded scalar, as a `.sum()`'s backward gives)."""
    a = grad._array
    if divisor is not None:
        return _EMPTY[dtype.name], _divide(float(a), divisor)
    if a.dtype != dtype.np:
        a = a.astype(dtype.np)
    if a.flags.c_contiguous:
        return a.reshape(-1), 0.0
    if not any(a.strides):
        return _EMPTY[dtype.name], float(a.reshape(-1)[0])
    return np.ascontiguousarray(a).reshape(-1), 0.0


def _grad_with_ops(kind, param, divisor, x, t, w, pw, grad):
    """The input gradient of `kind` written with ops (differentiable again)."""
    c = grad if divisor is None else grad / divisor
    if kind in ("kl", "kl_log"):
        gx = -((t if kind == "kl" else t.exp()) * c)
    elif kind in ("bce_logits", "bce_logits_pw"):
        if kind == "bce_logits":
            gx = (x.sigmoid() - t) * c
        else:
            pt = pw * t
            gx = ((pt + 1 - t) * x.sigmoid() - pt) * c
    elif kind == "bce":
        gx = c * (x - t) / ((1 - x) * x).clamp(min=1e-12)
    else:
        d = x - t
        if kind == "mse":
            gx = d * 2 * c
        elif kind == "l1":
            gx = d.sign() * c
        elif kind == "smooth_l1":
            gx = where(d.abs() < param, d / param, d.sign()) * c
        else:
            gx = where(d.abs() < param, d, d.sign() * param) * c
    return gx if w is None else gx * w


# ---- nll_loss ---------------------------------------------------------------------------

def fused_nll_loss(input, target, weight, ignore_index, reduction):
    """nll_loss of log-probabilities `input` ((C,), (N, C) or (N, C, d1, ...)) and class
    indices as one node, or None where the fused path does not apply. The shapes are the
    caller's to check (nn/functional/loss.py); out-of-range targets raise here."""
    if APPLY_WRAPPERS[0] or not (isinstance(input, Tensor) and isinstance(target, Tensor)):
        return None
    dtype = input.dtype
    if dtype.name not in _DTYPES or input.device.type != "cpu" or \
            target.device.type != "cpu" or target.dtype.name != "int64":
        return None
    if weight is not None and not _cpu_float(weight, dtype):
        return None
    shape = input._shape
    if input.numel() == 0:
        return None
    C = shape[0] if len(shape) == 1 else shape[1]
    N = 1 if len(shape) == 1 else shape[0]
    D = input.numel() // (N * C)
    x = np.ascontiguousarray(input._array).reshape(N, C, D)
    tgt = np.ascontiguousarray(target._array).reshape(N, D)
    w = _EMPTY[dtype.name] if weight is None else _flat(weight._array)
    return renamed(_FusedNll, _nll_node(len(shape), reduction)).apply(
        input, target, weight, (x, tgt, w, int(ignore_index), reduction))


def _nll_node(dim, reduction):
    """PyTorch's node: nll_loss up to 2-d inputs, nll_loss2d beyond (whose 'none' of
    other than a 4-d input is a view of the 4-d one's)."""
    if dim <= 2:
        return "NllLossBackward0"
    return "ViewBackward0" if reduction == "none" and dim != 4 else "NllLoss2DBackward0"


class _FusedNll(Function):
    """nll_loss as one node (`fused_nll_loss`); backward scatters -weight * grad."""

    _backward_name = "NllLossBackward0"

    @staticmethod
    def forward(ctx, input, target, weight, spec):
        x, tgt, w, ignore_index, reduction = spec
        none = reduction == "none"
        out = empty(target._shape if none else (), input.dtype, input.device)
        buf = out._array.reshape(tgt.shape) if none else _EMPTY2[input.dtype.name]
        total, wsum, status = kernel_module("cpu.losses").nll_forward(x, tgt, w,
                                                                      ignore_index, buf)
        if status >= 0:
            raise IndexError(f"Target {int(tgt.reshape(-1)[status])} is out of bounds.")
        divisor = None if none else (1.0 if reduction == "sum" else wsum)
        if not none:
            out._array[()] = _divide(total, divisor)
        ctx.save_for_backward(input, target, weight)
        ctx.spec = (x.shape, ignore_index, divisor)
        return out

    @staticmethod
    def backward(ctx, grad):
        input, target, weight = ctx.saved_tensors
        (N, C, D), ignore_index, divisor = ctx.spec
        if grad_mode.STATE.enabled or APPLY_WRAPPERS[0]:          # recorded: with ops
            return _nll_grad_with_ops(input, target, weight, ignore_index, divisor, grad,
                                      (N, C, D)), None, None, None
        dtype = input.dtype
        tgt = np.ascontiguousarray(target._array).reshape(N, D)
        w = _EMPTY[dtype.name] if weight is None else _flat(weight._array)
        if divisor is None:
            g = np.ascontiguousarray(grad._array, dtype.np).reshape(N, D)
            coef = 0.0
        else:
            g = _EMPTY2[dtype.name]
            coef = float(grad._array) / divisor if divisor else 0.0   # all ignored: 0
        gx = empty(input._shape, dtype, input.device)
        kernel_module("cpu.losses").nll_backward(tgt, w, ignore_index, g, coef,
                                                 gx._array.reshape(N, C, D))
        return gx, None, None, None


def _nll_grad_with_ops(input, target, weight, ignore_index, divisor, grad, dims):
    """nll_loss's input gradient with ops: -weight[t] * grad scattered into zeros."""
    N, C, D = dims
    t = target.reshape(N, 1, D)
    valid = t != ignore_index
    safe = where(valid, t, zeros_like(t))
    wt = valid.to(input.dtype)
    if weight is not None:
        wt = weight[safe] * wt
    if divisor is None:
        c = grad.reshape(N, 1, D)
    else:
        c = grad / divisor if divisor else grad * 0.0
    src = -(wt * c)
    gx = zeros((N, C, D), dtype=input.dtype, device=input.device).scatter(1, safe, src)
    return gx.reshape(input._shape)
