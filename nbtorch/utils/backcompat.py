"""torch.utils.backcompat: the switches of PyTorch's long-gone backward-compatibility
warnings (broadcasting, keepdim); nbtorch keeps them as flags so code setting them runs."""

__all__ = ["Warning", "broadcast_warning", "keepdim_warning"]

_FLAGS = {"broadcast": False, "keepdim": False}


class Warning:                 # noqa: A001 - PyTorch's name
    """An on/off switch: ``enabled`` (also ``set_enabled`` / ``get_enabled``)."""

    def __init__(self, setter, getter):
        self.setter = setter
        self.getter = getter

    def set_enabled(self, value):
        self.setter(value)

    def get_enabled(self):
        return self.getter()

    enabled = property(get_enabled, set_enabled)


def _flag(name):
    def setter(value):
        _FLAGS[name] = bool(value)
    return setter, lambda: _FLAGS[name]


broadcast_warning = Warning(*_flag("broadcast"))
keepdim_warning = Warning(*_flag("keepdim"))
