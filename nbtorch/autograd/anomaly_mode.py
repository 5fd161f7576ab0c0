"""Anomaly detection (``torch.autograd.detect_anomaly``): while enabled, each recorded
node keeps the stack of the forward call that made it, and the engine checks every
gradient a node returns for NaN ("Function 'DivBackward0' returned nan values in its
0th output."); an error in a backward warns with that forward stack first. It costs a
stack capture per op and a NaN scan per gradient: a debugging mode, off by default.
"""
import traceback
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_anomaly_enabled"]


class _State:
    enabled = False
    check_nan = True


STATE = _State()


def set_anomaly_enabled(enabled, check_nan=True):
    """Turn anomaly detection on or off (``torch.set_anomaly_enabled``)."""
    STATE.enabled, STATE.check_nan = bool(enabled), bool(check_nan)


def is_anomaly_enabled():
    return STATE.enabled


def is_anomaly_check_nan_enabled():
    return STATE.check_nan


class set_detect_anomaly:
    """Set anomaly detection on or off, as a call or a context manager (restoring the
    previous setting on exit)."""

    def __init__(self, mode, check_nan=True):
        self.prev = (STATE.enabled, STATE.check_nan)
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        set_anomaly_enabled(*self.prev)
        return False


class detect_anomaly:
    """``with detect_anomaly():`` forward stacks recorded, backward NaNs raise."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the "
                      "runtime and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self.prev = (STATE.enabled, STATE.check_nan)
        set_anomaly_enabled(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        set_anomaly_enabled(*self.prev)
        return False


def forward_stack():
    """The current Python stack, for a node recorded while anomaly mode is on."""
    return "".join(traceback.format_stack()[:-3])


def run_checked(apply, node, grads, retain_graph):
    """`apply(node, grads, retain_graph)` with the anomaly checks around it."""
    try:
        result = apply(node, grads, retain_graph)
    except Exception:
        stack = getattr(node, "_forward_stack", None)
        if stack:
            warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that "
                          f"caused the error:\n{stack}", stacklevel=2)
        raise
    if STATE.check_nan:
        for i, g in enumerate(result):
            if g is not None and (g.dtype.is_floating_point or g.dtype.is_complex) \
                    and bool((g != g).any()):
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its "
                                   f"{i}th output.")
    return result
