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

from nbtorch.kernels import scalar
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


def _device_fn(name):
    fn = _DEVICE_FNS.get(name)
    if fn is None:
        py = _BODIES[name] if name in _BODIES else getattr(scalar, name)
        fn = _DEVICE_FNS[name] = (cuda.jit(device=True)(py) if SIMULATOR else
                                  cuda.jit(device=True, inline="always")(py))
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


def merged_layout(shape, strides_list):
    """Drop size-1 dims and merge neighbours contiguous in every stride set (bytes).

    Returns (shape, [strides per array]) with at least one dim.
    """
    dims = [i for i, s in enumerate(shape) if s != 1]
    if not dims:
        return (1,), [(0,) for _ in strides_list]
    out_shape = [shape[dims[0]]]
    out_strides = [[st[dims[0]]] for st in strides_list]
    for i in dims[1:]:
        n = shape[i]
        if all(o[-1] == st[i] * n for o, st in zip(out_strides, strides_list)):
            out_shape[-1] *= n
            for o, st in zip(out_strides, strides_list):
                o[-1] = st[i]
        else:
            out_shape.append(n)
            for o, st in zip(out_strides, strides_list):
                o.append(st[i])
    return tuple(out_shape), [tuple(o) for o in out_strides]


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
