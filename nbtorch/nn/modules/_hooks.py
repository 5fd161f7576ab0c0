"""Hook handles and the backward-hook wrapper used by `Module.__call__`.

`RemovableHandle` is what every `register_*_hook` returns. `BackwardHook`
implements `register_full_backward_hook`: it routes a module's tensor inputs
and outputs through identity autograd Functions, so that the gradients with
respect to the outputs (grad_output) and the inputs (grad_input) of that one
call can be handed to the user's hooks, which may replace grad_input.
"""
import weakref
from collections import OrderedDict

__all__ = ["RemovableHandle", "BackwardHook"]


class RemovableHandle:
    """A handle that removes a hook from the dict(s) it was registered in.

    Example:
        >>> h = module.register_forward_hook(fn)
        >>> h.remove()          # or: with module.register_forward_hook(fn): ...
    """

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        if extra_dict is None:
            extra_dict = ()
        elif isinstance(extra_dict, dict):
            extra_dict = (extra_dict,)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self):
        """Unregister the hook (a second call does nothing)."""
        for ref in (self.hooks_dict_ref,) + self.extra_dict_ref:
            d = ref()
            if d is not None and self.id in d:
                del d[self.id]

    def __getstate__(self):
        return (self.hooks_dict_ref(), self.id,
                tuple(r() for r in self.extra_dict_ref))

    def __setstate__(self, state):
        hooks, self.id, extras = state
        self.hooks_dict_ref = weakref.ref(OrderedDict() if hooks is None else hooks)
        self.extra_dict_ref = tuple(weakref.ref(d) for d in extras if d is not None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _identity_function():
    """The autograd Function class for the identity that calls a hook on backward."""
    global _HookIdentity
    if _HookIdentity is None:
        from ...autograd import Function

        class _HookIdentityFn(Function):
            @staticmethod
            def forward(ctx, on_backward, *tensors):
                ctx.on_backward = on_backward
                out = tuple(t.detach() for t in tensors)   # aliases, no copy
                return out if len(out) > 1 else out[0]

            @staticmethod
            def backward(ctx, *grads):
                new = ctx.on_backward(grads)
                return (None,) + tuple(new)

        _HookIdentity = _HookIdentityFn
    return _HookIdentity


_HookIdentity = None


def _tensor_positions(values):
    from ..._tensor import Tensor
    return [i for i, v in enumerate(values) if isinstance(v, Tensor)]


class BackwardHook:
    """Collects grad_output and grad_input of one module call and runs the hooks.

    `setup_input_hook(args)` wraps the tensor arguments that require grad,
    `setup_output_hook(result)` the tensor outputs; the outputs' backward
    stores grad_output (after the backward pre-hooks) and the inputs'
    backward calls the full backward hooks with one grad_input entry per
    tensor argument (None for those that need no gradient).
    """

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.input_slots = []        # per tensor argument: does it get a gradient?
        self.inputs_wrapped = False

    @staticmethod
    def _wrap(values, on_backward):
        """Route the tensors that require grad among `values` through the identity."""
        from ...autograd import is_grad_enabled
        pos = [i for i in _tensor_positions(values) if values[i].requires_grad]
        if not pos or not is_grad_enabled():
            return values, False
        out = _identity_function().apply(on_backward, *[values[i] for i in pos])
        if not isinstance(out, tuple):
            out = (out,)
        values = list(values)
        for i, t in zip(pos, out):
            values[i] = t
        return tuple(values), True

    def setup_input_hook(self, args):
        self.input_slots = [args[i].requires_grad for i in _tensor_positions(args)]
        args, self.inputs_wrapped = self._wrap(args, self._on_input_grads)
        return args

    def setup_output_hook(self, result):
        is_tuple = isinstance(result, tuple)
        wrapped, _ = self._wrap(result if is_tuple else (result,), self._on_output_grads)
        return wrapped if is_tuple else wrapped[0]

    def _on_output_grads(self, grads):
        for hook in self.user_pre_hooks:
            out = hook(self.module, grads)
            if out is not None:
                grads = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        self.grad_outputs = grads
        if not self.inputs_wrapped:
            # No input needs grad: the hooks still run, with grad_input all None.
            self._run_hooks(tuple(None for _ in self.input_slots))
        return grads

    def _on_input_grads(self, grads):
        it = iter(grads)
        full = tuple(next(it) if needs else None for needs in self.input_slots)
        full = self._run_hooks(full)
        return tuple(g for g, needs in zip(full, self.input_slots) if needs)

    def _run_hooks(self, grad_inputs):
        for hook in self.user_hooks:
            out = hook(self.module, grad_inputs, self.grad_outputs)
            if out is None:
                continue
            out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
            if len(out) != len(grad_inputs):
                raise RuntimeError(
                    f"Backward hook returned an invalid number of grad_input, got "
                    f"{len(out)}, but expected {len(grad_inputs)}")
            grad_inputs = out
        return grad_inputs
