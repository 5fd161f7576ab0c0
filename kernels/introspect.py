"""What Numba made of a kernel: typed signatures, LLVM IR, assembly, PTX, compile time.

This module works on Numba objects only (no nbtorch imports): `find_numba_functions`
walks a registry kernel (a Python launcher) to the ``@njit`` dispatchers and
ufuncs it runs, and `compile_info` returns the text Numba produced for one
signature. Code Numba loaded from its on-disk cache carries no IR, so by
default the function is recompiled afresh (uncached) for inspection; that
compilation is what `compile_time` measures.

The user-facing function ``nbtorch.kernels.inspect(op, device, dtype)`` needs
the op registry, so it lives in `nbtorch._inspect`, which installs it on this
package when nbtorch is imported (kernels never import the layers above them);
this module keeps its own name so the two never shadow each other.
"""
import dis
import importlib
import time
import types as _pytypes

import numba
import numpy as np

__all__ = ["find_numba_functions", "kind_of", "signatures_for",
           "compile_info", "ufunc_types_for", "ptx_for"]


def kind_of(obj):
    """'ufunc' (DUFunc), 'njit' (CPU dispatcher), 'cuda' (CUDA dispatcher) or None."""
    if isinstance(obj, numba.np.ufunc.dufunc.DUFunc):
        return "ufunc"
    mod = type(obj).__module__
    if mod.startswith("numba.cuda") and hasattr(obj, "py_func"):
        return "cuda"
    if isinstance(obj, numba.core.dispatcher.Dispatcher):
        return "njit"
    return None


def find_numba_functions(fn, depth=3):
    """The Numba functions a kernel launcher `fn` runs, in the order found.

    Looks at an explicit ``__kernels__`` attribute, ``__wrapped__``, closure
    cells, globals the code names and modules it imports inside its body
    (``from nbtorch.kernels.cpu import reduce as k; k.sum_reduce(...)``, or
    ``k = kernel_module("cpu.reduce")``).
    """
    found = []
    _walk(fn, depth, found, set())
    return found


def _walk(fn, depth, found, seen):
    if id(fn) in seen or depth < 0:
        return
    seen.add(id(fn))
    if kind_of(fn) is not None:
        if all(f is not fn for f in found):
            found.append(fn)
        return
    for k in getattr(fn, "__kernels__", ()):
        _walk(k, depth, found, seen)
    wrapped = getattr(fn, "__wrapped__", None)
    if wrapped is not None:
        _walk(wrapped, depth, found, seen)
    code = getattr(fn, "__code__", None)
    if code is None:
        call = getattr(type(fn), "__call__", None)
        if isinstance(call, _pytypes.FunctionType) and depth > 0:
            for v in vars(fn).values():
                if kind_of(v) is not None or isinstance(v, _pytypes.FunctionType):
                    _walk(v, depth - 1, found, seen)
        return
    _elementwise_body(fn, found)
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if kind_of(v) is not None or callable(v):
            _walk(v, depth - 1, found, seen)
    g = getattr(fn, "__globals__", {})
    for name in _all_names(code):
        v = g.get(name)
        if kind_of(v) is not None:
            _walk(v, depth, found, seen)
        elif isinstance(v, _pytypes.FunctionType) and _is_kernel_module(v.__module__):
            _walk(v, depth - 1, found, seen)
    for mod in _imported_modules(code, g):
        for name in _all_names(code):
            v = getattr(mod, name, None)
            if kind_of(v) is not None:
                _walk(v, depth, found, seen)
            elif isinstance(v, _pytypes.FunctionType) and v.__module__ == mod.__name__:
                _walk(v, depth - 1, found, seen)


def _is_kernel_module(name):
    return bool(name) and (name.startswith("nbtorch.kernels") or name.startswith("nbtorch.ops")
                           or name.startswith("nbtorch.nn") or name.startswith("nbtorch.optim"))


def _elementwise_body(fn, found):
    """The elementwise launchers of `cpu/ufuncs.py` close over the scalar body's name."""
    mod = getattr(fn, "__module__", "")
    if mod == "nbtorch.kernels.cpu.ufuncs" and fn.__closure__:
        from nbtorch.kernels.cpu import ufuncs
        for cell in fn.__closure__:
            v = cell.cell_contents
            if isinstance(v, str) and hasattr(ufuncs.scalar, v):
                u = ufuncs.get(v)
                if all(f is not u for f in found):
                    found.append(u)


def _all_names(code):
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, _pytypes.CodeType):
            names.extend(_all_names(c))
    return names


def _imported_modules(code, g):
    """Modules a function imports inside its body (``from a.b import c as k``)."""
    mods, pending = [], None
    for ins in dis.get_instructions(code):
        if ins.opname == "IMPORT_NAME":
            pending = ins.argval
            mod = _try_import(pending, g)
            if mod is not None:
                mods.append(mod)
        elif ins.opname == "IMPORT_FROM" and pending:
            sub = _try_import(f"{pending}.{ins.argval}", g)
            if sub is not None:
                mods.append(sub)
    if "kernel_module" in code.co_names:        # nbtorch._lazy.kernel_module("cpu.reduce")
        for c in code.co_consts:
            if isinstance(c, str) and c.split(".")[0] in ("cpu", "cuda"):
                mod = _try_import("nbtorch.kernels." + c, g)
                if mod is not None:
                    mods.append(mod)
    for c in code.co_consts:
        if isinstance(c, _pytypes.CodeType):
            mods.extend(_imported_modules(c, g))
    return mods


def _try_import(name, g):
    try:
        if name.startswith("."):
            return importlib.import_module(name, g.get("__package__"))
        return importlib.import_module(name)
    except ImportError:
        return None


# ---- signatures -----------------------------------------------------------------------

def _dtypes_in(sig):
    out = set()
    for t in sig:
        t = getattr(t, "dtype", t)
        try:
            out.add(np.dtype(numba.np.numpy_support.as_dtype(t)))
        except (NotImplementedError, TypeError, numba.core.errors.NumbaNotImplementedError):
            pass
    return out


def signatures_for(obj, np_dtype):
    """Compiled signatures of `obj` whose array (or scalar) arguments include `np_dtype`."""
    np_dtype = np.dtype(np_dtype)
    kind = kind_of(obj)
    if kind == "ufunc":
        return [s for s in obj._dispatcher.overloads if np_dtype in _dtypes_in(s.args)]
    sigs = obj.signatures if kind == "njit" else list(getattr(obj, "overloads", {}))
    arrays = [s for s in sigs if any(getattr(t, "dtype", None) is not None and
                                     np.dtype(numba.np.numpy_support.as_dtype(t.dtype))
                                     == np_dtype for t in s)]
    return arrays or [s for s in sigs if np_dtype in _dtypes_in(s)]


def ufunc_types_for(du, np_dtype):
    """The loop type string ('ff->f') of DUFunc `du` for inputs of `np_dtype`, compiled."""
    c = np.dtype(np_dtype).char
    for t in du.ufunc.types:
        if t.split("->")[0] == c * du.nin:
            return t
    ins = [numba.from_dtype(np.dtype(np_dtype))] * du.nin
    cres = du._compile_for_argtys(tuple(ins))
    ret = np.dtype(numba.np.numpy_support.as_dtype(cres.signature.return_type)).char
    return c * du.nin + "->" + ret


# ---- compiling for inspection ---------------------------------------------------------

def compile_info(obj, sig, fresh=True):
    """{'signature', 'llvm', 'asm', 'compile_time', 'fresh'} for `obj` at `sig` (CPU)."""
    kind = kind_of(obj)
    if kind == "ufunc":
        return _ufunc_info(obj, sig)
    cres = obj.overloads.get(sig)
    cached = cres is None or getattr(cres.library, "_disable_inspection", False)
    if cached and not fresh:
        return {"signature": str(sig), "llvm": None, "asm": None, "compile_time": None,
                "fresh": False}
    if not cached:
        timers = (cres.metadata or {}).get("timers", {})
        return {"signature": str(sig), "llvm": obj.inspect_llvm(sig),
                "asm": obj.inspect_asm(sig), "compile_time": timers.get("compiler_lock"),
                "fresh": False}
    opts = {k: v for k, v in obj.targetoptions.items() if k not in ("nopython", "cache")}
    t0 = time.perf_counter()
    copy = numba.njit(sig, cache=False, **opts)(obj.py_func)
    elapsed = time.perf_counter() - t0
    sig2 = copy.signatures[0]
    return {"signature": str(sig), "llvm": copy.inspect_llvm(sig2),
            "asm": copy.inspect_asm(sig2), "compile_time": elapsed, "fresh": True}


def _ufunc_info(du, sig):
    """A fresh compile of the scalar body plus NumPy loop wrapper: the code a ufunc runs."""
    from numba.core.compiler_lock import global_compiler_lock
    from numba.np.ufunc import ufuncbuilder, wrappers
    t0 = time.perf_counter()
    with global_compiler_lock:
        disp = ufuncbuilder.UFuncDispatcher(du._dispatcher.py_func,
                                            targetoptions=dict(du.targetoptions))
        cres = disp.compile(sig)
        info = wrappers.build_ufunc_wrapper(cres.library, cres.target_context,
                                            cres.fndesc.llvm_func_name, cres.signature,
                                            cres.objectmode, cres)
        info.library.finalize()
    elapsed = time.perf_counter() - t0
    return {"signature": str(sig), "llvm": cres.library.get_llvm_str(),
            "asm": info.library.get_asm_str(), "compile_time": elapsed, "fresh": True}


def ptx_for(py_func, argtypes, device=False, cc=None):
    """(PTX text, seconds) of `py_func` compiled for CUDA (needs NVVM, not a GPU)."""
    from numba import cuda
    if cc is None:
        cc = _device_cc()
    t0 = time.perf_counter()
    ptx, _ = cuda.compile_ptx(py_func, tuple(argtypes), device=device, cc=cc)
    return ptx, time.perf_counter() - t0


def _device_cc():
    """The current GPU's compute capability, or 8.0 where no GPU can be opened."""
    from numba import cuda
    try:
        return cuda.get_current_device().compute_capability
    except Exception:            # no driver or no device: PTX for a common target
        return (8, 0)
