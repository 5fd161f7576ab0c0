"""``torch.compiler``: the controls of `nbtorch.compile` that PyTorch code calls.

`reset`, `is_compiling`, `disable`, `set_stance` (run compiled code eagerly, or refuse or
skip recompiles), `list_backends`, and the markers that tell TorchDynamo what to trace
(`allow_in_graph`, `assume_constant_result`), which nbtorch's tracer, recording the ops
that run, does not need: they return their function.
"""
import functools

from .jit._compile import STANCE, reset

__all__ = ["reset", "is_compiling", "is_dynamo_compiling", "is_exporting", "disable",
           "set_stance", "list_backends", "allow_in_graph", "assume_constant_result",
           "cudagraph_mark_step_begin"]

_STANCES = ("default", "force_eager", "eager_on_recompile", "fail_on_recompile")


def is_compiling():
    """True while nbtorch.compile (or jit.trace) is tracing the code in this thread."""
    from .jit._concrete import is_tracing
    return is_tracing()


is_dynamo_compiling = is_compiling


def is_exporting():
    """True while `nbtorch.onnx.export` runs the code (nbtorch has no torch.export: its
    exporter is the ONNX one)."""
    from .onnx import is_in_onnx_export
    return is_in_onnx_export()


def disable(fn=None, recursive=True):
    """Leave `fn` uncompiled: nbtorch.compile(disable(fn)) runs it eagerly."""
    if fn is None:
        return lambda f: disable(f, recursive)
    fn._nbtorch_compile_disabled = True
    return fn


class set_stance:
    """Change how every compiled function runs, as ``torch.compiler.set_stance``: 'default',
    'force_eager' (run the original code), 'eager_on_recompile' (keep the graphs made so
    far; a new input kind runs eagerly instead of compiling), 'fail_on_recompile' (a new
    input kind after the first graph is a RuntimeError). Takes effect when called; as a
    context manager or decorator the previous stance comes back on exit."""

    def __init__(self, stance="default", *, skip_guard_eval_unsafe=False, force_backend=None):
        if stance not in _STANCES:
            raise RuntimeError(f"invalid torch.compiler.set_stance stance {stance!r} (have: "
                               f"{', '.join(_STANCES)})")
        if force_backend is not None and stance != "default":
            raise RuntimeError("force_backend can only be used with the default stance")
        self.stance, self.previous = stance, STANCE[0]
        STANCE[0] = stance

    def __enter__(self):
        STANCE[0] = self.stance
        return self

    def __exit__(self, *exc):
        STANCE[0] = self.previous
        return False

    def __call__(self, fn):
        stance = self.stance
        STANCE[0] = self.previous           # as a decorator: only while fn runs

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            old, STANCE[0] = STANCE[0], stance
            try:
                return fn(*args, **kwargs)
            finally:
                STANCE[0] = old
        return wrapper


def list_backends(exclude_tags=("debug", "experimental")):
    """The backend names `nbtorch.compile` accepts ("inductor" is "numba" here)."""
    return ["eager", "inductor", "numba"]


def allow_in_graph(fn):
    """Let TorchDynamo put `fn` in the graph as one call; nbtorch records the ops `fn` runs,
    so `fn` is returned as it is."""
    return fn


def assume_constant_result(fn):
    """Treat `fn`'s result as a constant while compiling; nbtorch's trace runs it (and
    guards the Python values it read), so `fn` is returned as it is."""
    return fn


def cudagraph_mark_step_begin():
    """Mark a training step's start for CUDA graphs ("reduce-overhead"); nbtorch records no
    CUDA graphs, so nothing to do."""
