"""nbtorch.compile's guards: what a compiled graph was specialised to, checked per call.

`value_key` and `aliasing` make the per-call key of the arguments (shapes, strides,
dtypes, devices, requires_grad, Python values, which arguments share memory); `Baked`
holds the Python values the trace read and froze into the graph (module attributes,
globals of the user's functions it ran, closure variables, the module hierarchy, users'
hooks), re-checked cheaply each call (see its docstring); `user_calls` finds the user's
functions a trace runs, `user_hook` a hook that is not nbtorch's own.
"""
import copy
import dataclasses

from .._tensor import Tensor

__all__ = ["value_key", "Unhashable", "aliasing", "describe", "SCALARS", "Baked", "user_calls",
           "user_hook"]


def value_key(v, dynamic):
    """What of argument `v` a graph depends on: a tensor's layout, dtype, device and
    requires_grad (the batch size left out when `dynamic`), a Python value itself."""
    if isinstance(v, Tensor):
        shape = v._shape
        if dynamic and shape:
            shape = (-1,) + tuple(shape[1:])
        return (shape, v._strides if not dynamic else None, v.dtype, v.device,
                v._requires_grad)
    if v is None or isinstance(v, (bool, int, float, str)):
        return (type(v), v)
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(value_key(e, dynamic) for e in v)
    if isinstance(v, dict):
        return ("dict",) + tuple((k, value_key(e, dynamic)) for k, e in v.items())
    if dataclasses.is_dataclass(v) and not isinstance(v, type):     # by its init fields,
        # as flatten() passes it (a dataclass batch of tensors)
        return (type(v),) + tuple((f.name, value_key(getattr(v, f.name), dynamic))
                                  for f in dataclasses.fields(v) if f.init)
    try:
        hash(v)
    except TypeError:
        raise Unhashable(type(v).__name__) from None
    return (type(v), v)


class Unhashable(Exception):
    """An argument that cannot be part of the key (the call runs eagerly)."""


def aliasing(tensors):
    """Which tensor arguments share memory (a graph captured for f(x, x) reads one input
    twice: it must not serve f(x, y)); None when none do (the usual case)."""
    if len(tensors) < 2:
        return None
    ids = [id(t._storage) for t in tensors]
    if len(set(ids)) == len(ids):
        return None
    return tuple(ids.index(i) for i in ids)


def describe(key, old):
    """A short reason why `key` differs from `old` (for recompile messages)."""
    if key[0] != old[0]:
        return f"grad mode changed to {key[0]}"
    if key[1] != old[1]:
        return "autocast changed"
    if key[2] != old[2]:
        return f"the default dtype changed to {key[2]}"
    if key[3] != old[3]:
        return "a module's training flag changed"
    for i, (a, b) in enumerate(zip(key[4], old[4])):
        if a != b:
            return f"argument {i} changed: {_format_key(a)} (was {_format_key(b)})"
    return "the arguments' structure changed"


def _format_key(k):
    if isinstance(k, tuple) and len(k) == 5 and not isinstance(k[0], str):
        shape, strides, dtype, device, rg = k
        return (f"Tensor(shape={list(shape)}, dtype={dtype}, device={device}"
                f"{', requires_grad=True' if rg else ''})")
    return repr(k)


_HOOK_KINDS = (("_forward_pre_hooks", "forward pre-hook"), ("_forward_hooks", "forward hook"),
               ("_backward_hooks", "backward hook"), ("_backward_pre_hooks",
                                                      "backward pre-hook"))


def user_hook(mod):
    """(kind, name) of a module hook not registered by nbtorch itself (weight_norm's and
    the parametrizations' are: tensor ops the trace records), or None; the global hooks
    (``register_module_forward_hook``) count for every module."""
    from ..nn.modules import _global_hooks as g
    d = mod.__dict__
    dicts = [(d.get(attr), kind) for attr, kind in _HOOK_KINDS]
    if g._global_forward_pre_hooks or g._global_forward_hooks:     # every module's
        dicts += [(g._global_forward_pre_hooks, "global forward pre-hook"),
                  (g._global_forward_hooks, "global forward hook")]
    for hooks, kind in dicts:
        for fn in (hooks or {}).values():
            owner = getattr(fn, "__module__", None) or type(fn).__module__ or ""
            if not owner.startswith("nbtorch."):
                return kind, getattr(fn, "__qualname__", None) or type(fn).__name__
    return None


SCALARS = (bool, int, float, complex, str, type(None))    # Python values a graph bakes in
_MISSING = object()
ABSENT = _MISSING       # a module attribute the trace looked for and did not find


class _Absent:
    """A module's attributes read like a dict (`Baked.changed`), parameters, buffers and
    submodules included: one missing at the trace must stay missing."""

    def __init__(self, module):
        self.module = module

    def get(self, name, default):
        m = self.module
        d = m.__dict__
        for store in (d, d.get("_parameters") or (), d.get("_buffers") or (),
                      d.get("_modules") or ()):
            if name in store:
                return store[name]
        return default


def _scalar(v):
    return isinstance(v, SCALARS) or (
        isinstance(v, tuple) and all(isinstance(e, SCALARS) for e in v))


def _plain_container(v):
    """A small list or dict of numbers, flags and strings (its contents guarded per call:
    ``self.scales[0] = 2`` changes no attribute)."""
    if v.__class__ is list and len(v) <= 64:
        return all(isinstance(e, SCALARS) for e in v)
    if v.__class__ is dict and len(v) <= 64:
        return all(isinstance(e, SCALARS) for e in (*v.keys(), *v.values()))
    return False


_MUTATORS = frozenset(("append", "extend", "insert", "pop", "remove", "clear", "update",
                       "setdefault", "popitem", "sort", "reverse", "add", "discard"))


def _mutated_names(codes):
    """Names the code objects (and those nested in them) call a mutating method on
    (``calls.append(1)``, ``self.log.extend(...)``): containers the code writes."""
    import dis
    names, stack = set(), [c for c in codes if c is not None]
    while stack:
        code = stack.pop()
        prev = None
        for ins in dis.get_instructions(code):
            if (prev is not None and ins.opname in ("LOAD_ATTR", "LOAD_METHOD")
                    and ins.argval in _MUTATORS and prev.opname.startswith("LOAD_")):
                names.add(prev.argval)
            prev = ins
        stack.extend(c for c in code.co_consts if hasattr(c, "co_code"))
    return names


def guardable(v):
    """A module attribute value, besides numbers and strings, whose change a graph must see:
    an unregistered tensor, a dtype, an Enum member (by identity), a plain container, a
    function (``self.act = F.relu`` swapped for another)."""
    import enum
    import functools
    import types
    from .._dtype import dtype
    return isinstance(v, (Tensor, dtype, enum.Enum, types.FunctionType,
                          types.BuiltinFunctionType, functools.partial)) or \
        _plain_container(v) or type(v).__name__ == "PatchedFunction"   # (a trace's view)


class _Is:
    """A watched value compared by identity (a function, a module, a model's layer list's
    items): a global or closure variable rebound after a capture ran the old graph."""

    def __init__(self, value):
        self.value = value
        self.items = None
        if value.__class__ in (list, tuple, dict) and len(value) <= 64:
            self.items = list(value.items()) if isinstance(value, dict) else list(value)

    def same(self, now):
        if now is not self.value:
            return False
        if self.items is None:
            return True
        items = list(now.items()) if isinstance(now, dict) else now
        return len(items) == len(self.items) and all(
            (a is b) if not isinstance(a, tuple) else (a[0] == b[0] and a[1] is b[1])
            for a, b in zip(items, self.items))

    def __repr__(self):
        return repr(self.value)


def _watch(v):
    """How `Baked` keeps a global or closure value: itself (numbers, strings, tensors), a
    copy (small containers of scalars), an `_Is` (anything else but modules of code)."""
    import types
    if _scalar(v) or isinstance(v, Tensor):
        return v
    if _plain_container(v):
        return copy.deepcopy(v)
    if isinstance(v, types.ModuleType):
        return None
    return _Is(v)


def _code_owner(fn):
    """The Python function whose code runs first: a module's forward, a method's function."""
    from ..nn import Module
    if isinstance(fn, Module):
        fn = type(fn).forward
    return getattr(fn, "__func__", fn)


class Baked:
    """The Python values a graph was traced with (they are constants in it): the
    number, flag, string (or tuple of those) attributes of modules the trace read, the
    globals of that kind (or tensors, by identity) that the user's functions the trace ran
    name (`user_calls`), the compiled function's closure variables, and which submodules
    the modules hold.
    A change to any of them is a guard failure (a recompile), as torch.compile guards
    them, and so is a user's hook registered on a module after the capture (the graph
    would skip it); module attributes and hooks are looked at only after some module
    attribute was assigned or a hook registered (both counted in ATTR_WRITES), the few
    names at every call."""

    def __init__(self, fn, reads, modules, calls=None, constants=(), arguments=(),
                 object_attrs=()):
        from ..nn.modules._hooks import ATTR_WRITES
        self.writes = ATTR_WRITES
        self.version = ATTR_WRITES[0]
        self.attrs = [(m, k, v) for m, k, v in reads if _scalar(v) or guardable(v)]
        self.modules = list(modules)
        self.children = [tuple(m._modules.values()) for m in self.modules]
        f = _code_owner(fn)
        code = getattr(f, "__code__", None)
        # containers change in place (no attribute write): checked at every call, unless the
        # code itself appends to them (a log of calls: a side effect, not an input)
        self.sinks = _mutated_names([code, *(calls or {})] if code is not None else
                                    list(calls or {}))
        self.names = [(m.__dict__, k, copy.deepcopy(v)) for m, k, v in reads
                      if _plain_container(v) and k not in self.sinks]
        # plain objects' attributes (object_reads): no attribute write is counted for them
        self.names += [(o.__dict__, k, copy.deepcopy(v)) for o, k, v in object_attrs]
        # module attributes looked for and missing (a buffer registered later counts no
        # write): checked at every call
        self.names += [(_Absent(m), k, v) for m, k, v in reads
                       if v is ABSENT and k != "forward"]
        # a class's forward (an instance's set later counts as an attribute write)
        self.attrs += [(m, k, v) for m, k, v in reads if v is ABSENT and k == "forward"]
        seen = set()
        # the tensors the graph holds as constants: their requires_grad, and where the code
        # found them (``P[0]``, ``W["w"]``, ``h.w`` of an object it names or is given)
        self.constants = [(t, t._requires_grad) for t in constants]
        self.holders = []
        owners = [arguments]
        for called, g in (calls or {}).items():     # the user's functions the trace ran
            self._globals(called, g, seen, owners)
        self._holders(owners, constants)
        self.watch = bool(self.names or self.constants)
        if code is None:
            return
        self._globals(code, getattr(f, "__globals__", {}), seen, owners)
        for name, cell in zip(code.co_freevars, getattr(f, "__closure__", None) or ()):
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            owners.append(v)
            if name in self.sinks and not _scalar(v):
                continue
            kept = _watch(v)
            if kept is not None:
                self.names.append((_Cell(cell), name, kept))
        self.holders = []
        self._holders(owners + [getattr(fn, "__self__", None)], constants)
        self.watch = bool(self.names or self.constants)

    def _holders(self, owners, constants):
        """Find the lists, dicts and plain objects among `owners` (one level into argument
        tuples) that hold one of the graph's constant tensors: replacing it there is a
        guard failure (the graph kept the old one)."""
        if not constants:
            return
        from ..nn import Module
        wanted = {id(t) for t in constants}
        stack, seen = list(owners), set()
        while stack:
            o = stack.pop()
            if id(o) in seen or o is None or isinstance(o, (Tensor, Module, type)) or \
                    callable(o) or _scalar(o):
                continue
            seen.add(id(o))
            if isinstance(o, tuple):
                stack.extend(o)
                continue
            where = o if isinstance(o, (list, dict)) else getattr(o, "__dict__", None)
            if not isinstance(where, (list, dict)) or len(where) > 256:
                continue
            for k, v in (where.items() if isinstance(where, dict) else enumerate(where)):
                if id(v) in wanted:
                    self.holders.append((where, k, v))

    def _globals(self, code, g, seen, owners):
        """Watch the numbers, flags, strings, tensors and small lists/dicts of scalars `code`
        names in its globals `g` (`owners`: the values, for `_holders`)."""
        for name in code.co_names:
            if (id(g), name) in seen:
                continue
            seen.add((id(g), name))
            v = g.get(name, _MISSING)
            owners.append(v)
            if v is _MISSING or (name in self.sinks and not _scalar(v)):
                continue        # (a container the code appends to: a side effect)
            kept = _watch(v)
            if kept is not None:
                self.names.append((g, name, kept))

    def changed(self):
        """None, or which value differs from the trace's (a tensor: which object, its
        in-place changes being read by the graph)."""
        for where, name, v in self.names:
            now = where.get(name, _MISSING)
            if now is not v and (v is _MISSING or (v.same(now) is False if v.__class__ is _Is
                                                   else (isinstance(v, Tensor) or now != v))):
                return f"{name} changed to {now!r} (was {v!r})"
        for t, requires_grad in self.constants:
            if t._requires_grad != requires_grad:
                return f"requires_grad of a tensor the graph holds changed to {not requires_grad}"
        for where, k, t in self.holders:
            try:
                now = where[k]
            except (IndexError, KeyError):
                now = _MISSING
            if now is not t:
                return f"the tensor at [{k!r}] of a {type(where).__name__} the code reads was replaced"
        if self.version != self.writes[0]:
            for m, k, v in self.attrs:
                now = m.__dict__.get(k, _MISSING)
                if now is not v and (isinstance(v, Tensor) or now != v):
                    return f"{type(m).__name__}.{k} changed to {now!r} (was {v!r})"
            for m, children in zip(self.modules, self.children):
                if tuple(m._modules.values()) != children:
                    return f"a submodule of {type(m).__name__} was replaced"
                hook = user_hook(m)
                if hook is not None:
                    return f"a {hook[0]} was registered on {type(m).__name__}"
            self.version = self.writes[0]
        return None


def _library_dirs():
    """Where code that is not the user's lives: nbtorch (and its kernels), the standard
    library and installed packages."""
    import os
    import sys
    import sysconfig
    from .. import kernels
    dirs = {os.path.dirname(os.path.dirname(__file__)), os.path.dirname(kernels.__file__),
            sys.prefix, sys.base_prefix, sys.exec_prefix}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(path)
    return tuple(os.path.realpath(d) + os.sep for d in dirs) + ("<",)


_LIBRARY_DIRS = []


def user_calls(calls, effects=None):
    """``with user_calls(calls):`` collects into `calls` (code -> globals) the Python
    functions that run in this thread outside nbtorch and installed libraries: the user's
    helpers a compiled function calls, whose globals `_Baked` guards too (a profile hook
    for the trace's duration; none while a profiler such as cProfile runs). `effects`
    (a `_effects.SideEffects`) is told of their calls, to stop at Python side effects."""
    import contextlib
    import os
    import sys
    from ..fx._patch import RECORDING, patch_globals, patch_isinstance
    if not _LIBRARY_DIRS:
        _LIBRARY_DIRS.append(_library_dirs())
    library = _LIBRARY_DIRS[0]
    real = {}

    def hook(frame, event, arg):
        if event != "call":
            if event == "c_call" and effects is not None and frame.f_code in calls:
                effects.c_call(arg, frame)  # print(), random.random() ... stop the trace
            return
        code = frame.f_code
        if effects is not None and code.co_name == "_log":
            effects.call(code, frame)
        if code in calls or code in real:
            return
        path = real[code] = os.path.realpath(code.co_filename) if \
            not code.co_filename.startswith("<") else code.co_filename
        if not path.startswith(library):
            calls[code] = frame.f_globals
            if effects is not None:
                effects.enter(frame)
            tracer = getattr(RECORDING, "tracer", None)
            patcher = getattr(tracer, "_patcher", None)
            if patcher is not None:         # its isinstance sees through traced values,
                patch_isinstance(patcher, frame.f_globals)      # and the op functions it
                patch_globals(patcher, frame.f_globals)         # imported by name record
                # (``from torch import relu``: under compile they ran on traced values)

    @contextlib.contextmanager
    def scope():
        if sys.getprofile() is not None:
            # a profiler runs (cProfile: a C hook that Python cannot put back): it keeps
            # running, and only the compiled function's own globals are guarded
            yield
            return
        sys.setprofile(hook)
        try:
            yield
        finally:
            sys.setprofile(None)
    return scope()


class _Cell:
    """A closure cell read like a dict (`_Baked.changed`)."""

    def __init__(self, cell):
        self.cell = cell

    def get(self, name, default):
        try:
            return self.cell.cell_contents
        except ValueError:
            return default


def object_reads(objects, reads):
    """``with object_reads(objects, reads):`` records into `reads` (as (object, name, value))
    the numbers, flags, strings and small containers of scalars that code running in this
    thread reads from the instance attributes of `objects` - plain objects the compiled
    code is given or names (a method's ``self.scale``, a config object): the graph bakes
    them in, so `Baked` guards them (``self.k = 5`` after a capture ran the stale graph)."""
    import contextlib
    import threading
    watched = {id(o): o for o in objects if "__dict__" in dir(type(o))}
    classes = {type(o) for o in watched.values()}
    thread = threading.get_ident()

    def patch(cls):
        inherited = cls.__getattribute__

        def getattribute(obj, name):
            value = inherited(obj, name)
            if (id(obj) in watched and threading.get_ident() == thread
                    and (_scalar(value) or _plain_container(value))
                    and name in object.__getattribute__(obj, "__dict__")):
                reads.setdefault((id(obj), name), (obj, name, value))
            return value
        return getattribute

    @contextlib.contextmanager
    def scope():
        undo = []
        try:
            for cls in classes:
                old = cls.__dict__.get("__getattribute__", _MISSING)
                try:
                    cls.__getattribute__ = patch(cls)
                except (TypeError, AttributeError):     # a builtin class (not watched)
                    continue
                undo.append((cls, old))
            yield
        finally:
            for cls, old in reversed(undo):
                if old is _MISSING:
                    del cls.__getattribute__
                else:
                    cls.__getattribute__ = old
    return scope()
