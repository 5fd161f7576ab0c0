"""CUDA random numbers: Philox kernels keyed from nbtorch's generator.

`manual_seed` (here or `nbtorch.manual_seed`) seeds the one default generator
that CPU and CUDA share; each GPU draw takes a fresh 64-bit Philox key from it,
so a seed reproduces every draw. `uniform_`/`normal_` fill a CUDA tensor in
place on the GPU (no host round trip), as the Tensor methods and `nbtorch.rand`,
`randn`, `randint`, `bernoulli` do on a CUDA tensor (the registry's samplers).
"""
from .. import random as _random

__all__ = ["manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed",
           "uniform_", "normal_"]


def manual_seed(seed):
    """Seed the generator CUDA draws from (shared with the CPU, as one default generator)."""
    _random.manual_seed(seed)


manual_seed_all = manual_seed


def seed():
    return _random.seed()


seed_all = seed


def initial_seed():
    return _random.initial_seed()


def _fill(op, t, a, b, generator):
    if t.device.type != "cuda":
        raise RuntimeError(f"{op} expects a CUDA tensor, got one on {t.device}")
    if not t.dtype.is_floating_point:
        raise RuntimeError(f'"{op}" not implemented for integer tensors on CUDA')
    method = t.uniform_ if op == "uniform_" else t.normal_
    return method(a, b, generator=generator)


def uniform_(t, low=0.0, high=1.0, generator=None):
    """Fill CUDA tensor `t` with samples uniform on [low, high), on the GPU."""
    return _fill("uniform_", t, low, high, generator)


def normal_(t, mean=0.0, std=1.0, generator=None):
    """Fill CUDA tensor `t` with normal samples N(mean, std**2), on the GPU."""
    return _fill("normal_", t, mean, std, generator)
