"""Profiler records: one `Event` per op, kernel, backward node or user range; averages; table.

Times are in microseconds, as in PyTorch's profiler. For each event:

- `cpu_time_total`: wall time from entering to leaving it;
- `self_cpu_time_total`: that minus the time of the events nested in it;
- `kernel_time`: time spent inside registry kernels nested in it (for a kernel
  event: its own time);
- `overhead`: ``cpu_time_total - kernel_time``, the Python around the kernels
  (argument checks, dtype rules, allocation, autograd recording);
- `bytes`: bytes of the arrays the kernels read and wrote (inputs + outputs);
- `compile_time`: time Numba held its compiler lock during the call
  (compiling a new specialisation, or loading one from the on-disk cache).
"""
import json

__all__ = ["Event", "EventList", "Average"]


class Event:
    """One recorded call: kind is 'op', 'kernel', 'backward' or 'user'."""

    __slots__ = ("name", "kind", "device", "input_shapes", "dtype", "start", "end",
                 "children", "bytes", "compile_time", "tid", "depth")

    def __init__(self, name, kind, device, input_shapes, dtype, start, tid, depth):
        self.name, self.kind, self.device = name, kind, device
        self.input_shapes, self.dtype = input_shapes, dtype
        self.start, self.end = start, start
        self.children = []
        self.bytes = 0
        self.compile_time = 0.0          # microseconds
        self.tid, self.depth = tid, depth

    @property
    def cpu_time_total(self):
        return (self.end - self.start) / 1e3

    @property
    def self_cpu_time_total(self):
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.children)

    @property
    def kernel_time(self):
        if self.kind == "kernel":
            return self.cpu_time_total
        return sum(c.kernel_time for c in self.children)

    @property
    def overhead(self):
        return self.cpu_time_total - self.kernel_time

    @property
    def total_bytes(self):
        return self.bytes + sum(c.total_bytes for c in self.children)

    @property
    def total_compile_time(self):
        return self.compile_time + sum(c.total_compile_time for c in self.children)

    def __repr__(self):
        return (f"<{self.kind} {self.name} on {self.device} {self.input_shapes} "
                f"{self.cpu_time_total:.1f} us>")


class Average:
    """Totals over every event with the same key (PyTorch's FunctionEventAvg)."""

    def __init__(self, key, kind, input_shapes=None):
        self.key, self.kind, self.input_shapes = key, kind, input_shapes
        self.count = 0
        self.cpu_time_total = self.self_cpu_time_total = self.kernel_time = 0.0
        self.bytes = 0
        self.compile_time = 0.0
        self.devices = set()

    def add(self, ev):
        self.count += 1
        self.cpu_time_total += ev.cpu_time_total
        self.self_cpu_time_total += ev.self_cpu_time_total
        self.kernel_time += ev.kernel_time
        self.bytes += ev.total_bytes
        self.compile_time += ev.total_compile_time
        self.devices.add(ev.device)

    @property
    def cpu_time(self):
        return self.cpu_time_total / max(self.count, 1)

    @property
    def overhead(self):
        return self.cpu_time_total - self.kernel_time

    def __repr__(self):
        return (f"<{self.key} x{self.count}: total {self.cpu_time_total:.1f} us, "
                f"kernel {self.kernel_time:.1f} us>")


_SORT_KEYS = ("cpu_time_total", "self_cpu_time_total", "cpu_time", "kernel_time",
              "overhead", "count", "bytes", "compile_time")


class EventList(list):
    """A list of `Event` or `Average` with `table()` and `key_averages()`."""

    def key_averages(self, group_by_input_shape=False):
        groups = {}
        for ev in self:
            shapes = str(ev.input_shapes) if group_by_input_shape else None
            k = (ev.name, ev.kind, shapes)
            avg = groups.get(k)
            if avg is None:
                avg = groups[k] = Average(ev.name, ev.kind, shapes)
            avg.add(ev)
        return EventList(groups.values())

    def total(self, attr="cpu_time_total"):
        return sum(getattr(e, attr) for e in self)

    def table(self, sort_by="cpu_time_total", row_limit=100, max_name_column_width=40):
        """A PyTorch-like text table of averages, sorted by `sort_by` (descending)."""
        rows = self if all(isinstance(e, Average) for e in self) else self.key_averages()
        key = sort_by.replace("cuda_time_total", "kernel_time").replace(
            "device_time_total", "kernel_time")
        if key not in _SORT_KEYS:
            raise ValueError(f"unknown sort_by '{sort_by}' (one of: {', '.join(_SORT_KEYS)})")
        rows = sorted(rows, key=lambda a: getattr(a, key), reverse=True)
        shown = rows[:row_limit] if row_limit is not None and row_limit >= 0 else rows
        # percentages are of the top-level time: ops and user ranges, not their nested kernels
        total_self = sum(a.self_cpu_time_total for a in rows) or 1.0
        w = max([len("Name")] + [min(len(_label(a)), max_name_column_width) for a in shown])
        shapes = any(a.input_shapes for a in shown)
        head = (f"{'Name':<{w}}  {'Kind':<8} {'Self CPU %':>10} {'Self CPU':>10} "
                f"{'CPU total':>10} {'CPU avg':>10} {'Kernel':>10} {'Overhead':>10} "
                f"{'Bytes':>9} {'Compile':>10} {'# Calls':>8}" +
                ("  Input Shapes" if shapes else ""))
        sep = "-" * len(head)
        lines = [sep, head, sep]
        for a in shown:
            lines.append(
                f"{_label(a)[:w]:<{w}}  {a.kind:<8} "
                f"{100 * a.self_cpu_time_total / total_self:>9.2f}% "
                f"{_us(a.self_cpu_time_total):>10} {_us(a.cpu_time_total):>10} "
                f"{_us(a.cpu_time):>10} {_us(a.kernel_time):>10} {_us(a.overhead):>10} "
                f"{_bytes(a.bytes):>9} {_us(a.compile_time) if a.compile_time else '-':>10} "
                f"{a.count:>8}" + (f"  {a.input_shapes}" if shapes else ""))
        lines.append(sep)
        lines.append(f"Self CPU time total: {_us(total_self)}")
        return "\n".join(lines)

    def export_chrome_trace(self, path, t0=0):
        """Write these events as Chrome trace JSON (open in chrome://tracing or Perfetto)."""
        events = []
        for ev in self:
            if isinstance(ev, Event):
                events.append(chrome_event(ev, t0))
        with open(path, "w") as f:
            json.dump({"traceEvents": events, "displayTimeUnit": "ms"}, f)


def chrome_event(ev, t0):
    """One complete ('X') Chrome trace event; ts and dur in microseconds."""
    args = {"device": ev.device, "input_shapes": ev.input_shapes, "dtype": ev.dtype,
            "kernel_us": round(ev.kernel_time, 3), "overhead_us": round(ev.overhead, 3),
            "bytes": ev.total_bytes}
    if ev.total_compile_time:
        args["compile_us"] = round(ev.total_compile_time, 3)
    return {"name": ev.name, "cat": ev.kind, "ph": "X", "ts": (ev.start - t0) / 1e3,
            "dur": (ev.end - ev.start) / 1e3, "pid": 0, "tid": ev.tid, "args": args}


def _label(a):
    return a.key


def _us(v):
    if v >= 1e6:
        return f"{v / 1e6:.3f}s"
    if v >= 1e3:
        return f"{v / 1e3:.3f}ms"
    return f"{v:.3f}us"


def _bytes(n):
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024
