"""The device registry: (op name, device type) -> kernel.

Every op, built-in or a user's own (see `nbtorch.library`), reaches its kernel
through `get_kernel`. Lookups are one dict access; kernels for a device whose
stack is heavy (CUDA) are registered lazily by importing a loader module the
first time that device type is asked for.
"""
import importlib

__all__ = ["register_kernel", "get_kernel", "has_kernel", "registered_ops",
           "unregister_kernel", "register_device_loader"]

_KERNELS = {}
_DEFAULTS = {}           # (op, device) -> the built-in kernel, to undo an override
_LOADERS = {}            # device type -> module path that registers its kernels
_LOADED = set()


def register_kernel(op, device, fn=None, *, override=False):
    """Register `fn` as the kernel of `op` on `device` ('cpu' or 'cuda').

    Registering an op that already has a kernel on that device is an error
    unless ``override=True``; `unregister_kernel` then restores the previous one.
    Usable as a decorator: ``@register_kernel("add", "cpu")``.
    """
    def deco(f):
        key = (op, device)
        if key in _KERNELS and not override:
            raise RuntimeError(
                f"op '{op}' already has a {device} kernel ({_name(_KERNELS[key])}); "
                "pass override=True to replace it")
        if key in _KERNELS:
            _DEFAULTS.setdefault(key, []).append(_KERNELS[key])
        _KERNELS[key] = f
        return f
    return deco if fn is None else deco(fn)


def unregister_kernel(op, device):
    """Remove an override of `op` on `device`, restoring the kernel it replaced."""
    key = (op, device)
    if key not in _KERNELS:
        raise KeyError(f"op '{op}' has no {device} kernel")
    stack = _DEFAULTS.get(key)
    if stack:
        _KERNELS[key] = stack.pop()
    else:
        del _KERNELS[key]


def register_device_loader(device, module):
    """Import `module` (which registers kernels) the first time `device` is used."""
    _LOADERS[device] = module


def _load(device):
    _LOADED.add(device)
    mod = _LOADERS.get(device)
    if mod is not None:
        importlib.import_module(mod)


def get_kernel(op, device):
    """The kernel of `op` on `device`; NotImplementedError naming both if none."""
    try:
        return _KERNELS[(op, device)]
    except KeyError:
        pass
    if device not in _LOADED:
        _load(device)
        if (op, device) in _KERNELS:
            return _KERNELS[(op, device)]
    have = sorted(d for (o, d) in _KERNELS if o == op)
    if not have:
        raise NotImplementedError(f"no op named '{op}' is registered")
    raise NotImplementedError(
        f"{op} has no {device} kernel (have: {', '.join(have)})")


def has_kernel(op, device):
    try:
        get_kernel(op, device)
        return True
    except NotImplementedError:
        return False


def registered_ops(device=None):
    """Sorted op names with a kernel (on `device` if given)."""
    if device is not None and device not in _LOADED:
        _load(device)
    return sorted({o for (o, d) in _KERNELS if device is None or d == device})


def _name(f):
    return getattr(f, "__qualname__", repr(f))
