"""Finite-difference checks of backward formulas (float64), like torch.autograd.gradcheck."""
import numpy as np

from .._tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """A numerical and an analytical gradient disagree."""


def _flat_outputs(out):
    return tuple(o for o in (out if isinstance(out, (tuple, list)) else (out,))
                 if isinstance(o, Tensor) and o.dtype.is_floating_point)


def _numerical(fn, inputs, wrt, eps):
    """d(outputs)/d(inputs[wrt]) by central differences: one (numel_in, numel_out) matrix."""
    x = inputs[wrt]
    arr = x.detach()._host()
    # outputs are read detached; fn may itself need autograd (gradgradcheck)
    n_out = sum(o.numel() for o in _flat_outputs(fn(*inputs)))
    jac = np.zeros((x.numel(), n_out))
    for i, idx in enumerate(np.ndindex(*x.shape)):
        orig = arr[idx].item()
        vals = []
        for delta in (eps, -eps):
            _poke(x, idx, orig + delta)
            vals.append(np.concatenate([o.detach()._host().astype(np.float64).ravel()
                                        for o in _flat_outputs(fn(*inputs))] or
                                       [np.zeros(0)]))
        _poke(x, idx, orig)
        jac[i] = (vals[0] - vals[1]) / (2 * eps)
    return jac


def _poke(t, idx, value):
    if t.device.type == "cpu":
        t._array[idx] = value
    else:
        host = t.cpu()
        host._array[idx] = value
        t.detach().copy_(host.to(t.device))


def _analytical(fn, inputs, wrt_list):
    from .engine import grad
    outs = _flat_outputs(fn(*inputs))
    n_out = sum(o.numel() for o in outs)
    jacs = [np.zeros((inputs[w].numel(), n_out)) for w in wrt_list]
    col = 0
    for o in outs:
        for j in range(o.numel()):
            g = np.zeros(o.numel())
            g[j] = 1.0
            from ..ops.creation import tensor
            go = tensor(g.reshape(o.shape), dtype=o.dtype, device=o.device)
            if o.grad_fn is None and not o.requires_grad:
                col += 1
                continue
            gs = grad((o,), tuple(inputs[w] for w in wrt_list), (go,), retain_graph=True,
                      allow_unused=True)
            for k, gk in enumerate(gs):
                if gk is not None:
                    jacs[k][:, col] = gk.detach()._host().astype(np.float64).ravel()
            col += 1
    return jacs


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, check_undefined_grad=True, fast_mode=False, **_):
    """True if `func`'s backward matches finite differences at `inputs`.

    Inputs that require grad should be float64. Raises GradcheckError with both
    Jacobians on a mismatch (unless raise_exception=False).
    """
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, "
                         "but none of the them have requires_grad=True.")
    for i in wrt:
        if inputs[i].dtype.name != "float64":
            import warnings
            warnings.warn(f"Input #{i} requires gradient and is not a double precision "
                          "floating point. This check will likely fail if all the inputs "
                          "are not of double precision floating point.")
    analytical = _analytical(func, inputs, wrt)
    for k, i in enumerate(wrt):
        numerical = _numerical(func, inputs, i, eps)
        if not np.allclose(analytical[k], numerical, atol=atol, rtol=rtol):
            if not raise_exception:
                return False
            raise GradcheckError(
                f"Jacobian mismatch for output 0 with respect to input {i},\n"
                f"numerical:{numerical}\nanalytical:{analytical[k]}\n")
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **_):
    """gradcheck of the backward pass itself (second derivatives via create_graph)."""
    from .engine import grad
    from ..ops.random import randn
    inputs = tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)
    wrt = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    outs = _flat_outputs(func(*inputs))
    if grad_outputs is None:
        grad_outputs = tuple(randn(*o.shape, dtype=o.dtype, device=o.device)
                             .requires_grad_() for o in outs)
    n_in = len(inputs)

    def first_grad(*args):
        xs, gos = args[:n_in], args[n_in:]
        os_ = _flat_outputs(func(*xs))
        gs = grad(os_, tuple(xs[i] for i in wrt), gos, create_graph=True,
                  allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grad, inputs + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception)
