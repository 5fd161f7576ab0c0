"""CUDA loops of the Gamma, Poisson and Binomial samplers and the Gamma's
reparameterisation gradient: the per-element algorithms of `kernels/sampling.py`
(the same code as the CPU loops, compiled for the GPU), one thread per element::

    for i (grid-stride):   out[i] = sampler(params[i], Philox stream (key, i))

An element's sample depends only on the key and its index, so a seed gives the
same samples on the CPU and on CUDA. float64 1-D contiguous arrays in, `out`
allocated by the caller; launchers take the 63-bit seed and a stream.
"""
from numba import cuda

from nbtorch.kernels.sampling import (binomial_one, gamma_grad_one, gamma_one, key,
                                      poisson_one)
from ._launch import grid

__all__ = ["standard_gamma", "poisson", "binomial", "standard_gamma_grad",
           "typecheck_signatures"]


@cuda.jit(cache=True)
def standard_gamma_kernel(alpha, out, k0, k1):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = gamma_one(alpha[i], i, k0, k1)


@cuda.jit(cache=True)
def poisson_kernel(rate, out, k0, k1):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = poisson_one(rate[i], i, k0, k1)


@cuda.jit(cache=True)
def binomial_kernel(count, prob, out, k0, k1):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = binomial_one(count[i], prob[i], i, k0, k1)


@cuda.jit(cache=True)
def standard_gamma_grad_kernel(x, alpha, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = gamma_grad_one(x[i], alpha[i])


def standard_gamma(alpha, out, seed, stream=0):
    """out[i] ~ Gamma(alpha[i], 1)."""
    if out.size:
        k0, k1 = key(seed)
        standard_gamma_kernel[grid(out.size) + (stream,)](alpha, out, k0, k1)


def poisson(rate, out, seed, stream=0):
    """out[i] ~ Poisson(rate[i])."""
    if out.size:
        k0, k1 = key(seed)
        poisson_kernel[grid(out.size) + (stream,)](rate, out, k0, k1)


def binomial(count, prob, out, seed, stream=0):
    """out[i] ~ Binomial(count[i], prob[i])."""
    if out.size:
        k0, k1 = key(seed)
        binomial_kernel[grid(out.size) + (stream,)](count, prob, out, k0, k1)


def standard_gamma_grad(x, alpha, out, stream=0):
    """out[i] = d x[i] / d alpha[i] for Gamma(alpha[i], 1) samples x."""
    if out.size:
        standard_gamma_grad_kernel[grid(out.size) + (stream,)](x, alpha, out)


def typecheck_signatures():
    """Each kernel's one signature (float64 arrays, uint64 key words)."""
    from numba import types as nt
    a = nt.Array(nt.float64, 1, "C")
    k = (nt.uint64, nt.uint64)
    yield ("standard_gamma", standard_gamma_kernel.py_func, (a, a) + k)
    yield ("poisson", poisson_kernel.py_func, (a, a) + k)
    yield ("binomial", binomial_kernel.py_func, (a, a, a) + k)
    yield ("standard_gamma_grad", standard_gamma_grad_kernel.py_func, (a, a, a))
