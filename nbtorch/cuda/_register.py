"""Declares the CUDA device to the registry (imported on the first CUDA dispatch).

`nbtorch._registry.get_kernel(op, 'cuda')` imports this module the first time
a CUDA kernel is asked for. The kernels themselves are listed in one table,
`nbtorch/kernels/cuda/table.py`; each launcher there takes the CPU kernel's
arguments (device arrays instead of NumPy arrays) plus ``stream=``, and is
bound here to the current stream. To add a CUDA kernel: write it and its
launcher in ``kernels/cuda/<family>.py`` (with ``typecheck_signatures()``), add
one line to the table, and drop the op from ``CPU_ONLY`` in
tests/cuda/test_parity.py.
"""
from .._registry import register_device
from . import _runtime
from ._capture import ACTIVE as _CAPTURING


def _floats(a):
    return a.dtype.kind == "f"


# Launchers that add floats with atomics (their sums may differ in the last bits from run
# to run): name -> (PyTorch's name for the op, when the call is affected). They alert under
# nbtorch.use_deterministic_algorithms(True) (see nbtorch/_settings.py).
_NONDETERMINISTIC = {
    "max_pool2d_backward": ("max_pool2d_with_indices_backward_cuda", None),
    "avg_pool2d_backward": ("avg_pool2d_backward_cuda", None),
    "adaptive_avg_pool2d_backward": ("adaptive_avg_pool2d_backward_cuda", None),
    "gather_axis_backward": ("upsample_nearest_backward_out_cuda", None),
    "lerp_axis_backward": ("upsample_linear_backward_out_cuda", None),
    "embedding_backward": ("embedding_backward_cuda", None),
    "put": ("index_put_ with accumulate=True", lambda a: a[3] and _floats(a[2])),
    "bincount": ("_bincount_cuda", lambda a: a[1] is not None and a[1].size > 0
                 and _floats(a[1])),
}


def on_stream(launcher):
    """Wrap a launcher ``f(*args, stream=)`` into a kernel ``f(*args)`` on the current stream."""
    alert = _NONDETERMINISTIC.get(getattr(launcher, "__name__", None))
    if alert is None:
        def run(*args):
            rec = _CAPTURING[0]          # a CUDA graph capture records the call (_capture.py)
            if rec is not None and rec.here():
                return rec.launch(launcher, args, _runtime.raw_stream())
            return launcher(*args, stream=_runtime.raw_stream())
    else:
        from .._settings import _STATE, alert_not_deterministic
        caller, applies = alert

        def run(*args):
            if _STATE["deterministic"] and (applies is None or applies(args)):
                alert_not_deterministic(caller)
            rec = _CAPTURING[0]
            if rec is not None and rec.here():
                return rec.launch(launcher, args, _runtime.raw_stream())
            return launcher(*args, stream=_runtime.raw_stream())
    run.__name__ = getattr(launcher, "__name__", "kernel")
    run.__qualname__ = "cuda." + getattr(launcher, "__qualname__", run.__name__)
    run.__doc__ = launcher.__doc__
    run.launcher = launcher
    return run


register_device("cuda", "nbtorch.kernels.cuda", wrap=on_stream)
