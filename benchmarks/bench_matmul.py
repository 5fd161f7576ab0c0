"""Matmul speed: nbtorch's CPU kernels and op against NumPy (and PyTorch when installed).

Runs every candidate on the same operands in one process, alternating between
them on each repeat so that machine noise hits all alike (with a short pause
between calls: Numba's and OpenBLAS's worker threads spin for a while after a
parallel region and would otherwise slow the next candidate), and prints the best
time, GFLOP/s and the ratio to the reference (PyTorch if importable, else
NumPy's BLAS; a ratio above 1 is slower).

    python benchmarks/bench_matmul.py                 # 256, 1024, 2048 float32
    python benchmarks/bench_matmul.py --sizes 512 --dtype float64 --repeats 9

On a shared (busy) machine wall times mostly measure the neighbours; then
compare per-core efficiency instead, single-threaded, in process CPU time:

    OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python benchmarks/bench_matmul.py --cpu-time
"""
import argparse
import time

import numpy as np

from nbtorch.kernels.cpu import matmul as kernels


def _candidates(a, b, out):
    """name -> zero-argument callable computing a @ b (all on the same data)."""
    fns = {
        "numpy": lambda: np.matmul(a, b, out=out),
        "kernel blas": lambda: kernels.matmul_blas(a, b, out),
        "kernel numba": lambda: kernels.matmul_numba(a, b, out),
    }
    try:
        import nbtorch
        from nbtorch.ops.linalg import matmul
        ta, tb = nbtorch.from_numpy(a), nbtorch.from_numpy(b)
        fns["nbtorch.matmul"] = lambda: matmul(ta, tb)
    except (ImportError, AttributeError, NotImplementedError):
        pass
    try:
        import torch
        pa, pb = torch.from_numpy(a), torch.from_numpy(b)
        fns["torch.matmul"] = lambda: torch.matmul(pa, pb)
    except ImportError:
        pass
    return fns


def bench(n, dtype, repeats, clock=time.perf_counter):
    """Best time (s) of each candidate on n x n @ n x n, alternating candidates."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(dtype)
    b = rng.standard_normal((n, n)).astype(dtype)
    out = np.empty((n, n), dtype)
    fns = _candidates(a, b, out)
    for fn in fns.values():          # warm up: compile, fault pages in
        fn()
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            time.sleep(0.02)         # let the previous candidate's worker threads go idle
            t = clock()
            fn()
            best[name] = min(best[name], clock() - t)
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 2048])
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--cpu-time", action="store_true",
                   help="time with the process CPU clock instead of the wall clock")
    args = p.parse_args()
    clock = time.process_time if args.cpu_time else time.perf_counter
    rows = [(n, bench(n, np.dtype(args.dtype), args.repeats, clock)) for n in args.sizes]
    names = list(rows[0][1])
    ref = "torch.matmul" if "torch.matmul" in names else "numpy"
    print(f"matmul n x n @ n x n, {args.dtype}, best of {args.repeats} "
          f"({'CPU' if args.cpu_time else 'wall'} time); "
          f"ratio = time / {ref} time (lower is faster)")
    print(f"{'n':>6} " + " ".join(f"{name:>22}" for name in names))
    for n, best in rows:
        flops = 2.0 * n ** 3
        cells = [f"{best[k] * 1e3:8.2f}ms {flops / best[k] / 1e9:5.0f}GF "
                 f"{best[k] / best[ref]:4.2f}x" for k in names]
        print(f"{n:>6} " + " ".join(f"{c:>22}" for c in cells))


if __name__ == "__main__":
    main()
