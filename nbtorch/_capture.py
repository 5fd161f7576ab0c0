"""Ops that a graph capture (`nbtorch.compile`'s recorder) cannot replay, and say so.

An op whose result is computed on the host from the input's values - an output shape
that depends on the data (``nonzero``, ``unique``, boolean-mask indexing) or values
filled in by a raw kernel (``bincount``, ``histc``) - has no graph node that would
recompute it: recorded, it would replay the first call's result. Called at the top level
of a capture, such an op raises the recorder's CaptureError instead, and in compile's
trace (static shapes: sizes read as Python ints) a TracerWarning, so compile runs that
function eagerly and says why (``fullgraph=True``: an error), as torch.compile breaks its
graph at data-dependent output shapes. Inside a recorded op it is part of that op;
``jit.trace`` (whose graph calls the op again) is left alone.
"""
import functools
import sys

__all__ = ["refuse_capture", "host_computed", "capturing"]

_RECORDING = "nbtorch.fx.passes.recording"
_CONCRETE = "nbtorch.jit._concrete"


def capturing():
    """True while this thread's graph capture records at its top level: code that would
    compute on the host from tensor data (a constant to the graph) takes a path of ops."""
    recording = sys.modules.get(_RECORDING)
    if recording is None:
        return False
    rec = getattr(recording._LOCAL, "recorder", None)
    return rec is not None and not rec.depth


def refuse_capture(op, why):
    """Raise CaptureError when this thread is capturing a graph at its top level; warn
    (TracerWarning, which compile and script turn into running eagerly) while they trace
    with static shapes (sizes read from this result would be frozen)."""
    recording = sys.modules.get(_RECORDING)      # not imported: nothing is capturing
    if recording is not None:
        rec = getattr(recording._LOCAL, "recorder", None)
        if rec is not None and not rec.depth:
            from .fx.passes.lowered_ops import CaptureError
            raise CaptureError(f"{op}() {why}: a graph cannot capture it")
    concrete = sys.modules.get(_CONCRETE)
    if concrete is not None and getattr(concrete._STATE, "static_shapes", False):
        concrete.warn_at_user_line(f"{op}() {why}. A graph cannot capture it", True)


def host_computed(why):
    """Decorator: the public op refuses a capture (see `refuse_capture`)."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            refuse_capture(fn.__name__, why)
            return fn(*args, **kwargs)
        return wrapper
    return deco
