"""Reduction and softmax speed: nbtorch against NumPy (and PyTorch when installed).

Every case runs all candidates on the same float32 data in one process,
alternating between them on each repeat (so machine noise hits all alike),
and prints the best time of each and the ratio nbtorch / reference (a ratio
below 1 is faster). Issue 2's target: `sum` of 10^7 float32 at least as fast
as NumPy's (ratio <= 1).

    python benchmarks/bench_reduce.py              # all cases
    python benchmarks/bench_reduce.py --repeats 5 --only softmax
    python benchmarks/bench_reduce.py --serial     # never the parallel kernels

The parallel kernels pay on an idle machine and suffer, like PyTorch's, when
other processes hold the cores: compare with --serial on a busy machine.
"""
import argparse
import time

import numpy as np

import nbtorch
from nbtorch.ops import reduction
from nbtorch.ops import reduction_minmax, reduction_stats, softmax  # noqa: F401  (methods)

try:
    import torch
except ImportError:
    torch = None


def _np_softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _np_logsumexp(a, axis):
    m = a.max(axis=axis, keepdims=True)
    return np.log(np.exp(a - m).sum(axis=axis)) + m.squeeze(axis)


# name, shape, nbtorch fn, NumPy fn, PyTorch fn (tensor -> result)
CASES = [
    ("sum all 1e7", (10 ** 7,), lambda t: t.sum(), np.sum, lambda t: t.sum()),
    ("sum dim0 (1e4,1e3)", (10 ** 4, 1000), lambda t: t.sum(0), lambda a: a.sum(0),
     lambda t: t.sum(0)),
    ("sum dim1 (1e4,1e3)", (10 ** 4, 1000), lambda t: t.sum(1), lambda a: a.sum(1),
     lambda t: t.sum(1)),
    ("mean all 1e7", (10 ** 7,), lambda t: t.mean(), np.mean, lambda t: t.mean()),
    ("max all 1e7", (10 ** 7,), lambda t: t.max(), np.max, lambda t: t.max()),
    ("amax dim0 (1e4,1e3)", (10 ** 4, 1000), lambda t: t.amax(0), lambda a: a.max(0),
     lambda t: t.amax(0)),
    ("var all 1e7", (10 ** 7,), lambda t: t.var(), lambda a: a.var(ddof=1),
     lambda t: t.var()),
    ("var dim1 (1e4,1e3)", (10 ** 4, 1000), lambda t: t.var(1), lambda a: a.var(1, ddof=1),
     lambda t: t.var(1)),
    ("logsumexp dim1 (1e4,1e3)", (10 ** 4, 1000), lambda t: t.logsumexp(1),
     lambda a: _np_logsumexp(a, 1), lambda t: t.logsumexp(1)),
    ("softmax dim1 (1e3,1e3)", (1000, 1000), lambda t: t.softmax(1),
     lambda a: _np_softmax(a, 1), lambda t: t.softmax(1)),
    ("softmax dim1 (1e4,1e3)", (10 ** 4, 1000), lambda t: t.softmax(1),
     lambda a: _np_softmax(a, 1), lambda t: t.softmax(1)),
    ("softmax dim0 (1e4,1e3)", (10 ** 4, 1000), lambda t: t.softmax(0),
     lambda a: _np_softmax(a, 0), lambda t: t.softmax(0)),
    ("log_softmax dim1 (1e4,1e3)", (10 ** 4, 1000), lambda t: t.log_softmax(1),
     lambda a: a - _np_logsumexp(a, 1)[:, None], lambda t: t.log_softmax(1)),
]


def run_case(shape, nb_fn, np_fn, pt_fn, repeats):
    """Best seconds per candidate, alternating candidates on every repeat."""
    a = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    cands = {"nbtorch": (nb_fn, nbtorch.from_numpy(a)), "numpy": (np_fn, a)}
    if torch is not None:
        cands["torch"] = (pt_fn, torch.from_numpy(a))
    best = {k: float("inf") for k in cands}
    for fn, arg in cands.values():
        fn(arg)                                     # warm up / compile
    for _ in range(repeats):
        for name, (fn, arg) in cands.items():
            t0 = time.perf_counter()
            fn(arg)
            best[name] = min(best[name], time.perf_counter() - t0)
            time.sleep(0.002)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--serial", action="store_true", help="disable the parallel kernels")
    args = ap.parse_args()
    if args.serial:
        reduction.PARALLEL_MIN_NUMEL = float("inf")
    ref = "torch" if torch is not None else "numpy"
    head = f"{'case':28s} {'nbtorch ms':>11s} {'numpy ms':>9s}"
    head += f" {'torch ms':>9s}" if torch is not None else ""
    print(head + f"   ratio nbtorch/{ref}" + ("   nbtorch/numpy" if torch is not None else ""))
    for name, shape, nb_fn, np_fn, pt_fn in CASES:
        if args.only not in name:
            continue
        best = run_case(shape, nb_fn, np_fn, pt_fn, args.repeats)
        row = f"{name:28s} {1e3 * best['nbtorch']:11.3f} {1e3 * best['numpy']:9.3f}"
        if torch is not None:
            row += f" {1e3 * best['torch']:9.3f}"
        row += f"   {best['nbtorch'] / best[ref]:8.2f}"
        if torch is not None:
            row += f"   {best['nbtorch'] / best['numpy']:8.2f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
