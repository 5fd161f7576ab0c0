"""nbtorch.jit: tracing into the fx graph IR (``torch.jit.trace``'s API).

`trace` runs a function or module on example inputs and records the ops that
ran into an `nbtorch.fx.Graph` (the one IR that fusion, compile, save/load
and export build on); Python control flow is frozen at the example's values.
"""
from ._check import TracingCheckError
from ._concrete import TracerWarning, is_tracing
from ._trace import trace
from ._traced import TracedFunction, TracedModule

__all__ = ["trace", "TracerWarning", "TracingCheckError", "is_tracing", "is_scripting",
           "TracedModule", "TracedFunction"]


def is_scripting():
    """False: nbtorch has no TorchScript compiler (code may branch on this as in PyTorch)."""
    return False
