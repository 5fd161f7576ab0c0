"""torch.overrides: the ``__torch_function__`` protocol's public helpers and
`TorchFunctionMode` (the mechanics, and how nbtorch keeps them free for plain tensors:
`nbtorch._torch_function`).

Example, a tensor subclass that logs every op it goes through::

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            print(torch.overrides.resolve_name(func))
            return super().__torch_function__(func, types, args, kwargs)

    x = torch.randn(3).as_subclass(Logged)
    torch.relu(x * 2)        # prints torch.Tensor.__mul__, torch.relu; returns a Logged
"""
import functools

from . import _torch_function as _tf
from ._torch_function import (DisableTorchFunction, DisableTorchFunctionSubclass,  # noqa: F401
                              _disabled_torch_function_impl, resolve_name)

__all__ = ["has_torch_function", "has_torch_function_unary", "has_torch_function_variadic",
           "handle_torch_function", "is_tensor_like", "is_tensor_method_or_property",
           "resolve_name", "get_ignored_functions", "get_overridable_functions",
           "get_default_nowrap_functions", "wrap_torch_function", "TorchFunctionMode",
           "BaseTorchFunctionMode", "enable_reentrant_dispatch"]


def _enabled():
    return not _tf.STATE.all_off


def has_torch_function(relevant_args):
    """Whether any of `relevant_args` (or a mode) overrides ops: a Tensor subclass or
    Tensor-like with ``__torch_function__`` other than the disabled one."""
    if not _enabled():
        return False
    if _tf.STATE.modes:
        return True
    if _tf.STATE.subclass_off:
        return False
    return any(type(a) is not bool and _tf.participates(type(a)) for a in relevant_args)


def has_torch_function_unary(arg):
    return has_torch_function((arg,))


def has_torch_function_variadic(*args):
    return has_torch_function(args)


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Dispatch `public_api(*args, **kwargs)` to the innermost mode, then to the
    ``__torch_function__`` of `relevant_args`' overriding types (subclasses first)."""
    st = _tf.STATE
    if st.modes and not st.all_off:
        mode = st.modes.pop()
        try:
            kinds = tuple(dict.fromkeys(type(a) for a in _tf.overloaded_args(relevant_args)))
            result = mode.__torch_function__(public_api, kinds, args, kwargs)
        finally:
            st.modes.append(mode)
        if result is not NotImplemented:
            return result
    overloaded = _tf.overloaded_args(tuple(relevant_args))
    if not overloaded:
        raise TypeError(f"no implementation found for '{resolve_name(public_api)}' on types "
                        f"that implement __torch_function__: [] nor in mode "
                        f"{st.modes[-1] if st.modes else None}")
    return _tf.handle(public_api, overloaded, args, kwargs)


def is_tensor_like(inp):
    """True for a Tensor (or subclass) and for any object whose type has
    ``__torch_function__``."""
    from ._tensor import Tensor
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def is_tensor_method_or_property(func):
    """Whether `func` is a method or property of Tensor (``torch.Tensor.add``), as opposed
    to a function (``torch.add``)."""
    from ._tensor import Tensor
    name = getattr(func, "__name__", None)
    if name is None:
        return isinstance(func, property) and func in vars(Tensor).values()
    owner = vars(Tensor).get(name)
    return owner is func or getattr(owner, "__get__", None) == func or (
        isinstance(owner, property) and owner.__get__ == func)


def get_ignored_functions():
    """Functions of the public namespaces that take no tensors, so never dispatch."""
    import nbtorch
    from .fx._patch import _NOT_OPS
    return {getattr(nbtorch, n) for n in _NOT_OPS if callable(getattr(nbtorch, n, None))} | {
        nbtorch.tensor, nbtorch.as_tensor, nbtorch.from_numpy, nbtorch.is_tensor}


def get_default_nowrap_functions():
    """Functions whose results Tensor's default ``__torch_function__`` leaves unconverted."""
    from ._tensor import Tensor
    return {Tensor.grad.__get__} if isinstance(vars(Tensor).get("grad"), property) else set()


def get_overridable_functions():
    """{namespace: [functions]} that ``__torch_function__`` sees: torch, torch.nn.functional,
    linalg, fft, special and the Tensor methods."""
    from ._tensor import Tensor
    from .fx._names import public_namespaces
    from .fx._patch import _is_op_function
    ignored = {id(f) for f in get_ignored_functions()}
    table = {}
    for _, module in public_namespaces():
        table[module] = [f for n, f in vars(module).items()
                         if _is_op_function(n, f) and not isinstance(f, type)
                         and id(f) not in ignored]
    table[Tensor] = [getattr(Tensor, n) for n in _tf._tensor_attribute_names()]
    return table


def wrap_torch_function(dispatcher):
    """A decorator making `func` dispatch to ``__torch_function__`` for the arguments
    ``dispatcher(*args, **kwargs)`` names."""
    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = tuple(dispatcher(*args, **kwargs))
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


class TorchFunctionMode:
    """Sees every public op called inside ``with mode:`` (tensor subclasses or not);
    ops called inside its ``__torch_function__`` go to the next mode outward."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        if not _tf.STATE.modes:
            _tf.mode_pushed()
        _tf.STATE.modes.append(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        _tf.STATE.modes.pop()
        if not _tf.STATE.modes:
            _tf.mode_popped()

    @classmethod
    def push(cls, *args, **kwargs):
        import warnings
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just "
                      "`with Mode()`", stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that runs every op unchanged: subclass it and override what you need."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))


class enable_reentrant_dispatch:
    """PyTorch's context manager for re-entering dispatch from a __torch_dispatch__
    handler; nbtorch has no dispatch level below ``__torch_function__``, so it does
    nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
