"""``nbtorch.jit.inspect(compiled)``: the fused kernels a compiled model runs, looked inside.

For every fused group of every compiled graph (forward and backward of each
guard set), a `FusedKernelReport`: the group's steps, the generated source
file (the module Numba compiles and caches), and for each kernel variant that
ran (serial / parallel rows, CUDA) its typed signature, LLVM IR, assembly (or
PTX) and compile time. Code Numba loaded from its disk cache carries no IR,
so the kernel is compiled afresh for inspection (`nbtorch.kernels.inspect`'s
machinery); that compile is what `compile_time` measures.

Example:
    >>> fast = nbtorch.compile(model); fast(x)
    >>> r = nbtorch.jit.inspect(fast)
    >>> print(r.kernels[0].source)
    >>> print(r.kernels[0].asm[:600])
"""
import html
import importlib

from ..fx.passes.fused_kernel import FusedKernel
from ..fx.passes.memory_plan import PlannedCall

__all__ = ["inspect", "JitReport", "FusedKernelReport"]

_k = importlib.import_module("nbtorch.kernels.introspect")


class FusedKernelReport:
    """One fused kernel: `name`, `graph` ('forward'/'backward'), `steps` (text), `source`,
    `path` (the generated file), and per compiled variant `variants` (dicts with
    'function', 'signature', 'llvm', 'asm', 'ptx', 'compile_time')."""

    def __init__(self, fk, graph):
        from nbtorch.kernels import fusion
        self.kernel = fk
        self.name = fk.name
        self.graph = graph
        self.shape = fk.shape
        self.device = fk.device
        self.variants = []
        sources = fk.sources()
        self.kinds = list(sources)
        self.source = next(iter(sources.values()), None)
        self.steps = fusion.describe(fk.program(self.kinds[0])) if self.kinds else None
        self.path = None

    def _variant(self, key, default=None):
        for v in self.variants:
            if v.get(key):
                return v[key]
        return default

    @property
    def llvm(self):
        return self._variant("llvm")

    @property
    def asm(self):
        return self._variant("asm")

    @property
    def ptx(self):
        return self._variant("ptx")

    @property
    def compile_time(self):
        return self._variant("compile_time")

    def __repr__(self):
        return (f"<FusedKernelReport {self.name} ({self.graph}, shape {list(self.shape)}, "
                f"{len(self.variants)} compiled variant(s))>")


class JitReport:
    """All fused kernels of a compiled object (`kernels`) and its graphs' code (`graphs`)."""

    def __init__(self):
        self.kernels = []
        self.graphs = {}

    def __iter__(self):
        return iter(self.kernels)

    def __len__(self):
        return len(self.kernels)

    def __str__(self):
        out = []
        for name, code in self.graphs.items():
            out.append(f"==== graph {name} ====\n{code.strip()}\n")
        for r in self.kernels:
            t = f"{r.compile_time:.2f} s" if r.compile_time else "not compiled"
            out.append(f"==== kernel {r.name} ({r.graph}; compile {t}) ====\n{r.steps}\n")
        return "\n".join(out)

    def _repr_html_(self):
        parts = []
        for r in self.kernels:
            t = f"{r.compile_time:.2f} s" if r.compile_time else "not compiled"
            parts.append(f"<h4>{html.escape(r.name)} <small>({r.graph}, compile {t})</small></h4>"
                         f"<pre>{html.escape(r.steps or '')}</pre>"
                         f"<details><summary>generated source</summary><pre>"
                         f"{html.escape(r.source or '')}</pre></details>"
                         f"<details><summary>assembly</summary><pre>"
                         f"{html.escape((r.asm or r.ptx or '')[:20000])}</pre></details>")
        return "".join(parts) or "<p>no fused kernels</p>"


def _graph_modules(obj):
    """[(label, GraphModule)] of a compiled object, CompiledGraph or GraphModule."""
    from ..fx.graph_module import GraphModule
    from ._compiled import CompiledGraph
    compiled = getattr(obj, "_compiled", obj)           # OptimizedModule -> its compiled
    if hasattr(compiled, "_cache"):
        out = []
        for i, entry in enumerate(compiled._cache.values()):
            entries = entry.values() if isinstance(entry, dict) else [entry]
            for j, e in enumerate(entries):
                cg = getattr(e, "cg", None)
                if cg is not None:
                    tag = f"{i}" if not isinstance(entry, dict) else f"{i}.{j}"
                    out += [(f"{tag}:{k}", gm) for k, gm in cg.graphs().items() if gm is not None]
        return out
    if isinstance(compiled, CompiledGraph):
        return [(k, gm) for k, gm in compiled.graphs().items() if gm is not None]
    gm = getattr(compiled, "graph_module", compiled)
    if isinstance(gm, GraphModule):
        return [("graph", gm)]
    raise TypeError(f"nbtorch.jit.inspect: expected a compiled model or function "
                    f"(nbtorch.compile), a traced module or a GraphModule, got "
                    f"{type(obj).__name__}")


def _fused_of(gm):
    out = []
    for n in gm.graph.nodes:
        t = n.target
        if isinstance(t, PlannedCall):
            t = t.fk
        if isinstance(t, FusedKernel):
            out.append(t)
    return out


def inspect(obj, code=True):
    """Report on the fused kernels of `obj` (see the module docstring); with `code`,
    each compiled kernel is compiled afresh to get its LLVM IR and assembly/PTX."""
    if isinstance(obj, (FusedKernel, PlannedCall)):
        fk = obj.fk if isinstance(obj, PlannedCall) else obj
        report = JitReport()
        report.kernels.append(_report(fk, "kernel", code))
        return report
    report = JitReport()
    for label, gm in _graph_modules(obj):
        report.graphs[label] = gm.code
        for fk in _fused_of(gm):
            report.kernels.append(_report(fk, label, code))
    return report


def _report(fk, label, code):
    r = FusedKernelReport(fk, label)
    for kinds, k in fk._kernels.items():
        if fk.device.type == "cuda":
            r.variants.append(_cuda_variant(fk, kinds, k, code))
            continue
        for disp in k:
            r.path = r.path or getattr(disp.py_func, "__code__", None) and \
                disp.py_func.__code__.co_filename
            for sig in list(disp.signatures):
                v = {"function": disp.__name__, "kinds": kinds, "signature": str(sig)}
                if code:
                    info = _k.compile_info(disp, sig)
                    v.update(llvm=info["llvm"], asm=info["asm"],
                             compile_time=info["compile_time"])
                r.variants.append(v)
    return r


def _cuda_variant(fk, kinds, launcher, code):
    v = {"function": getattr(launcher, "__name__", "cuda"), "kinds": kinds}
    kernel = getattr(launcher, "kernel", None)
    if code and kernel is not None and getattr(launcher, "argtypes", None):
        try:
            ptx, seconds = _k.ptx_for(kernel.py_func, launcher.argtypes)
            v.update(ptx=ptx, compile_time=seconds)
        except Exception as e:         # no NVVM on this machine
            v["note"] = f"PTX not available: {type(e).__name__}: {e}"
    return v
