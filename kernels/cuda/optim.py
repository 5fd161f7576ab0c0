"""Fused optimizer updates on CUDA: one grid-stride pass over a parameter per step, in place.

The per-element formulas are the CPU's (`kernels/cpu/optim*.py`: `sgd_element`,
`adam_element`, ...), compiled as CUDA device functions from their plain
Python bodies, so both devices run the same arithmetic::

    for i (grid-stride): param[i], state...[i] = <rule>_element(param[i], grad[i], state[i], ...)

Launchers have the CPU choosers' signatures (flat contiguous float32/float64
device arrays; None for a buffer an option does not use) and cast the scalars
to the parameter's dtype, as the CPU loops do.
"""
from numba import cuda

from nbtorch.kernels.cpu import optim as _cpu, optim_adam as _cpu_adam
from nbtorch.kernels.cpu import optim_adaptive as _cpu_adaptive
from ._launch import grid

__all__ = ["sgd_step", "adam_step", "rmsprop_step", "adagrad_step", "typecheck_signatures"]

sgd_element = cuda.jit(device=True)(_cpu.sgd_element.py_func)
adam_element = cuda.jit(device=True)(_cpu_adam.adam_element.py_func)
rmsprop_element = cuda.jit(device=True)(_cpu_adaptive.rmsprop_element.py_func)
adagrad_element = cuda.jit(device=True)(_cpu_adaptive.adagrad_element.py_func)


@cuda.jit(cache=True)
def sgd_kernel(param, grad, buf, lr, weight_decay, momentum, one_minus_dampening, nesterov,
               maximize, first_step):
    use_buf = momentum != 0
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        b = buf[i] if use_buf and not first_step else param[i] * 0
        p, b = sgd_element(param[i], grad[i], b, lr, weight_decay, momentum,
                           one_minus_dampening, nesterov, maximize, first_step)
        param[i] = p
        if use_buf:
            buf[i] = b


@cuda.jit(cache=True)
def adam_kernel(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, decay, weight_decay,
                one_minus_beta1, beta2, one_minus_beta2, eps, step_size, bc2_sqrt, amsgrad,
                maximize, decoupled):
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        vmax = max_exp_avg_sq[i] if amsgrad else param[i] * 0
        p, m, v, vmax = adam_element(
            param[i], grad[i], exp_avg[i], exp_avg_sq[i], vmax, decay, weight_decay,
            one_minus_beta1, beta2, one_minus_beta2, eps, step_size, bc2_sqrt, amsgrad,
            maximize, decoupled)
        param[i] = p
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if amsgrad:
            max_exp_avg_sq[i] = vmax


@cuda.jit(cache=True)
def rmsprop_kernel(param, grad, square_avg, grad_avg, buf, lr, alpha, one_minus_alpha, eps,
                   weight_decay, momentum, centered, maximize):
    use_buf = momentum > 0
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        ga = grad_avg[i] if centered else param[i] * 0
        b = buf[i] if use_buf else param[i] * 0
        p, sq, ga, b = rmsprop_element(param[i], grad[i], square_avg[i], ga, b, lr, alpha,
                                       one_minus_alpha, eps, weight_decay, momentum,
                                       centered, maximize)
        param[i] = p
        square_avg[i] = sq
        if centered:
            grad_avg[i] = ga
        if use_buf:
            buf[i] = b


@cuda.jit(cache=True)
def adagrad_kernel(param, grad, state_sum, clr, weight_decay, eps, maximize):
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        p, s = adagrad_element(param[i], grad[i], state_sum[i], clr, weight_decay, eps,
                               maximize)
        param[i] = p
        state_sum[i] = s


_UNUSED = {}


def _or_unused(buf, param):
    """`buf`, or a private empty device array of param's dtype (kernels take no None)."""
    if buf is not None:
        return buf
    key = param.dtype.str
    if key not in _UNUSED:
        _UNUSED[key] = cuda.device_array(1, param.dtype)
    return _UNUSED[key]


def _launch(kernel, param, stream, *args):
    if param.size:
        kernel[grid(param.size) + (stream,)](*args)


def sgd_step(param, grad, momentum_buffer, lr, weight_decay, momentum, dampening, nesterov,
             maximize, first_step, stream=0):
    """SGD update of flat `param` in place (kernels/cpu/optim.sgd_step's contract)."""
    t = param.dtype.type
    _launch(sgd_kernel, param, stream, param, grad, _or_unused(momentum_buffer, param),
            t(lr), t(weight_decay), t(momentum), t(1.0 - dampening), bool(nesterov),
            bool(maximize), bool(first_step))


def adam_step(param, grad, exp_avg, exp_avg_sq, max_exp_avg_sq, lr, beta1, beta2, eps,
              weight_decay, step, amsgrad, maximize, decoupled, stream=0):
    """Adam (AdamW if `decoupled`) update of flat `param` in place; `step` >= 1."""
    t = param.dtype.type
    decay, step_size, bc2 = _cpu_adam.adam_scalars(float(lr), float(beta1), float(beta2),
                                              float(weight_decay), float(step), decoupled)
    _launch(adam_kernel, param, stream, param, grad, exp_avg, exp_avg_sq,
            _or_unused(max_exp_avg_sq, param), t(decay), t(weight_decay), t(1.0 - beta1),
            t(beta2), t(1.0 - beta2), t(eps), t(step_size), t(bc2), bool(amsgrad),
            bool(maximize), bool(decoupled))


def rmsprop_step(param, grad, square_avg, grad_avg, momentum_buffer, lr, alpha, eps,
                 weight_decay, momentum, centered, maximize, stream=0):
    """RMSprop update of flat `param` in place."""
    t = param.dtype.type
    _launch(rmsprop_kernel, param, stream, param, grad, square_avg,
            _or_unused(grad_avg, param), _or_unused(momentum_buffer, param), t(lr), t(alpha),
            t(1.0 - alpha), t(eps), t(weight_decay), t(momentum), bool(centered),
            bool(maximize))


def adagrad_step(param, grad, state_sum, lr, lr_decay, weight_decay, eps, step, maximize,
                 stream=0):
    """Adagrad update of flat `param` in place; `step` >= 1."""
    t = param.dtype.type
    _launch(adagrad_kernel, param, stream, param, grad, state_sum,
            t(_cpu_adaptive.adagrad_lr(lr, lr_decay, step)), t(weight_decay), t(eps),
            bool(maximize))


def typecheck_signatures():
    from numba import types as nt
    b = nt.boolean
    for t in (nt.float32, nt.float64):
        a = nt.Array(t, 1, "C")
        yield (f"sgd[{t}]", sgd_kernel.py_func, (a, a, a, t, t, t, t, b, b, b))
        yield (f"adam[{t}]", adam_kernel.py_func, (a,) * 5 + (t,) * 8 + (b, b, b))
        yield (f"rmsprop[{t}]", rmsprop_kernel.py_func, (a,) * 5 + (t,) * 6 + (b, b))
        yield (f"adagrad[{t}]", adagrad_kernel.py_func, (a, a, a, t, t, t, b))
