"""The size-aware helpers model code calls: `torch._check*` / `torch._assert` and the
`sym_*` arithmetic.

PyTorch's versions also accept the symbolic integers its tracers make (SymInt,
SymFloat, SymBool). nbtorch's tracers (jit, export) run on concrete Python numbers and
check dynamic dims by retracing, so these act on plain numbers; `SymInt`/`SymFloat`/
`SymBool` exist for `isinstance(n, (int, torch.SymInt))` checks and no value is ever one.
"""
import builtins
import math

import numpy as np

__all__ = ["SymInt", "SymFloat", "SymBool", "sym_int", "sym_float", "sym_not", "sym_ite",
           "sym_max", "sym_min", "sym_sqrt", "sym_sum", "sym_fresh_size",
           "sym_constrain_range", "sym_constrain_range_for_size",
           "_check", "_check_with", "_check_index", "_check_value", "_check_type",
           "_check_not_implemented", "_check_is_size", "_check_tensor_all",
           "_check_tensor_all_with", "_assert"]

_DEFAULT_MESSAGE = ("Expected cond to be True, but got False. (Could this error message be "
                    "improved? If so, please report an enhancement request to PyTorch.)")
_NUMBERS = (np.integer, np.floating, int, float)
_FLOATS = (np.floating, float)


class SymInt:
    """A symbolic integer of PyTorch's tracers; nbtorch traces concrete ints (none exist)."""


class SymFloat:
    """A symbolic float of PyTorch's tracers; nbtorch traces concrete floats (none exist)."""


class SymBool:
    """A symbolic bool of PyTorch's tracers; nbtorch traces concrete bools (none exist)."""


# -- checks ---------------------------------------------------------------------------------

def _check_with(error_type, cond, message=None):
    """Raise `error_type(message())` unless `cond` (a Python bool) is True."""
    if not (isinstance(error_type, type) and issubclass(error_type, Exception)
            and not issubclass(error_type, Warning)):
        raise AssertionError("error_type must be a subclass of Exception but not Warning, "
                             f"got {error_type}")
    if getattr(cond, "_carries_value", False):   # a traced size check: checked on the
        cond = cond.value                          # example values, not recorded
    if not isinstance(cond, builtins.bool):
        raise TypeError(f"cond must be a bool, but got {type(cond)}")
    if cond:
        return
    if message is None:
        text = _DEFAULT_MESSAGE
    elif not callable(message):
        raise TypeError("message must be a callable")
    else:
        text = str(message())
    raise error_type(text)


def _check(cond, message=None):
    """RuntimeError unless `cond`; `message` is a callable giving the text (built lazily)."""
    _check_with(RuntimeError, cond, message)


def _check_index(cond, message=None):
    _check_with(IndexError, cond, message)


def _check_value(cond, message=None):
    _check_with(ValueError, cond, message)


def _check_type(cond, message=None):
    _check_with(TypeError, cond, message)


def _check_not_implemented(cond, message=None):
    _check_with(NotImplementedError, cond, message)


def _check_is_size(i, message=None, *, max=None):
    """`i` is a valid size: at least 0 (and at most `max` when given)."""
    _check(i >= 0, message)
    if max is not None:
        _check(i <= max, message)


def _check_tensor_all_with(error_type, cond, message=None):
    """`error_type` unless every element of the bool tensor `cond` is True."""
    from ._tensor import Tensor
    if not isinstance(cond, Tensor):
        raise TypeError(f"cond must be a tensor, but got {type(cond)}")
    if cond.dtype.name != "bool":
        raise TypeError(f"cond tensor must have dtype torch.bool, but got {cond.dtype}")
    _check_with(error_type, builtins.bool(cond.all().item()), message)


def _check_tensor_all(cond, message=None):
    _check_tensor_all_with(RuntimeError, cond, message)


def _assert(condition, message):
    """`assert condition, message` that tracing keeps (torchvision models call it)."""
    assert condition, message


# -- sym_* arithmetic -------------------------------------------------------------------------

def sym_int(a):
    """int(a), truncating toward zero."""
    return builtins.int(a)


def sym_float(a):
    return builtins.float(a)


def sym_not(a):
    return not a


def sym_ite(b, t, f):
    """`t if b else f`, with PyTorch's checks (b a bool, t and f of one type)."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


def _minmax(pick, a, b):
    for v in (a, b):
        if not isinstance(v, _NUMBERS):
            raise AssertionError(f"expected {_NUMBERS}, got {type(v)}")
    result = pick(a, b)
    return builtins.float(result) if isinstance(a, _FLOATS) or isinstance(b, _FLOATS) else result


def sym_max(a, b):
    """max(a, b) promoted to float when either is a float (unlike builtins.max)."""
    return _minmax(builtins.max, a, b)


def sym_min(a, b):
    """min(a, b) promoted to float when either is a float (unlike builtins.min)."""
    return _minmax(builtins.min, a, b)


def sym_sqrt(a):
    return math.sqrt(a)


def sym_sum(*args):
    """sum of numbers, given as sym_sum([a, b, c]) or sym_sum(a, b, c)."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_fresh_size(expr):
    """A size the tracer should treat as unknown: concrete here, so the value itself."""
    return expr


def sym_constrain_range(size, *, min=None, max=None):
    """Check `min <= size <= max` for an integer size (bounds default to int64's)."""
    lo = -(1 << 63) if min is None else min
    hi = (1 << 63) - 1 if max is None else max
    value = builtins.int(size)
    if not lo <= value <= hi:
        raise RuntimeError(f"Invalid value range for {value} between [{lo}, {hi}].")


def sym_constrain_range_for_size(size, *, min=None, max=None):
    """As `sym_constrain_range` for a size: the lower bound is at least 0."""
    sym_constrain_range(size, min=0 if min is None else min, max=max)
