"""``torch.compiler``: `reset`, `is_compiling`, `disable` for code run by nbtorch.compile."""
from .jit._compile import reset

__all__ = ["reset", "is_compiling", "disable"]


def is_compiling():
    """True while nbtorch.compile (or jit.trace) is tracing the code in this thread."""
    from .jit._concrete import is_tracing
    return is_tracing()


def disable(fn=None, recursive=True):
    """Leave `fn` uncompiled: nbtorch.compile(disable(fn)) runs it eagerly."""
    if fn is None:
        return lambda f: disable(f, recursive)
    fn._nbtorch_compile_disabled = True
    return fn
