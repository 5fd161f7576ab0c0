"""Do Numba's OpenMP workers spin or sleep? A parallel reduction beside a busy core.

Each configuration runs in a fresh process that times nbtorch's parallel `sum` of
10^6 float32 (in cache: tens of microseconds) `--calls` times with `--gap-us` of
Python work between calls, while another process keeps one of the cores busy
(`--no-busy` to leave it out). Spinning idle workers steal the core the caller or
the neighbour needs; the mean and the 90th percentile show it, the median hides it.

- `nbtorch default`: nbtorch's own setting (Numba's OpenMP runtime passive, the
  environment untouched; nbtorch/_threads.py);
- `spinning`: NBTORCH_OMP_WAIT_POLICY= (GNU OpenMP's default: spin, then sleep);
- `OMP_WAIT_POLICY=PASSIVE`: the process-wide variable (what nbtorch used to set).

    python benchmarks/omp_wait.py [--calls 400] [--repeats 3]
"""
import argparse
import json
import os
import subprocess
import sys
import time

_CHILD = r"""
import json, os, sys, time
import nbtorch
x = nbtorch.ones(10 ** 6)
x.sum(); x.sum()
calls, gap = int(sys.argv[1]), float(sys.argv[2]) * 1e-6
ts = []
for _ in range(calls):
    t = time.perf_counter(); x.sum(); ts.append(time.perf_counter() - t)
    end = time.perf_counter() + gap
    while time.perf_counter() < end:
        pass
ts.sort()
print(json.dumps({"median": ts[len(ts) // 2], "mean": sum(ts) / len(ts),
                  "p90": ts[int(0.9 * len(ts))], "env": os.environ.get("OMP_WAIT_POLICY")}))
"""

CONFIGS = [("nbtorch default", {}), ("spinning", {"NBTORCH_OMP_WAIT_POLICY": ""}),
           ("OMP_WAIT_POLICY=PASSIVE", {"OMP_WAIT_POLICY": "PASSIVE"})]


def _run(extra, calls, gap_us):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "NBTORCH_OMP_WAIT_POLICY")}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", _CHILD, str(calls), str(gap_us)], env=env,
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"child failed ({out.returncode}):\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.splitlines()[-1])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=400)
    p.add_argument("--gap-us", type=float, default=50.0)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--no-busy", action="store_true")
    args = p.parse_args()
    spin = "import time\nend = time.time() + 3600\nwhile time.time() < end: pass"
    busy = None if args.no_busy else subprocess.Popen([sys.executable, "-c", spin])
    try:
        time.sleep(0.5)
        print(f"load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} CPUs; busy neighbour: "
              f"{busy is not None}; {args.calls} sums of 1e6 float32, {args.gap_us:g} us apart")
        print(f"{'configuration':26s}{'median us':>10s}{'mean us':>10s}{'p90 us':>10s}"
              f"  OMP_WAIT_POLICY seen in the process")
        for _ in range(args.repeats):
            for name, extra in CONFIGS:
                r = _run(extra, args.calls, args.gap_us)
                print(f"{name:26s}{r['median'] * 1e6:10.0f}{r['mean'] * 1e6:10.0f}"
                      f"{r['p90'] * 1e6:10.0f}  {r['env']}", flush=True)
    finally:
        if busy is not None:
            busy.kill()
            busy.wait()


if __name__ == "__main__":
    main()
