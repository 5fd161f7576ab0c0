"""Saved-tensor hooks: ``torch.autograd.graph.saved_tensors_hooks(pack, unpack)``.

While the context is active, each tensor a recorded node saves for its backward is
replaced by ``pack(tensor)`` when the node is recorded, and ``unpack(packed)`` gives it
back when backward reads it (``save_on_cpu`` packs to host memory). A packed tensor is
no longer version-checked: the hooks own what was saved.
"""
import threading

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks",
           "pack_saved", "Packed", "ACTIVE"]

ACTIVE = [0]                        # hook contexts entered (any thread): the fast check
_LOCAL = threading.local()          # .stack: [(pack, unpack)], .disabled: message or None


class _NoVersion:
    """A stand-in storage whose version equals no saved version (unpacking is taken)."""
    version = None


class Packed:
    """A saved tensor as its pack hook returned it."""

    __slots__ = ("value", "unpack")
    _storage = _NoVersion

    def __init__(self, value, unpack):
        self.value, self.unpack = value, unpack


def _stack():
    stack = getattr(_LOCAL, "stack", None)
    if stack is None:
        stack = _LOCAL.stack = []
    return stack


def pack_saved(ctx):
    """Pack what `ctx` saved with this thread's innermost hooks (none: unchanged)."""
    stack = _stack()
    saved = ctx._saved
    if not stack or not saved or saved.__class__ is not tuple:
        return
    pack, unpack = stack[-1]
    ctx._saved = tuple([s if s is None or s[0].__class__ is Packed else
                        (Packed(pack(s[0]), unpack),) + tuple(s[1:]) for s in saved])


class saved_tensors_hooks:
    """``with saved_tensors_hooks(pack, unpack):`` nodes recorded inside save
    ``pack(t)`` instead of each tensor and call ``unpack`` when backward needs it."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        message = getattr(_LOCAL, "disabled", None)
        if message is not None:
            raise RuntimeError(message)
        _stack().append((self.pack_hook, self.unpack_hook))
        ACTIVE[0] += 1
        return self

    def __exit__(self, *exc):
        _stack().pop()
        ACTIVE[0] -= 1
        return False


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors kept in host memory and moved back to their device for backward
    (on the CPU they stay as they are)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            if t.device.type == "cpu":
                return (t.device, t)
            return (t.device, t.to("cpu"))

        def unpack(packed):
            device, t = packed
            return t if t.device == device else t.to(device)
        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:
    """Inside, entering `saved_tensors_hooks` raises RuntimeError(`error_message`)."""

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        self.prev = getattr(_LOCAL, "disabled", None)
        _LOCAL.disabled = self.error_message
        return self

    def __exit__(self, *exc):
        _LOCAL.disabled = self.prev
        return False
