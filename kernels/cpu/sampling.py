"""CPU loops of the Gamma, Poisson and Binomial samplers and the Gamma's
reparameterisation gradient (the per-element algorithms are in `kernels/sampling.py`).

Raw float64 1-D C-contiguous arrays in, `out` allocated by the caller; `seed` is a
63-bit integer drawn from nbtorch's generator::

    for i in range(out.size):   out[i] = sampler(params[i], stream(seed, i))

One compiled signature per kernel (the op layer casts to float64 and back).
"""
from numba import njit

from nbtorch.kernels.sampling import (binomial_one, gamma_grad_one, gamma_one, poisson_one,
                                      _MASK, _S32)
import numpy as np

__all__ = ["standard_gamma", "poisson", "binomial", "standard_gamma_grad"]


@njit(cache=True)
def standard_gamma(alpha, out, seed):
    """out[i] ~ Gamma(alpha[i], 1)."""
    k0 = np.uint64(seed) & _MASK
    k1 = np.uint64(seed) >> _S32
    for i in range(out.size):
        out[i] = gamma_one(alpha[i], i, k0, k1)


@njit(cache=True)
def poisson(rate, out, seed):
    """out[i] ~ Poisson(rate[i])."""
    k0 = np.uint64(seed) & _MASK
    k1 = np.uint64(seed) >> _S32
    for i in range(out.size):
        out[i] = poisson_one(rate[i], i, k0, k1)


@njit(cache=True)
def binomial(count, prob, out, seed):
    """out[i] ~ Binomial(count[i], prob[i])."""
    k0 = np.uint64(seed) & _MASK
    k1 = np.uint64(seed) >> _S32
    for i in range(out.size):
        out[i] = binomial_one(count[i], prob[i], i, k0, k1)


@njit(cache=True)
def standard_gamma_grad(x, alpha, out):
    """out[i] = d x[i] / d alpha[i] for Gamma(alpha[i], 1) samples x."""
    for i in range(out.size):
        out[i] = gamma_grad_one(x[i], alpha[i])
