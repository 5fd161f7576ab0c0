"""`register_multi_grad_hook`: one callback over the gradients of several tensors.

mode="all" calls `fn(grads)` once per backward pass, when every tensor of the
group that the pass reaches has its gradient (None for those it does not
reach); mode="any" calls `fn(grad)` with the first gradient the pass computes.
Both are built from ordinary tensor hooks plus the engine's record of the
running pass (`engine.TASKS`).
"""
from .engine import MULTI_HOOKS, TASKS
from .graph import gradient_edge, register_tensor_hook

__all__ = ["register_multi_grad_hook"]


class _MultiHandle:
    """Removes the per-tensor hooks of one multi-grad hook together."""

    def __init__(self, handles):
        self.handles = handles
        MULTI_HOOKS[0] += 1             # the engine records its passes while hooks exist

    def remove(self):
        if self.handles:
            MULTI_HOOKS[0] -= 1
        for h in self.handles:
            h.remove()
        self.handles = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Call `fn` once the gradients of `tensors` for a backward pass are computed
    (mode="all": fn(grads), None where the pass does not reach a tensor) or with the
    first of them (mode="any": fn(grad)). Returns a handle with `remove()`."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    for t in tensors:
        if not t.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require "
                               "gradient")
    key = object()                      # this hook's slot in a pass's state
    if mode == "any":
        def make(i):
            def hook(grad):
                task = TASKS[-1] if TASKS else None
                if task is not None:
                    if key in task.multi:
                        return None
                    task.multi[key] = True
                fn(grad)
            return hook
    else:
        nodes = [gradient_edge(t)[0] for t in tensors]
        n = len(tensors)

        def make(i):
            def hook(grad):
                task = TASKS[-1] if TASKS else None
                if task is None:            # outside a pass (cannot happen in practice)
                    fn(tuple(grad if j == i else None for j in range(n)))
                    return None
                st = task.multi.get(key)
                if st is None:
                    expected = sum(1 for node in nodes if task.will_execute(node))
                    st = task.multi[key] = {"grads": [None] * n, "left": expected,
                                            "fired": False}
                    task.on_done.append(lambda: _finish(st, fn))
                if st["fired"]:
                    return None
                st["grads"][i] = grad
                st["left"] -= 1
                if st["left"] <= 0:
                    _finish(st, fn)
                return None
            return hook
    return _MultiHandle([register_tensor_hook(t, make(i)) for i, t in enumerate(tensors)])


def _finish(st, fn):
    """Call the "all" hook once (at the last expected gradient, or at the pass's end)."""
    if not st["fired"]:
        st["fired"] = True
        fn(list(st["grads"]))
