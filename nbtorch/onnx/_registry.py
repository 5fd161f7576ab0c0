"""Symbolic functions: how each traced op becomes ONNX nodes.

`FUNCTIONS` maps an op name (the ``__name__`` of a call_function target, or a
call_method's name: ``x.add(y)`` and ``torch.add(x, y)`` share ``'add'``) to
``fn(e, out, *args, **kwargs)``; `MODULES` maps an nn.Module class to
``fn(e, module, out, *args, **kwargs)``. `e` is the `Emitter`, `out` the
concrete result the model computed, and tensor arguments arrive as `Value`s.
A symbolic returns an ONNX name, a `Value`, or a structure of them shaped
like `out`. Modules without an entry are traced through (their forward's ops), and so
are nbtorch functions written with other ops.
"""

__all__ = ["FUNCTIONS", "MODULES", "register", "register_module"]

FUNCTIONS = {}
MODULES = {}


def register(*names):
    """Decorator: the symbolic of the ops called `names`."""
    def deco(fn):
        for n in names:
            FUNCTIONS[n] = fn
        return fn
    return deco


def register_module(*classes):
    """Decorator: the symbolic of calls to modules of `classes` (exact class match)."""
    def deco(fn):
        for c in classes:
            MODULES[c] = fn
        return fn
    return deco
