"""`nbtorch.library.override`: replace the kernel of a registered op, undoably.

The registry keeps, per (op, device), a stack of the kernels an override
replaced; `OverrideHandle.restore` pops ours (or removes it from the middle of
the stack when another override went on top), `restore` unwinds them all.
"""
from . import _registry
from ._library_op import _register, check_device

__all__ = ["OverrideHandle", "override", "restore"]


class OverrideHandle:
    """Returned by `override`: `restore()` (or leaving the `with` block) undoes it."""

    def __init__(self, op, device, fn):
        self.op, self.device, self.fn, self.active = op, device, fn, True

    def restore(self):
        """Put back the kernel this override replaced (idempotent)."""
        if not self.active:
            return
        self.active = False
        key = (self.op, self.device)
        current = _registry._KERNELS.get(key)
        if getattr(current, "__nbtorch_profiled__", current) is self.fn:
            _registry.unregister_kernel(self.op, self.device)
        else:                        # overridden again since: drop ours from the stack
            stack = _registry._DEFAULTS.get(key, [])
            for i in range(len(stack) - 1, -1, -1):
                if getattr(stack[i], "__nbtorch_profiled__", stack[i]) is self.fn:
                    del stack[i]
                    break

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.restore()

    def __repr__(self):
        state = "active" if self.active else "restored"
        return f"<override of {self.op} on {self.device} ({state})>"


def override(op, device, fn):
    """Make `fn` the kernel of existing op `op` on `device` until the handle is restored.

    `fn` takes the same arguments as the kernel it replaces (see its source with
    ``nbtorch.kernels.inspect(op)``), e.g. ``fn(a, b, out)`` for "matmul".

    Example:
        >>> with nbtorch.library.override("matmul", "cpu", my_matmul):
        ...     y = model(x)          # every matmul runs my_matmul
    """
    dev = check_device(device)
    known = _registry.registered_ops()
    if op not in known:
        raise ValueError(f"unknown op '{op}': override replaces the kernel of a registered "
                         "op (define new ops with nbtorch.library.custom_op)")
    _register(op, dev, fn, True)
    return OverrideHandle(op, dev, fn)


def restore(op, device):
    """Undo every override of `op` on `device`, back to the kernel first registered."""
    dev = check_device(device)
    key = (op, dev)
    if key not in _registry._KERNELS:
        raise ValueError(f"op '{op}' has no {dev} kernel")
    while _registry._DEFAULTS.get(key):
        _registry.unregister_kernel(op, dev)
