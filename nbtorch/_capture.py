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

__all__ = ["refuse_capture", "host_computed", "capturing", "recorded_whole"]

_RECORDING = "nbtorch.fx.passes.recording"
_CONCRETE = "nbtorch.jit._concrete"


def _top_recorder():
    """This thread's recorder when it records at its top level, else None."""
    recording = sys.modules.get(_RECORDING)      # not imported: nothing is capturing
    if recording is None:
        return None
    rec = getattr(recording._LOCAL, "recorder", None)
    return rec if rec is not None and not rec.depth else None


def capturing():
    """True while this thread's graph capture records at its top level: code that would
    compute on the host from tensor data (a constant to the graph) takes a path of ops."""
    return _top_recorder() is not None


def recorded_whole(fn):
    """Decorator: an op made without an autograd Function whose results carry no gradient
    and whose shapes follow its inputs' (argmax's, argsort's indices): a capture records
    the call itself as one node, replayed per call (its raw result would be unknown to
    the graph, which then ran eagerly)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        rec = _top_recorder()
        if rec is None:
            return fn(*args, **kwargs)
        return rec.on_factory(fn, args, kwargs)
    return wrapper


def refuse_capture(op, why):
    """Raise CaptureError when this thread is capturing a graph at its top level; warn
    (TracerWarning, which compile and script turn into running eagerly) while they trace
    with static shapes (sizes read from this result would be frozen)."""
    if _top_recorder() is not None:
        from .fx.passes.lowered_ops import CaptureError
        raise CaptureError(f"{op} {why}: a graph cannot capture it")
    concrete = sys.modules.get(_CONCRETE)
    if concrete is not None and getattr(concrete._STATE, "static_shapes", False):
        concrete.warn_at_user_line(f"{op} {why}. A graph cannot capture it", True)


def host_computed(why):
    """Decorator: the public op refuses a capture (see `refuse_capture`)."""
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            refuse_capture(fn.__name__ + "()", why)
            return fn(*args, **kwargs)
        return wrapper
    return deco
