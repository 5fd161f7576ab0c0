"""Training-path speed: nbtorch against PyTorch (when installed), one process.

Rows (issue 2 and issue 3 targets in brackets):

- MLP 784-512-256-10 training step, batch 128, Adam, CrossEntropyLoss  [<= 1.5x torch]
- LeNet-5-size CNN on 1x28x28, batch 64, SGD momentum 0.9, CrossEntropyLoss  [<= 1.5x]
- forward+backward of ten small ops on 64 elements  [<= 3x torch]
- `a + b` on 1-element tensors without grad  [<= 10 us]
- one DataLoader batch (TensorDataset of 1x28x28, batch 64, default collate)
- `import nbtorch` in a fresh interpreter  [< 1 s]

Each case runs nbtorch and PyTorch in alternating blocks of calls (so both see
the same machine load) and reports the BEST per-call time of each: wall time,
and CPU time of the process (less disturbed by other processes on a shared
machine; it counts every thread, so it exceeds wall time when kernels run in
parallel). Ratios are nbtorch / torch of the best wall times. Columns for
torch are '-' when it is not importable.

    python benchmarks/bench_training.py [--rounds 5] [--only mlp] [--threads 1]
"""
import argparse
import math
import os
import subprocess
import sys
import time

from _threads import THREADS as _THREADS  # noqa: E402  (before NumPy and Numba)

import numpy as np  # noqa: E402

import nbtorch  # noqa: E402
from bench_ops import _ten_ops  # noqa: E402  (the same ten ops as bench_ops.py)

try:
    import torch
    if _THREADS:
        torch.set_num_threads(_THREADS)
except ImportError:
    torch = None


# ---- the workloads, written once for both libraries ---------------------------------

def _mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def _lenet(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(16 * 4 * 4, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                         nn.Linear(84, 10))


def _train_step(lib, kind):
    """A zero-argument training step (zero_grad, forward, loss, backward, step)."""
    rng = np.random.default_rng(0)
    lib.manual_seed(0)
    if kind == "mlp":
        model, shape, batch = _mlp(lib), (784,), 128
        opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    else:
        model, shape, batch = _lenet(lib), (1, 28, 28), 64
        opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.tensor(rng.standard_normal((batch,) + shape).astype(np.float32))
    y = lib.tensor(rng.integers(0, 10, batch))
    loss_fn = lib.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
    return step


def _small_ops(lib):
    rng = np.random.default_rng(1)
    ts = [lib.tensor(rng.standard_normal(64).astype(np.float32), requires_grad=True)
          for _ in range(3)]

    def step():
        for t in ts:
            t.grad = None
        _ten_ops(lib, *ts).backward()
    return step


def _add_1elem(lib):
    a, b = lib.ones(1), lib.ones(1)
    return lambda: a + b


def _dataloader(lib):
    rng = np.random.default_rng(2)
    ds = lib.utils.data.TensorDataset(
        lib.tensor(rng.standard_normal((640, 1, 28, 28)).astype(np.float32)),
        lib.tensor(rng.integers(0, 10, 640)))
    loader = lib.utils.data.DataLoader(ds, batch_size=64, shuffle=True)

    def epoch():                     # 10 batches; reported per batch
        for _ in loader:
            pass
    return epoch


# name, factory(lib) -> step, calls per block, divisor (calls per reported unit), unit
CASES = [
    ("mlp", "MLP 784-512-256-10 step, b128, Adam", lambda lib: _train_step(lib, "mlp"), 5, 1),
    ("lenet", "LeNet-5 step, b64, SGD momentum", lambda lib: _train_step(lib, "lenet"), 5, 1),
    ("ten", "fwd+bwd of 10 small ops (64 elem)", _small_ops, 200, 1),
    ("add", "a + b, 1-element, no grad", _add_1elem, 5000, 1),
    ("loader", "DataLoader batch (64x1x28x28)", _dataloader, 2, 10),
]

TARGETS = {"mlp": "<= 1.5x", "lenet": "<= 1.5x", "ten": "<= 3x", "add": "<= 10 us"}


def _block(fn, calls):
    """(wall, cpu) seconds per call over `calls` calls."""
    w, c = time.perf_counter(), time.process_time()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - w) / calls, (time.process_time() - c) / calls


def _best(fns, calls, rounds):
    """Best (wall, cpu) per call of each function, in alternating blocks."""
    for f in fns:
        f()                                     # warm up (compiles, allocates state)
    best = [[math.inf, math.inf] for _ in fns]
    for _ in range(rounds):
        for i, f in enumerate(fns):
            w, c = _block(f, calls)
            best[i][0] = min(best[i][0], w)
            best[i][1] = min(best[i][1], c)
    return best


def _fmt(seconds):
    if seconds is None:
        return "-"
    us = seconds * 1e6
    return f"{us:.1f} us" if us < 1000 else f"{us / 1000:.2f} ms"


def _import_time(module, repeats=3):
    """Best wall time of `import module` in a fresh interpreter."""
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    best = math.inf
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if out.returncode == 0:
            best = min(best, float(out.stdout.split()[-1]))
    return best


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="alternating blocks per library")
    p.add_argument("--only", default="", help="run the cases whose key contains this")
    p.add_argument("--threads", type=int, default=None, help="threads for BLAS/Numba/torch")
    args = p.parse_args()
    print(f"nbtorch vs {'torch ' + torch.__version__ if torch else 'no torch (not importable)'}; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
          f"best of {args.rounds} alternating blocks.")
    print("The machine may be shared: wall times are noisy, CPU time (all threads of this "
          "process) less so.\n")
    head = f"{'case':<38}{'nb wall':>11}{'nb cpu':>11}{'torch wall':>12}{'torch cpu':>11}" \
           f"{'ratio':>7}  target"
    print(head)
    print("-" * len(head))
    for key, name, factory, calls, per in CASES:
        if args.only and args.only not in key:
            continue
        fns = [factory(nbtorch)] + ([factory(torch)] if torch else [])
        best = _best(fns, calls, args.rounds)
        nb = [v / per for v in best[0]]
        th = [v / per for v in best[1]] if torch else [None, None]
        ratio = f"{nb[0] / th[0]:.2f}" if torch else "-"
        print(f"{name:<38}{_fmt(nb[0]):>11}{_fmt(nb[1]):>11}{_fmt(th[0]):>12}"
              f"{_fmt(th[1]):>11}{ratio:>7}  {TARGETS.get(key, '')}", flush=True)
    if not args.only or "import" in args.only:
        t_nb = _import_time("nbtorch")
        t_th = _import_time("torch") if torch else None
        print(f"{'import (fresh interpreter)':<38}{_fmt(t_nb):>11}{'':>11}{_fmt(t_th):>12}"
              f"{'':>11}{'':>7}  < 1 s")


if __name__ == "__main__":
    main()
