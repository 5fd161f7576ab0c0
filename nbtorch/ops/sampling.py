"""Samplers beyond uniform and normal draws: Gamma (with its reparameterisation
gradient), Dirichlet, Poisson, Binomial (torch._standard_gamma, _sample_dirichlet,
poisson, binomial).

Each call takes one fresh 63-bit key from nbtorch's generator (the default one
unless `generator` is given), so `manual_seed` reproduces samples, and runs the
registry's kernel ("standard_gamma", "poisson", "binomial"; the per-element
algorithms are in `kernels/sampling.py`) over float64 copies of the parameters,
then casts to the parameters' dtype.

`_standard_gamma` is differentiable: the gradient of a sample x with respect to
its concentration is dx/dalpha at a fixed CDF value ("implicit
reparameterisation", `_standard_gamma_grad`), which is what makes Gamma, Beta,
Dirichlet, Chi2 and StudentT `rsample`-able, as in PyTorch.
"""
from .. import _dtype
from .._registry import get_kernel
from .._tensor import Tensor, empty
from ..autograd.function import Function
from ._common import broadcast_shapes
from .._dtype import type_name

__all__ = ["poisson", "binomial", "_standard_gamma", "_standard_gamma_grad",
           "_sample_dirichlet"]

_SEED_HIGH = 2 ** 63 - 1


def _seed(generator):
    from .._generator import rng_of as _rng
    return int(_rng(generator).integers(0, _SEED_HIGH))


def _flat64(t, shape):
    """`t` broadcast to `shape` as a contiguous float64 tensor and its flat raw array."""
    t = t.detach()
    if t._shape != shape:
        t = t.expand(shape)
    t = t.to(_dtype.float64).contiguous()
    return t._array.reshape(-1)


def _check_float(op, name, *tensors):
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}(): argument '{name}' must be Tensor, not "
                            f"{type(t).__name__}")
        if not t.dtype.is_floating_point:
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{type_name(t.dtype)}'")


def _run(op, params, generator, dtype, device, shape):
    kernel = get_kernel(op, device.type)
    out = empty(shape, _dtype.float64, device)
    if out.numel():
        kernel(*[_flat64(p, shape) for p in params], out._array.reshape(-1),
               _seed(generator))
    return out if dtype is _dtype.float64 else out.to(dtype)


class StandardGamma(Function):
    """x ~ Gamma(alpha, 1); backward: grad * dx/dalpha (implicit reparameterisation)."""

    @staticmethod
    def forward(ctx, alpha, generator):
        x = _run("standard_gamma", (alpha,), generator, alpha.dtype, alpha.device,
                 alpha._shape)
        x = x.clamp_(min=_dtype.finfo(alpha.dtype).tiny)     # as PyTorch: never exactly 0
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, g):
        alpha, x = ctx.saved_tensors
        return g * _standard_gamma_grad(alpha, x), None


def _standard_gamma(alpha, generator=None):
    """Samples of Gamma(alpha, 1), one per element, differentiable in `alpha`."""
    _check_float("_standard_gamma", "gamma", alpha)
    return StandardGamma.apply(alpha, generator)


def _standard_gamma_grad(self, output):
    """d output / d self for Gamma(self, 1) samples `output` (not differentiable)."""
    _check_float("_standard_gamma_grad", "_standard_gamma_grad", self, output)
    shape = broadcast_shapes(self._shape, output._shape)
    kernel = get_kernel("standard_gamma_grad", self.device.type)
    out = empty(shape, _dtype.float64, self.device)
    if out.numel():
        kernel(_flat64(output, shape), _flat64(self, shape), out._array.reshape(-1))
    d = _dtype.result_type(self, output)
    return out if d is _dtype.float64 else out.to(d)


def _sample_dirichlet(alpha, generator=None):
    """Dirichlet(alpha) samples over the last dim: normalised Gamma(alpha_i, 1) draws."""
    g = _standard_gamma(alpha, generator)
    return g / g.sum(-1, keepdim=True)


def poisson(input, generator=None):
    """Poisson counts with the rates in `input` (same shape and dtype).

    Example:
        >>> nbtorch.poisson(nbtorch.tensor([0.0, 4.0]))      # e.g. tensor([0., 5.])
    """
    _check_float("poisson", "poisson", input)
    if input.numel() and not bool((input.detach() >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    out = _run("poisson", (input,), generator, input.dtype, input.device, input._shape)
    return out


def binomial(count, prob, generator=None):
    """Binomial counts of `count` trials with success probabilities `prob` (broadcast).

    Example:
        >>> nbtorch.binomial(nbtorch.tensor([10.0]), nbtorch.tensor([0.5]))  # e.g. [6.]
    """
    _check_float("binomial", "binomial", count, prob)
    if count.dtype is not prob.dtype:
        raise RuntimeError(f"Found dtype {type_name(prob.dtype)} but expected "
                           f"{type_name(count.dtype)}")
    shape = broadcast_shapes(count._shape, prob._shape)
    return _run("binomial", (count, prob), generator, count.dtype, count.device, shape)
