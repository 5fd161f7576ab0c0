"""The scalar bodies of `kernels/scalar.py` as CUDA device functions.

``device_function(body)`` is what a generated elementwise kernel calls
(`cuda/gridstride.py`): ``out[i] = core(a[i], ...)`` with ``core =
device_function(body)``. The bodies are tuned for the CPU: float32 exp/tanh/erfc
are vectorisable polynomials (`fexp`... in `kernels/f32math.py`) built on NumPy
ufuncs, and small helpers are ``register_jitable(inline="always")``. On CUDA,
NumPy's scalar ufuncs (np.floor, np.fmod, ...) have no lowering and
numba-cuda's IR inliner fails on those helpers. So for the GPU a body is
rebuilt over a translated copy of its module's globals: `np` is NumPy with its
rounding functions mapped to libdevice, and every helper function of
`scalar.py`/`f32math.py` (fexp, _sigmoid, ...) becomes a device function
compiled from its plain Python body (fexp's is math.exp: libdevice's expf is
the fast path on a GPU). `c` keeps its typed overload. The simulator runs the
plain Python bodies unchanged.

These device functions are built in every process but compiled only into a
kernel that is not in Numba's disk cache yet: a cached kernel carries its
device code with it.
"""
import types

import numpy as np
from numba import cuda

from nbtorch.kernels import (f32math, scalar, scalar_activation, scalar_bessel, scalar_complex,
                             scalar_math, scalar_polynomials, scalar_special)
from ._launch import SIMULATOR

__all__ = ["device_function", "register_body", "body", "is_builtin"]

_BODIES = {}            # extra scalar bodies by name (copy's identity, library.elementwise)
_DEVICE = {}            # python function -> its device function
_NAMESPACES = {}        # id(globals dict) -> its translated copy
_HELPER_MODULES = tuple(m.__name__ for m in (scalar, f32math, scalar_math, scalar_special,
                                             scalar_bessel, scalar_polynomials, scalar_complex,
                                             scalar_activation))
_KEEP = {"c", "same"}   # helpers whose generic overload already works on CUDA


def body(name):
    """The plain Python scalar body called `name` (registered, else from scalar.py)."""
    fn = _BODIES.get(name)
    return fn if fn is not None else getattr(scalar, name)


def register_body(name, fn):
    """Make scalar body `fn` (a plain function of scalars) available as `name`."""
    _BODIES[name] = fn


def is_builtin(fn):
    """True for a body defined at module level in nbtorch's kernels (importable by name,
    tracked by the kernel cache stamps); False for a user's function."""
    import sys
    module = sys.modules.get(getattr(fn, "__module__", None) or "")
    return (module is not None and module.__name__.startswith("nbtorch.kernels.")
            and getattr(module, fn.__name__, None) is fn)


def device_function(fn):
    """The CUDA device function of plain scalar body `fn` (memoized)."""
    dev = _DEVICE.get(fn)
    if dev is None:
        py = fn if SIMULATOR else _rebuilt(fn)
        dev = _DEVICE.get(fn)           # made while translating its own module's globals
        if dev is None:
            dev = _DEVICE[fn] = cuda.jit(device=True)(py)
    return dev


# ---- translation for the GPU ----------------------------------------------------------

def _np_floor(x):
    return np.floor(x)


def _np_ceil(x):
    return np.ceil(x)


def _np_trunc(x):
    return np.trunc(x)


def _np_exp2(x):
    return np.exp2(x)


def _np_fmod(x, y):
    return np.fmod(x, y)


def _np_nextafter(x, y):
    return np.nextafter(x, y)


_NP_FOR_CUDA = {"floor": (_np_floor, "floorf", "floor"), "ceil": (_np_ceil, "ceilf", "ceil"),
                "trunc": (_np_trunc, "truncf", "trunc"), "exp2": (_np_exp2, "exp2f", "exp2"),
                "fmod": (_np_fmod, "fmodf", "fmod"),
                "nextafter": (_np_nextafter, "nextafterf", "nextafter")}
_NP = []                # the translated NumPy module, made once


def _numpy_for_cuda():
    """NumPy with its scalar rounding functions typed on CUDA as libdevice's float32 or
    float64 functions."""
    if not _NP:
        from numba.cuda import libdevice
        from numba.cuda.extending import overload
        module = types.ModuleType("numpy_for_cuda")
        module.__dict__.update(vars(np))
        for name, (stub, n32, n64) in _NP_FOR_CUDA.items():
            typer = _typer1 if stub.__code__.co_argcount == 1 else _typer2
            overload(stub, target="cuda")(typer(getattr(libdevice, n32),
                                                getattr(libdevice, n64)))
            setattr(module, name, stub)
        _NP.append(module)
    return _NP[0]


def _all_f32(*args):
    from numba import types as nt
    return all(isinstance(a, nt.Float) and a.bitwidth == 32 for a in args)


def _typer1(f32, f64):
    def typer(x):
        if _all_f32(x):
            return lambda x: f32(x)
        return lambda x: f64(np.float64(x))
    return typer


def _typer2(f32, f64):
    def typer(x, y):
        if _all_f32(x, y):
            return lambda x, y: f32(x, y)
        return lambda x, y: f64(np.float64(x), np.float64(y))
    return typer


def _is_helper(name, value):
    return (isinstance(value, types.FunctionType) and name not in _KEEP
            and value.__module__ in _HELPER_MODULES)


def _namespace(globals_):
    """A copy of a body's module globals with `np` and the scalar helpers translated
    (kept for nbtorch's own modules; a user's globals are copied afresh each time, as
    they may gain names)."""
    ns = _NAMESPACES.get(id(globals_))
    if ns is None:
        ns = dict(globals_)
        if globals_.get("__name__", "").startswith("nbtorch.kernels."):
            _NAMESPACES[id(globals_)] = ns
        for name, value in globals_.items():
            if value is np:
                ns[name] = _numpy_for_cuda()
            elif _is_helper(name, value):
                ns[name] = device_function(value)   # lazy: compiled only where called
    return ns


def _rebuilt(fn):
    """`fn` with its code running over the translated namespace."""
    return types.FunctionType(fn.__code__, _namespace(fn.__globals__), fn.__name__,
                              fn.__defaults__, fn.__closure__)
