"""Elementwise speed: nbtorch against NumPy (and PyTorch when installed).

Three parts, every candidate timed in one process, alternating on each repeat
(so machine noise hits all alike); the best time of each is reported.

1. Bandwidth on 10^7 float32: add, mul, relu, exp, tanh, sigmoid, the GELUs,
   SiLU, softplus, log, and the fused backward kernels of tanh, sigmoid, the
   GELUs and SiLU (g, x -> grad). Bytes moved = (inputs + output) * 4 * n;
   GB/s is compared with a NumPy copy (`np.copy`, which like every op
   allocates its output: the page faults of a fresh 40 MB buffer are part of
   both; `copyto` into a reused buffer is printed as the upper bound). Issue
   2's target: >= 0.8 of the copy's GB/s.

   Warm-up: memory a process touches for the first time can be far slower
   than memory it reuses. On a VM whose balloon returns free guest pages to
   the host (free page reporting, as on the project's Firecracker machines),
   a page fault on such memory costs ~150 us instead of ~7 (the host backs
   the page anew): a fresh process's first 40 MB output took 90 ms, later
   ones 6-7 ms, in plain NumPy. That, and each kernel's first call (loading
   it from Numba's cache, ~0.15 s), made the first rows slow. So the
   benchmark first touches `--warm-mb` of memory and calls every candidate
   twice untimed before timing it.
2. Per-op overhead: `a + b` on 1-element tensors without grad (target <= 10 us).
3. Forward+backward of ten small ops (target <= 3x PyTorch's time).

    python benchmarks/bench_ops.py                 # everything
    python benchmarks/bench_ops.py --repeats 9 --only gelu
"""
import argparse
import math
import time

import numpy as np

import nbtorch
from nbtorch.ops import pointwise_activation as act

try:
    import torch
except ImportError:
    torch = None

N = 10 ** 7
_SQRT_2_OVER_PI = math.sqrt(2 / math.pi)


def _np_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.float32(_SQRT_2_OVER_PI) * (x + np.float32(0.044715) * x
                                                                  * x * x)))


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _grad(kernel):
    """The fused backward kernel `kernel(g, x)` as nbtorch runs it without a graph."""
    from nbtorch.ops._elementwise import pointwise
    return lambda g, x: pointwise(kernel, (g, x), nbtorch.float32)


# name, number of inputs, nbtorch fn, NumPy fn, PyTorch fn
BANDWIDTH = [
    ("add", 2, lambda a, b: a + b, np.add, lambda a, b: a + b),
    ("mul", 2, lambda a, b: a * b, np.multiply, lambda a, b: a * b),
    ("relu", 1, nbtorch.relu, lambda a: np.maximum(a, np.float32(0)),
     lambda a: torch.relu(a)),
    ("exp", 1, nbtorch.exp, np.exp, lambda a: torch.exp(a)),
    ("tanh", 1, nbtorch.tanh, np.tanh, lambda a: torch.tanh(a)),
    ("sigmoid", 1, nbtorch.sigmoid, _np_sigmoid, lambda a: torch.sigmoid(a)),
    ("gelu", 1, act.gelu, None, lambda a: torch.nn.functional.gelu(a)),
    ("gelu tanh", 1, lambda a: act.gelu(a, approximate="tanh"), _np_gelu_tanh,
     lambda a: torch.nn.functional.gelu(a, approximate="tanh")),
    ("silu", 1, act.silu, lambda a: a * _np_sigmoid(a), lambda a: torch.nn.functional.silu(a)),
    ("softplus", 1, act.softplus, lambda a: np.logaddexp(np.float32(0), a),
     lambda a: torch.nn.functional.softplus(a)),
    ("log", 1, nbtorch.log, np.log, lambda a: torch.log(a)),
    ("tanh backward", 2, _grad("tanh_grad"), lambda g, y: g * (1 - y * y),
     lambda g, y: torch.ops.aten.tanh_backward(g, y)),
    ("sigmoid backward", 2, _grad("sigmoid_grad"), lambda g, y: g * y * (1 - y),
     lambda g, y: torch.ops.aten.sigmoid_backward(g, y)),
    ("gelu backward", 2, _grad("gelu_grad"), None,
     lambda g, x: torch.ops.aten.gelu_backward(g, x)),
    ("gelu tanh backward", 2, _grad("gelu_tanh_grad"), None,
     lambda g, x: torch.ops.aten.gelu_backward(g, x, approximate="tanh")),
    ("silu backward", 2, _grad("silu_grad"), None,
     lambda g, x: torch.ops.aten.silu_backward(g, x)),
]


def best_times(fns, repeats, warmup=0):
    """Best wall time of each zero-argument function, alternating between them, after
    `warmup` untimed calls of each."""
    for f in fns:
        for _ in range(warmup):
            f()
    best = [math.inf] * len(fns)
    for _ in range(repeats):
        for i, f in enumerate(fns):
            t = time.perf_counter()
            f()
            best[i] = min(best[i], time.perf_counter() - t)
    return best


def warm_memory(megabytes):
    """Touch `megabytes` of fresh memory once, then free it (see the module docstring)."""
    if megabytes > 0:
        np.ones(megabytes << 18, np.float32)


def bench_bandwidth(repeats, only, warm_mb):
    warm_memory(warm_mb)
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(N).astype(np.float32) for _ in range(2)]
    pos = np.abs(xs[0]) + np.float32(0.5)                 # log's input
    nb = [nbtorch.from_numpy(x) for x in xs]
    nb_pos = nbtorch.from_numpy(pos)
    th = [torch.from_numpy(x) for x in xs] if torch else None
    th_pos = torch.from_numpy(pos) if torch else None
    reuse = np.empty_like(xs[0])
    copies = [lambda: xs[0].copy(), lambda: np.copyto(reuse, xs[0])]
    t_copy, t_copyto = best_times(copies, repeats, warmup=2)
    copy_gbs = 2 * 4 * N / t_copy / 1e9
    print(f"\nNumPy copy of 1e7 float32: {copy_gbs:.1f} GB/s fresh output, "
          f"{2 * 4 * N / t_copyto / 1e9:.1f} GB/s into a reused buffer\n")
    print(f"{'op (1e7 float32)':<20}{'nbtorch ms':>11}{'GB/s':>7}{'/copy':>7}"
          f"{'numpy ms':>10}{'nb/np':>7}{'torch ms':>10}{'nb/torch':>9}")
    for name, nin, f_nb, f_np, f_th in BANDWIDTH:
        if only and only not in name:
            continue
        a_nb, a_np, a_th = ((nb_pos,), (pos,), (th_pos,)) if name == "log" else (
            nb[:nin], xs[:nin], th[:nin] if th else None)
        fns = [lambda: f_nb(*a_nb)]
        if f_np is not None:
            fns.append(lambda: f_np(*a_np))
        if th is not None:
            fns.append(lambda: f_th(*a_th))
        times = best_times(fns, repeats, warmup=2)       # warm-up: cache loads, first faults
        t_nb = times[0]
        t_np = times[1] if f_np is not None else None
        t_th = times[-1] if th is not None else None
        gbs = (nin + 1) * 4 * N / t_nb / 1e9
        print(f"{name:<20}{t_nb * 1e3:>11.2f}{gbs:>7.1f}{gbs / copy_gbs:>7.2f}"
              f"{_ms(t_np):>10}{_ratio(t_nb, t_np):>7}{_ms(t_th):>10}{_ratio(t_nb, t_th):>9}")


def _ms(t):
    return "-" if t is None else f"{t * 1e3:.2f}"


def _ratio(a, b):
    return "-" if b is None else f"{a / b:.2f}"


def _per_call(fn, number=2000, repeats=7):
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


def bench_overhead():
    a, b = nbtorch.ones(1), nbtorch.ones(1)
    x, y = np.ones(1, np.float32), np.ones(1, np.float32)
    a + b
    rows = [("nbtorch a + b", _per_call(lambda: a + b)),
            ("nbtorch a * 2.0", _per_call(lambda: a * 2.0)),
            ("nbtorch a.exp()", _per_call(lambda: a.exp())),
            ("numpy x + y", _per_call(lambda: x + y))]
    if torch:
        ta, tb = torch.ones(1), torch.ones(1)
        rows.append(("torch a + b", _per_call(lambda: ta + tb)))
    print("\nper-op overhead, 1-element float32 tensors, no grad (target <= 10 us)")
    for name, t in rows:
        print(f"  {name:<18}{t * 1e6:8.2f} us")


def _ten_ops(lib, x, w, b):
    h = x * w + b
    h = lib.tanh(h) * 0.5 + lib.sigmoid(h)
    h = (h - 0.1).relu() / 1.5
    h = lib.exp(h * 0.1)
    return (h * h).sum()


def bench_fwd_bwd(repeats):
    rng = np.random.default_rng(1)
    data = [rng.standard_normal(64).astype(np.float32) for _ in range(3)]

    def make(lib):
        ts = [lib.tensor(d) for d in data]
        for t in ts:
            t.requires_grad_()

        def step():
            for t in ts:
                t.grad = None
            _ten_ops(lib, *ts).backward()
        return step

    step_nb = make(nbtorch)
    step_nb()
    fns = [lambda: _per_call(step_nb, 200, 1)]
    if torch:
        step_th = make(torch)
        fns.append(lambda: _per_call(step_th, 200, 1))
    best = [math.inf] * len(fns)
    for _ in range(repeats):
        for i, f in enumerate(fns):
            best[i] = min(best[i], f())
    print("\nforward+backward of ten ops on 64-element tensors (target <= 3x PyTorch)")
    print(f"  nbtorch {best[0] * 1e6:8.1f} us/iter")
    if torch:
        print(f"  torch   {best[1] * 1e6:8.1f} us/iter   ratio {best[0] / best[1]:.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--only", default="", help="run bandwidth cases whose name contains this")
    p.add_argument("--warm-mb", type=int, default=512,
                   help="fresh memory to touch before timing (0: none)")
    args = p.parse_args()
    bench_bandwidth(args.repeats, args.only, args.warm_mb)
    if not args.only:
        bench_overhead()
        bench_fwd_bwd(args.repeats)


if __name__ == "__main__":
    main()
