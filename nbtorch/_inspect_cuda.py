"""The CUDA half of `nbtorch.kernels.inspect`: PTX of the kernel an op runs on CUDA.

PTX comes from ``numba.cuda.compile_ptx``, which needs NVVM but no GPU (the
compute capability is the GPU's, or 8.0 without one). Elementwise ops (built-in
or `nbtorch.library.elementwise`) run their scalar body inside the shared
grid-stride kernels of `kernels/cuda/gridstride.py`; their PTX is that kernel's
contiguous ("flat") variant for the dtype. A user's ``cuda.jit`` kernel shows
the PTX of the signatures it has compiled (run it once first).
"""
import importlib

import numba
import numpy as np

from . import _registry
from ._inspect import FunctionReport, KernelReport, _source
_k = importlib.import_module("nbtorch.kernels.introspect")

__all__ = ["inspect_cuda"]


def _cuda_kernel(op, check_op):
    """The registered CUDA kernel, or None where CUDA cannot start (no GPU, no simulator)."""
    if (op, "cuda") in _registry._KERNELS:
        return _registry._KERNELS[(op, "cuda")]
    try:
        return check_op(op, "cuda")
    except RuntimeError:         # CUDA unavailable: inspect what the kernel would be
        check_op(op, "cpu")
        return None


def _scalar_body(op, kernel):
    """(body name, scalar function, CPU DUFunc) of an elementwise op, or None."""
    from nbtorch.kernels import scalar
    body = getattr(kernel, "body", None)
    if body is not None:                      # nbtorch.library.elementwise
        cpu = _registry._KERNELS.get((op, "cpu"))
        return body, kernel.scalar_fn, getattr(cpu, "ufunc", None)
    from nbtorch.kernels.elementwise import OPS
    if op in OPS:                             # the built-in table: body named like the op
        from nbtorch.kernels.cpu import ufuncs
        return op, getattr(scalar, op), ufuncs.get(op)
    return None


def inspect_cuda(op, d, check_op):
    kernel = _cuda_kernel(op, check_op)
    report = KernelReport(op, "cuda", d, kernel)
    if kernel is None:
        report.kernel_name = "(CUDA unavailable here)"
        report.notes.append("no GPU: showing the CUDA kernel this op's scalar body compiles "
                            "into (PTX needs NVVM only)")
    body = _scalar_body(op, kernel)
    if body is not None:
        report.functions.append(_elementwise_ptx(*body, d))
        return report
    for obj in _k.find_numba_functions(kernel) if kernel is not None else ():
        report.functions.append(_dispatcher_ptx(obj, d))
    if not report.functions:
        report.notes.append("no Numba CUDA function found behind this kernel")
    return report


def _simulated():
    from numba.cuda.core import config
    return bool(config.ENABLE_CUDASIM)


def _elementwise_ptx(name, scalar_fn, cpu_ufunc, d):
    f = FunctionReport(scalar_fn, "cuda", name, scalar_fn.__module__, _source(scalar_fn))
    if cpu_ufunc is None:
        f.note = "no CPU ufunc to type the scalar body"
        return f
    types = _k.ufunc_types_for(cpu_ufunc, d.np)
    ins, out = types.split("->")
    f.signatures = [f"({', '.join(np.dtype(c).name for c in ins)}) -> {np.dtype(out).name}"]
    if _simulated():
        f.note = "CUDA simulator: no PTX (run without NUMBA_ENABLE_CUDASIM to see it)"
        return f
    from nbtorch.kernels.cuda import gridstride as cuda_gridstride
    if name.startswith("user_"):
        cuda_gridstride.register_body(name, scalar_fn)
    k = cuda_gridstride._build(name, "A" * len(ins), "flat")
    arr = [numba.types.Array(numba.from_dtype(np.dtype(c)), 1, "C") for c in out + ins]
    try:
        f.ptx, f.compile_time = _k.ptx_for(k.py_func, arr)
        f.note = "PTX of the contiguous ('flat') elementwise kernel"
    except Exception:
        # numba-cuda compiles a kernel's device-function calls for the current GPU: without
        # one, show the scalar body compiled as a device function instead
        scalars = [numba.from_dtype(np.dtype(c)) for c in ins]
        try:
            f.ptx, f.compile_time = _k.ptx_for(scalar_fn, scalars, device=True)
            f.note = "no GPU: PTX of the scalar body as a device function"
        except Exception as e:      # no NVVM here: say so instead of failing the report
            f.note = f"PTX unavailable: {type(e).__name__}: {str(e).splitlines()[0]}"
    f.llvm = None
    return f


def _dispatcher_ptx(obj, d):
    kind = _k.kind_of(obj)
    py = obj.py_func
    f = FunctionReport(obj, kind, py.__name__, py.__module__, _source(py))
    if _simulated():
        f.note = "CUDA simulator: kernels are interpreted, not compiled (no signature, no PTX)"
        return f
    sigs = _k.signatures_for(obj, d.np) if kind == "cuda" else []
    if not sigs:
        f.note = (f"no {d.name} specialisation compiled yet: launch the kernel once on "
                  f"{d.name} data (or on a GPU), then inspect again")
        return f
    f.signatures = [str(s) for s in sigs]
    try:
        f.ptx = obj.inspect_asm(sigs[0])
        f.llvm = obj.inspect_llvm(sigs[0])
    except Exception as e:
        f.note = f"PTX unavailable: {type(e).__name__}: {str(e).splitlines()[0]}"
    return f
