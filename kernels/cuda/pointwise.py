"""Elementwise CUDA kernels: the scalar bodies of `kernels/scalar.py` as grid-stride kernels.

``kernel(name)`` returns the CUDA kernel of one op, called like the CPU one as
``kernel(out, *args, stream=0)`` with device arrays (any strides, broadcast to
``out``'s shape) or NumPy scalars::

    for every index i of out (grid-stride):   out[i] = scalar.<name>(*args[i])

Why not ``numba.vectorize(target='cuda')``: Numba's CUDA ufuncs ravel every
operand, and a strided or broadcast (stride-0) device array cannot ravel, so
they copy it to the host and back; scalars are also copied to the device on
every call. Here instead:

- the scalar body becomes a ``cuda.jit(device=True)`` function, inlined into a
  kernel generated from one of two templates (the same trick Numba's own
  vectorizer uses): *flat* (every array operand contiguous with out's shape:
  1-D views, ``out[i] = f(a[i], b[i])``) and *strided* (operands broadcast to
  out's shape, dims merged, padded to 4-D, one index computed per element);
- scalars are kernel arguments (no device buffer, no copy);
- float16 operands load as float32, compute in float32 and store as float16
  (the CPU side computes float16 in float32 too, so both devices agree).

One kernel is generated per (op, operand kinds) — the kinds string has one
letter per operand: A array, S scalar, H float16 array, h float16 scalar — and
Numba compiles it lazily per dtype. These kernels are built at run time, so
Numba's on-disk cache does not hold them: each process compiles the (op,
dtype) pairs it uses on first call (a fraction of a second each on a GPU).
"""
from numba import cuda
import numpy as np

from nbtorch.kernels import f32math, scalar
from nbtorch.kernels.layout import merge_dims
from ._launch import SIMULATOR, grid, strided_view

__all__ = ["kernel", "launch", "register_body", "operand_kinds", "merged_layout",
           "compiled_kernels", "MAX_DIMS"]

MAX_DIMS = 4            # strided template's rank; more merged dims loop in Python

_FLAT = """
def {name}(out, {args}):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = core({loads})
"""

_STRIDED = """
def {name}(out, {args}):
    n1 = out.shape[1]
    n2 = out.shape[2]
    n3 = out.shape[3]
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        i3 = i % n3
        r = i // n3
        i2 = r % n2
        r = r // n2
        i1 = r % n1
        i0 = r // n1
        out[i0, i1, i2, i3] = core({loads})
"""

_BODIES = {}            # extra scalar bodies (e.g. copy's identity) by name
_DEVICE_FNS = {}        # scalar name -> cuda device function
_KERNELS = {}           # (scalar name, kinds, 'flat'|'strided') -> cuda kernel

# ---- how a scalar body reaches the GPU ---------------------------------------------
# The bodies in kernels/scalar.py are tuned for the CPU: float32 exp/tanh/erfc are
# vectorisable polynomials (`fexp`...) built on NumPy ufuncs, and small helpers are
# `register_jitable(inline="always")`. On CUDA, NumPy's scalar ufuncs (np.floor, np.fmod,
# ...) have no lowering and numba-cuda's IR inliner fails on those helpers. So for the GPU
# each body is rebuilt over a translated namespace: `np` is NumPy with its rounding
# functions mapped to libdevice, and every helper function of scalar.py (fexp, _sigmoid,
# ...) becomes a CUDA device function compiled from its plain Python body (fexp's is
# math.exp: libdevice's expf is the fast path on a GPU). `c` keeps its typed overload.
# The simulator runs the plain Python bodies unchanged.

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


_NP_FOR_CUDA = {"floor": (_np_floor, "floorf", "floor"), "ceil": (_np_ceil, "ceilf", "ceil"),
                "trunc": (_np_trunc, "truncf", "trunc"), "exp2": (_np_exp2, "exp2f", "exp2"),
                "fmod": (_np_fmod, "fmodf", "fmod")}
_KEEP = {"c"}                 # helpers whose generic overload already works on CUDA
_TRANSLATED = {}              # scalar helper name -> device function


def _register_libdevice():
    """Type each _np_* stub on CUDA as libdevice's float32 or float64 function."""
    from numba.cuda import libdevice
    from numba.cuda.extending import overload
    for stub, n32, n64 in _NP_FOR_CUDA.values():
        typer = _typer1 if stub.__code__.co_argcount == 1 else _typer2
        overload(stub, target="cuda")(typer(getattr(libdevice, n32), getattr(libdevice, n64)))


def _is_f32(*args):
    from numba import types as nt
    return all(isinstance(a, nt.Float) and a.bitwidth == 32 for a in args)


def _typer1(f32, f64):
    def typer(x):
        if _is_f32(x):
            return lambda x: f32(x)
        return lambda x: f64(np.float64(x))
    return typer


def _typer2(f32, f64):
    def typer(x, y):
        if _is_f32(x, y):
            return lambda x, y: f32(x, y)
        return lambda x, y: f64(np.float64(x), np.float64(y))
    return typer


def _cuda_namespace():
    """scalar.py's globals with `np` and the helpers translated for the CUDA target."""
    import types
    ns = dict(vars(scalar))
    np_mod = types.ModuleType("numpy_for_cuda")
    np_mod.__dict__.update(vars(np))
    for name, (stub, _, _) in _NP_FOR_CUDA.items():
        setattr(np_mod, name, stub)
    ns["np"] = np_mod
    for name, obj in vars(scalar).items():
        if (isinstance(obj, types.FunctionType) and name not in _KEEP
                and obj.__module__ in (scalar.__name__, f32math.__name__)):
            ns[name] = _LazyHelper(name)
    return ns


class _LazyHelper:
    """Placeholder replaced by the helper's device function when the namespace is built."""

    def __init__(self, name):
        self.name = name


def _rebuild_for_cuda(py, ns):
    import types
    return types.FunctionType(py.__code__, ns, py.__name__, py.__defaults__, py.__closure__)


_NS = []


def _cuda_body(py):
    """The device function of plain body `py`, compiled over the translated namespace."""
    if not _NS:
        _register_libdevice()
        ns = _cuda_namespace()
        for name, v in list(ns.items()):
            if isinstance(v, _LazyHelper):
                ns[name] = cuda.jit(device=True)(_rebuild_for_cuda(getattr(scalar, name), ns))
        _NS.append(ns)
    return cuda.jit(device=True)(_rebuild_for_cuda(py, _NS[0]))


def _device_fn(name):
    fn = _DEVICE_FNS.get(name)
    if fn is None:
        py = _BODIES[name] if name in _BODIES else getattr(scalar, name)
        fn = _DEVICE_FNS[name] = cuda.jit(device=True)(py) if SIMULATOR else _cuda_body(py)
    return fn


def _load(k, pos, index):
    """Source text loading operand `pos` of kind `k` at `index`."""
    if k in "AH":
        v = f"a{pos}[{index}]"
    else:
        v = f"a{pos}"
    return f"np.float32({v})" if k in "Hh" else v


def _build(name, kinds, layout):
    """Generate, compile lazily and memoize the kernel of `name` for operand `kinds`."""
    key = (name, kinds, layout)
    k = _KERNELS.get(key)
    if k is not None:
        return k
    index = "i" if layout == "flat" else "i0, i1, i2, i3"
    src = (_FLAT if layout == "flat" else _STRIDED).format(
        name=f"{name}_{layout}_{kinds}",
        args=", ".join(f"a{p}" for p in range(len(kinds))),
        loads=", ".join(_load(c, p, index) for p, c in enumerate(kinds)))
    namespace = {"cuda": cuda, "np": np, "core": _device_fn(name)}
    exec(compile(src, f"<nbtorch.kernels.cuda.pointwise:{key}>", "exec"), namespace)
    k = _KERNELS[key] = cuda.jit(namespace[f"{name}_{layout}_{kinds}"])
    return k


def register_body(name, fn):
    """Make scalar body `fn` (a plain module-level function) available as `name`."""
    _BODIES[name] = fn


def operand_kinds(args):
    """The kinds string of kernel operands (A/H arrays, S/h scalars)."""
    out = []
    for a in args:
        half = a.dtype == np.float16
        if _is_array(a):
            out.append("H" if half else "A")
        else:
            out.append("h" if half else "S")
    return "".join(out)


def compiled_kernels():
    """{(op, kinds, layout): kernel} generated in this process."""
    return dict(_KERNELS)


def kernel(name):
    """The CUDA kernel ``fn(out, *args, stream=0)`` of scalar body `name`."""
    def run(out, *args, stream=0):
        launch(name, out, args, stream)
    run.__name__ = name
    run.__qualname__ = f"cuda.pointwise.{name}"
    run.__doc__ = f"out[i] = scalar.{name}(*args[i]) over broadcast device operands."
    return run


def launch(name, out, args, stream=0):
    """Run scalar body `name` over `out` (a device array) and broadcast `args`."""
    n = out.size
    if n == 0:
        return
    args = tuple(a if _is_array(a) else _scalar(a) for a in args)
    kinds = operand_kinds(args)
    if _flat_ok(out, args):
        flat = [a.reshape(n) if _is_array(a) else a for a in args]
        _build(name, kinds, "flat")[grid(n) + (stream,)](out.reshape(n), *flat)
        return
    shape, strides = merged_layout(out.shape, [out.strides] + [
        _broadcast_strides(a, out.shape) for a in args if _is_array(a)])
    arrays = [out] + [a for a in args if _is_array(a)]
    if len(shape) > MAX_DIMS:          # rare: loop the leading dims in Python
        return _launch_leading(name, out, args, stream)
    pad = MAX_DIMS - len(shape)
    shape = (1,) * pad + tuple(shape)
    views = [strided_view(a, shape, (0,) * pad + tuple(s)) for a, s in zip(arrays, strides)]
    it = iter(views[1:])
    operands = [next(it) if _is_array(a) else a for a in args]
    _build(name, kinds, "strided")[grid(n) + (stream,)](views[0], *operands)


def _is_array(a):
    return getattr(a, "ndim", None) is not None and not isinstance(a, np.generic)


def _scalar(a):
    return a if isinstance(a, np.generic) else np.asarray(a)[()]


def _flat_ok(out, args):
    if not out.is_c_contiguous():
        return False
    shape = out.shape
    return all(not _is_array(a) or (a.shape == shape and a.is_c_contiguous()) for a in args)


def _broadcast_strides(a, shape):
    lead = len(shape) - a.ndim
    return (0,) * lead + tuple(0 if n == 1 and m != 1 else s
                               for n, s, m in zip(a.shape, a.strides, shape[lead:]))


merged_layout = merge_dims   # shared with the CPU launchers (kernels/layout.py)


def _launch_leading(name, out, args, stream):
    """More than MAX_DIMS merged dims: one launch per index of out's leading dim."""
    for j in range(out.shape[0]):
        sub = []
        for a in args:
            if not _is_array(a) or a.ndim < out.ndim:   # broadcast along dim 0
                sub.append(a)
            else:
                sub.append(a[0] if a.shape[0] == 1 else a[j])
        launch(name, out[j], tuple(sub), stream)


# ---- compile-only type checking (nbtorch/cuda/typecheck.py) -----------------------

_PROBE = {"float32": 0.5, "float64": 0.5, "int64": 3, "int32": 3, "bool": True}


def served_dtypes(name):
    """The dtypes scalar body `name` accepts, judged by running it on NumPy scalars.

    float16 is served wherever float32 is (it computes in float32 inside the kernel).
    Returns [(input dtype, output dtype)].
    """
    body = _BODIES[name] if name in _BODIES else getattr(scalar, name)
    nargs = body.__code__.co_argcount
    out = []
    for dt, v in _PROBE.items():
        try:
            r = body(*([np.dtype(dt).type(v)] * nargs))
        except Exception:
            continue
        res = np.dtype(np.bool_) if isinstance(r, (bool, np.bool_)) else np.dtype(dt)
        out.append((np.dtype(dt), res))
        if dt == "float32":
            out.append((np.dtype(np.float16), res if res == np.bool_ else
                        np.dtype(np.float16)))
    return out


def typecheck_signatures(names):
    """(label, python kernel, numba arg types) for every body in `names` and dtype served."""
    from numba import types as nt
    from numba.np.numpy_support import from_dtype
    for name in names:
        nargs = (_BODIES[name] if name in _BODIES else getattr(scalar, name)).__code__.co_argcount
        for dt, res in served_dtypes(name):
            kinds = ("H" if dt == np.float16 else "A") * nargs
            for layout, ndim, lay in (("flat", 1, "C"), ("strided", MAX_DIMS, "A")):
                if layout == "strided" and dt != np.float32:
                    continue                  # index math is dtype-independent: once is enough
                arr = nt.Array(from_dtype(dt), ndim, lay)
                out = nt.Array(from_dtype(res), ndim, lay)
                yield (f"{name}[{layout},{dt}]", _build(name, kinds, layout).py_func,
                       (out,) + (arr,) * nargs)
