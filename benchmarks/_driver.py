"""Benchmark driver: every framework in its own long-lived process, rounds interleaved.

What a user who runs one framework sees is what gets measured: nbtorch, NumPy and
PyTorch (when installed) each run in worker processes of their own (_worker.py),
never two in one process (two OpenMP runtimes and one framework's environment
settings would slow the other). Each framework gets `--processes` workers (default
3) whose rounds are pooled: PyTorch's speed can differ from one process to the next
(its 32x16x28x28 convolution fwd+bwd took 3.6, 5.0 and 6.9 ms in three processes of
one run), so a single worker's luck decided a ratio (1.31 in one run, 0.70 in
another). For each case the driver sets it up in every
worker (untimed: first calls compile or load kernels, and fault memory in), then
runs `--rounds` rounds; in round r every worker runs one block of the case in an
order rotated by r (one untimed call, then `--samples` samples of `number` calls
each); before each block the driver waits until no worker's threads use the CPU
(OpenBLAS and OpenMP threads spin for up to ~0.1 s after a call, and would share
the cores with the next worker). A framework's time is the median over rounds of its
per-round medians (all its processes' rounds); the spread printed beside it is the min
and max of those per-round medians, and a line under the table gives each process's
median where a framework's processes differ by more than 10%; ratios are ratios of
medians, marked `~` when the two ranges overlap (a difference within this run's noise).
The machine's copy bandwidth and GEMM peak are measured in the same run (_limits.py) and
bandwidth-bound and matmul cases are printed as fractions of them. Threads are pinned to
`--threads` for every library (environment and set_num_threads) and printed; the load
average is printed at the start and the end. Peak resident memory of the cases marked
`memory=True` is measured in a fresh worker per framework (ru_maxrss after the
import, after the first step and after a few more).

    python benchmarks/run.py                        # everything (make bench)
    python benchmarks/run.py --only matmul --rounds 5
    python benchmarks/bench_conv.py --rounds 3      # one module's cases
    python benchmarks/run.py --also before=/tmp/nbt_514 --markdown out.md

`--also LABEL=DIR` adds a second nbtorch worker importing nbtorch from another
checkout (e.g. `git worktree add /tmp/old <commit>`), interleaved with the rest:
a before/after table with the same machine noise on both sides.

Adding benchmarks (e.g. benchmarks/bench_jit.py): write a module that defines
`CASES`, a list of `_case.Case(name, group, nbtorch=setup, torch=setup, numpy=setup)`
where each setup receives the framework's module and returns the zero-argument
step to time (import nothing heavy at module level: the NumPy worker imports the
module too); add `bytes=` or `flops=` per call for the limit columns, `memory=True`
for a peak-memory row. End it with

    if __name__ == "__main__":
        import _driver
        _driver.main(["bench_jit"])

and add its name to `MODULES` in run.py so that `make bench` runs it.
"""
import argparse
import importlib
import importlib.util
import json
import os
import select
import subprocess
import sys
import tempfile
import time

import _limits
import _report
from _case import FRAMEWORKS
from _stats import median, summarize

HERE = os.path.dirname(os.path.abspath(__file__))
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "NUMBA_NUM_THREADS")


class WorkerError(RuntimeError):
    pass


class Worker:
    """One framework's worker process (see _worker.py) and its JSON-lines channel."""

    def __init__(self, label, framework, threads, warm_mb=512, src=None, check_cuda=False,
                 log_dir=None, index=0):
        self.label, self.framework, self.src, self.index = label, framework, src, index
        self.env = dict(os.environ)
        if threads:
            self.env.update({v: str(threads) for v in THREAD_VARS})
            self.env["BENCH_THREADS"] = str(threads)
        self.env["BENCH_WARM_MB"] = str(warm_mb)
        if src:
            self.env["NBTORCH_BENCH_SRC"] = src
        if check_cuda:
            self.env["BENCH_CHECK_CUDA"] = "1"
        self.log_dir = log_dir or tempfile.gettempdir()
        self.proc = self.hello = None
        self._buf = b""

    def launch(self):
        """Start the process; `start` (or `wait_hello`) then waits for its hello."""
        log = open(os.path.join(self.log_dir,
                                f"worker-{self.label}-{self.index}-{time.time_ns()}.log"), "wb")
        self.log_path = log.name
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "_worker.py"),
                                      self.framework], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log, env=self.env, cwd=HERE,
                                     bufsize=0)
        log.close()
        self._buf = b""

    def start(self, timeout=600):
        self.launch()
        return self.wait_hello(timeout)

    def wait_hello(self, timeout=600):
        reply = self.recv(timeout)
        if not reply.get("ok"):
            self.close()
            raise WorkerError(reply.get("error", "worker failed to start"))
        self.hello = reply["hello"]
        return self.hello

    @property
    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def send(self, msg):
        try:
            self.proc.stdin.write((json.dumps(msg) + "\n").encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            raise WorkerError(f"{self.label} worker is gone ({exc})") from exc

    def recv(self, timeout):
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise WorkerError(f"{self.label} worker timed out after {timeout:.0f} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    code = self.proc.wait()
                    raise WorkerError(f"{self.label} worker exited (code {code}); "
                                      f"log: {self.log_path}")
                self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def request(self, msg, timeout):
        self.send(msg)
        return self.recv(timeout)

    def close(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                self.send({"op": "quit"})
                self.proc.wait(timeout=10)
            except (WorkerError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.proc = None


def load_cases(modules):
    """The cases of the named modules, in order, each tagged with its module."""
    cases = []
    for name in modules:
        for case in importlib.import_module(name).CASES:
            case.module = name
            cases.append(case)
    return cases


def select_cases(cases, only):
    """Cases whose name, group or module contains any of the comma-separated words."""
    words = [w.strip().lower() for w in (only or "").split(",") if w.strip()]
    if not words:
        return list(cases)
    return [c for c in cases
            if any(w in c.name.lower() or w in c.group.lower() or w in c.module.lower()
                   for w in words)]


def cpu_ns(pid):
    """CPU time (ns) that all threads of process `pid` have run, or None (not Linux)."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass                                       # a thread that just ended
    return total


def wait_quiet(pids, window=0.01, busy_ns=500_000, cap=1.0):
    """Wait until the processes ran (all threads together) under busy_ns in one window.

    After a call, OpenBLAS's threads spin for up to ~0.1 s and OpenMP's for a while
    too; a block started meanwhile would share the cores with another worker's
    spinning threads. Returns the seconds waited (at most `cap`)."""
    t0 = time.perf_counter()
    before = [cpu_ns(p) for p in pids]
    if any(b is None for b in before):
        return 0.0
    while time.perf_counter() - t0 < cap:
        time.sleep(window)
        now = [cpu_ns(p) for p in pids]
        if any(n is None for n in now) or sum(now) - sum(before) < busy_ns:
            break
        before = now
    return time.perf_counter() - t0


def rotated(items, r):
    """items rotated left by r: round r's running order."""
    if not items:
        return []
    k = r % len(items)
    return items[k:] + items[:k]


def run_case(case, workers, args, log=print):
    """Set `case` up in every worker that has it, run the interleaved rounds; a dict of
    label -> {"summary", "rounds", "processes", "number", "first_s"} or {"error"/"skip"}.
    A label's workers (`--processes` of them) pool their per-round medians; "processes"
    holds each one's median (a framework whose speed differs from process to process
    shows it there and in the spread)."""
    result = {}
    active = []
    for w in workers:
        if case.setup(w.framework) is None:
            continue
        try:
            if not w.alive:
                w.start()
            w.send({"op": "setup", "module": case.module, "case": case.name,
                    "warmup": args.warmup, "min_sample_s": args.min_sample_ms / 1e3})
            active.append(w)
        except WorkerError as exc:
            result[w.label] = {"error": str(exc)}
    replies = {}
    for w in active:                                  # set up in parallel: untimed
        try:
            replies[w] = w.recv(args.timeout)
        except WorkerError as exc:
            replies[w] = {"error": str(exc)}
    for w in active:
        reply = replies[w]
        if "error" in result.get(w.label, {}) or "skip" in result.get(w.label, {}):
            continue                                  # a failed process fails its label
        if reply.get("ok"):
            result.setdefault(w.label, {"number": reply["number"],
                                        "first_s": reply["first_s"], "rounds": [],
                                        "by_process": {}})
        else:
            result[w.label] = {"skip" if reply.get("skip") else "error": reply["error"]}
            if not reply.get("skip"):
                log(f"  {w.label}: {case.name}: {reply['error']}")
    ready = [w for w in active if "rounds" in result.get(w.label, {})]
    for r in range(args.rounds):
        for w in rotated(ready, r):
            if "rounds" not in result[w.label]:
                continue                              # failed in an earlier round
            time.sleep(args.gap_ms / 1e3)
            wait_quiet([x.proc.pid for x in ready if x.alive], cap=args.quiet_max_ms / 1e3)
            try:
                reply = w.request({"op": "run", "samples": args.samples}, args.timeout)
            except WorkerError as exc:
                result[w.label] = {"error": str(exc)}
                continue
            if not reply.get("ok"):
                result[w.label] = {"error": reply["error"]}
                continue
            block = median(reply["times"])
            result[w.label]["rounds"].append(block)
            result[w.label]["by_process"].setdefault(w.index, []).append(block)
    for res in result.values():
        by_process = res.pop("by_process", None)
        if res.get("rounds"):
            res["summary"] = summarize(res["rounds"])
            res["processes"] = [median(v) for _, v in sorted(by_process.items())]
    return result


def measure_memory(case, specs, args, log=print):
    """label -> ru_maxrss figures (KiB) of `case`'s step, each in a fresh worker."""
    out = {}
    for label, framework, src in specs:
        if case.setup(framework) is None:
            continue
        w = Worker(label, framework, args.threads, warm_mb=0, src=src, log_dir=args.log_dir)
        try:
            hello = w.start()
            reply = w.request({"op": "memory", "module": case.module, "case": case.name,
                               "steps": args.memory_steps}, args.timeout)
            out[label] = dict(reply, import_s=hello["import_s"]) if reply.get("ok") else \
                {"error": reply["error"]}
        except WorkerError as exc:
            out[label] = {"error": str(exc)}
        finally:
            w.close()
        if "error" in out[label]:
            log(f"  {label}: memory of {case.name}: {out[label]['error']}")
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(description="nbtorch benchmarks, one process per framework "
                                "(see benchmarks/_driver.py)")
    p.add_argument("--only", default="", help="comma-separated words: cases whose name, group "
                   "or module contains one of them")
    p.add_argument("--rounds", type=int, default=3, help="rounds per worker process")
    p.add_argument("--processes", type=int, default=3,
                   help="worker processes per framework, their rounds pooled (PyTorch's "
                   "speed can differ from one process to the next: one process's luck "
                   "should not decide a ratio)")
    p.add_argument("--samples", type=int, default=3, help="timed samples per block")
    p.add_argument("--warmup", type=int, default=2, help="untimed calls at setup")
    p.add_argument("--min-sample-ms", type=float, default=20.0,
                   help="calls per sample are chosen so that one sample lasts this long")
    p.add_argument("--gap-ms", type=float, default=10.0, help="pause before each block")
    p.add_argument("--quiet-max-ms", type=float, default=1000.0,
                   help="then wait up to this long until every worker's threads are idle")
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="threads for every library (0: leave their defaults)")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    p.add_argument("--nbtorch-src", default=None,
                   help="import nbtorch from this checkout instead of the installed one")
    p.add_argument("--also", action="append", default=[], metavar="LABEL=DIR",
                   help="another nbtorch worker importing nbtorch from DIR")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory rows")
    p.add_argument("--memory-steps", type=int, default=5)
    p.add_argument("--cuda", choices=("auto", "yes", "no"), default="auto",
                   help="run the CUDA cases (auto: when nbtorch sees a GPU)")
    p.add_argument("--timeout", type=float, default=1800.0, help="seconds per worker reply")
    p.add_argument("--json", default=None, help="write all results to this file")
    p.add_argument("--markdown", default=None, help="write the report to this file")
    p.add_argument("--list", action="store_true", help="list the selected cases and exit")
    args = p.parse_args(argv)
    if args.processes < 1 or args.rounds < 1:
        p.error("--processes and --rounds must be at least 1")
    args.log_dir = tempfile.mkdtemp(prefix="nbtorch-bench-")
    return args


def worker_specs(args, cases):
    """(label, framework, src) of the workers this run needs, in column order."""
    wanted = [f.strip() for f in args.frameworks.split(",") if f.strip()]
    unknown = set(wanted) - set(FRAMEWORKS)
    if unknown:
        raise SystemExit(f"unknown frameworks: {sorted(unknown)} (have {FRAMEWORKS})")
    if "torch" in wanted and importlib.util.find_spec("torch") is None:
        wanted.remove("torch")
    used = {f for c in cases for f in c.frameworks()}
    specs = []
    for f in FRAMEWORKS:
        if f in wanted and f in used:
            specs.append((f, f, args.nbtorch_src if f == "nbtorch" else None))
        if f == "nbtorch" and "nbtorch" in used:
            for item in args.also:
                label, _, src = item.partition("=")
                if not src:
                    raise SystemExit(f"--also expects LABEL=DIR, got {item!r}")
                specs.append((label, "nbtorch", os.path.abspath(src)))
    limits_only = set()
    if any(c.frameworks() == ["numpy"] for c in cases) and not any(s[1] == "numpy"
                                                                    for s in specs):
        specs.append(("numpy", "numpy", None))     # the machine limits run there
        limits_only.add("numpy")
    return specs, limits_only


def main(modules, argv=None):
    args = parse_args(argv)
    cases = select_cases(load_cases(modules), args.only)
    cuda_cases = [c for c in cases if c.device == "cuda"]
    if args.cuda == "no":
        cases = [c for c in cases if c.device != "cuda"]
    limit_cases = _limits.needed(cases)
    for c in limit_cases:
        c.module = "_limits"
    if args.list:
        for c in limit_cases + cases:
            print(f"{c.module:15s} {c.group:28s} {c.name}  [{', '.join(c.frameworks())}]")
        return 0
    specs, limits_only = worker_specs(args, limit_cases + cases)
    report = _report.Report(args, specs, _report.machine_info(), os.getloadavg())
    workers = [Worker(label, fw, args.threads, src=src, log_dir=args.log_dir,
                      check_cuda=bool(cuda_cases) and args.cuda != "no", index=k)
               for k in range(args.processes) for label, fw, src in specs
               if k == 0 or label not in limits_only]
    t0 = time.perf_counter()
    try:
        for w in workers:                   # start together: imports are untimed
            w.launch()
        for w in workers:
            w.wait_hello()
            if w.index == 0:
                report.hello(w.label, w.hello,
                             _report.git_commit(w.src or os.path.dirname(HERE))
                             if w.framework == "nbtorch" else None)
        has_gpu = any(w.hello.get("cuda") for w in workers)
        if cuda_cases and (args.cuda == "no" or (args.cuda == "auto" and not has_gpu)):
            report.note(f"{len(cuda_cases)} CUDA cases left out (no GPU seen by the workers)")
            cases = [c for c in cases if c.device != "cuda"]
            limit_cases = _limits.needed(cases)
        report.header()
        for case in limit_cases + cases:
            print(f"  ... {case.name}", file=sys.stderr, flush=True)
            ws = [w for w in workers if w.index == 0] if case.group == _limits.GROUP else \
                [w for w in workers if w.label not in limits_only]
            report.add(case, run_case(case, ws, args, log=report.note))
        report.limits_done()
    finally:
        for w in workers:
            w.close()
    if not args.no_memory:
        for case in (c for c in cases if c.memory):
            print(f"  ... memory: {case.name}", file=sys.stderr, flush=True)
            report.add_memory(case, measure_memory(
                case, [s for s in specs if s[0] not in limits_only], args, log=report.note))
    report.finish(os.getloadavg(), time.perf_counter() - t0)
    return 0
