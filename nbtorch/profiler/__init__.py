"""nbtorch.profiler: what each op costs — kernel time, Python overhead, bytes, compilation.

``with nbtorch.profiler.profile() as prof:`` records every op call (op name,
device, input shapes, dtype, kernel wall time, Python overhead, bytes moved,
Numba compile time), every kernel and every backward node;
``prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)`` prints a
table like PyTorch's, and ``prof.export_chrome_trace("trace.json")`` writes a
trace for chrome://tracing or https://ui.perfetto.dev. Nothing is hooked
while no profile is running.
"""
from .profiler import profile, record_function, ProfilerActivity
from ._events import Event, EventList, Average

__all__ = ["profile", "record_function", "ProfilerActivity", "Event", "EventList", "Average"]
