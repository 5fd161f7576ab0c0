"""torch.utils.throughput_benchmark: how many calls per second a module (or function)
serves when several threads call it at once, on inputs added beforehand. Example::

    bench = ThroughputBenchmark(model)
    bench.add_input(torch.randn(8, 16))
    stats = bench.benchmark(num_calling_threads=2, num_warmup_iters=5, num_iters=100)
    print(stats.latency_avg_ms, stats.iters_per_second)

PyTorch runs the loop in C++ without the GIL; here the threads are Python threads, so
they overlap only where the kernels release the GIL (NumPy's BLAS does, Numba's do not).
"""
import random
import threading
import time

__all__ = ["ThroughputBenchmark", "ExecutionStats", "BenchmarkConfig", "format_time"]


def format_time(time_us=None, time_ms=None, time_s=None):
    """'1.234s', '1.234ms' or '1.234us': exactly one of the three given."""
    if sum([time_us is not None, time_ms is not None, time_s is not None]) != 1:
        raise AssertionError("Expected only one of time_us, time_ms, time_s is given.")
    if time_us is None:
        time_us = time_ms * 1e3 if time_ms is not None else time_s * 1e6
    if time_us >= 1e6:
        return f"{time_us / 1e6:.3f}s"
    if time_us >= 1e3:
        return f"{time_us / 1e3:.3f}ms"
    return f"{time_us:.3f}us"


class BenchmarkConfig:
    """torch._C.BenchmarkConfig's fields."""

    def __init__(self, num_calling_threads=1, num_warmup_iters=10, num_iters=100,
                 profiler_output_path=""):
        self.num_calling_threads = num_calling_threads
        self.num_warmup_iters = num_warmup_iters
        self.num_iters = num_iters
        self.profiler_output_path = profiler_output_path


class _Stats:
    def __init__(self, latency_avg_ms, num_iters):
        self.latency_avg_ms, self.num_iters = latency_avg_ms, num_iters


class ExecutionStats:
    """What `ThroughputBenchmark.benchmark` measured."""

    def __init__(self, c_stats, benchmark_config):
        self._c_stats = c_stats
        self.benchmark_config = benchmark_config

    @property
    def latency_avg_ms(self):
        return self._c_stats.latency_avg_ms

    @property
    def num_iters(self):
        return self._c_stats.num_iters

    @property
    def iters_per_second(self):
        """Iterations per second across all calling threads."""
        return self.num_iters / self.total_time_seconds

    @property
    def total_time_seconds(self):
        return (self.num_iters * (self.latency_avg_ms / 1000.0)
                / self.benchmark_config.num_calling_threads)

    def __str__(self):
        return "\n".join([
            "Average latency per example: " + format_time(time_ms=self.latency_avg_ms),
            f"Total number of iterations: {self.num_iters}",
            "Total number of iterations per second (across all threads): "
            f"{self.iters_per_second:.2f}",
            "Total time: " + format_time(time_s=self.total_time_seconds)])


class ThroughputBenchmark:
    """Benchmarks `module` (an nn.Module or any callable) under concurrent calls.

    Inputs come from `add_input`; every call picks one at random. Calls run under
    ``no_grad``, as PyTorch's (inference serving).
    """

    def __init__(self, module):
        self._module = module
        self._inputs = []

    def run_once(self, *args, **kwargs):
        """Call the module once on these arguments and return its result."""
        from ..autograd.grad_mode import no_grad
        with no_grad():
            return self._module(*args, **kwargs)

    def add_input(self, *args, **kwargs):
        """Keep one input (arguments of a call) for the benchmark."""
        self._inputs.append((args, kwargs))

    def benchmark(self, num_calling_threads=1, num_warmup_iters=10, num_iters=100,
                  profiler_output_path=""):
        """Run `num_warmup_iters` calls per thread, then `num_iters` calls shared by
        `num_calling_threads` threads; returns `ExecutionStats` (average latency of one
        call, iterations run)."""
        if not self._inputs:
            raise RuntimeError("ThroughputBenchmark: no inputs were added (add_input)")
        config = BenchmarkConfig(num_calling_threads, num_warmup_iters, num_iters,
                                 profiler_output_path)
        lock = threading.Lock()
        left = [num_iters]
        latencies = []
        start = threading.Barrier(num_calling_threads)

        def worker(seed):
            rng = random.Random(seed)
            for _ in range(num_warmup_iters):
                args, kwargs = rng.choice(self._inputs)
                self.run_once(*args, **kwargs)
            start.wait()
            mine = []
            while True:
                with lock:
                    if left[0] <= 0:
                        break
                    left[0] -= 1
                args, kwargs = rng.choice(self._inputs)
                t0 = time.perf_counter()
                self.run_once(*args, **kwargs)
                mine.append(time.perf_counter() - t0)
            with lock:
                latencies.extend(mine)

        threads = [threading.Thread(target=worker, args=(i,))
                   for i in range(num_calling_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        avg_ms = 1000.0 * sum(latencies) / max(len(latencies), 1)
        return ExecutionStats(_Stats(avg_ms, len(latencies)), config)
