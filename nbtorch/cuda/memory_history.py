"""Recording what allocated CUDA memory, for PyTorch's memory visualizer
(``torch.cuda.memory._record_memory_history``, ``_snapshot``, ``_dump_snapshot``).

While recording, the caching allocator reports each event (alloc, free, segment
alloc/free, OOM) to a `History`, which keeps them (the last `max_entries`) with
the Python stack that caused them, and the stack of every live block. `_snapshot()`
returns PyTorch's dictionary (segments with frames, one trace list per device);
`_dump_snapshot()` pickles it for https://pytorch.org/memory_viz. Frames are
Python frames only (there are no C++ frames to show). Costs nothing when off.

Example:
    >>> nbtorch.cuda.memory._record_memory_history(max_entries=100000)
    >>> train_a_few_steps()
    >>> nbtorch.cuda.memory._dump_snapshot("snapshot.pickle")
    >>> nbtorch.cuda.memory._record_memory_history(enabled=None)
"""
import collections
import pickle
import sys
import time
import traceback

from . import _runtime

__all__ = ["History", "_record_memory_history", "_snapshot", "_dump_snapshot"]

_ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
            "oom", "snapshot")


class History:
    """The events of one device's allocator and the stacks of its live blocks."""

    def __init__(self, device, trace_events, context, max_entries, skip_actions):
        self.device = device
        self.trace_events = trace_events                 # False for enabled="state"
        self.context = context                           # None / "state" / "alloc" / "all"
        self.events = collections.deque(maxlen=max(int(max_entries), 1))
        self.skip = frozenset(skip_actions or ())
        self.live_frames = {}                            # ptr -> frames of its alloc

    @staticmethod
    def _frames():
        """The caller's Python stack, innermost first, allocator frames left out."""
        stack = traceback.extract_stack()[:-3]
        return [{"filename": f.filename, "line": f.lineno, "name": f.name}
                for f in reversed(stack)]

    def record(self, action, ptr, size, stream):
        """One allocator event ("free" stands for PyTorch's free_requested+free_completed)."""
        frames = None
        if action == "alloc" and self.context is not None:
            frames = self._frames()
            self.live_frames[ptr] = frames
        elif action == "free":
            self.live_frames.pop(ptr, None)
        if not self.trace_events:
            return
        if frames is None and self.context == "all":
            frames = self._frames()
        if frames is None or self.context not in ("alloc", "all"):
            frames = []
        actions = ("free_requested", "free_completed") if action == "free" else (action,)
        for a in actions:
            if a in self.skip:
                continue
            entry = {"action": a, "addr": ptr, "size": size, "stream": stream,
                     "frames": frames, "time_us": int(time.time() * 1e6),
                     "device": self.device}
            if a == "oom":
                entry["device_free"] = 0
            self.events.append(entry)

    def frames_of(self, ptr):
        return self.live_frames.get(ptr, [])


def _allocators():
    _runtime.lazy_init()
    return [_runtime.allocator(i) for i in range(_runtime.device_count())]


def _record_memory_history(enabled="all", context="all", stacks="all",
                           max_entries=sys.maxsize, device=None, clear_history=False,
                           compile_context=False, global_record_annotations=False,
                           skip_actions=None, **legacy):
    """Start (enabled="all": events and live stacks; "state": live stacks only) or stop
    (None) recording on every CUDA device. The legacy form ``(True, ...)`` means "all"."""
    if isinstance(enabled, bool):
        enabled = "all" if enabled else None
    if enabled not in (None, "state", "all"):
        raise RuntimeError(f"expected enabled to be one of None, 'state', 'all', got "
                           f"{enabled!r}")
    if context not in (None, "state", "alloc", "all"):
        raise RuntimeError(f"expected context to be one of None, 'state', 'alloc', 'all', "
                           f"got {context!r}")
    if stacks not in ("python", "all"):
        raise RuntimeError(f"expected stacks to be 'python' or 'all', got {stacks!r}")
    bad = [a for a in (skip_actions or ()) if a not in _ACTIONS]
    if bad:
        raise RuntimeError(f"unknown action(s) in skip_actions: {bad}; expected some of "
                           f"{list(_ACTIONS)}")
    for alloc in _allocators():
        old = alloc.history
        if enabled is None:
            alloc.history = None
            continue
        h = History(alloc.device_index, enabled == "all", context, max_entries, skip_actions)
        if old is not None and not clear_history:
            h.events.extend(old.events)
            h.live_frames.update(old.live_frames)
        alloc.history = h


def _snapshot(device=None, augment_with_fx_traces=False):
    """PyTorch's snapshot: {"segments": [...], "device_traces": [[event, ...] per device],
    "allocator_settings": {}} (segments as `memory_snapshot`, with allocation stacks)."""
    from .memory_tools import memory_snapshot
    traces = []
    for alloc in _allocators():
        h = alloc.history
        if h is not None and h.trace_events and "snapshot" not in h.skip:
            h.events.append({"action": "snapshot", "addr": 0, "size": 0, "stream": 0,
                             "frames": [], "time_us": int(time.time() * 1e6),
                             "device": alloc.device_index})
        traces.append(list(h.events) if h is not None else [])
    return {"segments": memory_snapshot(), "device_traces": traces, "allocator_settings": {}}


def _dump_snapshot(filename="dump_snapshot.pickle", augment_with_fx_traces=False):
    """Pickle `_snapshot()` into `filename` (the file pytorch.org/memory_viz opens)."""
    s = _snapshot()
    with open(filename, "wb") as f:
        pickle.dump(s, f)
