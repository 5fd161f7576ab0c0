"""Timer and Measurement (see the package doc)."""
import statistics
import textwrap
import timeit

__all__ = ["Timer", "Measurement", "Compare"]


def _unit(seconds):
    for scale, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if seconds >= scale:
            return scale, name
    return 1e-9, "ns"


class Measurement:
    """Times of one benchmarked statement: `times` (seconds per run, one entry per block
    of `number_per_run` runs), `mean`, `median`, `iqr`."""

    def __init__(self, number_per_run, raw_times, label=None, sub_label=None,
                 description=None, num_threads=1, stmt=""):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.label, self.sub_label, self.description = label, sub_label, description
        self.num_threads, self.stmt = num_threads, stmt

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self):
        return statistics.fmean(self.times)

    @property
    def median(self):
        return statistics.median(self.times)

    @property
    def iqr(self):
        t = sorted(self.times)
        if len(t) < 2:
            return 0.0
        q = statistics.quantiles(t, n=4, method="inclusive")
        return q[2] - q[0]

    @property
    def title(self):
        parts = [p for p in (self.label, self.sub_label) if p]
        return ": ".join(parts) if parts else self.stmt

    def __repr__(self):
        scale, unit = _unit(self.median)
        n = len(self.raw_times)
        value = (f"  {self.median / scale:.2f} {unit}" if n == 1 else
                 f"  Median: {self.median / scale:.2f} {unit}\n"
                 f"  IQR:    {self.iqr / scale:.2f} {unit}")
        runs = (f"{self.number_per_run} runs" if n == 1 else
                f"{self.number_per_run} runs per measurement")
        lines = [f"<nbtorch.utils.benchmark.Measurement object at {hex(id(self))}>",
                 self.title]
        if self.description:
            lines.append(self.description)
        lines += [value, f"  {n} measurement{'s' if n > 1 else ''}, {runs}, "
                         f"{self.num_threads} thread{'s' if self.num_threads > 1 else ''}"]
        return "\n".join(lines)


class Timer:
    """``Timer(stmt, setup, globals=..., label=..., num_threads=1).timeit(100)``."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=None,
                 globals=None, label=None, sub_label=None, description=None,
                 env=None, num_threads=1, language="python"):
        if language not in ("python", "py"):
            raise ValueError("nbtorch.utils.benchmark.Timer runs Python statements only")
        self.stmt, self.label, self.sub_label = textwrap.dedent(stmt), label, sub_label
        self.description, self.num_threads = description, num_threads
        kwargs = {"timer": timer} if timer is not None else {}
        self._timer = timeit.Timer(self.stmt, textwrap.dedent(global_setup) + "\n" +
                                   textwrap.dedent(setup), globals=dict(globals or {}),
                                   **kwargs)

    def _threads(self):
        import contextlib

        import nbtorch

        @contextlib.contextmanager
        def scope():
            before = nbtorch.get_num_threads()
            nbtorch.set_num_threads(self.num_threads)
            try:
                yield
            finally:
                nbtorch.set_num_threads(before)
        return scope()

    def _measure(self, number, blocks):
        with self._threads():
            self._timer.timeit(1)                   # warm up (first-call compiles)
            raw = [self._timer.timeit(number) for _ in range(blocks)]
        return Measurement(number, raw, self.label, self.sub_label, self.description,
                           self.num_threads, self.stmt)

    def timeit(self, number=1000000):
        """One block of `number` runs."""
        return self._measure(number, 1)

    def repeat(self, repeat=-1, number=-1):
        raise NotImplementedError("Timer.repeat: use timeit or blocked_autorange")

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        """Blocks of runs (each ~0.1 of `min_run_time`) until `min_run_time` passed."""
        with self._threads():
            self._timer.timeit(1)
            number = 1
            while True:                             # a block of at least 1/10 of the time
                t = self._timer.timeit(number)
                if t >= min_run_time / 10 or number >= 10 ** 9:
                    break
                number *= 10
            raw, total = [t], t
            while total < min_run_time:
                t = self._timer.timeit(number)
                if callback is not None:
                    callback(number, t)
                raw.append(t)
                total += t
        return Measurement(number, raw, self.label, self.sub_label, self.description,
                           self.num_threads, self.stmt)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0,
                           callback=None):
        """Blocks until the IQR falls under `threshold` of the median, or time runs out."""
        m = self.blocked_autorange(callback, min_run_time)
        total = sum(m.raw_times)
        while total < max_run_time and (len(m.raw_times) < 3 or m.iqr > threshold * m.median):
            more = self.blocked_autorange(callback, min_run_time)
            m = Measurement(m.number_per_run, m.raw_times + [
                t * m.number_per_run / more.number_per_run for t in more.raw_times],
                m.label, m.sub_label, m.description, m.num_threads, m.stmt)
            total += sum(more.raw_times)
        return m


class Compare:
    """Measurements as a table: rows by sub_label, columns by description (medians)."""

    def __init__(self, results):
        self.results = list(results)

    def __str__(self):
        rows, cols = {}, []
        for m in self.results:
            col = m.description or ""
            if col not in cols:
                cols.append(col)
            rows.setdefault(m.sub_label or m.stmt, {})[col] = m.median
        scale, unit = _unit(min(m.median for m in self.results)) if self.results else (1, "s")
        title = self.results[0].label if self.results and self.results[0].label else ""
        width = max([len(str(r)) for r in rows] + [4])
        lines = [f"[ {title} ]", " " * width + " | " + " | ".join(f"{c:>10}" for c in cols)]
        for r, vals in rows.items():
            cells = [f"{vals[c] / scale:10.1f}" if c in vals else " " * 10 for c in cols]
            lines.append(f"{str(r):<{width}} | " + " | ".join(cells))
        english = {"s": "seconds", "ms": "milliseconds", "us": "microseconds",
                   "ns": "nanoseconds"}[unit]
        lines.append(f"\nTimes are in {english} ({unit}).")
        return "\n".join(lines)

    def print(self):
        print(str(self))
