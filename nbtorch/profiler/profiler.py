"""`profile()`: record every op, kernel and backward node while the block runs.

Zero cost when off: nothing in the op path checks for a profiler. Entering
``profile()`` installs hooks, leaving removes them:

- every kernel in the device registry is swapped, in place, for a timing
  wrapper (`_registry._KERNELS` values; kernels registered while profiling
  are wrapped at the next op), so each kernel call is one 'kernel' event with
  its array shapes, dtype and bytes;
- ``autograd.Function.apply`` is wrapped, so each op call (built-in or
  custom) is one 'op' event: its kernels nest inside it, and its overhead is
  its time minus theirs;
- ``BackwardNode.apply`` is wrapped: each backward formula is a 'backward'
  event (``AddBackward0``...), with the ops it runs nested inside;
- a Numba event listener on the compiler lock charges compile time (and
  loads from the on-disk cache) to the innermost open event.

CUDA kernels are launched asynchronously; with ``sync_cuda=True`` (default)
the profiler synchronizes after each CUDA kernel so its wall time is its run time.
"""
import threading
import time

from .. import _registry
from ..autograd import function as _function
from ._events import Event, EventList

__all__ = ["profile", "record_function", "ProfilerActivity"]

_clock = time.perf_counter_ns
_ACTIVE = [None]                 # the running profile, if any


class ProfilerActivity:
    """Accepted for PyTorch compatibility: CPU and CUDA are always both recorded."""

    CPU = "cpu"
    CUDA = "cuda"


class profile:
    """Context manager recording op calls; see the module docstring.

    Example:
        >>> with nbtorch.profiler.profile() as prof:
        ...     loss = model(x).sum(); loss.backward()
        >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=10))
        >>> prof.export_chrome_trace("trace.json")
    """

    def __init__(self, activities=None, record_shapes=True, profile_memory=False,
                 with_stack=False, sync_cuda=True, enabled=True):
        self.record_shapes = record_shapes
        self.sync_cuda = sync_cuda
        self.enabled = enabled
        self.function_events = EventList()     # every event, in start order
        self.roots = EventList()               # top-level events
        self._local = threading.local()
        self._t0 = 0

    # -- lifecycle --
    def __enter__(self):
        if not self.enabled:
            return self
        if _ACTIVE[0] is not None:
            raise RuntimeError("a profiler is already running (profiles cannot nest)")
        _ACTIVE[0] = self
        self._t0 = _clock()
        _install(self)
        return self

    def __exit__(self, *exc):
        if self.enabled and _ACTIVE[0] is self:
            _uninstall(self)
            _ACTIVE[0] = None
        return False

    # -- recording --
    def _stack(self):
        s = getattr(self._local, "stack", None)
        if s is None:
            s = self._local.stack = []
        return s

    def begin(self, name, kind, device, shapes, dtype):
        stack = self._stack()
        ev = Event(name, kind, device, shapes if self.record_shapes else None, dtype,
                   _clock(), threading.get_ident(), len(stack))
        (stack[-1].children if stack else self.roots).append(ev)
        self.function_events.append(ev)
        stack.append(ev)
        return ev

    def end(self, ev):
        ev.end = _clock()
        stack = self._stack()
        if stack and stack[-1] is ev:
            stack.pop()

    def add_compile_time(self, us):
        stack = self._stack()
        if stack:
            stack[-1].compile_time += us

    # -- results --
    def events(self):
        return self.function_events

    def key_averages(self, group_by_input_shape=False):
        """Averages per event name (and input shapes), as a table-able EventList."""
        return self.function_events.key_averages(group_by_input_shape)

    def export_chrome_trace(self, path):
        """Write the run as Chrome trace JSON (chrome://tracing, ui.perfetto.dev)."""
        self.function_events.export_chrome_trace(path, self._t0)

    def table(self, **kwargs):
        return self.key_averages().table(**kwargs)

    def __repr__(self):
        return f"<profile: {len(self.function_events)} events>"


class record_function:
    """Mark a named range of user code; it shows as a 'user' event around what it runs.

    Example:
        >>> with nbtorch.profiler.record_function("forward"):
        ...     y = model(x)
    """

    def __init__(self, name):
        self.name = name
        self._ev = None

    def __enter__(self):
        prof = _ACTIVE[0]
        if prof is not None:
            self._ev = prof.begin(self.name, "user", "cpu", None, None)
        return self

    def __exit__(self, *exc):
        prof = _ACTIVE[0]
        if prof is not None and self._ev is not None:
            prof.end(self._ev)
        return False


# ---- hooks ---------------------------------------------------------------------------

def _describe(args):
    """(device, shapes, dtype) of the tensors or arrays among `args`."""
    shapes, dtype, device = [], None, "cpu"
    for a in args:
        shape = getattr(a, "shape", None)
        if shape is None or isinstance(a, type):
            if isinstance(a, (int, float, bool)):
                shapes.append([])
            continue
        shapes.append(list(shape))
        if dtype is None:
            d = getattr(a, "dtype", None)
            dtype = getattr(d, "name", str(d))
            dev = getattr(a, "device", None)
            device = getattr(dev, "type", None) or ("cpu" if type(a).__module__ == "numpy"
                                                    else "cuda")
    return device, shapes, dtype


def _nbytes(args):
    n = 0
    for a in args:
        b = getattr(a, "nbytes", None)
        if isinstance(b, int):
            n += b
    return n


def _timed_kernel(op, device, fn):
    def timed(*args, **kwargs):
        prof = _ACTIVE[0]
        if prof is None:
            return fn(*args, **kwargs)
        _, shapes, dtype = _describe(args)
        ev = prof.begin(op, "kernel", device, shapes, dtype)
        ev.bytes = _nbytes(args)
        try:
            result = fn(*args, **kwargs)
            if device == "cuda" and prof.sync_cuda:
                _cuda_sync()
            return result
        finally:
            prof.end(ev)
    timed.__nbtorch_profiled__ = fn
    timed.__wrapped__ = fn
    for attr in ("__name__", "__qualname__", "__doc__"):
        setattr(timed, attr, getattr(fn, attr, None) or "kernel")
    return timed


def _cuda_sync():
    from numba import cuda
    cuda.synchronize()


def unwrap(fn):
    """The kernel behind a profiler wrapper (or `fn` itself)."""
    return getattr(fn, "__nbtorch_profiled__", fn)


def _wrap_registry(prof):
    for device in list(_registry._LOADED):   # built-in kernels resolve lazily: all of them
        _registry.resolve_all(device)         # now, so a kernel's first call is timed too
    table = _registry._KERNELS
    for key, fn in list(table.items()):
        if not hasattr(fn, "__nbtorch_profiled__"):
            table[key] = _timed_kernel(key[0], key[1], fn)
    prof._n_kernels = len(table)


def rewrap():
    """Time kernels registered while a profile runs (called by `nbtorch.library`)."""
    prof = _ACTIVE[0]
    if prof is not None:
        _wrap_registry(prof)


def _unwrap_registry():
    table = _registry._KERNELS
    for key, fn in list(table.items()):
        table[key] = unwrap(fn)
    for stack in _registry._DEFAULTS.values():
        stack[:] = [unwrap(f) for f in stack]


def _profiled_apply(orig):
    def apply(cls, *args, **kwargs):
        prof = _ACTIVE[0]
        if prof is None:
            return orig(cls, *args, **kwargs)
        if len(_registry._KERNELS) != prof._n_kernels:   # kernels registered meanwhile
            _wrap_registry(prof)
        device, shapes, dtype = _describe(args)
        ev = prof.begin(cls.__name__, "op", device, shapes, dtype)
        try:
            return orig(cls, *args, **kwargs)
        finally:
            prof.end(ev)
    return classmethod(apply)


def _profiled_node_apply(orig):
    def apply(self, *grads):
        prof = _ACTIVE[0]
        if prof is None:
            return orig(self, *grads)
        device, shapes, dtype = _describe(grads)
        ev = prof.begin(self.name(), "backward", device, shapes, dtype)
        try:
            return orig(self, *grads)
        finally:
            prof.end(ev)
    return apply


class _CompileClock:
    """Time the outermost hold of Numba's compiler lock, per thread, into the profile."""

    def __init__(self, prof):
        self.prof = prof
        self.local = threading.local()

    def on_start(self, event):
        depth = getattr(self.local, "depth", 0)
        if depth == 0:
            self.local.t = _clock()
        self.local.depth = depth + 1

    def on_end(self, event):
        depth = getattr(self.local, "depth", 0)
        if depth > 0:
            self.local.depth = depth - 1
            if depth == 1:
                self.prof.add_compile_time((_clock() - self.local.t) / 1e3)


def _listener(mod, clock):
    """A listener of event module `mod` (numba's or numba-cuda's) forwarding to `clock`."""
    cls = type("NbtorchCompileListener", (mod.Listener,), {
        "on_start": lambda self, ev: clock.on_start(ev),
        "on_end": lambda self, ev: clock.on_end(ev)})
    return cls()


def _event_modules():
    import sys
    from numba.core import event
    mods = [(event, "numba:compiler_lock")]
    if "numba.cuda" in sys.modules:
        try:
            from numba.cuda.core import event as cuda_event
            mods.append((cuda_event, "numba-cuda:compiler_lock"))
        except ImportError:        # pragma: no cover - older numba-cuda
            pass
    return mods


def _install(prof):
    _wrap_registry(prof)
    prof._saved = (_function.Function.__dict__["apply"],
                   _function.BackwardNode.__dict__["apply"])
    _function.Function.apply = _profiled_apply(prof._saved[0].__func__)
    _function.BackwardNode.apply = _profiled_node_apply(prof._saved[1])
    _function.APPLY_WRAPPERS[0] += 1
    clock = _CompileClock(prof)
    prof._listeners = [(mod, kind, _listener(mod, clock)) for mod, kind in _event_modules()]
    for mod, kind, listener in prof._listeners:
        mod.register(kind, listener)


def _uninstall(prof):
    for mod, kind, listener in prof._listeners:
        mod.unregister(kind, listener)
    _function.Function.apply = prof._saved[0]
    _function.APPLY_WRAPPERS[0] -= 1
    _function.BackwardNode.apply = prof._saved[1]
    _unwrap_registry()
