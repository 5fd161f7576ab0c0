"""Finite-difference checks of backward formulas (float64), like torch.autograd.gradcheck."""
import numpy as np

from .._tensor import Tensor

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """A numerical and an analytical gradient disagree."""


def _flat_outputs(out):
    return tuple(o for o in (out if isinstance(out, (tuple, list)) else (out,))
                 if isinstance(o, Tensor) and (o.dtype.is_floating_point or o.dtype.is_complex))


def _real_parts(values):
    """A complex array as its (real, imag) pairs, a real one as it is (float64, flat)."""
    a = np.asarray(values).ravel()
    if np.iscomplexobj(a):
        return np.stack([a.real, a.imag], axis=1).ravel().astype(np.float64)
    return a.astype(np.float64)


def _numerical(fn, inputs, wrt, eps):
    """d(outputs)/d(inputs[wrt]) by central differences, complex values as their real and
    imaginary parts (PyTorch's convention: a real loss's gradient is dL/dx + i dL/dy):
    one (real inputs, real outputs) matrix."""
    x = inputs[wrt]
    arr = x.detach()._host()
    complex_in = x.dtype.is_complex
    parts = (1.0, 1j) if complex_in else (1.0,)
    # outputs are read detached; fn may itself need autograd (gradgradcheck)
    n_out = sum(_real_parts(o.detach()._host()).size for o in _flat_outputs(fn(*inputs)))
    jac = np.zeros((x.numel() * len(parts), n_out))
    row = 0
    for idx in np.ndindex(*x.shape):
        orig = arr[idx].item()
        for part in parts:
            vals = []
            for delta in (eps, -eps):
                _poke(x, idx, orig + delta * part)
                vals.append(np.concatenate([_real_parts(o.detach()._host())
                                            for o in _flat_outputs(fn(*inputs))] or
                                           [np.zeros(0)]))
            _poke(x, idx, orig)
            jac[row] = (vals[0] - vals[1]) / (2 * eps)
            row += 1
    return jac


def _poke(t, idx, value):
    if t.device.type == "cpu":
        t._array[idx] = value
    else:
        host = t.cpu()
        host._array[idx] = value
        t.detach().copy_(host.to(t.device))


def _analytical(fn, inputs, wrt_list):
    """The same matrices from backward: a cotangent per real output part (1 on a real
    part, i on an imaginary one); a complex input's gradient gives its (x, y) rows."""
    from .engine import grad
    from ..ops.creation import tensor
    outs = _flat_outputs(fn(*inputs))
    n_out = sum(o.numel() * (2 if o.dtype.is_complex else 1) for o in outs)
    jacs = [np.zeros((inputs[w].numel() * (2 if inputs[w].dtype.is_complex else 1), n_out))
            for w in wrt_list]
    col = 0
    for o in outs:
        parts = (1.0, 1j) if o.dtype.is_complex else (1.0,)
        for j in range(o.numel()):
            for part in parts:
                if o.grad_fn is None and not o.requires_grad:
                    col += 1
                    continue
                g = np.zeros(o.numel(), dtype=np.complex128 if o.dtype.is_complex
                             else np.float64)
                g[j] = part
                go = tensor(g.reshape(o.shape), dtype=o.dtype, device=o.device)
                gs = grad((o,), tuple(inputs[w] for w in wrt_list), (go,),
                          retain_graph=True, allow_unused=True)
                for k, gk in enumerate(gs):
                    if gk is not None:
                        jacs[k][:, col] = _real_parts(gk.detach()._host())
                col += 1
    return jacs


def _vjp_of_sum(fn, inputs, wrt_list):
    """One backward of all outputs (cotangent ones) as host arrays: run twice, the results
    must agree (PyTorch's reentrancy check, within nondet_tol)."""
    from .engine import grad
    from ..ops.creation import ones_like
    outs = [o for o in _flat_outputs(fn(*inputs)) if o.requires_grad]
    if not outs:
        return [None] * len(wrt_list)
    gs = grad(tuple(outs), tuple(inputs[w] for w in wrt_list),
              tuple(ones_like(o) for o in outs), allow_unused=True)
    return [None if g is None else _real_parts(g.detach()._host()) for g in gs]


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
            if inputs[i].dtype.name != "complex128":
                warnings.warn(f"Input #{i} requires gradient and is not a double precision "
                              "floating point or complex. This check will likely fail if all "
                              "the inputs are not of double precision floating point or "
                              "complex.")
    analytical = _analytical(func, inputs, wrt)
    first, second = _vjp_of_sum(func, inputs, wrt), _vjp_of_sum(func, inputs, wrt)
    for k, (a, b) in enumerate(zip(first, second)):
        if a is not None and a.size and np.abs(a - b).max() > nondet_tol:
            if not raise_exception:
                return False
            where = np.flatnonzero(a != b)
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical "
                "gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}. (Input {wrt[k]}: elements {where[:8].tolist()} differ, by up "
                f"to {np.abs(a - b).max():.3g}: {a.ravel()[where[:3]].tolist()} then "
                f"{b.ravel()[where[:3]].tolist()}.)")
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
