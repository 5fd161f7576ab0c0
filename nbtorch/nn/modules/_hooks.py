"""Module hooks: registration, handles, and the backward-hook wrapper.

`HookRegistration` holds Module's `register_*_hook` methods (each files the
hook in one of the module's ordered hook dicts); `RemovableHandle` is what
they return. `BackwardHook`
implements `register_full_backward_hook`: it routes a module's tensor inputs
and outputs through identity autograd Functions, so that the gradients with
respect to the outputs (grad_output) and the inputs (grad_input) of that one
call can be handed to the user's hooks, which may replace grad_input.
"""
import warnings
import weakref
from collections import OrderedDict

__all__ = ["RemovableHandle", "BackwardHook", "HookRegistration"]

# Plain attribute assignments (numbers, flags, strings...) and hook registrations and
# removals on any module so far: nbtorch.compile re-checks what its graphs baked in only
# when this moved.
ATTR_WRITES = [0]


class RemovableHandle:
    """A handle that removes a hook from the dict(s) it was registered in.

    Example:
        >>> h = module.register_forward_hook(fn)
        >>> h.remove()          # or: with module.register_forward_hook(fn): ...
    """

    next_id = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        ATTR_WRITES[0] += 1
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
        ATTR_WRITES[0] += 1             # compiled code run eagerly for the hook compiles again
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
                ctx.set_materialize_grads(False)     # unused outputs report None
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


_NO_INPUT_GRAD = ("Full backward hook is firing when gradients are computed with respect to "
                  "module outputs since no inputs require gradients. See "
                  "https://docs.pytorch.org/docs/main/generated/torch.nn.Module.html"
                  "#torch.nn.Module.register_full_backward_hook for more details.")


class BackwardHook:
    """Collects grad_output and grad_input of one module call and runs the hooks.

    As in PyTorch, grad_input has one entry per positional argument (None for
    non-tensors, zeros for tensors that need no gradient) and grad_output one
    per tensor output (None for outputs that got no gradient). Only tensors
    that require grad are routed through the identity Function, so the
    module's own graph is unchanged.
    """

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.module = module
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.grad_outputs = None
        self.args = ()
        self.wrapped_inputs = []      # argument positions routed through the identity
        self.wrapped_outputs = []     # tensor-output slots routed through the identity
        self.n_outputs = 0

    @staticmethod
    def _wrap(values, positions, on_backward):
        """Route values[i] for i in `positions` through the identity Function."""
        out = _identity_function().apply(on_backward, *[values[i] for i in positions])
        if not isinstance(out, tuple):
            out = (out,)
        values = list(values)
        for i, t in zip(positions, out):
            values[i] = t
        return tuple(values)

    def setup_input_hook(self, args):
        from ...autograd import is_grad_enabled
        self.args = args
        if is_grad_enabled():
            self.wrapped_inputs = [i for i in _tensor_positions(args)
                                   if args[i].requires_grad]
        if not self.wrapped_inputs:
            return args
        return self._wrap(args, self.wrapped_inputs, self._on_input_grads)

    def setup_output_hook(self, result):
        from ...autograd import is_grad_enabled
        is_tuple = isinstance(result, tuple)
        values = result if is_tuple else (result,)
        tensors = _tensor_positions(values)
        self.n_outputs = len(tensors)
        if not is_grad_enabled():
            return result
        slots = [k for k, i in enumerate(tensors) if values[i].requires_grad]
        if not slots:
            return result
        self.wrapped_outputs = slots
        wrapped = self._wrap(values, [tensors[k] for k in slots], self._on_output_grads)
        return wrapped if is_tuple else wrapped[0]

    def _on_output_grads(self, grads):
        full = [None] * self.n_outputs
        for k, g in zip(self.wrapped_outputs, grads):
            full[k] = g
        full = tuple(full)
        for hook in self.user_pre_hooks:
            out = hook(self.module, full)
            if out is not None:
                full = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        self.grad_outputs = full
        if not self.wrapped_inputs:
            # No input needs grad: the hooks run now, with grad_input all None.
            warnings.warn(_NO_INPUT_GRAD, stacklevel=2)
            self._run_hooks(tuple(None for _ in self.args))
        return tuple(full[k] for k in self.wrapped_outputs)

    def _on_input_grads(self, grads):
        from ..._tensor import Tensor
        from ...ops.creation import zeros_like
        if self.grad_outputs is None:
            # no tensor output carried the gradient (a dict output): PyTorch's hooks do
            # not run then (they were called with grad_output None)
            return grads
        full = [None] * len(self.args)
        for i, a in enumerate(self.args):
            if isinstance(a, Tensor):
                full[i] = zeros_like(a)
        for i, g in zip(self.wrapped_inputs, grads):
            full[i] = g
        full = self._run_hooks(tuple(full))
        return tuple(full[i] for i in self.wrapped_inputs)

    def _run_hooks(self, grad_inputs):
        for hook in self.user_hooks:
            out = hook(self.module, grad_inputs, self.grad_outputs)
            if out is None:
                continue
            out = tuple(out)        # a Tensor unpacks into rows, as PyTorch's check does
            if len(out) != len(grad_inputs):
                raise RuntimeError(
                    f"Backward hook returned an invalid number of grad_input, got "
                    f"{len(out)}, but expected {len(grad_inputs)}")
            grad_inputs = out
        return grad_inputs


class HookRegistration:
    """Module's hook-registration methods (mixed into `Module`)."""

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """Run ``hook(module, args)`` (or ``hook(module, args, kwargs)``) before forward;
        a non-None result replaces the arguments."""
        handle = RemovableHandle(self._forward_pre_hooks,
                                 extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False,
                              always_call=False):
        """Run ``hook(module, args, output)`` (or with kwargs) after forward; a non-None
        result replaces the output."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs,
                                             self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook, prepend=False):
        """Run ``hook(module, grad_input, grad_output)`` when the gradients with respect
        to this call's inputs are computed; a non-None result replaces grad_input."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward "
                               "hooks on a single Module. Please use only one of them.")
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """Run ``hook(module, grad_output)`` before grad_input is computed; a non-None
        result replaces grad_output."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook):
        """Deprecated; behaves as `register_full_backward_hook` here."""
        warnings.warn("Using a non-full backward hook when the forward contains multiple "
                      "autograd Nodes is deprecated; use register_full_backward_hook.",
                      FutureWarning, stacklevel=2)
        return self.register_full_backward_hook(hook)

    def register_state_dict_pre_hook(self, hook):
        handle = RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    _register_state_dict_hook = register_state_dict_post_hook

    def register_load_state_dict_pre_hook(self, hook):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = \
            lambda sd, prefix, *rest: hook(self, sd, prefix, *rest)
        return handle

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = (
            (lambda *a: hook(self, *a)) if with_module else hook)
        return handle

    def register_load_state_dict_post_hook(self, hook):
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle
