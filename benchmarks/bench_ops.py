"""Elementwise bandwidth, per-op overhead and small-op autograd: the cases (see _driver.py).

1. Bandwidth on 10^7 float32 (beyond the caches) and 10^6 (4 MB, in L3): add, mul,
   relu, exp, tanh, sigmoid, the GELUs, SiLU, softplus, log, and the fused
   backward kernels of tanh, sigmoid, the GELUs and SiLU (g, x -> grad). Bytes
   moved = (inputs + output) * 4 * n, printed as a fraction of the machine's copy
   bandwidth at the same size (measured in the same run). Every op allocates its
   output, as a user's `a + b` does.

   Warm-up: memory a process touches for the first time can be far slower than
   memory it reuses. On a VM whose balloon returns free guest pages to the host
   (free page reporting, as on the project's Firecracker machines), a page fault
   on such memory costs ~150 us instead of ~7 (the host backs the page anew): a
   fresh process's first 40 MB output took 90 ms, later ones 6-7 ms, in plain
   NumPy. That, and each kernel's first call (loading it from Numba's cache,
   ~0.15 s), would make the first rows slow. So every worker first touches
   512 MB of memory (BENCH_WARM_MB) and calls every case twice untimed.
2. Per-op overhead: `a + b` on 1 and 1,000 elements, `a * 2.0` and `a.exp()` on 1,
   without grad.
3. Ten small ops on 64 elements, forward+backward and forward without grad.

    python benchmarks/bench_ops.py [--only gelu] [--rounds 5]
"""
import math

from _case import Case, both

_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _operands(lib, n, count, positive=False):
    """`count` float32 operands of n elements (|x| + 0.5 when positive) as lib's arrays."""
    import numpy as np
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(n, dtype=np.float32) for _ in range(count)]
    if positive:
        xs = [np.abs(x) + np.float32(0.5) for x in xs]
    return xs if lib is np else [lib.from_numpy(x) for x in xs]


def _nb_grad(kernel):
    """nbtorch's fused backward kernel `kernel(g, x)` as it runs without a graph."""
    def get(nb):
        from nbtorch.ops import _elementwise       # pointwise() before 24e2102 (--also)
        run = getattr(_elementwise, "run_elementwise", None) or _elementwise.pointwise
        return lambda g, x: run(kernel, (g, x), nb.float32)
    return get


def _np_sigmoid(np):
    return lambda x: 1 / (1 + np.exp(-x))


def _np_gelu_tanh(np):
    c, k = np.float32(_SQRT_2_OVER_PI), np.float32(0.044715)
    return lambda x: 0.5 * x * (1 + np.tanh(c * (x + k * x * x * x)))


def _aten(name, **kw):
    return lambda th: lambda g, x: getattr(th.ops.aten, name)(g, x, **kw)


# op, inputs, nbtorch, NumPy, PyTorch: each lib -> function (None: no such op there)
ELEMENTWISE = [
    ("add", 2, lambda nb: nb.add, lambda np: np.add, lambda th: th.add),
    ("mul", 2, lambda nb: nb.mul, lambda np: np.multiply, lambda th: th.mul),
    ("x * 0.5", 1, lambda nb: lambda a: a * 0.5, lambda np: lambda a: a * np.float32(0.5),
     lambda th: lambda a: a * 0.5),
    ("relu", 1, lambda nb: nb.relu, lambda np: lambda a: np.maximum(a, np.float32(0)),
     lambda th: th.relu),
    ("exp", 1, lambda nb: nb.exp, lambda np: np.exp, lambda th: th.exp),
    ("tanh", 1, lambda nb: nb.tanh, lambda np: np.tanh, lambda th: th.tanh),
    ("sigmoid", 1, lambda nb: nb.sigmoid, _np_sigmoid, lambda th: th.sigmoid),
    ("gelu", 1, lambda nb: nb.nn.functional.gelu, None, lambda th: th.nn.functional.gelu),
    ("gelu tanh", 1, lambda nb: lambda a: nb.nn.functional.gelu(a, approximate="tanh"),
     _np_gelu_tanh, lambda th: lambda a: th.nn.functional.gelu(a, approximate="tanh")),
    ("silu", 1, lambda nb: nb.nn.functional.silu,
     lambda np: lambda a: a * _np_sigmoid(np)(a), lambda th: th.nn.functional.silu),
    ("softplus", 1, lambda nb: nb.nn.functional.softplus,
     lambda np: lambda a: np.logaddexp(np.float32(0), a), lambda th: th.nn.functional.softplus),
    ("log", 1, lambda nb: nb.log, lambda np: np.log, lambda th: th.log),
    ("tanh backward", 2, _nb_grad("tanh_grad"), lambda np: lambda g, y: g * (1 - y * y),
     _aten("tanh_backward")),
    ("sigmoid backward", 2, _nb_grad("sigmoid_grad"), lambda np: lambda g, y: g * y * (1 - y),
     _aten("sigmoid_backward")),
    ("gelu backward", 2, _nb_grad("gelu_grad"), None, _aten("gelu_backward")),
    ("gelu tanh backward", 2, _nb_grad("gelu_tanh_grad"), None,
     _aten("gelu_backward", approximate="tanh")),
    ("silu backward", 2, _nb_grad("silu_grad"), None, _aten("silu_backward")),
]
SMALL_SET = ("add", "mul", "x * 0.5", "relu", "exp", "tanh")          # also timed on 10^6


def _setup(get_fn, n, nin, positive):
    if get_fn is None:
        return None

    def setup(lib):
        fn, args = get_fn(lib), _operands(lib, n, nin, positive)
        return lambda: fn(*args)
    return setup


def _elementwise_cases(n, names, limit):
    cases = []
    for name, nin, nb, np_, th in ELEMENTWISE:
        if name in names:
            pos = name == "log"
            cases.append(Case(f"{name} {n:.0e}".replace("e+0", "e"),
                              f"elementwise {n:.0e} float32".replace("e+0", "e"),
                              nbtorch=_setup(nb, n, nin, pos), numpy=_setup(np_, n, nin, pos),
                              torch=_setup(th, n, nin, pos), bytes=(nin + 1) * 4 * n,
                              limit=limit))
    return cases


def _binary(n, fn):
    def setup(lib):
        a, b = _operands(lib, n, 2)
        return lambda: fn(a, b)
    return setup


def _unary(n, fn):
    def setup(lib):
        (a,) = _operands(lib, n, 1, positive=True)
        return lambda: fn(lib, a)
    return setup


def _ten_ops(lib, x, w, b):
    """Ten ops written once for nbtorch and PyTorch (the same code, `lib` swapped)."""
    h = x * w + b
    h = lib.tanh(h) * 0.5 + lib.sigmoid(h)
    h = (h - 0.1).relu() / 1.5
    h = lib.exp(h * 0.1)
    return (h * h).sum()


def _ten_ops_np(np, x, w, b):
    h = x * w + b
    h = np.tanh(h) * np.float32(0.5) + 1 / (1 + np.exp(-h))
    h = np.maximum(h - np.float32(0.1), np.float32(0)) / np.float32(1.5)
    h = np.exp(h * np.float32(0.1))
    return (h * h).sum()


def _ten_fwd_bwd(lib):
    ts = _operands(lib, 64, 3)
    for t in ts:
        t.requires_grad_()

    def step():
        for t in ts:
            t.grad = None
        _ten_ops(lib, *ts).backward()
    return step


def _ten_no_grad(lib):
    ts = _operands(lib, 64, 3)
    if lib.__name__ == "numpy":
        return lambda: _ten_ops_np(lib, *ts)

    def step():
        with lib.no_grad():
            _ten_ops(lib, *ts)
    return step


def _shaped(fn, numpy_fn=None):
    """fn(lib, x) on an 8x16 float32 x (and a 64-list of 1x28x28 samples as `x.batch`)."""
    def setup(lib):
        (flat,) = _operands(lib, 128, 1)
        x = flat.reshape(8, 16)
        samples = [s.reshape(1, 28, 28) for s in _operands(lib, 784, 64)]
        f = numpy_fn if lib.__name__ == "numpy" else fn

        def step():
            if lib.__name__ == "numpy":
                return f(lib, x, samples)
            with lib.no_grad():
                return f(lib, x, samples)
        return step
    return setup


def _shape_case(name, fn, numpy_fn=None):
    return Case(name, _SHAPES, **both(_shaped(fn)),
                numpy=_shaped(None, numpy_fn) if numpy_fn else None)


def _layer_ops(fn):
    """fn(lib, x, w, b) with x 8x16, w 16x16 and b 16 float32, under no_grad."""
    def setup(lib):
        x, w, b = (_operands(lib, n, 1)[0] for n in (128, 256, 16))
        x, w = x.reshape(8, 16), w.reshape(16, 16)

        def step():
            with lib.no_grad():
                return fn(lib, x, w, b)
        return step
    return setup


def _big(fn):
    """fn(lib, x, a) with x 1024x512 float32 (2 MB) and a (16, 4, 64, 32) one (attention's
    batch, heads, tokens, head dim), under no_grad."""
    def setup(lib):
        x, a = (_operands(lib, n, 1)[0] for n in (1024 * 512, 16 * 4 * 64 * 32))
        x, a = x.reshape(1024, 512), a.reshape(16, 4, 64, 32)
        if lib.__name__ == "numpy":
            return lambda: fn(lib, x, a)

        def step():
            with lib.no_grad():
                return fn(lib, x, a)
        return step
    return setup


def _layout_case(name, fn, numpy_fn):
    return Case(name, _LAYOUTS, **both(_big(fn)), numpy=_big(numpy_fn))


def _common_case(name, fn):
    return Case(name, _COMMON, **both(_layer_ops(fn)))


_OVERHEAD = "per-op overhead, float32, no grad"
_COMMON = "common ops on 8x16 float32, no grad"
_SHAPES = "shape ops and joins on 8x16 float32, no grad"
_SMALL = "ten small ops on 64 float32"
_LAYOUTS = "transposed and in-place, 1024x512 float32, no grad"
CASES = (
    _elementwise_cases(10 ** 7, [e[0] for e in ELEMENTWISE], "copy")
    + _elementwise_cases(10 ** 6, SMALL_SET, "copy 1e6")
    + [
        Case("a + b, 1 element", _OVERHEAD, **both(_binary(1, lambda a, b: a + b)),
             numpy=_binary(1, lambda a, b: a + b)),
        Case("a + b, 1,000 elements", _OVERHEAD, **both(_binary(1000, lambda a, b: a + b)),
             numpy=_binary(1000, lambda a, b: a + b)),
        Case("a * 2.0, 1 element", _OVERHEAD, **both(_unary(1, lambda lib, a: a * 2.0)),
             numpy=_unary(1, lambda lib, a: a * 2.0)),
        Case("a.exp(), 1 element", _OVERHEAD, **both(_unary(1, lambda lib, a: a.exp())),
             numpy=_unary(1, lambda np, a: np.exp(a))),
        _shape_case("x.view(16, 8)", lambda lib, x, s: x.view(16, 8),
                    lambda np, x, s: x.reshape(16, 8)),
        _shape_case("x.t().contiguous()", lambda lib, x, s: x.t().contiguous(),
                    lambda np, x, s: np.ascontiguousarray(x.T)),
        _shape_case("cat([x, x])", lambda lib, x, s: lib.cat([x, x]),
                    lambda np, x, s: np.concatenate([x, x])),
        _shape_case("stack of 64 1x28x28 (collate)", lambda lib, x, s: lib.stack(s),
                    lambda np, x, s: np.stack(s)),
        _shape_case("x.masked_fill(x > 0, 0.0)", lambda lib, x, s: x.masked_fill(x > 0, 0.0),
                    lambda np, x, s: np.where(x > 0, np.float32(0), x)),
        _common_case("F.linear(x, w, b)",
                     lambda lib, x, w, b: lib.nn.functional.linear(x, w, b)),
        _common_case("x.sum(-1)", lambda lib, x, w, b: x.sum(-1)),
        _common_case("x.mean(-1)", lambda lib, x, w, b: x.mean(-1)),
        _common_case("x.softmax(-1)", lambda lib, x, w, b: x.softmax(-1)),
        _common_case("x.topk(3)", lambda lib, x, w, b: x.topk(3)),
        _common_case("x.sort(-1)", lambda lib, x, w, b: x.sort(-1)),
        _common_case("zeros(8, 16)", lambda lib, x, w, b: lib.zeros(8, 16)),
        _common_case("where(x > 0, x, 0.0)", lambda lib, x, w, b: lib.where(x > 0, x, 0.0)),
        _layout_case("x.t() + x.t()", lambda lib, x, a: x.t() + x.t(),
                     lambda np, x, a: x.T + x.T),
        _layout_case("x.t().exp()", lambda lib, x, a: x.t().exp(),
                     lambda np, x, a: np.exp(x.T)),
        _layout_case("x.t().clone()", lambda lib, x, a: x.t().clone(),
                     lambda np, x, a: x.T.copy(order="K")),
        _layout_case("x.t().contiguous() 1024x512", lambda lib, x, a: x.t().contiguous(),
                     lambda np, x, a: np.ascontiguousarray(x.T)),
        _layout_case("a.transpose(1, 2).contiguous() 16x4x64x32",
                     lambda lib, x, a: a.transpose(1, 2).contiguous(),
                     lambda np, x, a: np.ascontiguousarray(a.transpose(0, 2, 1, 3))),
        _layout_case("x.mul_(1.0)", lambda lib, x, a: x.mul_(1.0),
                     lambda np, x, a: np.multiply(x, np.float32(1.0), out=x)),
        _layout_case("x.t().add_(x.t())", lambda lib, x, a: x.t().add_(x.t()),
                     lambda np, x, a: np.add(x.T, x.T, out=x.T)),
        Case("ten small ops, forward+backward", _SMALL, **both(_ten_fwd_bwd)),
        Case("ten small ops, no grad", _SMALL, **both(_ten_no_grad), numpy=_ten_no_grad),
    ])

if __name__ == "__main__":
    import _driver
    raise SystemExit(_driver.main(["bench_ops"]))
