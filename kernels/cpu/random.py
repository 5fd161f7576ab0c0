"""Random sampling on the CPU: the registry's sampler kernels ``fn(out, rng, *params)``.

`rng` is a generator's engine: an `MT19937State` (the default: PyTorch's CPU
stream, value for value; kernels in `random_mt.py` and `random_normal.py`) or a
NumPy ``Generator`` (PCG64, `random_pcg64.py`, chosen with
``nbtorch.random.use_generator("pcg64")``). `out` is a NumPy array of any layout,
filled in memory order as PyTorch's TensorIterator fills it (a transposed tensor
gets its values in storage order). The CUDA twins are `kernels/cuda/random.py`.

The host samplers (randperm, multinomial, exponential_, geometric_, log_normal_,
cauchy_) draw here for every device; the op layer copies their result over.
"""
import numpy as np

from . import random_mt as _mt
from . import random_normal as _nm
from . import random_pcg64 as _pcg
from .mt19937 import MT19937State

__all__ = ["uniform", "normal", "bernoulli", "integers", "randperm", "multinomial",
           "exponential", "geometric", "log_normal", "cauchy"]

_CHUNK = 4096                       # words drawn a run at a time (a multiple of 32)


def _buf(words):
    return np.empty(min(_CHUNK, max(32, words)), np.uint32)


def _in_memory_order(out):
    """`out` viewed so that its C order is its storage order."""
    if out.flags.c_contiguous or out.ndim < 2:
        return out
    perm = sorted(range(out.ndim), key=lambda d: -abs(out.strides[d]))
    return out.transpose(perm)


def _fill(out, dtype, kernel, *args):
    """kernel(*args, flat) over `out` in storage order, through a `dtype` buffer when
    `out` is not a dense array of that dtype."""
    view = _in_memory_order(out)
    if view.dtype == dtype and view.flags.c_contiguous:
        kernel(*args, view.reshape(-1))
    else:
        flat = np.empty(view.size, dtype)
        kernel(*args, flat)
        view[...] = flat.reshape(view.shape)


def _stream(rng, words):
    return rng.key, rng.pos, _buf(words)


def uniform(out, rng, low=0.0, high=1.0):
    """Samples uniform on [low, high)."""
    if not isinstance(rng, MT19937State):
        return _pcg.uniform(out, rng, low, high)
    if out.dtype == np.float64:
        lo, span = float(low), float(high) - float(low)
        _fill(out, np.float64, lambda k, p, b, o: _mt.uniform_f64(k, p, b, o, lo, span),
              *_stream(rng, 2 * out.size))
        return
    lo, hi = np.float32(low), np.float32(high)      # float16/bfloat16: in float32, rounded
    span = hi - lo
    _fill(out, np.float32, lambda k, p, b, o: _mt.uniform_f32(k, p, b, o, lo, span),
          *_stream(rng, out.size))
    if out.dtype != np.float32:     # float16/bfloat16: a value rounded up to `high` is
        top = np.asarray(high).astype(out.dtype)        # `low` (PyTorch's [from, to))
        np.putmask(out, out == top, np.asarray(low).astype(out.dtype))


def normal(out, rng, mean=0.0, std=1.0):
    """Normal samples N(mean, std**2): PyTorch's fill path for contiguous `out` of 16+
    elements, its serial path (with the generator's cached sample) otherwise."""
    if not isinstance(rng, MT19937State):
        return _pcg.normal(out, rng, mean, std)
    n = out.size
    key, pos = rng.key, rng.pos
    if n >= 16 and out.flags.c_contiguous and out.dtype in (np.float32, np.float64):
        flat = out.reshape(-1)
        if out.dtype == np.float64:
            _nm.normal_fill_f64(key, pos, _buf(2 * n), flat, float(mean), float(std))
        else:
            _nm.normal_fill_f32(key, pos, _buf(n), flat, np.float32(mean), np.float32(std))
        return
    _serial_normal(out, rng, mean, std, False)


def _serial_normal(out, rng, mean, std, exp):
    _fill(out, np.float64, lambda k, p, b, o: _nm.normal_serial(
        k, p, b, o, rng.normal, float(mean), float(std), exp), *_stream(rng, 2 * out.size))


def log_normal(out, rng, mean=1.0, std=2.0):
    """exp of the serial normal path's samples (PyTorch's log_normal_)."""
    if not isinstance(rng, MT19937State):
        return _pcg.log_normal(out, rng, mean, std)
    _serial_normal(out, rng, mean, std, True)


def bernoulli(out, rng, p):
    """1 with probability p, else 0: `p` a number (one random64 an element) or an array
    broadcastable to out (float64: random64, else one 32-bit word an element)."""
    if not isinstance(rng, MT19937State):
        return _pcg.bernoulli(out, rng, p)
    if not isinstance(p, np.ndarray):
        _fill(out, np.float64, lambda k, q, b, o: _mt.bernoulli_scalar(k, q, b, o, float(p)),
              *_stream(rng, 2 * out.size))
        return
    view = _in_memory_order(out)
    perm = _perm_of(out, view)
    probs = np.broadcast_to(p, out.shape).transpose(perm).reshape(-1)
    if probs.dtype == np.float64:
        kernel, probs = _mt.bernoulli_f64, np.ascontiguousarray(probs)
    else:
        kernel, probs = _mt.bernoulli_f32, np.ascontiguousarray(probs, np.float32)
    _fill(out, np.float64, lambda k, q, b, o: kernel(k, q, b, o, probs),
          *_stream(rng, 2 * out.size))


def _perm_of(out, view):
    """The axes permutation `_in_memory_order` applied to `out`."""
    if view is out:
        return tuple(range(out.ndim))
    return tuple(sorted(range(out.ndim), key=lambda d: -abs(out.strides[d])))


def integers(out, rng, low, high):
    """Integers uniform on [low, high): ``low + word % (high - low)``, the word one
    random64 when the range is 2**32 or more and out is int64/float64/float32/bfloat16
    (the whole int64 range: the random64 itself)."""
    if not isinstance(rng, MT19937State):
        return _pcg.integers(out, rng, low, high)
    span = int(high) - int(low)
    if span >= 2 ** 64:                # [int64 min, int64 max]: random64 as a signed value
        _fill(out, np.int64, lambda k, p, b, o: _mt.integers(k, p, b, o, np.uint64(0), 0,
                                                              True),
              *_stream(rng, 2 * out.size))
        return
    wide = span >= 2 ** 32 and (out.dtype in (np.int64, np.float64, np.float32)
                                or out.dtype.name == "bfloat16")
    _fill(out, np.int64, lambda k, p, b, o: _mt.integers(k, p, b, o, np.uint64(span),
                                                          int(low), wide),
          *_stream(rng, 2 * out.size))


def randperm(out, rng):
    """A random permutation of 0..n-1 into 1-D int64 `out`."""
    if not isinstance(rng, MT19937State):
        out[...] = rng.permutation(out.size)
        return
    _mt.randperm(*_stream(rng, 2 * out.size), out)


def multinomial(out, rng, probs, replacement):
    """Category indices, PyTorch's way: with replacement, a binary search of each row's
    cumulative distribution per sample; otherwise (and for one sample) the top
    `out.shape[1]` of probs / q, q ~ Exponential(1) drawn in probs' dtype. `probs` is
    2-D (rows, categories) and checked by the caller; out is (rows, samples) int64."""
    if not isinstance(rng, MT19937State):
        return _pcg.multinomial(out, rng, probs, replacement)
    k = out.shape[1]
    if replacement and k > 1:
        dt = np.float64 if probs.dtype == np.float64 else np.float32
        probs = np.ascontiguousarray(probs, dt)
        _mt.multinomial_replacement(*_stream(rng, 2 * out.size), probs, out,
                                    np.empty(probs.shape[1], dt))
        return
    q = np.empty_like(probs)                 # probs' layout: filled in its storage order
    exponential(q, rng, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = probs / q
    if k == 1:
        out[:, 0] = np.argmax(ratio, axis=1)
    else:
        out[...] = np.argsort(-ratio, axis=1, kind="stable")[:, :k]


def _from_u53(out, rng, kind, a, b=0.0):
    _fill(out, np.float64, lambda k, p, w, o: _mt.from_u53(k, p, w, o, kind, a, b),
          *_stream(rng, 2 * out.size))


def exponential(out, rng, lambd=1.0):
    """-1 / lambd * log1p(-u)."""
    if not isinstance(rng, MT19937State):
        return _pcg.exponential(out, rng, lambd)
    _from_u53(out, rng, _mt.EXPONENTIAL, float(lambd))


def geometric(out, rng, p):
    """ceil(log(u) / log1p(-p)): trials up to the first success."""
    if not isinstance(rng, MT19937State):
        return _pcg.geometric(out, rng, p)
    _from_u53(out, rng, _mt.GEOMETRIC, float(p))


def cauchy(out, rng, median=0.0, sigma=1.0):
    """median + sigma * tan(pi * (u - 0.5))."""
    if not isinstance(rng, MT19937State):
        return _pcg.cauchy(out, rng, median, sigma)
    _from_u53(out, rng, _mt.CAUCHY, float(median), float(sigma))
