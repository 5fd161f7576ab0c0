"""Compile the common CPU kernels ahead of time into Numba's on-disk cache.

    python -m nbtorch.precompile [--jobs N] [workload ...]

Each workload is a small program that runs the kernels a typical model runs, with the
argument types real programs pass (float32, both the serial and the parallel variant
of each kernel): Numba compiles them once and saves them (`cache=True`), so a later
process - the demo, a notebook, a test run - loads them in milliseconds instead of
compiling them (0.1-0.6 s per signature). Workloads run in separate processes, up to
``--jobs`` at once (Numba compiles one function at a time per process; the cache's
writes are locked across processes: kernels/_numba_cache.py).

``make demo`` and ``make test`` run it once, right after installing. Running it again
compiles nothing (it reports the kernels it loaded from the cache).
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

__all__ = ["WORKLOADS", "run_workload", "main"]


def _cnn():
    """The demo's digits CNN: conv, ReLU, max-pool, linear, cross-entropy, Adam, accuracy."""
    import nbtorch as torch
    import nbtorch.nn as nn
    import nbtorch.nn.functional as F
    from nbtorch.utils.data import DataLoader, TensorDataset
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.Flatten(),
                          nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    data = TensorDataset(torch.rand(64, 1, 8, 8), torch.randint(0, 10, (64,)))
    loader = DataLoader(data, batch_size=32, shuffle=True, generator=torch.Generator())
    for x, y in loader:
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    with torch.no_grad():
        for x in (x, torch.rand(256, 1, 8, 8)):                    # accuracy, test batches
            (model(x).argmax(1) == torch.randint(0, 10, (len(x),))).sum().item()
    x = torch.rand(2, 1, 10, 10, requires_grad=True)       # an unpadded conv's input grad (LeNet)
    F.conv2d(x, torch.rand(2, 1, 5, 5)).sum().backward()


def _transformer():
    """A Transformer encoder block forward and backward, large (parallel kernels) and small
    (serial ones), then an AdamW step."""
    import nbtorch as torch
    import nbtorch.nn as nn
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(128, 4, 512)
    opt = torch.optim.AdamW(layer.parameters())
    for shape in ((16, 64, 128), (2, 8, 128)):
        layer(torch.randn(*shape)).sum().backward()
    opt.step()
    # the split update's loop (kernels/cpu/optim_split.py): a step compiles it only when it
    # may use two threads; compiled here whatever this process's thread setting
    from nbtorch.kernels.cpu import loop_threads, optim_split
    loop_threads.cfunc_address(optim_split._adam_chunk)


def _mlp():
    """An MLP with GELU/tanh/sigmoid, MSE and cross-entropy, SGD with momentum."""
    import nbtorch as torch
    import nbtorch.nn as nn
    import nbtorch.nn.functional as F
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64), nn.Tanh(),
                          nn.Linear(64, 10), nn.Sigmoid())
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for n in (8, 1024):
        x = torch.randn(n, 64)
        out = model(x)
        (F.mse_loss(out, torch.rand(n, 10)) + F.cross_entropy(out, torch.randint(0, 10, (n,)))
         ).backward()
        opt.step()


def _elementwise():
    """Elementwise ops and reductions on small and large float32 tensors (the serial and
    the split loops), and a mid-size matrix product with its backward."""
    import nbtorch as torch
    for n in (100, 1 << 17, 1 << 17):          # a large kind's first call is serial, then
        a, b = torch.rand(n), torch.rand(n)    # split calls (kernels/cpu/loop_threads)
        c = (a + b) * (a - b) / (b + 1)
        c = c.exp() + (a + 1).log() + a.sqrt() + a.pow(2) + torch.maximum(a, b)
        c.mean().item(), c.amax().item(), c.std().item()
    w = torch.rand(128, 128, requires_grad=True)   # a mid-size product: rows split over the
    (torch.rand(128, 128) @ w).sum().backward()    # spinning helpers (kernels/cpu/gemm_rows)


# (the longest first: each waits for a free job slot in this order)
WORKLOADS = {"cnn": _cnn, "transformer": _transformer, "mlp": _mlp,
             "elementwise": _elementwise}


def run_workload(name):
    """Run one workload in this process; return (kernels compiled, kernels loaded, seconds)."""
    from numba.core import caching, compiler
    counts = {"compiled": 0, "loaded": 0}

    def load(self, sig, target_context, _orig=caching.Cache.load_overload):
        result = _orig(self, sig, target_context)
        counts["loaded"] += result is not None
        return result

    def compile_extra(typingctx, targetctx, func, *args, _orig=compiler.compile_extra, **kw):
        counts["compiled"] += 1
        return _orig(typingctx, targetctx, func, *args, **kw)

    caching.Cache.load_overload = load
    compiler.compile_extra = compile_extra
    start = time.perf_counter()
    WORKLOADS[name]()
    return counts["compiled"], counts["loaded"], time.perf_counter() - start


def _spawn(name):
    code = ("import json, sys; from nbtorch.precompile import run_workload; "
            f"print(json.dumps(run_workload({name!r})))")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m nbtorch.precompile",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", help=f"which to run (default all: {', '.join(WORKLOADS)})")
    parser.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1,
                        help="workloads run at once, each in its own process (default: "
                             "the number of CPUs)")
    args = parser.parse_args(argv)
    unknown = [w for w in args.workloads if w not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload {unknown[0]!r} (choose from {', '.join(WORKLOADS)})")
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        # a slot takes the next workload as soon as any of the running ones ends
        ok = list(pool.map(_run_one, args.workloads or WORKLOADS))
    print(f"precompile: done in {time.perf_counter() - start:.1f} s")
    return 0 if all(ok) else 1


def _run_one(name):
    """Run workload `name` in a process of its own and report it; False if it failed."""
    proc = _spawn(name)
    out, _ = proc.communicate()
    if proc.returncode != 0:
        print(f"precompile: {name} failed (exit {proc.returncode})", file=sys.stderr)
        return False
    compiled, loaded, seconds = json.loads(out.strip().splitlines()[-1])
    print(f"precompile: {name}: {compiled} functions compiled, {loaded} loaded from the "
          f"cache, {seconds:.1f} s", flush=True)
    return True


if __name__ == "__main__":
    sys.exit(main())
