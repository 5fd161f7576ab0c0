"""Prometheus text metrics: request counts by model and status, latency and batch-size
histograms, errors by kind. Thread-safe; rendered by ``GET /metrics``."""
import threading

__all__ = ["Metrics"]

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)


class _Histogram:
    def __init__(self, buckets):
        self.buckets = buckets
        self.counts = [0] * len(buckets)
        self.sum = 0.0
        self.count = 0

    def observe(self, v):
        for i, b in enumerate(self.buckets):
            if v <= b:
                self.counts[i] += 1
        self.sum += v
        self.count += 1


class Metrics:
    """Counters and histograms keyed by model; `render()` gives Prometheus text format."""

    def __init__(self):
        self.lock = threading.Lock()
        self.requests = {}           # (model, code) -> count
        self.errors = {}             # (model, kind) -> count
        self.latency = {}            # model -> _Histogram
        self.batches = {}            # model -> _Histogram

    def request(self, model, code, seconds):
        with self.lock:
            key = (model, str(code))
            self.requests[key] = self.requests.get(key, 0) + 1
            self.latency.setdefault(model, _Histogram(_LATENCY_BUCKETS)).observe(seconds)

    def error(self, model, kind):
        with self.lock:
            self.errors[(model, kind)] = self.errors.get((model, kind), 0) + 1

    def batch(self, model, size):
        with self.lock:
            self.batches.setdefault(model, _Histogram(_BATCH_BUCKETS)).observe(size)

    def render(self):
        lines = []
        with self.lock:
            lines += ["# HELP nbtorch_requests_total Prediction requests by model and status.",
                      "# TYPE nbtorch_requests_total counter"]
            for (m, c), n in sorted(self.requests.items()):
                lines.append(f'nbtorch_requests_total{{model="{m}",code="{c}"}} {n}')
            lines += ["# HELP nbtorch_errors_total Failed requests by model and kind.",
                      "# TYPE nbtorch_errors_total counter"]
            for (m, k), n in sorted(self.errors.items()):
                lines.append(f'nbtorch_errors_total{{model="{m}",kind="{k}"}} {n}')
            for metric, table, help_ in (
                    ("nbtorch_request_latency_seconds", self.latency,
                     "Prediction request latency."),
                    ("nbtorch_batch_size", self.batches, "Rows per model execution.")):
                lines += [f"# HELP {metric} {help_}", f"# TYPE {metric} histogram"]
                for m, h in sorted(table.items()):
                    for b, c in zip(h.buckets, h.counts):
                        lines.append(f'{metric}_bucket{{model="{m}",le="{b}"}} {c}')
                    lines.append(f'{metric}_bucket{{model="{m}",le="+Inf"}} {h.count}')
                    lines.append(f'{metric}_sum{{model="{m}"}} {h.sum:.6f}')
                    lines.append(f'{metric}_count{{model="{m}"}} {h.count}')
        return "\n".join(lines) + "\n"
