"""Recording the device work of a CUDA graph capture (see `graphs.py` for the contract).

While a `Recorder` is active on a thread, that thread's device work is recorded
as it runs:

- every call of a registry kernel (`_register.on_stream`: all built-in ops and
  ``nbtorch.library`` ops) as (launcher, arguments, result). Replaying calls the
  launcher again on the same device arrays, so outputs land in the same buffers;
  random launchers draw a fresh Philox key from the generator on each call, so
  a replay gives fresh random numbers, as PyTorch's graph-safe generators do.
- every ``numba.cuda`` kernel launched outside a registry kernel (the fused
  kernels of ``nbtorch.compile``, a user's own kernels) as (kernel, launch
  configuration, arguments), relaunched as they were.

Host <-> device copies during capture raise (`check_transfer`), as they do in
PyTorch ("operation not permitted when stream is capturing"): their data would
not be read again on replay. Host-side Python (shapes, control flow, checks) runs
only at capture, exactly what a real CUDA graph freezes too.
"""
import threading

__all__ = ["ACTIVE", "Recorder", "check_transfer", "CAPTURE_ERROR"]

ACTIVE = [None]              # the Recorder capturing now (one capture at a time, as PyTorch)

CAPTURE_ERROR = "CUDA error: operation not permitted when stream is capturing"


class Recorder:
    """The nodes of one capture: ("launcher", fn, args, result) / ("kernel", ...)."""

    def __init__(self):
        self.thread = threading.get_ident()
        self.nodes = []
        self.inside = 0                  # > 0 while a registry launcher runs
        self._restore = []

    def here(self):
        return threading.get_ident() == self.thread

    # ---- registry launchers -------------------------------------------------
    def launch(self, launcher, args, stream):
        """Run a registry launcher now and record it for replay (a launcher run by another
        launcher is part of that one's replay, not a node of its own)."""
        if self.inside:
            return launcher(*args, stream=stream)
        self.inside += 1
        try:
            result = launcher(*args, stream=stream)
        finally:
            self.inside -= 1
        self.nodes.append(("launcher", launcher, args, result))
        return result

    # ---- raw numba kernels ----------------------------------------------------
    def start(self, simulator):
        """Intercept raw kernel launches (restored by `stop`)."""
        if simulator:
            from numba.cuda.simulator.kernel import FakeCUDAKernel as cls
            name = "__call__"
        else:
            from numba.cuda.dispatcher import CUDADispatcher as cls
            name = "call"
        original = cls.__dict__.get(name, getattr(cls, name))
        wrapper = _sim_wrapper(self, original) if simulator else _gpu_wrapper(self, original)
        setattr(cls, name, wrapper)
        self._restore.append((cls, name, original))

    def stop(self):
        for cls, name, original in reversed(self._restore):
            setattr(cls, name, original)
        self._restore.clear()


def _sim_wrapper(rec, original):
    def __call__(kernel, *args):
        if not kernel._device and rec.inside == 0 and rec.here():
            config = (kernel.grid_dim, kernel.block_dim, 0, kernel.dynshared_size)
            rec.nodes.append(("kernel", kernel, config, args))
        return original(kernel, *args)
    return __call__


def _gpu_wrapper(rec, original):
    def call(dispatcher, args, griddim, blockdim, stream, sharedmem):
        if rec.inside == 0 and rec.here():
            rec.nodes.append(("kernel", dispatcher, (griddim, blockdim, sharedmem), args))
        return original(dispatcher, args, griddim, blockdim, stream, sharedmem)
    return call


def relaunch(node, stream, simulator):
    """Launch a recorded raw kernel again, on `stream`."""
    _, kernel, config, args = node
    if simulator:
        grid, block, _, shared = config
        return kernel[grid, block, 0, shared](*args)
    griddim, blockdim, sharedmem = config
    return kernel.call(args, griddim, blockdim, stream, sharedmem)


def check_transfer(x, src, dst):
    """Refuse a host <-> device (or cross-device) copy during capture on this thread. A 0-d
    host tensor may go to the device (its value is frozen into the graph, as PyTorch
    freezes a CPU scalar tensor passed to a CUDA kernel)."""
    rec = ACTIVE[0]
    if rec is None or not rec.here():
        return
    if src.type == "cpu" and dst.type == "cuda" and x.dim() == 0:
        return
    raise RuntimeError(f"{CAPTURE_ERROR} (nbtorch: a copy from {src} to {dst} inside CUDA "
                       "graph capture would not be repeated by replay; copy inputs into the "
                       "graph's static tensors before replay() and read outputs after it. "
                       "Ops whose CUDA path reads indices on the host - embedding, gather, "
                       "index_select, tensor indexing, nll_loss/cross_entropy - cannot be "
                       "captured)")
