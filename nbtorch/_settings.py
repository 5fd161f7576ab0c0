"""Global switches PyTorch keeps at the top level: deterministic algorithms and the
float32 matmul precision (``torch.use_deterministic_algorithms``,
``torch.set_float32_matmul_precision``).

nbtorch's CPU kernels are deterministic; some CUDA backward kernels accumulate with
float atomics (pooling, interpolation, embedding, ``index_put_(accumulate=True)``), so
their sums may vary in the last bits from run to run. Ops that run those kernels call
`alert_not_deterministic`, which raises (or warns, with ``warn_only=True``) while
deterministic algorithms are requested, as PyTorch's ops do. The matmul precision is
recorded for programs that read it back: nbtorch's float32 matmuls always compute in
float32 (no TF32).
"""
import warnings

__all__ = ["use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "alert_not_deterministic"]

_STATE = {"deterministic": False, "warn_only": False, "matmul_precision": "highest",
          "fill_uninitialized_memory": True}      # torch.utils.deterministic's switch
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def fill_uninitialized(t):
    """What PyTorch does to `empty()`'s memory while deterministic algorithms are on (and
    torch.utils.deterministic.fill_uninitialized_memory): NaN for floating and complex
    tensors, the largest value for integers (True for bool), so reads of memory never
    written are reproducible."""
    d = t.dtype
    if d.is_floating_point or d.is_complex:
        value = float("nan")
    elif d.name == "bool":
        value = True
    else:
        from . import iinfo
        value = iinfo(d).max
    from .autograd import no_grad
    with no_grad():
        t.fill_(value)
    return t


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Make ops without a deterministic kernel raise (warn, given `warn_only`)."""
    if not isinstance(mode, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'mode' (position 1) must "
                        f"be bool, not {type(mode).__name__}")
    _STATE["deterministic"] = mode
    _STATE["warn_only"] = bool(warn_only) and mode


def are_deterministic_algorithms_enabled():
    return _STATE["deterministic"]


def is_deterministic_algorithms_warn_only_enabled():
    return _STATE["warn_only"]


def set_deterministic_debug_mode(debug_mode):
    """0/'default': off; 1/'warn': warn; 2/'error': raise (`use_deterministic_algorithms`)."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, "
                               f"`warn`, `error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError("debug_mode must be str or int, but got "
                        f"{type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    if not _STATE["deterministic"]:
        return 0
    return 1 if _STATE["warn_only"] else 2


def alert_not_deterministic(caller):
    """Called by an op about to run a kernel whose result may vary between runs."""
    if not _STATE["deterministic"]:
        return
    msg = (f"{caller} does not have a deterministic implementation, but you set "
           "'torch.use_deterministic_algorithms(True)'. You can turn off determinism just "
           "for this operation, or you can use the 'warn_only=True' option, if that's "
           "acceptable for your application.")
    if _STATE["warn_only"]:
        warnings.warn(msg, UserWarning, stacklevel=3)
    else:
        raise RuntimeError(msg)


def set_float32_matmul_precision(precision):
    """'highest' (float32), 'high' or 'medium' (PyTorch may then use TF32/bfloat16 on
    GPUs); nbtorch records the choice and keeps computing in float32."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _STATE["matmul_precision"] = precision


def get_float32_matmul_precision():
    return _STATE["matmul_precision"]
