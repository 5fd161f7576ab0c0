"""Forward hooks that every `nn.Module` call runs (PyTorch's
``torch.nn.modules.module.register_module_forward_pre_hook`` and
``register_module_forward_hook``): before the module's own hooks, in registration order.
`ModuleTracker` and `FlopCounterMode` (nbtorch.utils) build on them. While none is
registered a module call pays one check of two empty dicts."""
from collections import OrderedDict

from ._hooks import RemovableHandle

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook"]

_global_forward_pre_hooks = OrderedDict()      # id -> hook(module, args)
_global_forward_hooks = OrderedDict()          # id -> hook(module, args[, kwargs], output)
_global_forward_hooks_with_kwargs = OrderedDict()       # ids of those taking kwargs
_global_forward_hooks_always_called = OrderedDict()     # ids called even when forward raises


def register_module_forward_pre_hook(hook):
    """Register ``hook(module, args) -> None or new args`` for every module's forward.

    Returns a handle whose ``remove()`` unregisters it. Global hooks run before the
    module's own pre-hooks. Example::

        h = register_module_forward_pre_hook(lambda m, args: print(type(m).__name__))
        model(x)          # prints each module called
        h.remove()
    """
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """Register ``hook(module, args, output)`` (``hook(module, args, kwargs, output)``
    with `with_kwargs`) for every module's forward; a result other than None replaces
    the output. `always_call`: also called (with output None) when forward raises."""
    handle = RemovableHandle(_global_forward_hooks,
                             extra_dict=[_global_forward_hooks_with_kwargs,
                                         _global_forward_hooks_always_called])
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle
