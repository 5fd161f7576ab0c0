"""Counter-based random numbers on the GPU: Philox-4x32-10 (Salmon et al., SC'11).

Element i of a draw is a pure function of (key, counter = (i, offset)), so a
draw needs no per-thread state, any grid gives the same values, and seeding
(`nbtorch.manual_seed`) reproduces a run::

    for i (grid-stride):  x0, x1, _, _ = philox(key=(k0, k1), counter=(i, 0, off_lo, off_hi))
        uniform:   out[i] = low + (high - low) * u(x0, x1)      u in [0, 1)
        normal:    out[i] = mean + std * sqrt(-2 log u1) * cos(2 pi u2)   (Box-Muller)
        bernoulli: out[i] = 1 if u(x0, x1) < p (or p[i]) else 0
        integers:  out[i] = low + (x0 x1 as 64 bits) % (high - low)   (as PyTorch's random_)

The 32-bit multiply-high is done in uint64 (portable to the simulator).

The `sample_*` launchers are the registry's sampler kernels ``fn(out, rng, *params)``,
called like their CPU twins (`kernels/cpu/random.py`): `out` is a C-contiguous device
array of any shape, and each call takes one fresh 64-bit key from the host generator
`rng` (a ``numpy.random.Generator``), so a seed reproduces every draw.
"""
import math

import numpy as np
from numba import cuda

from ._launch import grid

__all__ = ["uniform", "normal", "philox", "sample_uniform", "sample_normal",
           "sample_bernoulli", "sample_integers"]

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint64(0x9E3779B9)
_W1 = np.uint64(0xBB67AE85)
_MASK = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)


@cuda.jit(device=True, cache=True)
def philox(c0, c1, c2, c3, k0, k1):
    """Philox-4x32-10 of a 4-word counter and a 2-word key (uint64 holding uint32)."""
    for _ in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        n0 = ((p1 >> _S32) ^ c1 ^ k0) & _MASK
        n2 = ((p0 >> _S32) ^ c3 ^ k1) & _MASK
        c1 = p1 & _MASK
        c3 = p0 & _MASK
        c0 = n0
        c2 = n2
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
    return c0, c1, c2, c3


@cuda.jit(device=True, cache=True)
def _unit(x0, x1):
    """A float64 in [0, 1) from 53 random bits of two words."""
    bits = ((x0 << np.uint64(21)) ^ x1) & np.uint64((1 << 53) - 1)
    return np.float64(bits) * (1.0 / 9007199254740992.0)


@cuda.jit(cache=True)
def uniform_kernel(out, k0, k1, off, low, high):
    """out[i] = low + (high - low) * u_i, with u_i in [0, 1) from Philox."""
    off_lo = np.uint64(off) & _MASK
    off_hi = np.uint64(off) >> _S32
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        x0, x1, x2, x3 = philox(np.uint64(i) & _MASK, np.uint64(i) >> _S32, off_lo, off_hi,
                                k0, k1)
        v = low + (high - low) * _unit(x0, x1)
        out[i] = v if v < high else low       # float rounding never yields `high`


@cuda.jit(cache=True)
def normal_kernel(out, k0, k1, off, mean, std):
    """out[i] = mean + std * z_i, z_i standard normal by Box-Muller on two uniforms."""
    off_lo = np.uint64(off) & _MASK
    off_hi = np.uint64(off) >> _S32
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        x0, x1, x2, x3 = philox(np.uint64(i) & _MASK, np.uint64(i) >> _S32, off_lo, off_hi,
                                k0, k1)
        u1 = 1.0 - _unit(x0, x1)               # (0, 1]: log is finite
        u2 = _unit(x2, x3)
        out[i] = mean + std * (math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2))


@cuda.jit(cache=True)
def bernoulli_kernel(out, k0, k1, off, p):
    """out[i] = 1 if u_i < p else 0 (scalar probability p)."""
    off_lo = np.uint64(off) & _MASK
    off_hi = np.uint64(off) >> _S32
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        x0, x1, x2, x3 = philox(np.uint64(i) & _MASK, np.uint64(i) >> _S32, off_lo, off_hi,
                                k0, k1)
        out[i] = 1 if _unit(x0, x1) < p else 0


@cuda.jit(cache=True)
def bernoulli_tensor_kernel(out, p, k0, k1, off):
    """out[i] = 1 if u_i < p[i] else 0 (p: one probability per element, out's size)."""
    off_lo = np.uint64(off) & _MASK
    off_hi = np.uint64(off) >> _S32
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        x0, x1, x2, x3 = philox(np.uint64(i) & _MASK, np.uint64(i) >> _S32, off_lo, off_hi,
                                k0, k1)
        out[i] = 1 if _unit(x0, x1) < p[i] else 0


@cuda.jit(cache=True)
def integers_kernel(out, k0, k1, off, low, span):
    """out[i] = low + r_i % span, r_i 64 random bits (int64 low, uint64 span >= 1)."""
    off_lo = np.uint64(off) & _MASK
    off_hi = np.uint64(off) >> _S32
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        x0, x1, x2, x3 = philox(np.uint64(i) & _MASK, np.uint64(i) >> _S32, off_lo, off_hi,
                                k0, k1)
        out[i] = low + np.int64(((x0 << _S32) | x1) % span)    # wraps like int64 arithmetic


def _key(seed):
    return np.uint64(seed & 0xFFFFFFFF), np.uint64((seed >> 32) & 0xFFFFFFFF)


def uniform(out, seed, offset, low=0.0, high=1.0, stream=0):
    """Fill contiguous 1-D `out` with uniform samples on [low, high)."""
    if out.size:
        k0, k1 = _key(seed)
        uniform_kernel[grid(out.size) + (stream,)](out, k0, k1, np.uint64(offset), float(low),
                                               float(high))


def normal(out, seed, offset, mean=0.0, std=1.0, stream=0):
    """Fill contiguous 1-D `out` with normal samples N(mean, std**2)."""
    if out.size:
        k0, k1 = _key(seed)
        normal_kernel[grid(out.size) + (stream,)](out, k0, k1, np.uint64(offset), float(mean),
                                              float(std))


def _seed(rng):
    """A fresh 64-bit Philox key from the host generator (one draw per sampling call)."""
    return int(rng.integers(0, 2**63 - 1))


def _flat(out):
    return out.reshape(out.size)


def sample_uniform(out, rng, low=0.0, high=1.0, stream=0):
    """Fill C-contiguous `out` with samples uniform on [low, high)."""
    if out.size:
        uniform(_flat(out), _seed(rng), 0, low, high, stream)


def sample_normal(out, rng, mean=0.0, std=1.0, stream=0):
    """Fill C-contiguous `out` with normal samples N(mean, std**2)."""
    if out.size:
        normal(_flat(out), _seed(rng), 0, mean, std, stream)


def sample_bernoulli(out, rng, p, stream=0):
    """out = 1 with probability p (a number, or a C-contiguous device array of out's
    shape), else 0, in out's dtype."""
    if not out.size:
        return
    k0, k1 = _key(_seed(rng))
    if hasattr(p, "shape") and not isinstance(p, np.generic):
        bernoulli_tensor_kernel[grid(out.size) + (stream,)](_flat(out), _flat(p), k0, k1,
                                                            np.uint64(0))
    else:
        bernoulli_kernel[grid(out.size) + (stream,)](_flat(out), k0, k1, np.uint64(0),
                                                     float(p))


def sample_integers(out, rng, low, high, stream=0):
    """Fill C-contiguous `out` with integers uniform on [low, high) (high > low)."""
    if out.size:
        k0, k1 = _key(_seed(rng))
        integers_kernel[grid(out.size) + (stream,)](_flat(out), k0, k1, np.uint64(0),
                                                    np.int64(low), np.uint64(high - low))


def typecheck_signatures():
    """uniform/normal for each floating output dtype; bernoulli and integers for a few."""
    from numba import types as nt
    for dt in (nt.float16, nt.float32, nt.float64):
        args = (nt.Array(dt, 1, "C"), nt.uint64, nt.uint64, nt.uint64, nt.float64, nt.float64)
        yield (f"uniform[{dt}]", uniform_kernel.py_func, args)
        yield (f"normal[{dt}]", normal_kernel.py_func, args)
    key = (nt.uint64, nt.uint64, nt.uint64)
    for dt in (nt.float16, nt.float32, nt.float64, nt.int64, nt.uint8, nt.boolean):
        out = nt.Array(dt, 1, "C")
        yield (f"bernoulli[{dt}]", bernoulli_kernel.py_func, (out,) + key + (nt.float64,))
        yield (f"integers[{dt}]", integers_kernel.py_func, (out,) + key + (nt.int64, nt.uint64))
    for dt, pt in ((nt.float16, nt.float16), (nt.float32, nt.float32), (nt.float64, nt.float64),
                   (nt.boolean, nt.float32)):
        yield (f"bernoulli_tensor[{dt},{pt}]", bernoulli_tensor_kernel.py_func,
               (nt.Array(dt, 1, "C"), nt.Array(pt, 1, "C")) + key)
