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

__all__ = ["sgd_step", "adam_step", "rmsprop_step", "adagrad_step", "adadelta_step",
           "adamax_step", "nadam_step", "radam_step", "asgd_step", "rprop_step",
           "typecheck_signatures"]

sgd_element = cuda.jit(device=True)(_cpu.sgd_element.py_func)
adam_element = cuda.jit(device=True)(_cpu_adam.adam_element.py_func)
rmsprop_element = cuda.jit(device=True)(_cpu_adaptive.rmsprop_element.py_func)
adagrad_element = cuda.jit(device=True)(_cpu_adaptive.adagrad_element.py_func)
adadelta_element = cuda.jit(device=True)(_cpu_adaptive.adadelta_element.py_func)
adamax_element = cuda.jit(device=True)(_cpu_adam.adamax_element.py_func)
nadam_element = cuda.jit(device=True)(_cpu_adam.nadam_element.py_func)
radam_element = cuda.jit(device=True)(_cpu_adam.radam_element.py_func)
asgd_element = cuda.jit(device=True)(_cpu.asgd_element.py_func)
rprop_element = cuda.jit(device=True)(_cpu.rprop_element.py_func)


@cuda.jit(cache=True)
def sgd_kernel(param, grad, buf, lr, weight_decay, momentum, one_minus_dampening, nesterov,
               maximize, first_step):
    use_buf = momentum != 0
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        # a buffer an option does not use is read as param[i]: any value of the dtype does
        # (a literal 0 would be typed int64 and turn the whole formula into float64)
        b = buf[i] if use_buf and not first_step else param[i]
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
        vmax = max_exp_avg_sq[i] if amsgrad else param[i]         # unused: as in sgd_kernel
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
        ga = grad_avg[i] if centered else param[i]                # unused: as in sgd_kernel
        b = buf[i] if use_buf else param[i]
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


@cuda.jit(cache=True)
def adadelta_kernel(param, grad, square_avg, acc_delta, lr, rho, one_minus_rho, eps,
                    weight_decay, maximize):
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        p, sq, acc = adadelta_element(param[i], grad[i], square_avg[i], acc_delta[i], lr,
                                      rho, one_minus_rho, eps, weight_decay, maximize)
        param[i] = p
        square_avg[i] = sq
        acc_delta[i] = acc


@cuda.jit(cache=True)
def adamax_kernel(param, grad, exp_avg, exp_inf, weight_decay, one_minus_beta1, beta2, eps,
                  clr, maximize):
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        p, m, u = adamax_element(param[i], grad[i], exp_avg[i], exp_inf[i], weight_decay,
                                 one_minus_beta1, beta2, eps, clr, maximize)
        param[i] = p
        exp_avg[i] = m
        exp_inf[i] = u


@cuda.jit(cache=True)
def nadam_kernel(param, grad, exp_avg, exp_avg_sq, decay, weight_decay, one_minus_beta1,
                 beta2, one_minus_beta2, bias_correction2, eps, grad_coef, avg_coef, maximize,
                 decoupled):
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        p, m, v = nadam_element(param[i], grad[i], exp_avg[i], exp_avg_sq[i], decay,
                                weight_decay, one_minus_beta1, beta2, one_minus_beta2,
                                bias_correction2, eps, grad_coef, avg_coef, maximize,
                                decoupled)
        param[i] = p
        exp_avg[i] = m
        exp_avg_sq[i] = v


@cuda.jit(cache=True)
def radam_kernel(param, grad, exp_avg, exp_avg_sq, decay, weight_decay, one_minus_beta1,
                 beta2, one_minus_beta2, bias_correction1, lr, bc2_sqrt, rect, one, eps,
                 rectify, maximize, decoupled):
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        p, m, v = radam_element(param[i], grad[i], exp_avg[i], exp_avg_sq[i], decay,
                                weight_decay, one_minus_beta1, beta2, one_minus_beta2,
                                bias_correction1, lr, bc2_sqrt, rect, one, eps, rectify,
                                maximize, decoupled)
        param[i] = p
        exp_avg[i] = m
        exp_avg_sq[i] = v


@cuda.jit(cache=True)
def asgd_kernel(param, grad, ax, decay, eta, mu, weight_decay, maximize, average):
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        p, a = asgd_element(param[i], grad[i], ax[i], decay, eta, mu, weight_decay, maximize,
                            average)
        param[i] = p
        ax[i] = a


@cuda.jit(cache=True)
def rprop_kernel(param, grad, prev, step_size, etaminus, etaplus, step_size_min,
                 step_size_max, maximize):
    for i in range(cuda.grid(1), param.size, cuda.gridsize(1)):
        p, g, s = rprop_element(param[i], grad[i], prev[i], step_size[i], etaminus, etaplus,
                                step_size_min, step_size_max, maximize)
        param[i] = p
        prev[i] = g
        step_size[i] = s


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


def adadelta_step(param, grad, square_avg, acc_delta, lr, rho, eps, weight_decay, maximize,
                  stream=0):
    """Adadelta update of flat `param` in place."""
    t = param.dtype.type
    _launch(adadelta_kernel, param, stream, param, grad, square_avg, acc_delta, t(lr), t(rho),
            t(1.0 - rho), t(eps), t(weight_decay), bool(maximize))


def adamax_step(param, grad, exp_avg, exp_inf, lr, beta1, beta2, eps, weight_decay, step,
                maximize, stream=0):
    """Adamax update of flat `param` in place; `step` >= 1."""
    t = param.dtype.type
    clr = float(lr) / (1.0 - float(beta1) ** float(step))
    _launch(adamax_kernel, param, stream, param, grad, exp_avg, exp_inf, t(weight_decay),
            t(1.0 - beta1), t(beta2), t(eps), t(clr), bool(maximize))


def nadam_step(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, mu,
               mu_next, mu_product, step, decoupled, maximize, stream=0):
    """NAdam update of flat `param` in place; `step` >= 1."""
    t = param.dtype.type
    decay, bc2, grad_coef, avg_coef = _cpu_adam.nadam_scalars(
        float(lr), float(beta2), float(weight_decay), float(mu), float(mu_next),
        float(mu_product), float(step), decoupled)
    _launch(nadam_kernel, param, stream, param, grad, exp_avg, exp_avg_sq, t(decay),
            t(weight_decay), t(1.0 - beta1), t(beta2), t(1.0 - beta2), t(bc2), t(eps),
            t(grad_coef), t(avg_coef), bool(maximize), bool(decoupled))


def radam_step(param, grad, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step,
               decoupled, maximize, stream=0):
    """RAdam update of flat `param` in place; `step` >= 1."""
    t = param.dtype.type
    decay, bc1, bc2_sqrt, rect, rectify = _cpu_adam.radam_scalars(
        float(lr), float(beta1), float(beta2), float(weight_decay), float(step), decoupled)
    _launch(radam_kernel, param, stream, param, grad, exp_avg, exp_avg_sq, t(decay),
            t(weight_decay), t(1.0 - beta1), t(beta2), t(1.0 - beta2), t(bc1), t(lr),
            t(bc2_sqrt), t(rect), t(1), t(eps), bool(rectify), bool(maximize),
            bool(decoupled))


def asgd_step(param, grad, ax, eta, lambd, mu, weight_decay, maximize, stream=0):
    """ASGD update of flat `param` and its average `ax` in place."""
    t = param.dtype.type
    eta, mu = float(eta), float(mu)
    _launch(asgd_kernel, param, stream, param, grad, ax, t(1.0 - float(lambd) * eta), t(eta),
            t(mu), t(weight_decay), bool(maximize), mu != 1.0)


def rprop_step(param, grad, prev, step_size, etaminus, etaplus, step_size_min, step_size_max,
               maximize, stream=0):
    """Rprop update of flat `param`, `prev` and `step_size` in place."""
    t = param.dtype.type
    _launch(rprop_kernel, param, stream, param, grad, prev, step_size, t(etaminus),
            t(etaplus), t(step_size_min), t(step_size_max), bool(maximize))


def typecheck_signatures():
    from numba import types as nt
    b = nt.boolean
    for t in (nt.float32, nt.float64):
        a = nt.Array(t, 1, "C")
        yield (f"sgd[{t}]", sgd_kernel.py_func, (a, a, a, t, t, t, t, b, b, b))
        yield (f"adam[{t}]", adam_kernel.py_func, (a,) * 5 + (t,) * 8 + (b, b, b))
        yield (f"rmsprop[{t}]", rmsprop_kernel.py_func, (a,) * 5 + (t,) * 6 + (b, b))
        yield (f"adagrad[{t}]", adagrad_kernel.py_func, (a, a, a, t, t, t, b))
        yield (f"adadelta[{t}]", adadelta_kernel.py_func, (a,) * 4 + (t,) * 5 + (b,))
        yield (f"adamax[{t}]", adamax_kernel.py_func, (a,) * 4 + (t,) * 5 + (b,))
        yield (f"nadam[{t}]", nadam_kernel.py_func, (a,) * 4 + (t,) * 9 + (b, b))
        yield (f"radam[{t}]", radam_kernel.py_func, (a,) * 4 + (t,) * 11 + (b, b, b))
        yield (f"asgd[{t}]", asgd_kernel.py_func, (a, a, a, t, t, t, t, b, b))
        yield (f"rprop[{t}]", rprop_kernel.py_func, (a,) * 4 + (t,) * 4 + (b,))
