"""``nbtorch.kernels.inspect(op, device, dtype)``: look inside the kernel an op runs.

Returns a `KernelReport`: which kernel the registry dispatches to (name,
module, Python source), the Numba functions that launcher runs (each with its
source, typed signature for the dtype, LLVM IR, assembly, PTX for CUDA, and
compile time), displayed as HTML in Jupyter.

Example:
    >>> r = nbtorch.kernels.inspect("add", device="cpu", dtype=nbtorch.float32)
    >>> r.signatures                   # ['(float32, float32) -> float32']
    >>> print(r.asm[:400])             # the vectorised NumPy loop Numba built
"""
import difflib
import html
import importlib
import inspect as _pyinspect

import numba
import numpy as np

from . import _dtype, _registry
from ._library_op import check_device
_k = importlib.import_module("nbtorch.kernels.introspect")

__all__ = ["inspect", "KernelReport", "FunctionReport"]


class FunctionReport:
    """One Numba function behind a kernel: kind ('njit', 'ufunc', 'cuda'), source, code."""

    def __init__(self, obj, kind, name, module, source):
        self.obj, self.kind, self.name, self.module, self.source = obj, kind, name, module, source
        self.signatures = []       # typed signatures for the dtype, as strings
        self.llvm = self.asm = self.ptx = None
        self.compile_time = None   # seconds, compiling one signature afresh
        self.note = ""

    def __repr__(self):
        sig = ", ".join(self.signatures) or "not compiled for this dtype"
        return f"<{self.kind} {self.module}.{self.name} [{sig}]>"


class KernelReport:
    """What `inspect` found for (op, device, dtype); `_repr_html_` renders it in Jupyter."""

    def __init__(self, op, device, dtype, kernel):
        self.op, self.device, self.dtype, self.kernel = op, device, dtype, kernel
        target = getattr(kernel, "__wrapped__", kernel)
        self.kernel_name = getattr(kernel, "__qualname__", type(kernel).__name__)
        self.kernel_module = getattr(target, "__module__", None) or type(kernel).__module__
        self.source = _source(kernel)
        self.functions = []
        self.notes = []

    def _first(self, attr):
        for f in self.functions:
            v = getattr(f, attr)
            if v:
                return v
        return None

    @property
    def signatures(self):
        return [s for f in self.functions for s in f.signatures]

    @property
    def llvm(self):
        """LLVM IR of the first compiled function (see `functions` for all)."""
        return self._first("llvm")

    @property
    def asm(self):
        return self._first("asm")

    @property
    def ptx(self):
        return self._first("ptx")

    @property
    def compile_time(self):
        """Seconds Numba took to compile the inspected specialisations afresh."""
        times = [f.compile_time for f in self.functions if f.compile_time is not None]
        return sum(times) if times else None

    def __repr__(self):
        lines = [f"kernel of {self.op} on {self.device} for {self.dtype}: "
                 f"{self.kernel_name} ({self.kernel_module})"]
        for f in self.functions:
            t = f" compiled in {f.compile_time:.3f} s" if f.compile_time is not None else ""
            got = [n for n, v in (("llvm", f.llvm), ("asm", f.asm), ("ptx", f.ptx)) if v]
            lines.append(f"  {f.kind} {f.module}.{f.name} {f.signatures}{t}; "
                         f"has {', '.join(got) or 'no code'}{'; ' + f.note if f.note else ''}")
        lines.extend("  note: " + n for n in self.notes)
        return "\n".join(lines)

    def _repr_html_(self):
        def block(title, text, open_=False):
            if not text:
                return ""
            return (f"<details{' open' if open_ else ''}><summary>{html.escape(title)}"
                    f"</summary><pre style='max-height:30em;overflow:auto'>"
                    f"{html.escape(text)}</pre></details>")
        parts = [f"<b>{html.escape(self.op)}</b> on <b>{self.device}</b> for "
                 f"<b>{self.dtype}</b>: <code>{html.escape(self.kernel_name)}</code> "
                 f"({html.escape(str(self.kernel_module))})",
                 block("launcher source", self.source, True)]
        for f in self.functions:
            t = f", compiled in {f.compile_time:.3f} s" if f.compile_time is not None else ""
            parts.append(f"<h4>{f.kind} <code>{html.escape(f.module)}.{html.escape(f.name)}"
                         f"</code>{t}</h4><p>{html.escape(', '.join(f.signatures))} "
                         f"{html.escape(f.note)}</p>")
            parts += [block("source", f.source), block("LLVM IR", f.llvm),
                      block("assembly", f.asm), block("PTX", f.ptx)]
        parts += [f"<p><i>{html.escape(n)}</i></p>" for n in self.notes]
        return "\n".join(p for p in parts if p)


def _source(obj):
    target = getattr(obj, "py_func", None) or getattr(obj, "__wrapped__", None) or obj
    target = getattr(target, "py_func", target)
    try:
        return _pyinspect.getsource(target)
    except (TypeError, OSError):
        try:
            return _pyinspect.getsource(type(obj))
        except (TypeError, OSError):
            return None


def _check_op(op, device):
    known = _registry.registered_ops()
    if op not in known:
        close = difflib.get_close_matches(op, known, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown op '{op}'{hint} (nbtorch.library.ops() lists them)")
    return _registry.get_kernel(op, device)


def _check_dtype(dtype):
    try:
        d = _dtype.get_default_dtype() if dtype is None else _dtype.to_dtype(dtype)
    except TypeError:
        raise TypeError(f"unknown dtype {dtype!r} (expected an nbtorch dtype such as "
                        "nbtorch.float32)") from None
    if d.is_half:
        raise ValueError(f"Numba has no {d.name}: nbtorch computes {d.name} ops in float32 "
                         "(kernels see float32 arrays); inspect dtype=nbtorch.float32")
    return d


def inspect(op, device="cpu", dtype=None, *, fresh=True):
    """Which kernel runs `op` on `device` for `dtype`, its source and what Numba made of it.

    Args:
        op: a registry op name ("add", "sum", "matmul", "myops::scaled_add", ...).
        device: 'cpu' or 'cuda'.
        dtype: nbtorch dtype (default: the default float dtype).
        fresh: recompile (uncached) specialisations whose code was loaded from
            Numba's on-disk cache, which keeps no IR; this is what `compile_time`
            measures.

    CUDA: PTX comes from ``numba.cuda.compile_ptx`` (needs NVVM, not a GPU).
    Without a GPU, elementwise ops are inspected through the CUDA kernel their
    scalar body compiles into.

    Example:
        >>> r = nbtorch.kernels.inspect("sum", dtype=nbtorch.float64)
        >>> r.functions                  # the njit kernels the launcher may run
    """
    dev = check_device(device)
    d = _check_dtype(dtype)
    if dev == "cuda":
        from ._inspect_cuda import inspect_cuda
        return inspect_cuda(op, d, _check_op)
    kernel = _check_op(op, dev)
    report = KernelReport(op, dev, d, kernel)
    objs = _k.find_numba_functions(kernel)
    if not objs:
        report.notes.append("this kernel runs no Numba function (e.g. BLAS through NumPy)")
        return report
    if not any(_k.signatures_for(o, d.np) for o in objs if _k.kind_of(o) == "njit"):
        _warm(op, d)
    for obj in objs:
        report.functions.append(_cpu_function(obj, d, fresh))
    if not report.signatures:
        report.notes.append(f"no {d.name} specialisation of these functions is compiled in "
                            f"this process: run the op once on {d.name} tensors (on the path "
                            "you care about), then inspect again")
    return report


def function_report(obj):
    kind = _k.kind_of(obj)
    py = obj._dispatcher.py_func if kind == "ufunc" else obj.py_func
    return FunctionReport(obj, kind, py.__name__, py.__module__, _source(py))


def _cpu_function(obj, d, fresh):
    f = function_report(obj)
    try:
        if f.kind == "ufunc":
            types = _k.ufunc_types_for(obj, d.np)
            sigs = [s for s in obj._dispatcher.overloads
                    if "".join(np.dtype(numba.np.numpy_support.as_dtype(t)).char
                               for t in s.args) == types.split("->")[0]]
        else:
            sigs = _k.signatures_for(obj, d.np)
    except (numba.core.errors.TypingError, TypeError) as e:
        f.note = f"no {d.name} version: {str(e).splitlines()[0]}"
        return f
    if not sigs:
        f.note = f"not compiled for {d.name} in this process (not used yet)"
        return f
    info = _k.compile_info(obj, sigs[0], fresh=fresh)
    f.signatures = [str(s) for s in sigs]
    f.llvm, f.asm, f.compile_time = info["llvm"], info["asm"], info["compile_time"]
    if info["fresh"]:
        f.note = "recompiled uncached for inspection"
    return f


def _warm(op, d):
    """Compile `op`'s kernels for dtype `d` by calling the public function on a sample."""
    import nbtorch
    from nbtorch.nn import functional as F
    fn = getattr(nbtorch, op, None) or getattr(F, op, None)
    if not callable(fn):
        return
    x = nbtorch.ones((2, 2), dtype=d)
    for args in ((x,), (x, x)):
        try:
            fn(*args)
            return
        except Exception:       # a sample that does not fit the op: nothing compiled
            continue


# `nbtorch.kernels.inspect(...)`: the lookup needs the registry, so the function is
# defined up here and installed on the kernels package (which imports no nbtorch).
_pkg = importlib.import_module("nbtorch.kernels")
_pkg.inspect = inspect
