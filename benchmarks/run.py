"""Run the benchmark suite: every case module through the driver (see _driver.py).

    python benchmarks/run.py                            # all (make bench)
    python benchmarks/run.py --only matmul --rounds 5   # a subset
    python benchmarks/run.py --list                     # what there is
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import _driver  # noqa: E402

# Case modules, in the order their tables are printed. New modules go here.
MODULES = ["bench_ops", "bench_small_ops", "bench_reduce", "bench_matmul", "bench_conv",
           "bench_training",
           "bench_jit", "bench_fft", "bench_quant", "bench_cuda"]

if __name__ == "__main__":
    raise SystemExit(_driver.main(MODULES))
