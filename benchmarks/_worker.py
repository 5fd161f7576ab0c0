"""Benchmark worker: one framework in a process of its own, driven over stdin/stdout.

    python benchmarks/_worker.py nbtorch|numpy|torch

The driver (_driver.py) starts one worker per framework and sends one JSON object
per line; the worker answers one JSON line each (its own prints go to stderr):

    {"op": "setup", "module": "bench_ops", "case": "add 1e7", "warmup": 2,
     "min_sample_s": 0.02}          -> {"ok": true, "number": 3, "first_s": .., "est_s": ..}
    {"op": "run", "samples": 3}     -> {"ok": true, "times": [seconds per call, ...]}
    {"op": "memory", "module": .., "case": .., "steps": 5}
                                    -> {"ok": true, "base_kb": .., "first_kb": .., "peak_kb": ..}
    {"op": "quit"}

On start it imports its framework, pins its threads (BENCH_THREADS), touches
BENCH_WARM_MB of fresh memory once (a VM's first touch of memory is far slower
than later ones: see bench_ops.py) and says hello with its versions and thread
counts. NBTORCH_BENCH_SRC=DIR imports nbtorch from another checkout (DIR/nbtorch
and DIR/kernels), e.g. a `git worktree` of an older commit.
"""
import ctypes
import gc
import importlib
import importlib.abc
import importlib.util
import json
import math
import os
import resource
import sys
import time
import traceback

from _case import Skip

_OUT = sys.stdout
_AFTER_IMPORT = []      # ru_maxrss (KiB) right after the framework's import
sys.stdout = sys.stderr          # stdout carries the protocol only


def _reply(**kw):
    _OUT.write(json.dumps(kw) + "\n")
    _OUT.flush()


class _SourceFinder(importlib.abc.MetaPathFinder):
    """Import `nbtorch` from DIR/nbtorch and `nbtorch.kernels` from DIR/kernels."""

    def __init__(self, root):
        self.dirs = {"nbtorch": os.path.join(root, "nbtorch"),
                     "nbtorch.kernels": os.path.join(root, "kernels")}

    def find_spec(self, name, path=None, target=None):
        d = self.dirs.get(name)
        if d is None:
            return None
        return importlib.util.spec_from_file_location(
            name, os.path.join(d, "__init__.py"), submodule_search_locations=[d])


def _openblas_threads():
    """Threads of an OpenBLAS loaded in this process (NumPy's), or None."""
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({ln.split()[-1] for ln in maps if "openblas" in ln.lower()
                            and ".so" in ln})
    except OSError:
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
                     "openblas_get_num_threads64_", "openblas_get_num_threads"):
            if hasattr(lib, name):
                return getattr(lib, name)()
    return None


def _hello(framework, lib, import_s, threads):
    """Import time, versions, file and the thread counts the framework ended up with."""
    if threads and framework in ("nbtorch", "torch"):
        lib.set_num_threads(threads)
    if threads and framework == "torch":
        try:
            lib.set_num_interop_threads(threads)
        except RuntimeError:                          # only before any parallel work
            pass
    if framework != "torch":
        import numpy as np
        np.dot(np.ones((4, 4)), np.ones((4, 4)))          # load BLAS to report it
    info = {"framework": framework, "version": getattr(lib, "__version__", "?"),
            "file": getattr(lib, "__file__", "?"), "import_s": import_s,
            "python": sys.version.split()[0], "pid": os.getpid(),
            "env": {k: os.environ[k] for k in sorted(os.environ)
                    if k.endswith("_NUM_THREADS") or k.startswith(("OMP_", "KMP_", "GOMP_"))},
            "threads": {}}
    t = info["threads"]
    if "numba" in sys.modules:
        numba = sys.modules["numba"]
        info["numba"] = numba.__version__
        t["numba"] = numba.get_num_threads()
    if framework == "torch":
        t["torch"] = lib.get_num_threads()
        t["torch interop"] = lib.get_num_interop_threads()
    if "numpy" in sys.modules:
        info["numpy"] = sys.modules["numpy"].__version__
    blas = _openblas_threads()
    if blas is not None:
        t["openblas"] = blas
    if os.environ.get("BENCH_CHECK_CUDA") and framework in ("nbtorch", "torch"):
        info["cuda"] = bool(lib.cuda.is_available())
    return info


def _warm_memory(megabytes):
    if megabytes > 0:
        import numpy as np
        np.ones(megabytes << 18, np.float32)


def _find_case(module, name):
    for case in importlib.import_module(module).CASES:
        if case.name == name:
            return case
    raise KeyError(f"no case {name!r} in {module}")


class _Worker:
    def __init__(self, framework, lib):
        self.framework, self.lib = framework, lib
        self.step = self.case = None
        self.number = 1

    def _build(self, msg):
        case = _find_case(msg["module"], msg["case"])
        setup = case.setup(self.framework)
        if setup is None:
            raise KeyError(f"case {case.name!r} has no {self.framework} setup")
        self.case, self.step = case, None
        gc.collect()
        return case, setup(self.lib)

    def setup(self, msg):
        t = time.perf_counter()
        case, step = self._build(msg)
        step()
        first = time.perf_counter() - t                   # setup + first call (compiles, loads)
        times, t0 = [], time.perf_counter()
        while len(times) < max(1, msg.get("warmup", 2) - 1) or (
                len(times) < 5 and time.perf_counter() - t0 < 1.0):
            t = time.perf_counter()
            step()
            times.append(time.perf_counter() - t)
        est = min(times)                                  # one stalled call must not decide
        self.step = step
        self.number = case.number or max(1, math.ceil(msg.get("min_sample_s", 0.02) /
                                                      max(est, 1e-9)))
        return {"number": self.number, "first_s": first, "est_s": est}

    def run(self, msg):
        step, number, per = self.step, self.number, self.case.per_call
        gc.collect()
        for _ in range(msg.get("block_warmup", 1)):     # caches were someone else's
            step()
        times = []
        for _ in range(msg.get("samples", 3)):
            t = time.perf_counter()
            for _ in range(number):
                step()
            times.append((time.perf_counter() - t) / number / per)
        return {"times": times}

    def memory(self, msg):
        """Peak resident memory (ru_maxrss, KiB) right after the import (before the thread
        settings: nbtorch's `set_num_threads` may load Numba's compiler, which a program
        that never calls it loads in its first step), after one step and after more."""
        base = _AFTER_IMPORT[0] if _AFTER_IMPORT else \
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        _, step = self._build(msg)
        step()
        first = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        for _ in range(msg.get("steps", 5)):
            step()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return {"base_kb": base, "first_kb": first, "peak_kb": peak}


def main():
    framework = sys.argv[1]
    src = os.environ.get("NBTORCH_BENCH_SRC")
    if framework == "nbtorch" and src:
        sys.meta_path.insert(0, _SourceFinder(os.path.abspath(src)))
    t = time.perf_counter()
    try:
        lib = importlib.import_module(framework)
    except Exception as exc:                          # noqa: BLE001 (reported to the driver)
        _reply(ok=False, error=f"import {framework}: {exc!r}")
        return
    import_s = time.perf_counter() - t
    _AFTER_IMPORT.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
    threads = int(os.environ.get("BENCH_THREADS", "0") or 0)
    info = _hello(framework, lib, import_s, threads)
    _warm_memory(int(os.environ.get("BENCH_WARM_MB", "0") or 0))
    worker = _Worker(framework, lib)
    _reply(ok=True, hello=info)
    for line in sys.stdin:
        msg = json.loads(line)
        op = msg.get("op")
        if op == "quit":
            break
        try:
            if op not in ("setup", "run", "memory"):
                raise ValueError(f"unknown op {op!r}")
            _reply(ok=True, **getattr(worker, op)(msg))
        except Exception as exc:                      # noqa: BLE001 (reported to the driver)
            worker.step = None
            _reply(ok=False, skip=isinstance(exc, Skip), error=f"{type(exc).__name__}: {exc}",
                   trace=traceback.format_exc(limit=-4))


if __name__ == "__main__":
    main()
