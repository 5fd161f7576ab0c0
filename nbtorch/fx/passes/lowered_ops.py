"""The call targets of lowered graphs (`lower.py`): one small callable class per kind.

- `FunctionCall`: ``cls.apply(*args)`` of an autograd Function (the op level);
- `ElementwiseCall`: one elementwise kernel of `kernels/elementwise.py` with its compute
  and result dtypes (what fusion reads);
- `InplaceCall`: an in-place Tensor method, recomputed and written back;
- `FunctionForward`: a Function's forward returning the tensors it kept on ctx too;
- `view_of`, `_zeros`: raw views and engine-made zero gradients.

Targets are interned (one object per class / kernel and dtypes), so CSE sees equal
calls as equal, and they name themselves after the op (`mul`, `addmm`) in graphs.
"""
import re

__all__ = ["CaptureError", "FunctionCall", "function_call", "ElementwiseCall",
           "elementwise_call", "InplaceCall", "inplace_call", "FunctionForward",
           "function_forward", "view_of"]


class CaptureError(RuntimeError):
    """The code did something the recorded graph cannot express (see the message)."""


# ---- targets of lowered graphs ----------------------------------------------------------

def _snake(name):
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


class FunctionCall:
    """call_function target running ``cls.apply(*args)`` (one per Function class)."""

    _cache = {}

    def __init__(self, cls):
        self.cls = cls
        self.__name__ = _snake(cls.__name__).lstrip("_") or "fn"
        self.__qualname__ = f"{cls.__qualname__}.apply"
        self.__module__ = cls.__module__

    def __call__(self, *args, **kwargs):
        return self.cls.apply(*args, **kwargs)

    def __repr__(self):
        return f"{self.cls.__module__}.{self.cls.__qualname__}.apply"

    def __reduce__(self):
        return (function_call, (self.cls,))


def function_call(cls):
    """The (interned) FunctionCall target of Function class `cls`."""
    fc = FunctionCall._cache.get(cls)
    if fc is None:
        fc = FunctionCall._cache[cls] = FunctionCall(cls)
    return fc


class ElementwiseCall:
    """call_function target: elementwise kernel `op` over its arguments (tensors or
    numbers), computed in `compute` (a dtype, or one per operand) into a new tensor of
    dtype `out` (nbtorch's `run_elementwise`, without autograd: compiled graphs take their
    gradients from a recorded backward)."""

    _cache = {}

    def __init__(self, op, compute, out):
        self.op, self.compute, self.out = op, compute, out
        self.__name__ = op.rstrip("_")
        self.__qualname__ = f"elementwise.{op}"
        self.__module__ = "nbtorch.kernels.elementwise"

    def __call__(self, *inputs):
        from ...ops._elementwise import run_elementwise
        return run_elementwise(self.op, inputs, self.compute, self.out)

    def __repr__(self):
        c = self.compute
        c = "(" + ", ".join(map(str, c)) + ")" if isinstance(c, tuple) else str(c)
        return f"elementwise.{self.op}[{c}->{self.out}]"

    def __reduce__(self):
        return (elementwise_call, (self.op, self.compute, self.out))


class InplaceCall:
    """call_function target: the in-place form of Function `cls` on its first argument:
    ``dst`` takes the value ``cls.apply(*args)`` (args read dst's current value); returns
    dst. Impure: dead-code elimination and CSE leave it alone."""

    _cache = {}
    _fx_impure = True

    def __init__(self, cls):
        self.cls = cls
        self.__name__ = _snake(cls.__name__).lstrip("_") + "_"
        self.__qualname__ = f"{cls.__qualname__}.inplace"
        self.__module__ = cls.__module__

    def __call__(self, dst, *args, **kwargs):
        from ...ops.copy import raw_copy_
        raw_copy_(dst, self.cls.apply(*args, **kwargs))
        return dst

    def __repr__(self):
        return f"{self.cls.__module__}.{self.cls.__qualname__}.inplace"

    def __reduce__(self):
        return (inplace_call, (self.cls,))


def inplace_call(cls):
    """The (interned) InplaceCall target of Function class `cls`."""
    ic = InplaceCall._cache.get(cls)
    if ic is None:
        ic = InplaceCall._cache[cls] = InplaceCall(cls)
    return ic


class FunctionForward:
    """call_function target: `cls`'s forward run directly (no autograd), returning
    ``(result, *tensors it kept on ctx under `names`)``: for Functions whose backward
    reads such tensors (the compiled backward receives them as saved values)."""

    _cache = {}

    def __init__(self, cls, names, needs):
        self.cls, self.names, self.needs = cls, names, needs
        self.__name__ = _snake(cls.__name__).lstrip("_") + "_forward"
        self.__qualname__ = f"{cls.__qualname__}.forward"
        self.__module__ = cls.__module__

    def __call__(self, *args, **kwargs):
        from ...autograd import grad_mode
        ctx = self.cls._unrecorded_cls()
        ctx.needs_input_grad = self.needs
        state = grad_mode.STATE
        prev, state.enabled = state.enabled, False
        try:
            out = self.cls.forward(ctx, *args, **kwargs)
        finally:
            state.enabled = prev
        kept = []
        for name, index in self.names:
            v = getattr(ctx, name)
            kept.append(v if index is None else v[index])
        return (out,) + tuple(kept)

    def __repr__(self):
        return f"{self.cls.__module__}.{self.cls.__qualname__}.forward"

    def __reduce__(self):
        return (function_forward, (self.cls, self.names, self.needs))


def function_forward(cls, names, needs):
    key = (cls, names, needs)
    ff = FunctionForward._cache.get(key)
    if ff is None:
        ff = FunctionForward._cache[key] = FunctionForward(cls, names, needs)
    return ff


def elementwise_call(op, compute, out):
    """The (interned) ElementwiseCall target for kernel `op` and dtypes."""
    key = (op, compute, out)
    ec = ElementwiseCall._cache.get(key)
    if ec is None:
        ec = ElementwiseCall._cache[key] = ElementwiseCall(op, compute, out)
    return ec


def view_of(base, shape, strides, offset):
    """``base`` seen with `shape` and `strides`, `offset` elements after its own start (a
    raw view an op made; no autograd: lowered graphs run without recording)."""
    return base._view(shape, strides, base._offset + offset)


def _zeros(shape, dtype, device):
    """A gradient the autograd engine materialises as zeros (recorded as a node)."""
    from ... import zeros
    return zeros(shape, dtype=dtype, device=device)


