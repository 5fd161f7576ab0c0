"""Optimizer updates as ops: one fused kernel per parameter per step, in place.

Each ``<rule>_update(param, grad, <state buffers>, ..., *, <options>)`` is the
pure per-tensor update of one torch.optim algorithm (PyTorch's
``_single_tensor_<rule>``): it checks its tensors, then `fused_update` runs
the kernel registered as ``"<rule>_step"`` for the parameter's device on flat
arrays. The optimizers in `nbtorch.optim` own param_groups, state and
hyper-parameter checks and call these; a CUDA kernel registered under the
same name serves CUDA parameters unchanged.

The kernels are declared in each device's table (`kernels/cpu/table.py`,
`kernels/cuda/table.py`) and live in ``kernels/<device>/optim*.py``; they load
on the first update, so `import nbtorch` compiles and imports none of them.
"""
import numpy as np

from .. import _dtype
from .._registry import get_kernel
from ..autograd import no_grad

__all__ = ["fused_update", "sgd_update", "adam_update", "rmsprop_update", "adagrad_update",
           "adadelta_update", "adamax_update", "nadam_update", "radam_update", "asgd_update",
           "rprop_update"]

_KERNEL_DTYPES = (_dtype.float32, _dtype.float64)


def fused_update(op, param, grad, buffers, *scalars):
    """Run the fused kernel `op` of `param`'s device on flat arrays, in place.

    Calls ``kernel(param, grad, *buffers, *scalars)`` with 1-D contiguous
    arrays (None buffers stay None). `grad` and every buffer must have
    `param`'s shape and device. The kernels take float32/float64: other
    floating dtypes (float16, bfloat16) and non-contiguous tensors go through
    working copies, written back afterwards. Bumps `param`'s version counter.
    """
    if param.dtype.is_complex and grad.dtype.is_complex:
        # as PyTorch's: a complex parameter updates as its (real, imag) pairs, through
        # views of the parameter, its gradient and its (complex) state
        from .complex import view_as_real
        with no_grad():
            real = [None if b is None else view_as_real(b) for b in buffers]
            fused_update(op, view_as_real(param), view_as_real(grad), real, *scalars)
        param._bump()
        return
    kernel = get_kernel(op, param.device.type)
    _check(op, param, grad, buffers)
    work = param.dtype if param.dtype in _KERNEL_DTYPES else _dtype.float32
    write_back = []
    arrays = [_flat(param, work, write_back), _flat(grad, work, None)]
    arrays += [None if b is None else _flat(b, work, write_back) for b in buffers]
    kernel(*arrays, *scalars)
    if write_back:
        with no_grad():
            for target, copy_ in write_back:
                target.copy_(copy_)
    param._bump()


def _check(op, param, grad, buffers):
    """The kernels index every array by the parameter's flat index: refuse any
    tensor whose shape or device differs (and non-floating parameters)."""
    shape, device = param._shape, param.device
    bad = not param.dtype.is_floating_point or grad._shape != shape or (
        grad.device is not device and grad.device != device)
    for b in buffers:
        if b is not None and (b._shape != shape or (b.device is not device
                                                    and b.device != device)):
            bad = True
    if bad:
        _raise_bad_arguments(op, param, grad, buffers)


def _raise_bad_arguments(op, param, grad, buffers):
    if not param.is_floating_point():
        raise RuntimeError(f"{op}: expected a floating-point parameter, got {param.dtype}")
    for name, t in [("grad", grad)] + [(f"state buffer {i}", b)
                                         for i, b in enumerate(buffers)]:
        if t is not None and t._shape != param._shape:
            raise RuntimeError(f"{op}: {name} has shape {tuple(t._shape)} but the parameter "
                               f"has shape {tuple(param._shape)}")
        if t is not None and t.device != param.device:
            raise RuntimeError(f"{op}: {name} is on {t.device} but the parameter is on "
                               f"{param.device}")


def _flat(t, dtype, write_back):
    """The raw 1-D array of `t` in `dtype`: a view when possible, else a copy
    registered in `write_back` (None: read-only, no write back)."""
    a = t._array
    if t.dtype is dtype and a.flags["C_CONTIGUOUS"]:
        return a.ravel()
    with no_grad():
        w = t.to(dtype=dtype).contiguous()
    if write_back is not None:
        write_back.append((t, w))
    return w._array.ravel()


# ---------------------------------------------------------------------------
# The per-tensor updates (state buffers are updated in place too)
# ---------------------------------------------------------------------------
def sgd_update(param, grad, momentum_buffer, *, lr, momentum, dampening, weight_decay,
               nesterov, maximize, first_step):
    """One SGD step of one tensor, in place (one fused kernel).

    `momentum_buffer` is None when momentum == 0; `first_step` says it is new
    (it is then set to the gradient, as PyTorch does).
    """
    fused_update("sgd_step", param, grad, (momentum_buffer,), lr, weight_decay, momentum,
                 dampening, nesterov, maximize, first_step)


def adam_update(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, step, *, lr, beta1,
                beta2, eps, weight_decay, amsgrad, maximize, decoupled=False):
    """One Adam (AdamW if `decoupled`) step of one tensor, in place (one fused kernel).

    `step` counts this update (1 on the first); `max_exp_avg_sq` is None
    without amsgrad.
    """
    fused_update("adam_step", param, grad, (exp_avg, exp_avg_sq, max_exp_avg_sq), lr, beta1,
                 beta2, eps, weight_decay, step, amsgrad, maximize, decoupled)


def rmsprop_update(param, grad, square_avg, grad_avg, momentum_buffer, *, lr, alpha, eps,
                   weight_decay, momentum, centered, maximize):
    """One RMSprop step of one tensor, in place (one fused kernel).

    `grad_avg` is None unless centered, `momentum_buffer` None unless momentum > 0.
    """
    fused_update("rmsprop_step", param, grad, (square_avg, grad_avg, momentum_buffer), lr,
                 alpha, eps, weight_decay, momentum, centered, maximize)


def adagrad_update(param, grad, state_sum, step, *, lr, lr_decay, weight_decay, eps,
                   maximize):
    """One Adagrad step of one tensor, in place (one fused kernel); `step` >= 1."""
    fused_update("adagrad_step", param, grad, (state_sum,), lr, lr_decay, weight_decay, eps,
                 step, maximize)


def adadelta_update(param, grad, square_avg, acc_delta, *, lr, rho, eps, weight_decay,
                    maximize):
    """One Adadelta step of one tensor, in place (one fused kernel)."""
    fused_update("adadelta_step", param, grad, (square_avg, acc_delta), lr, rho, eps,
                 weight_decay, maximize)


def adamax_update(param, grad, exp_avg, exp_inf, step, *, lr, beta1, beta2, eps,
                  weight_decay, maximize):
    """One Adamax step of one tensor, in place (one fused kernel); `step` >= 1."""
    fused_update("adamax_step", param, grad, (exp_avg, exp_inf), lr, beta1, beta2, eps,
                 weight_decay, step, maximize)


def nadam_update(param, grad, exp_avg, exp_avg_sq, mu_product, step, *, lr, beta1, beta2,
                 eps, weight_decay, momentum_decay, decoupled, maximize):
    """One NAdam step of one tensor, in place (one fused kernel); `step` >= 1.

    `mu_product` is the 0-d state tensor holding the product of the momentum
    coefficients; it is multiplied by this step's coefficient in its own dtype
    (float32 by default, as PyTorch keeps it), in place.
    """
    mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * momentum_decay))
    mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * momentum_decay))
    product = _scale_scalar(mu_product, mu)
    fused_update("nadam_step", param, grad, (exp_avg, exp_avg_sq), lr, beta1, beta2, eps,
                 weight_decay, mu, mu_next, product, step, decoupled, maximize)


def radam_update(param, grad, exp_avg, exp_avg_sq, step, *, lr, beta1, beta2, eps,
                 weight_decay, decoupled, maximize):
    """One RAdam step of one tensor, in place (one fused kernel); `step` >= 1."""
    fused_update("radam_step", param, grad, (exp_avg, exp_avg_sq), lr, beta1, beta2, eps,
                 weight_decay, step, decoupled, maximize)


def asgd_update(param, grad, ax, eta, mu, step, *, lr, lambd, alpha, t0, weight_decay,
                maximize):
    """One ASGD step of one tensor and its average `ax`, in place (one fused kernel).

    `eta` and `mu` are 0-d state tensors: this step reads them, then sets them
    for the next one (``lr / (1 + lambd lr step)^alpha`` and
    ``1 / max(1, step - t0)``, rounded through the default dtype as PyTorch's
    `as_tensor` does); `step` >= 1 counts this update.
    """
    fused_update("asgd_step", param, grad, (ax,), _scalar_value(eta), lambd,
                 _scalar_value(mu), weight_decay, maximize)
    _set_scalar(eta, _round_to_default(lr / ((1 + lambd * lr * step) ** alpha)))
    _set_scalar(mu, _round_to_default(1 / max(1, step - t0)))


def rprop_update(param, grad, prev, step_size, *, etaminus, etaplus, step_size_min,
                 step_size_max, maximize):
    """One Rprop step of one tensor, its previous gradient and its per-element
    step sizes, in place (one fused kernel)."""
    fused_update("rprop_step", param, grad, (prev, step_size), etaminus, etaplus,
                 step_size_min, step_size_max, maximize)


# ---- 0-d state tensors (step-size schedules kept as tensors, as PyTorch does) ----
def _scalar_value(t):
    a = t._array
    return float(a) if t.device.type == "cpu" else t.item()


def _set_scalar(t, value):
    if t.device.type == "cpu":
        t._array[...] = value
    else:
        t.fill_(value)


def _scale_scalar(t, factor):
    """``t *= factor`` in t's dtype (the factor rounded to it first, as PyTorch's
    mul_ by a number); returns the new value."""
    if t.device.type != "cpu":
        with no_grad():
            t.mul_(factor)
        return t.item()
    a = t._array
    a[...] = a * a.dtype.type(factor)
    return float(a)


def _round_to_default(value):
    """`value` as a tensor of the default dtype would hold it."""
    return float(np.float32(value)) if _dtype.get_default_dtype() is _dtype.float32 else value
