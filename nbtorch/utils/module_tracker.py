"""torch.utils.module_tracker: which modules' forward (or backward) is running now.

`ModuleTracker` keeps `parents`, the fully qualified names ("Global", "Net", "Net.fc1"...)
of the modules whose forward or backward is in progress, as PyTorch's does: global module
forward hooks add a module on entry and remove it on exit; for backward, a hook on the
module's outputs adds it when their gradients arrive and a hook on its inputs removes it
once all of theirs are computed; at the end of every backward pass `parents` goes back to
{"Global"} (a module whose inputs need no gradient is never removed otherwise).

nbtorch's engine has no graph-task id; while a tracker is active the engine's
`run_backward` is wrapped (as the profiler wraps `Function.apply`) to know that a
backward pass is running (`is_bw`) and when it ends. Nothing is wrapped otherwise.
"""
import logging
import threading
import weakref

from .._tensor import Tensor
from ._pytree import tree_flatten

__all__ = ["ModuleTracker"]

logger = logging.getLogger(__name__)


# -- backward passes ------------------------------------------------------------------------

class _Backward(threading.local):
    depth = 0           # run_backward calls in progress in this thread
    passes = 0          # top-level backward passes started in this thread

    def __init__(self):
        self.on_end = []        # callbacks run when the outermost pass ends
        self.roots = []         # the nodes each running pass starts from
        self.reach = {}         # pass number -> nodes it reaches (computed when asked)


_BW = _Backward()
_WATCH = {"users": 0, "original": None}
_WATCH_LOCK = threading.Lock()


def _watched_run_backward(roots, *args, **kwargs):
    bw = _BW
    if bw.depth == 0:
        bw.passes += 1
    bw.depth += 1
    bw.roots.append([node for node, _ in roots])
    try:
        return _WATCH["original"](roots, *args, **kwargs)
    finally:
        bw.depth -= 1
        bw.roots.pop()
        if bw.depth == 0:
            bw.reach.clear()
            callbacks, bw.on_end = bw.on_end, []
            for fn in callbacks:
                fn()


def _reached(node):
    """Whether the running backward pass reaches `node` through an edge (PyTorch's
    ``_will_engine_execute_node``, ignoring ``inputs=``: false for the nodes of the
    tensors backward was called on, so a module whose output is the loss is not entered
    in backward)."""
    bw = _BW
    seen = bw.reach.get(bw.passes)
    if seen is None:
        seen = bw.reach[bw.passes] = set()
        stack = [nxt for roots in bw.roots for n in roots if n is not None
                 for nxt, _ in n.next_functions if nxt is not None]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            stack.extend(nxt for nxt, _ in n.next_functions if nxt is not None)
    return node in seen


def _watch_backward():
    from ..autograd import engine
    with _WATCH_LOCK:
        if _WATCH["users"] == 0:
            _WATCH["original"] = engine.run_backward
            engine.run_backward = _watched_run_backward
        _WATCH["users"] += 1


def _unwatch_backward():
    from ..autograd import engine
    with _WATCH_LOCK:
        _WATCH["users"] -= 1
        if _WATCH["users"] == 0:
            engine.run_backward = _WATCH["original"]
            _WATCH["original"] = None


def in_backward():
    """True while this thread runs a backward pass (seen only while a tracker is active)."""
    return _BW.depth > 0


def queue_callback(fn):
    """Run `fn()` when the current backward pass ends (PyTorch's
    ``Variable._execution_engine.queue_callback``); needs an active tracker."""
    _BW.on_end.append(fn)


class _AllGradsHook:
    """Calls ``fn()`` once per backward pass, when the gradients of all of `tensors` that
    the pass reaches have been computed (``register_multi_grad_hook(mode="all")``)."""

    def __init__(self, tensors, fn):
        from ..autograd.graph import gradient_edge
        self.fn = fn
        self.nodes = [gradient_edge(t)[0] for t in tensors]
        self.pass_no, self.calls, self.needed = None, 0, 0
        self.handles = [t.register_hook(self._hook) for t in tensors]

    def _hook(self, grad):
        if self.pass_no != _BW.passes:              # the first call of this pass
            self.pass_no, self.calls = _BW.passes, 0
            self.needed = sum(map(_reached, self.nodes))
        self.calls += 1
        if self.calls == self.needed:
            self.fn()

    def remove(self):
        for h in self.handles:
            h.remove()


# -- the tracker ----------------------------------------------------------------------------

class ModuleTracker:
    """Tracks the module hierarchy while code runs, as a context manager.

    ``parents`` is the set of fully qualified names of the modules whose forward or
    backward is running (always with "Global"); ``is_bw`` tells whether a backward pass
    is running. Example::

        with ModuleTracker() as tracker:
            def my_linear(x, w, b):
                print(tracker.parents)        # {'Global', 'Net', 'Net.fc'}
                return x @ w.t() + b
            ...
    """

    def __init__(self):
        self.parents = {"Global"}
        self._known_modules = weakref.WeakKeyDictionary()
        self._seen_modules = weakref.WeakSet()
        self._has_callback = False
        self._hooks = []

    @property
    def is_bw(self):
        """Whether a backward pass is running in this thread."""
        return in_backward()

    def _maybe_set_engine_callback(self):
        if self._has_callback:
            return

        def callback():
            self.parents = {"Global"}
            self._has_callback = False
        queue_callback(callback)
        self._has_callback = True

    def _get_mod_name(self, mod):
        if mod not in self._known_modules:
            self._known_modules[mod] = type(mod).__name__
        name = self._known_modules[mod]
        if mod not in self._seen_modules:
            for child_name, child in mod.named_children():
                self._known_modules[child] = f"{name}.{child_name}"
                self._get_mod_name(child)
            self._seen_modules.add(mod)
        return name

    def _get_append_fn(self, name, is_bw):
        def fn(*args):
            if is_bw:
                self._maybe_set_engine_callback()
            if name in self.parents:
                logger.info("The module hierarchy tracking seems to be broken as this Module "
                            "was already entered. %s during %s", name,
                            "backward" if is_bw else "forward")
            self.parents.add(name)
        return fn

    def _get_pop_fn(self, name, is_bw):
        def fn(*args):
            if name in self.parents:
                self.parents.remove(name)
            else:
                logger.info("The Module hierarchy tracking is confused as we're exiting a "
                            "Module that was never entered. %s during %s", name,
                            "backward" if is_bw else "forward")
        return fn

    def _fw_pre_hook(self, mod, args):
        name = self._get_mod_name(mod)
        self._get_append_fn(name, False)()
        tensors = _grad_tensors(args)
        if tensors:
            self._hooks.append(_AllGradsHook(tensors, self._get_pop_fn(name, True)))

    def _fw_post_hook(self, mod, args, output):
        name = self._get_mod_name(mod)
        self._get_pop_fn(name, False)()
        tensors = _grad_tensors(output)
        if tensors:
            self._hooks.append(_AllGradsHook(tensors, self._get_append_fn(name, True)))

    def __enter__(self):
        from ..nn.modules.module import (register_module_forward_hook,
                                         register_module_forward_pre_hook)
        _watch_backward()
        self._fw_pre_handle = register_module_forward_pre_hook(self._fw_pre_hook)
        self._fw_post_handle = register_module_forward_hook(self._fw_post_hook)
        return self

    def __exit__(self, *args):
        self._fw_pre_handle.remove()
        self._fw_post_handle.remove()
        for hook in self._hooks:
            hook.remove()
        self._hooks.clear()
        _unwatch_backward()


def _grad_tensors(tree):
    leaves, _ = tree_flatten(tree)
    return [a for a in leaves if isinstance(a, Tensor) and a.requires_grad]
