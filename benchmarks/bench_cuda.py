"""GPU speed: elementwise bandwidth against a device-to-device copy, and launch overhead.

Needs a real NVIDIA GPU (run by scripts/gpu_check.sh). Times with CUDA events,
best of several repeats after a warm-up (which also compiles the kernels).

1. Bandwidth on 10^8 float32 (``--n``): add, mul-by-scalar, relu, gelu, exp, a
   strided add (transposed operand) and a broadcast add. Bytes moved =
   (inputs + output) * 4 * n; reported as GB/s and as a fraction of a
   device-to-device copy's GB/s (``cuMemcpyDtoD`` of the same buffer, 2 * 4 * n
   bytes) — issue 4's target is >= 70%. PyTorch is timed too when installed.
2. Launch overhead from Python: `x + y` on 1-element CUDA tensors, microseconds
   per op (host time of 2,000 ops then a synchronize), and a bare Numba launch
   of an empty kernel for comparison.

    python benchmarks/bench_cuda.py [--n 100000000] [--repeats 10] [--quick]
"""
import argparse
import time

import numpy as np

import nbtorch

try:
    import torch
except ImportError:
    torch = None


def _time_ms(fn, repeats):
    """Best time of `fn()` over `repeats` in ms, measured with CUDA events."""
    fn()
    nbtorch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        start = nbtorch.cuda.Event(enable_timing=True)
        end = nbtorch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end))
    return best


def _torch_ms(fn, repeats):
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        best = min(best, s.elapsed_time(e))
    return best


def bandwidth(n, repeats):
    side = int(np.sqrt(n))
    from nbtorch.cuda.random import uniform_
    x = uniform_(nbtorch.empty(n, device="cuda"))
    y = uniform_(nbtorch.empty(n, device="cuda"))
    sq = x[:side * side].view(side, side)
    row = uniform_(nbtorch.empty(side, device="cuda"))
    dst = nbtorch.empty(n, device="cuda")

    def d2d():
        dst._storage.data.copy_to_device(x._storage.data)

    copy_ms = _time_ms(d2d, repeats)
    copy_gbs = 2 * 4 * n / copy_ms / 1e6
    print(f"device-to-device copy, {n:.0e} float32: {copy_ms:.3f} ms = {copy_gbs:.0f} GB/s")
    cases = [("add", 3, lambda: x + y), ("mul scalar", 2, lambda: x * 2.0),
             ("relu", 2, lambda: nbtorch.relu(x)),
             ("gelu", 2, lambda: nbtorch.nn.functional.gelu(x)),
             ("exp", 2, lambda: nbtorch.exp(x)), ("copy_ kernel", 2, lambda: dst.copy_(x)),
             ("add transposed", 3, lambda: sq + sq.t()),
             ("add broadcast row", 2, lambda: sq + row)]
    tx = ty = None
    if torch is not None and torch.cuda.is_available():
        tx, ty = torch.rand(n, device="cuda"), torch.rand(n, device="cuda")
        tsq, trow = tx[:side * side].view(side, side), torch.rand(side, device="cuda")
        tcases = {"add": lambda: tx + ty, "mul scalar": lambda: tx * 2.0,
                  "relu": lambda: torch.relu(tx),
                  "gelu": lambda: torch.nn.functional.gelu(tx), "exp": lambda: torch.exp(tx),
                  "add transposed": lambda: tsq + tsq.t(),
                  "add broadcast row": lambda: tsq + trow}
    print(f"{'op':20s}{'ms':>9s}{'GB/s':>8s}{'of copy':>9s}" +
          (f"{'torch ms':>10s}" if tx is not None else ""))
    for name, arrays, fn in cases:
        m = side * side if "transposed" in name or "broadcast" in name else n
        ms = _time_ms(fn, repeats)
        gbs = arrays * 4 * m / ms / 1e6
        line = f"{name:20s}{ms:9.3f}{gbs:8.0f}{gbs / copy_gbs:9.0%}"
        if tx is not None and name in tcases:
            line += f"{_torch_ms(tcases[name], repeats):10.3f}"
        print(line)


def launch_overhead(ops=2000):
    a = nbtorch.ones(1, device="cuda")
    b = nbtorch.ones(1, device="cuda")
    for _ in range(10):
        a + b
    nbtorch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(ops):
        a + b
    nbtorch.cuda.synchronize()
    per_op = (time.perf_counter() - t) / ops * 1e6
    from numba import cuda

    @cuda.jit
    def empty_kernel(out):
        pass

    raw = a._array
    empty_kernel[1, 32](raw)
    cuda.synchronize()
    t = time.perf_counter()
    for _ in range(ops):
        empty_kernel[1, 32](raw)
    cuda.synchronize()
    bare = (time.perf_counter() - t) / ops * 1e6
    print(f"launch overhead: nbtorch `a + b` on 1-element CUDA tensors {per_op:.1f} us/op; "
          f"bare Numba launch of an empty kernel {bare:.1f} us")
    if torch is not None and torch.cuda.is_available():
        ta, tb = torch.ones(1, device="cuda"), torch.ones(1, device="cuda")
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(ops):
            ta + tb
        torch.cuda.synchronize()
        print(f"                 PyTorch {(time.perf_counter() - t) / ops * 1e6:.1f} us/op")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10 ** 8)
    p.add_argument("--repeats", type=int, default=10)
    p.add_argument("--quick", action="store_true", help="10^7 elements, 3 repeats")
    args = p.parse_args()
    if not nbtorch.cuda.is_available():
        raise SystemExit("bench_cuda: no CUDA GPU (numba.cuda.is_available() is False)")
    if args.quick:
        args.n, args.repeats = 10 ** 7, 3
    print(f"GPU: {nbtorch.cuda.get_device_name()}  cc {nbtorch.cuda.get_device_capability()}")
    t = time.perf_counter()
    bandwidth(args.n, args.repeats)
    launch_overhead()
    s = nbtorch.cuda.memory_stats()
    print(f"allocator: {s['num_cache_hits']} cache hits, {s['num_device_alloc']} driver "
          f"allocations, peak {nbtorch.cuda.max_memory_allocated() / 2**30:.2f} GiB; "
          f"total {time.perf_counter() - t:.0f} s")


if __name__ == "__main__":
    main()
