"""`nn.utils.init.skip_init`: build a module without running its initialisation."""
import inspect

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """An instance of `module_cls` whose parameters and buffers hold uninitialised memory
    (PyTorch builds it on the meta device; nbtorch builds it, then swaps in empty storage
    of the same shapes, so the result is the same). The class must accept ``device``.

    Example:
        >>> m = skip_init(nn.Linear, 5, 1)
    """
    from ... import empty_like
    from ..modules.module import Module
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    module = module_cls(*args, **kwargs)
    for m in module.modules():
        for store in (m._parameters, m._buffers):
            for name, t in store.items():
                if t is not None:
                    t.data = empty_like(t.detach())
    return module
