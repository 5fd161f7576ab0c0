"""The device registry: (op name, device type) -> kernel.

Every op, built-in or a user's own (see `nbtorch.library`), reaches its kernel
through `get_kernel`; a lookup is one dict access once the kernel is resolved.

Built-in kernels are declared, one table per device, beside the kernels
themselves (`nbtorch/kernels/cpu/table.py`, `nbtorch/kernels/cuda/table.py`:
``op -> "family.launcher"``). The registry reads a device's table the first
time that device is asked for, and imports a kernel family only when one of
its ops is first called, so `import nbtorch` compiles and imports no kernel
module it does not use. A device can wrap each of its launchers on the way in
(CUDA binds the current stream). Users' kernels (`register_kernel`,
`nbtorch.library`) go into the same dict and may override a table's entry.
"""
import importlib
import threading

__all__ = ["register_kernel", "get_kernel", "has_kernel", "registered_ops",
           "unregister_kernel", "register_device", "resolve_all"]

_KERNELS = {}            # (op, device) -> kernel: resolved table entries and users' kernels
_DEFAULTS = {}           # (op, device) -> the kernels an override replaced, to undo it
_TABLES = {}             # device -> {op: "family.launcher"} not resolved yet
_DEVICES = {}            # device -> (kernels package, wrap or None)
_LOADERS = {}            # device -> module that calls register_device (heavy stacks: CUDA)
_LOADED = set()
_FALLBACKS = {}          # device -> function(op) -> kernel or None (the meta device's rule)
_RESOLVE_LOCK = threading.RLock()


def register_device(device, package, wrap=None):
    """Declare `device`'s kernels: `package`.table.KERNELS, each wrapped by `wrap`.

    Table entries are ``"family.name"``: the attribute `name` of the module
    `package`.family, imported on the op's first call; or ``("family.factory",
    *args)``: the kernel that ``factory(*args)`` returns.
    """
    table = importlib.import_module(package + ".table").KERNELS
    _DEVICES[device] = (package, wrap)
    _TABLES[device] = {op: ref for op, ref in table.items() if (op, device) not in _KERNELS}
    _LOADED.add(device)


def register_fallback(device, rule):
    """Give `device` a kernel for any op without one: ``rule(op)`` (None: no kernel)."""
    _FALLBACKS[device] = rule


def register_device_loader(device, module):
    """Import `module` (which calls `register_device`) the first time `device` is used."""
    _LOADERS[device] = module


def _load(device):
    _LOADED.add(device)
    mod = _LOADERS.get(device)
    if mod is not None:
        importlib.import_module(mod)


def _resolve(op, device):
    """Import the table entry of (op, device) into _KERNELS; False when there is none.

    Serialised by a lock (only lookups that miss come here): a second thread asking for
    the same op while the first imports its family must wait, not find the entry gone.
    """
    with _RESOLVE_LOCK:
        if (op, device) in _KERNELS:
            return True
        return _resolve_locked(op, device)


def _resolve_locked(op, device):
    if device not in _LOADED:
        _load(device)
    ref = _TABLES.get(device, {}).pop(op, None)
    if ref is None:
        return False
    package, wrap = _DEVICES[device]
    path, args = (ref, None) if isinstance(ref, str) else (ref[0], ref[1:])
    family, name = path.rsplit(".", 1)
    fn = getattr(importlib.import_module(f"{package}.{family}"), name)
    if args is not None:                  # ("family.factory", arg): the kernel factory(arg)
        fn = fn(*args)
    _KERNELS[(op, device)] = wrap(fn) if wrap is not None else fn
    return True


def resolve_all(device):
    """Resolve every table entry of `device` (for tools that walk `_KERNELS`)."""
    if device not in _LOADED:
        _load(device)
    for op in list(_TABLES.get(device, ())):
        _resolve(op, device)


def register_kernel(op, device, fn=None, *, override=False):
    """Register `fn` as the kernel of `op` on `device` ('cpu' or 'cuda').

    Registering an op that already has a kernel on that device is an error
    unless ``override=True``; `unregister_kernel` then restores the previous one.
    Usable as a decorator: ``@register_kernel("add", "cpu")``.
    """
    def deco(f):
        key = (op, device)
        if key not in _KERNELS and device in _LOADED:
            _resolve(op, device)          # a built-in entry: the one an override replaces
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
    if key not in _KERNELS and not (device in _LOADED and _resolve(op, device)):
        raise KeyError(f"op '{op}' has no {device} kernel")
    stack = _DEFAULTS.get(key)
    if stack:
        _KERNELS[key] = stack.pop()
    else:
        del _KERNELS[key]


def get_kernel(op, device):
    """The kernel of `op` on `device`; NotImplementedError naming both if none."""
    try:
        return _KERNELS[(op, device)]
    except KeyError:
        pass
    if _resolve(op, device):
        return _KERNELS[(op, device)]
    rule = _FALLBACKS.get(device)
    if rule is not None and (fn := rule(op)) is not None:
        _KERNELS[(op, device)] = fn
        return fn
    have = [d for d in sorted(set(_DEVICES) | {d for _, d in _KERNELS}) if d != device
            and ((op, d) in _KERNELS or op in _TABLES.get(d, ()))]
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
    ops = {o for (o, d) in _KERNELS if device is None or d == device}
    for d, table in _TABLES.items():
        if device is None or d == device:
            ops.update(table)
    return sorted(ops)


def _name(f):
    return getattr(f, "__qualname__", repr(f))


register_device("cpu", "nbtorch.kernels.cpu")
