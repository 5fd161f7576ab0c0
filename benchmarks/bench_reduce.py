"""Reductions and softmax on float32: the cases (see _driver.py).

Sums, means, max, variance, logsumexp and (log-)softmax over all elements, over
dim 0 (walking columns) and over dim 1 (rows) of 10^7-element inputs. nbtorch's
and PyTorch's calls are the same code (`lib` swapped); NumPy's are its own.
Bytes per call = the input's 4 * n (the output is small or, for softmax, also
counted), printed as a fraction of the copy bandwidth.

    python benchmarks/bench_reduce.py [--only softmax] [--rounds 5]
"""
from _case import Case

_GROUP = "reductions and softmax, float32"
_ALL, _MAT, _MAT_SMALL = (10 ** 7,), (10 ** 4, 1000), (1000, 1000)


def _np_softmax(np, a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_logsumexp(np, a, axis):
    m = a.max(axis=axis, keepdims=True)
    return np.log(np.exp(a - m).sum(axis=axis)) + m.squeeze(axis)


def _on(shape, fn):
    """A setup running fn(lib, x) on a standard-normal float32 array of `shape`."""
    def setup(lib):
        import numpy as np
        a = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
        x = a if lib is np else lib.from_numpy(a)
        return lambda: fn(lib, x)
    return setup


def _case(name, shape, tensor_fn, numpy_fn, out_too=False):
    n = 1
    for s in shape:
        n *= s
    return Case(name, _GROUP, nbtorch=_on(shape, tensor_fn), torch=_on(shape, tensor_fn),
                numpy=_on(shape, numpy_fn), bytes=4 * n * (2 if out_too else 1))


CASES = [
    _case("sum all 1e7", _ALL, lambda lib, t: t.sum(), lambda np, a: a.sum()),
    _case("sum dim0 (1e4,1e3)", _MAT, lambda lib, t: t.sum(0), lambda np, a: a.sum(0)),
    _case("sum dim1 (1e4,1e3)", _MAT, lambda lib, t: t.sum(1), lambda np, a: a.sum(1)),
    _case("mean all 1e7", _ALL, lambda lib, t: t.mean(), lambda np, a: a.mean()),
    _case("max all 1e7", _ALL, lambda lib, t: t.max(), lambda np, a: a.max()),
    _case("amax dim0 (1e4,1e3)", _MAT, lambda lib, t: t.amax(0), lambda np, a: a.max(0)),
    _case("var all 1e7", _ALL, lambda lib, t: t.var(), lambda np, a: a.var(ddof=1)),
    _case("var dim1 (1e4,1e3)", _MAT, lambda lib, t: t.var(1), lambda np, a: a.var(1, ddof=1)),
    _case("logsumexp dim1 (1e4,1e3)", _MAT, lambda lib, t: t.logsumexp(1),
          lambda np, a: _np_logsumexp(np, a, 1)),
    _case("softmax dim1 (1e3,1e3)", _MAT_SMALL, lambda lib, t: t.softmax(1),
          lambda np, a: _np_softmax(np, a, 1), out_too=True),
    _case("softmax dim1 (1e4,1e3)", _MAT, lambda lib, t: t.softmax(1),
          lambda np, a: _np_softmax(np, a, 1), out_too=True),
    _case("softmax dim0 (1e4,1e3)", _MAT, lambda lib, t: t.softmax(0),
          lambda np, a: _np_softmax(np, a, 0), out_too=True),
    _case("log_softmax dim1 (1e4,1e3)", _MAT, lambda lib, t: t.log_softmax(1),
          lambda np, a: a - _np_logsumexp(np, a, 1)[:, None], out_too=True),
]

if __name__ == "__main__":
    import _driver
    raise SystemExit(_driver.main(["bench_reduce"]))
