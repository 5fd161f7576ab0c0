"""How nbtorch functions see Proxies: their public namespaces are patched while tracing.

PyTorch routes ``torch.relu(proxy)`` through ``__torch_function__``, a check
that every eager call pays. nbtorch instead swaps each public op function
(``nbtorch.relu``, ``F.relu``, ``torch.linalg.norm``, ``math.sqrt``, names
registered with `wrap`, and the same functions bound in the traced code's
globals) for a `PatchedFunction` during tracing only: called with a Proxy
anywhere in its arguments it records a ``call_function`` node whose target is
the original function; otherwise it calls the original. Outside tracing
nothing is patched, so eager ops cost exactly what they cost before.

A PatchedFunction compares equal to (and hashes like) the function it wraps,
so ``target == torch.sigmoid`` inside a Transformer still holds.
"""
import builtins
import contextlib
import math
import sys
import threading
import types

__all__ = ["PatchedFunction", "Patcher", "find_proxy", "patch_namespaces", "patch_globals",
           "proxy_functions", "wrapped_names"]

# Functions of the public namespaces that are not ops on tensors (or whose answer is
# static metadata, which a concrete trace should read, not record).
_NOT_OPS = {"is_tensor", "is_storage", "is_floating_point", "is_complex", "is_grad_enabled",
            "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
            "get_default_dtype", "set_default_dtype", "set_printoptions", "save", "load",
            "set_num_threads", "get_num_threads", "register_kernel", "get_kernel",
            "registered_ops", "promote_types", "can_cast", "iinfo", "finfo",
            "broadcast_shapes", "typename", "compile", "is_inference_mode_enabled",
            "is_autocast_enabled", "is_autocast_cpu_enabled", "get_autocast_dtype",
            "get_autocast_gpu_dtype", "get_autocast_cpu_dtype", "get_default_device",
            "are_deterministic_algorithms_enabled", "is_deterministic_algorithms_warn_only_enabled",
            "is_warn_always_enabled", "get_float32_matmul_precision", "is_anomaly_enabled",
            "get_num_interop_threads"}

_wrapped_fns_to_patch = {}      # (id(globals), name) -> globals dict: filled by fx.wrap()

# The concrete tracer (jit.trace) records op calls without Proxy arguments too (torch.rand(3),
# torch.zeros(2)), as torch.jit.trace does, so they run on every call instead of becoming
# constants; symbolic tracing keeps fx's rule (such calls run once, results are constants).
RECORDING = threading.local()       # .tracer: the concrete tracer of this thread, if any


def find_proxy(args, kwargs):
    """The first Proxy inside args/kwargs (nested tuples, lists, dicts), or None."""
    from .proxy import Proxy
    stack = [args, kwargs]
    while stack:
        a = stack.pop()
        if isinstance(a, Proxy):
            return a
        if isinstance(a, (tuple, list)):
            stack.extend(reversed(a))
        elif isinstance(a, dict):
            stack.extend(reversed(list(a.values())))
        elif isinstance(a, slice):
            stack.extend((a.step, a.stop, a.start))
    return None


def _holds_array(args, kwargs):
    """True when args/kwargs (nested) hold a NumPy array or scalar."""
    import numpy as np
    stack = [args, kwargs]
    while stack:
        a = stack.pop()
        if isinstance(a, (np.ndarray, np.generic)):
            return True
        if isinstance(a, (tuple, list)):
            stack.extend(a)
        elif isinstance(a, dict):
            stack.extend(a.values())
    return False


def _eager_target(fn):
    """`fn` as eager code would reach it: through autocast's wrapper while autocast is on
    (a layer run for real inside a trace under autocast mixed float32 weights with
    bfloat16 activations: "self and mat2 must have the same dtype")."""
    hooks = sys.modules.get("nbtorch.amp._hooks")
    if hooks is not None and hooks.STATE.on:
        return hooks.WRAPPERS.get(id(fn), fn)
    return fn


class PatchedFunction:
    """`orig` as seen during tracing: records a node when called with a Proxy."""

    def __init__(self, orig, mark_wrapped=False):
        self.__fx_orig__ = orig
        self.__wrapped__ = orig
        self._mark_wrapped = mark_wrapped
        for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
            try:
                setattr(self, attr, getattr(orig, attr))
            except AttributeError:
                pass

    def __call__(self, *args, **kwargs):
        proxy = find_proxy(args, kwargs)
        if proxy is not None:
            tracer = proxy.tracer
        else:
            tracer = getattr(RECORDING, "tracer", None)
            if tracer is None or tracer._executing or _holds_array(args, kwargs):
                # (host data, e.g. torch.tensor(ndarray): its result is a constant of the
                # graph, as the TracerWarning where the array came from said)
                return _eager_target(self.__fx_orig__)(*args, **kwargs)
        out = tracer.create_proxy("call_function", self.__fx_orig__, args, kwargs)
        if self._mark_wrapped:
            out.node.meta["is_wrapped"] = True
        return out

    def __eq__(self, other):
        return other is self.__fx_orig__ or (isinstance(other, PatchedFunction)
                                             and other.__fx_orig__ is self.__fx_orig__)

    def __hash__(self):
        return hash(self.__fx_orig__)

    def __repr__(self):
        return repr(self.__fx_orig__)


class Patcher:
    """Set dict entries and class attributes; `__exit__` puts everything back."""

    _MISSING = object()

    def __init__(self):
        self._undo = []
        self._visited = set()

    def patch(self, frame_dict, name, new_fn):
        self._undo.append((frame_dict, name, frame_dict.get(name, self._MISSING)))
        frame_dict[name] = new_fn

    def patch_method(self, cls, name, new_fn):
        self._undo.append((cls, name, cls.__dict__.get(name, self._MISSING)))
        setattr(cls, name, new_fn)

    def visit_once(self, thing):
        """True the first time `thing` is seen by this patcher."""
        key = id(thing)
        if key in self._visited:
            return False
        self._visited.add(key)
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        while self._undo:
            where, name, orig = self._undo.pop()
            if isinstance(where, dict):
                if orig is self._MISSING:
                    where.pop(name, None)
                else:
                    where[name] = orig
            elif orig is self._MISSING:
                delattr(where, name)
            else:
                setattr(where, name, orig)
        _forget_autocast_scan()


def _forget_autocast_scan():
    """Autocast's hooks scan the modules for the functions to wrap once and put the
    bindings they found back on exit; a scan made while this patcher's wrappers were in
    place (autocast entered inside traced code) took those for the originals and would
    put them back after every later autocast region. So the next autocast rescans."""
    hooks = sys.modules.get("nbtorch.amp._hooks")
    if hooks is not None and not hooks._USERS[0]:
        hooks._SCANNED[0] = -1


_TABLE = None       # [(module dict, name, PatchedFunction)] for the public namespaces
_BY_ID = None       # id(original) -> PatchedFunction


def _is_op_function(name, obj):
    if name.startswith("_") or name in _NOT_OPS or isinstance(obj, (type, types.ModuleType)):
        return False
    return isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) or (
        callable(obj) and hasattr(obj, "__name__"))


def _table():
    global _TABLE, _BY_ID
    if _TABLE is None:
        from ._names import public_namespaces
        table, by_id = [], {}
        namespaces = [mod for _, mod in public_namespaces()] + [math]
        for mod in namespaces:
            d = vars(mod)
            for name, obj in list(d.items()):
                if isinstance(obj, PatchedFunction) or not _is_op_function(name, obj):
                    continue
                # built while autocast's hooks are in: the table keeps the op itself
                obj = getattr(obj, "__autocast_original__", obj)
                wrapper = by_id.get(id(obj))
                if wrapper is None:
                    wrapper = by_id[id(obj)] = PatchedFunction(obj)
                table.append((d, name, wrapper))
        _TABLE, _BY_ID = table, by_id
    return _TABLE, _BY_ID


def patch_namespaces(patcher, extra_functions=()):
    """Patch every public op function (and `extra_functions`, e.g. Tracer autowrap ones)."""
    table, by_id = _table()
    if patcher.visit_once(_table):
        for d, name, wrapper in table:
            patcher.patch(d, name, wrapper)
        for (_, name), frame_dict in list(_wrapped_fns_to_patch.items()):
            if name not in frame_dict and hasattr(builtins, name):
                orig = getattr(builtins, name)
            else:
                orig = frame_dict.get(name)
            if orig is None or isinstance(orig, PatchedFunction):
                continue
            patcher.patch(frame_dict, name, PatchedFunction(orig, mark_wrapped=True))
    for fn in extra_functions:
        if id(fn) not in by_id:
            by_id[id(fn)] = PatchedFunction(fn)


_isinstance = builtins.isinstance


def _traced_isinstance(obj, cls):
    """isinstance in traced code: a concrete proxy answers for the value it carries (a
    traced tensor is a Tensor, a traced tuple a tuple, as the real values would be: code
    branching on it took the wrong branch, silently)."""
    if getattr(type(obj), "_carries_value", False):
        obj = obj.value
    return _isinstance(obj, cls)


def patch_isinstance(patcher, frame_dict):
    """Make ``isinstance`` in traced code with globals `frame_dict` see through concrete
    proxies (plain fx proxies carry no value: unchanged)."""
    if frame_dict is not None and frame_dict.get("isinstance") is not _traced_isinstance:
        patcher.patch(frame_dict, "isinstance", _traced_isinstance)


def patch_globals(patcher, frame_dict):
    """Patch the globals of traced code that name op functions (``from nbtorch import relu``)."""
    if frame_dict is None or not patcher.visit_once(frame_dict):
        return
    _, by_id = _table()
    for name, value in list(frame_dict.items()):
        wrapper = by_id.get(id(value))
        if wrapper is not None and wrapper.__fx_orig__ is value:
            patcher.patch(frame_dict, name, wrapper)


def wrapped_names():
    """The (globals, name) pairs registered with `fx.wrap`."""
    return dict(_wrapped_fns_to_patch)


@contextlib.contextmanager
def proxy_functions():
    """Within this block nbtorch functions called with a Proxy record nodes.

    `Tracer.trace` and `Transformer.transform` do this themselves; use it when
    building a graph by hand with Proxies and calling ``torch.relu(proxy)``.
    """
    with Patcher() as patcher:
        patch_namespaces(patcher)
        yield patcher
