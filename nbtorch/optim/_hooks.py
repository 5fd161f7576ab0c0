"""Optimizer hooks, as PyTorch's: per optimizer around ``step``, ``state_dict`` and
``load_state_dict``, and global step hooks (``register_optimizer_step_pre_hook``) that
run before every optimizer's own. Step hooks get ``(optimizer, args, kwargs)`` with the
optimizer first in ``args``, as PyTorch passes them."""
from ..autograd.graph import RemovableHandle

__all__ = ["HookDict", "OptimizerHooks", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook", "GLOBAL_STEP_PRE_HOOKS",
           "GLOBAL_STEP_POST_HOOKS"]


class HookDict(dict):
    """A dict of hooks that `RemovableHandle` can reference weakly."""


GLOBAL_STEP_PRE_HOOKS = HookDict()
GLOBAL_STEP_POST_HOOKS = HookDict()

_KINDS = ("_step_pre_hooks", "_step_post_hooks", "_state_dict_pre_hooks",
          "_state_dict_post_hooks", "_load_state_dict_pre_hooks",
          "_load_state_dict_post_hooks")


def _register(hooks, hook, prepend=False):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        items = list(hooks.items())
        hooks.clear()
        hooks[handle.id] = hook
        hooks.update(items)
    return handle


def register_optimizer_step_pre_hook(hook):
    """`hook(optimizer, args, kwargs)` before every optimizer's step (and its own hooks)."""
    return _register(GLOBAL_STEP_PRE_HOOKS, hook)


def register_optimizer_step_post_hook(hook):
    """`hook(optimizer, args, kwargs)` after every optimizer's step."""
    return _register(GLOBAL_STEP_POST_HOOKS, hook)


class OptimizerHooks:
    """The hook registration methods of `Optimizer` (its hook dicts made by `init_hooks`)."""

    def _init_hooks(self):
        for kind in _KINDS:
            self.__dict__.setdefault(kind, HookDict())

    def register_step_pre_hook(self, hook):
        """`hook(optimizer, args, kwargs)` before each step; may return new (args, kwargs)."""
        return _register(self._step_pre_hooks, hook)

    def register_step_post_hook(self, hook):
        """`hook(optimizer, args, kwargs)` after each step."""
        return _register(self._step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook, prepend=False):
        """`hook(optimizer)` before `state_dict()` builds the dict."""
        return _register(self._state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook, prepend=False):
        """`hook(optimizer, state_dict)` after; it may return a new state dict."""
        return _register(self._state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook, prepend=False):
        """`hook(optimizer, state_dict)` before loading; it may return the dict to load."""
        return _register(self._load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook, prepend=False):
        """`hook(optimizer)` after loading."""
        return _register(self._load_state_dict_post_hooks, hook, prepend)
