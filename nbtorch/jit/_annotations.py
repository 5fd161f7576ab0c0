"""TorchScript's annotation and control helpers with the meanings they have in eager
PyTorch, so model code written for ``torch.jit`` imports and runs here.

nbtorch scripts by tracing (`_script.py`), so what TorchScript needs type hints and
markers for is plain Python here: `export`/`interface`/`script_method` mark and return
their function or class, `Final` is `typing.Final`, `annotate` returns its value,
`isinstance` checks parameterised containers (``List[int]``, ``Dict[str, Tensor]``,
``Optional[...]``) element by element, `fork` runs its function at once and returns a
completed `Future` that `wait` reads, and the fuser switches are remembered settings
(nbtorch's own fusion is `nbtorch.compile`'s).
"""
import builtins
import collections.abc
import contextlib
import typing
import warnings

from ..futures import Future

__all__ = ["export", "interface", "script_method", "script_if_tracing", "Final", "annotate",
           "isinstance", "Attribute", "fork", "wait", "Future", "Error", "ScriptWarning",
           "optimized_execution", "fuser", "enable_onednn_fusion", "onednn_fusion_enabled",
           "set_fusion_strategy", "strict_fusion", "trace_module"]

builtins_isinstance = builtins.isinstance
Final = typing.Final
Attribute = collections.namedtuple("Attribute", ["value", "type"])   # (value, its type)


class Error(RuntimeError):
    """An error raised inside scripted code (``torch.jit.Error``)."""


class ScriptWarning(Warning):
    """A warning about scripted code (``torch.jit.ScriptWarning``)."""


def export(fn):
    """Mark a method as an entry point of a scripted module; it stays callable as is."""
    fn._nbtorch_exported = True
    return fn


def interface(obj):
    """Mark a class as a TorchScript interface; returned unchanged."""
    return obj


def script_method(fn):
    """The legacy ScriptModule method decorator; the method is returned unchanged."""
    return fn


def script_if_tracing(fn):
    """`fn` scripted only when traced (as PyTorch's): inside `jit.trace` it is one graph
    node that keeps its control flow (`_script.py`), so a branch on its input's rank or
    size is not fixed at the example's; called eagerly it is `fn` itself."""
    import functools
    scripted = []

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from ._concrete import is_tracing
        if not is_tracing():
            return fn(*args, **kwargs)
        if not scripted:
            from . import script
            scripted.append(script(fn))
        return scripted[0](*args, **kwargs)
    return wrapper


def annotate(the_type, the_value):
    """Give `the_value` a type for the TorchScript compiler; in Python, the value."""
    return the_value


def isinstance(obj, target_type):
    """True when `obj` is of `target_type`, which may be a parameterised container
    (``List[int]``, ``Dict[str, List[Tensor]]``, ``Tuple[int, str]``, ``Optional[...]``)
    checked element by element, or a tuple of such types. An empty container matches
    any element type (with the warning PyTorch gives: the inner type is unknown)."""
    if builtins_isinstance(target_type, tuple):
        return any(isinstance(obj, t) for t in target_type)
    if builtins_isinstance(target_type, collections.abc.Container) and not \
            builtins_isinstance(target_type, type):
        raise RuntimeError("The second argument to `torch.jit.isinstance` must be a type or a "
                           "tuple of types")
    _check_parameterised(target_type)
    origin = typing.get_origin(target_type)
    if origin is None:
        return builtins_isinstance(obj, target_type)
    args = typing.get_args(target_type)
    if origin is typing.Union:                  # Optional[T] is Union[T, None]
        return any(obj is None if a is type(None) else isinstance(obj, a) for a in args)
    if origin in (list, dict, tuple):
        if obj == [] or obj == {} or obj == ():
            warnings.warn("The inner type of a container is lost when calling "
                          "torch.jit.isinstance in eager mode. For example, List[int] would "
                          "become list and therefore falsely return True for List[float] or "
                          "List[str].", stacklevel=2)
    if origin is list:
        return builtins_isinstance(obj, list) and all(isinstance(e, args[0]) for e in obj)
    if origin is dict:
        return builtins_isinstance(obj, dict) and all(
            isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    if origin is tuple:
        if not builtins_isinstance(obj, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(isinstance(e, args[0]) for e in obj)
        return len(obj) == len(args) and all(isinstance(e, a) for e, a in zip(obj, args))
    return builtins_isinstance(obj, origin)


_BARE = {list: "list", dict: "dict", tuple: "tuple", typing.List: "List",
         typing.Dict: "Dict", typing.Tuple: "Tuple", typing.Optional: "Optional"}


def _check_parameterised(target_type):
    """PyTorch's error for a container type without its element types (``List``)."""
    try:
        name = _BARE.get(target_type)
    except TypeError:                           # an unhashable target: not one of these
        return
    if name is None:
        return
    if name.endswith("ict"):
        raise RuntimeError(f"Attempted to use {name} without contained types. Please add "
                           f"contained type, e.g. {name}[int, int]")
    raise RuntimeError(f"Attempted to use {name} without a contained type. Please add a "
                       f"contained type, e.g. {name}[int]")


def fork(func, *args, **kwargs):
    """Start `func(*args, **kwargs)` as an asynchronous task; outside TorchScript it runs
    now (as in eager PyTorch) and the returned `Future` is complete: its exception, if
    any, is raised by `wait`."""
    future = Future()
    try:
        future.set_result(func(*args, **kwargs))
    except Exception as e:                  # raised where the result is read, as a task's
        future.set_exception(e)
    return future


def wait(future):
    """The result of a `fork`ed task (or any Future): blocks until it is ready."""
    return future.wait()


_SETTINGS = {"optimize": True, "fuser": "fuser1", "onednn": False,
             "strategy": [("STATIC", 2), ("DYNAMIC", 10)]}


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """Whether the graph executor optimises, inside the block (a remembered setting)."""
    old, _SETTINGS["optimize"] = _SETTINGS["optimize"], bool(should_optimize)
    try:
        yield
    finally:
        _SETTINGS["optimize"] = old


_FUSERS = ("fuser0", "fuser1", "fuser2", "fuser3", "none")


@contextlib.contextmanager
def fuser(name):
    """Choose TorchScript's fuser inside the block ('fuser0'..'fuser3' or 'none'); a
    remembered setting: nbtorch fuses with `nbtorch.compile`'s generated kernels."""
    if name not in _FUSERS:
        raise Exception(f"unrecognized fuser option (name: {name})")
    old, _SETTINGS["fuser"] = _SETTINGS["fuser"], name
    try:
        yield
    finally:
        _SETTINGS["fuser"] = old


def enable_onednn_fusion(enabled):
    """Turn oneDNN graph fusion on or off (remembered; nbtorch has no oneDNN)."""
    _SETTINGS["onednn"] = bool(enabled)


def onednn_fusion_enabled():
    return _SETTINGS["onednn"]


def set_fusion_strategy(strategy):
    """Set the (type, depth) specialisation list ('STATIC'/'DYNAMIC'); returns the previous
    one. Remembered only: `nbtorch.compile(dynamic=...)` decides nbtorch's."""
    for entry in strategy:
        if (not builtins_isinstance(entry, (tuple, list)) or len(entry) != 2
                or entry[0] not in ("STATIC", "DYNAMIC")
                or not builtins_isinstance(entry[1], int)):
            raise RuntimeError(f"set_fusion_strategy: expected (\"STATIC\" or \"DYNAMIC\", "
                               f"depth) pairs, got {entry!r}")
    old, _SETTINGS["strategy"] = _SETTINGS["strategy"], [tuple(e) for e in strategy]
    return old


class strict_fusion:
    """A block whose ops TorchScript must fuse in one group (an error there otherwise);
    in Python nothing is fused, and the block runs as written (PyTorch's warning)."""

    def __init__(self):
        from ._scripting import is_scripting
        if not is_scripting():
            warnings.warn("Only works in script mode", stacklevel=2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None,
                 check_tolerance=1e-5, strict=True, **kwargs):
    """Trace several methods of `mod`: `inputs` maps method names to example inputs.
    'forward' gives the traced module (`jit.trace`); every other method is traced as a
    function and set on it under its name."""
    from ._trace import trace
    if not builtins_isinstance(inputs, dict):
        raise AttributeError("expected a dictionary of (method_name, input) pairs")
    if "forward" not in inputs:
        raise NotImplementedError("nbtorch.jit.trace_module: give example inputs for "
                                  "'forward' (the traced module is built from it)")
    traced = trace(mod, inputs["forward"], check_trace=check_trace, check_inputs=check_inputs,
                   check_tolerance=check_tolerance, strict=strict)
    for name, example in inputs.items():
        if name != "forward":
            object.__setattr__(traced, name, trace(getattr(mod, name), example,
                                                   check_trace=check_trace, strict=strict))
    return traced
