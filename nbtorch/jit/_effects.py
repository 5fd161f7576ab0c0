"""Python side effects in code nbtorch.compile traces, which a graph cannot replay.

A compiled graph runs the tensor ops only: what the code did besides - printing, logging,
drawing Python random numbers or reading the clock, appending to a list or counting in a
dict that outlives the call - happened once, at the capture, and never again (a log of
activations kept the first call's, ``random.random()`` was frozen into the graph). PyTorch
breaks its graph there and runs such code every call; nbtorch runs the function eagerly,
with the reason. `SideEffects` is what the trace's profile hook (`_guards.user_calls`) feeds:

- calls: ``print``, ``random``'s and NumPy's random draws, ``time.time()``-like clocks,
  ``logging`` records, made from the user's code, stop the trace before they run (so the
  eager call after it does them once);
- containers: the lists, dicts, sets and deques the user's code can reach from outside
  (the globals and closure variables of its functions, one attribute level into plain
  objects, the user's modules' attributes), and the tensors among those (written in place:
  ``G.add_(1)`` ran once, outside the graph), are copied when first seen and compared after
  the trace; a change is put back and stops the capture.
"""
import builtins
import collections
import time

__all__ = ["SideEffects", "SideEffect", "plain_object"]


class SideEffect(RuntimeError):
    """The traced code did something a graph cannot replay."""


_CONTAINERS = (list, dict, set, collections.deque)
_CLOCKS = frozenset(id(f) for f in (time.time, time.time_ns, time.perf_counter,
                                    time.perf_counter_ns, time.monotonic, time.monotonic_ns,
                                    time.process_time))


def _random_source(fn):
    """The name of the random stream a builtin method `fn` draws from, or None."""
    owner = getattr(fn, "__self__", None)
    if owner is None:
        return None
    import random
    if isinstance(owner, random.Random):
        return f"random.{fn.__name__}()"
    mod = type(owner).__module__ or ""
    if mod.startswith("numpy.random"):
        return f"numpy.random {type(owner).__name__}.{fn.__name__}()"
    return None


def _copy(v):
    return list(v) if isinstance(v, (list, collections.deque)) else (
        set(v) if isinstance(v, set) else dict(v))


def _same(a, b):
    return a is b or (isinstance(a, (bool, int, float, str)) and a == b)


class SideEffects:
    """What the user's code might change outside the traced call (see the module docstring)."""

    def __init__(self):
        self.saved = {}             # id -> (container, shallow copy, name)
        self.bound = {}             # (id(globals), name) -> (globals, name, value)
        self.tensors = {}           # id -> (tensor, storage version, copy, name)
        import numpy as np
        self.np_state = np.random.get_state()  # its draws are Cython calls no hook sees

    # ---- what to watch ------------------------------------------------------------------
    def watch(self, name, value, depth=1):
        from .._tensor import Tensor
        if isinstance(value, Tensor):   # a global's tensor updated in place (G.add_(1))
            if id(value) not in self.tensors and value.device.type == "cpu":
                # (NumPy's copy: nbtorch ops here would run under the trace's patches)
                self.tensors[id(value)] = (value, value._storage.version,
                                           value._array.copy(), name)
            return
        if isinstance(value, _CONTAINERS):
            if id(value) not in self.saved and len(value) <= 10_000:
                self.saved[id(value)] = (value, _copy(value), name)
            return
        if depth and plain_object(value):
            d = vars(value)
            if isinstance(d, dict) and id(d) not in self.saved and len(d) <= 256:
                # its attributes themselves (self.step += 1 in a compiled method)
                self.saved[id(d)] = (d, dict(d), f"{name}'s attributes")
            for k, v in list(d.items())[:64]:
                self.watch(f"{name}.{k}", v, 0)

    def enter(self, frame):
        """A user's function starts: watch the containers its globals and free variables
        name."""
        from .._tensor import Tensor
        code, g = frame.f_code, frame.f_globals
        for name in code.co_names:
            v = g.get(name)
            if v is not None:
                self.watch(name, v)
            if isinstance(v, (bool, int, float, str, Tensor)):     # `global step; step += 1`
                self.bound.setdefault((id(g), name), (g, name, v))
        if code.co_freevars:
            local = frame.f_locals
            for name in code.co_freevars:
                v = local.get(name)
                if v is not None:
                    self.watch(name, v)

    def arguments(self, value, name="an argument"):
        """Watch the lists and dicts inside the arguments the traced code gets (rebuilt for
        the trace: appending to one, ``cache.append(y)``, was lost), and the plain objects
        (a method's ``self``)."""
        if isinstance(value, (list, dict)) or plain_object(value):
            self.watch(name, value, 0 if isinstance(value, (list, dict)) else 1)
        if isinstance(value, (list, tuple)):
            for v in value:
                self.arguments(v, name)
        elif isinstance(value, dict):
            for v in value.values():
                self.arguments(v, name)

    def modules(self, modules):
        """Watch the container attributes of the user's own module classes
        (``self.log = []``)."""
        for m in modules:
            if type(m).__module__.startswith("nbtorch."):
                continue
            for k, v in vars(m).items():
                if not k.startswith("_"):       # containers, unregistered tensors
                    self.watch(f"{type(m).__name__}.{k}", v, 0)

    # ---- calls ------------------------------------------------------------------------
    def c_call(self, fn, frame=None):
        """A builtin `fn` called from the user's code (`frame`): stop before an impure one
        runs."""
        what = None
        if fn is builtins.print:
            what = "print()"
        elif id(fn) in _CLOCKS:
            what = f"time.{fn.__name__}()"
        else:
            what = _random_source(fn)
        if what is not None:
            where = "" if frame is None else \
                f" at {frame.f_code.co_filename}:{frame.f_lineno}"
            raise SideEffect(f"the code calls {what}{where}, which a graph would not run "
                             "again (Python side effects and values run eagerly every call)")

    def call(self, code, frame=None):
        """A Python function starts (`frame`): logging's record maker stops the trace."""
        if code.co_name == "_log" and code.co_filename.endswith(("logging/__init__.py",
                                                                 "logging\\__init__.py")):
            caller = frame
            while caller is not None and caller.f_code.co_filename == code.co_filename:
                caller = caller.f_back          # out of logging, to the user's call
            where = "" if caller is None else \
                f" at {caller.f_code.co_filename}:{caller.f_lineno}"
            raise SideEffect(f"the code logs a message (logging){where}, which a graph would "
                             "not do again (Python side effects run eagerly every call)")

    # ---- after the trace ----------------------------------------------------------------
    def changed(self):
        """The name of a watched container the trace changed (all are put back), or None."""
        import numpy as np
        found = None
        now = np.random.get_state()
        if now[2] != self.np_state[2] or not np.array_equal(now[1], self.np_state[1]):
            found = "numpy.random's state (a draw)"
            np.random.set_state(self.np_state)
        for t, version, saved, name in self.tensors.values():
            if t._storage.version != version:
                found = found or f"{name} (a tensor, in place)"
                t._array[...] = saved
                t._storage.version = version
        for g, name, v in self.bound.values():
            if g.get(name) is not v:
                found = found or f"the global {name}"
                g[name] = v
        for value, saved, name in self.saved.values():
            if isinstance(value, dict):
                same = value.keys() == saved.keys() and all(
                    _same(value[k], saved[k]) for k in saved)
            elif isinstance(value, set):
                same = value == saved
            else:
                same = len(value) == len(saved) and all(map(_same, value, saved))
            if not same:
                found = found or f"{name} (a {type(value).__name__})"
                value.clear()
                if isinstance(value, dict):
                    value.update(saved)
                elif isinstance(value, set):
                    value.update(saved)
                else:
                    value.extend(saved)
        return found


def plain_object(v):
    """An instance of a user's class (its attributes may hold containers): not a module,
    class, function or nbtorch object."""
    import types
    from .._tensor import Tensor
    from ..nn import Module
    if isinstance(v, (Tensor, Module, type, types.ModuleType, types.FunctionType,
                      types.MethodType, types.BuiltinFunctionType, dict, list, tuple, set)) \
            or callable(v):
        return False
    mod = type(v).__module__ or ""
    return hasattr(v, "__dict__") and not mod.startswith(("nbtorch", "numpy", "builtins"))
