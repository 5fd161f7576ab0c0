"""nbtorch.jit: tracing into the fx graph IR, compiled and saved graphs (``torch.jit``'s API).

`trace` runs a function or module on example inputs and records the ops that
ran into an `nbtorch.fx.Graph` (the one IR that fusion, compile, save/load
and export build on); Python control flow is frozen at the example's values.
`script` compiles per input kind (shapes, dtypes...) by tracing, so control
flow on shapes and Python values stays correct; `save`/`load` store a traced
graph with its weights in nbtorch's safe format; `freeze` and
`optimize_for_inference` fold weights into constants and compile; `inspect`
shows the generated fused kernels of a compiled model (`nbtorch.compile`).
TorchScript's annotations and switches (`export`, `Final`, `annotate`, `isinstance`,
`fork`/`wait`, `fuser`...) have their eager meanings (`_annotations.py`).
"""
from ._annotations import (Attribute, Error, Final, Future, ScriptWarning, annotate,
                           enable_onednn_fusion, export, fork, fuser, interface, isinstance,
                           onednn_fusion_enabled, optimized_execution, script_if_tracing,
                           script_method, set_fusion_strategy, strict_fusion, trace_module,
                           wait)
from ._check import TracingCheckError
from ._concrete import TracerWarning, compiling as _compiling, is_tracing as _is_tracing
from ._scripting import is_scripting
from ._trace import trace
from ._traced import ScriptFunction, ScriptModule, TracedFunction, TracedModule

__all__ = ["trace", "TracerWarning", "TracingCheckError", "is_tracing", "is_scripting",
           "TracedModule", "TracedFunction", "ScriptModule", "ScriptFunction", "script",
           "ignore", "unused", "freeze",
           "optimize_for_inference", "save", "load", "inspect", "ScriptError", "export",
           "interface", "script_method", "script_if_tracing", "Final", "annotate",
           "isinstance", "Attribute", "fork", "wait", "Future", "Error", "ScriptWarning",
           "optimized_execution", "fuser", "enable_onednn_fusion", "onednn_fusion_enabled",
           "set_fusion_strategy", "strict_fusion", "trace_module"]


def is_tracing():
    """True while `nbtorch.jit.trace` runs the traced code in this thread; False under
    nbtorch.compile, as torch.jit.is_tracing() is under torch.compile (code taking a
    trace-only branch there gave other results than eager)."""
    return _is_tracing() and not _compiling()


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Compile `obj` per input kind by tracing (see `nbtorch.jit._script`)."""
    from ._script import script as _script
    return _script(obj, optimize, _frames_up, _rcb, example_inputs)


def ignore(drop=False, **kwargs):
    """Keep a function out of scripted/traced graphs (recorded as one Python call)."""
    from ._script import ignore as _ignore
    return _ignore(drop, **kwargs)


def unused(fn):
    """Mark a method that scripted code must not call (it raises there)."""
    from ._script import unused as _unused
    return _unused(fn)


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Fold the weights of a traced/scripted eval-mode module into constants (a copy)."""
    from ._script import freeze as _freeze
    return _freeze(mod, preserved_attrs, optimize_numerics)


def optimize_for_inference(mod, other_methods=None):
    """Freeze and compile a traced/scripted module for inference."""
    from ._script import optimize_for_inference as _ofi
    return _ofi(mod, other_methods)


def save(m, f, _extra_files=None):
    """Save a traced, scripted (the trace of its last call's input signature) or loaded
    module/function (graph + weights) in nbtorch's safe format; ``m.save(f)`` is the same."""
    from ._save import save as _save
    return _save(m, f, _extra_files)


def load(f, map_location=None, _extra_files=None):
    """Load a `save`d graph: a GraphModule that needs no import of the model's class."""
    from ._save import load as _load
    return _load(f, map_location, _extra_files)


def inspect(compiled, code=True):
    """The fused kernels of a compiled model: source, LLVM IR, assembly, compile time."""
    from ._inspect import inspect as _inspect
    return _inspect(compiled, code)


def __getattr__(name):
    if name == "ScriptError":
        from . import _script
        return getattr(_script, name)
    if name == "CompileError":
        from ._compile import CompileError
        return CompileError
    raise AttributeError(f"module 'nbtorch.jit' has no attribute '{name}'")
