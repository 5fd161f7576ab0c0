"""`Optimizer`: param_groups + defaults + per-parameter state, as in PyTorch.

Subclasses validate their hyper-parameters, pass their `defaults`, and
implement `_update(param, grad, state, group)`: the update of one tensor,
which initialises its state on first use and calls a pure per-tensor function
(`adam_update`, ...): an op of `nbtorch/ops/optim_updates.py` that runs one
fused kernel from the device registry.
"""
import copy
import functools
import sys
import warnings
from collections import defaultdict
from itertools import chain
from typing import Callable, Optional, Tuple

from .. import _dtype
from .._tensor import Tensor
from ..autograd import enable_grad, no_grad, set_grad_enabled
from ._hooks import (GLOBAL_STEP_POST_HOOKS, GLOBAL_STEP_PRE_HOOKS, OptimizerHooks,
                     register_optimizer_step_post_hook, register_optimizer_step_pre_hook)
from ..ops.creation import full, tensor

__all__ = ["Optimizer", "required", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks a hyper-parameter with no default (each group must give it)."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


_SET_MESSAGE = ("optimizer parameters need to be organized in ordered collections, but the "
                "ordering of tensors in sets will change between runs. Please use a list "
                "instead.")


def _typename(obj):
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module == "builtins" else f"{module}.{name}"


class Optimizer(OptimizerHooks):
    """Base class of all optimizers.

    Args:
        params: an iterable of Tensors, of ``(name, Tensor)`` pairs, or of dicts
            (parameter groups, each with a ``"params"`` entry and its own
            options overriding `defaults`). The order must be deterministic:
            sets are refused.
        defaults: the default value of each option (``required`` for none).

    Example:
        >>> opt = torch.optim.SGD([{"params": [w]}, {"params": [b], "lr": 0.1}], lr=0.01)
        >>> opt.zero_grad(); loss.backward(); opt.step()
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        self._init_hooks()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable "
                            "of Tensors or dicts, but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __init_subclass__(cls, **kwargs):
        """Wrap each subclass's `step` so step hooks run around it."""
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_with_hooks", False):
            cls.step = _with_step_hooks(step)

    # ---- parameter groups -------------------------------------------------
    def add_param_group(self, param_group):
        """Add a group of parameters with its own options (others from `defaults`)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):       # a set of groups' params (PyTorch lets a
            raise TypeError(_SET_MESSAGE)   # top-level set through: list() orders it)
        else:
            params = list(params)
        named = [isinstance(p, tuple) for p in params]
        if any(named):
            if not all(named):
                raise ValueError("all optimizer params should be with/without names. "
                                 "Some param names are missing")
            param_group["param_names"] = [name for name, _ in params]
            params = [p for _, p in params]
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params "
                                "is " + _typename(p))
            if not (self.defaults.get("differentiable") or p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        param_group["params"] = params
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = {id(p) for p in params}
        if len(ids) != len(params):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        for group in self.param_groups:
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if any(id(p) in ids for group in self.param_groups for p in group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---- the training-loop API --------------------------------------------
    def zero_grad(self, set_to_none=True):
        """Reset the gradients of all parameters: to None (default) or to zeros."""
        if _tracing():          # compiled calls would never reset them again
            raise RuntimeError(f"{type(self).__name__}.zero_grad() cannot be traced: it resets "
                               "the gradients outside any graph. Call it outside the traced or "
                               "compiled function")
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        """Update every parameter that has a gradient; returns `closure()`'s loss.

        `closure` (optional) re-evaluates the model and returns the loss; it
        runs with gradients enabled.
        """
        if "capturable" in self.defaults:
            self._cuda_graph_capture_health_check()
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        # a differentiable optimizer updates with autograd on (PyTorch's
        # _use_grad_for_differentiable), the others never record their updates
        with set_grad_enabled(bool(self.defaults.get("differentiable"))):
            for group in self.param_groups:
                if (group.get("differentiable") and group.get("foreach")
                        and not self._foreach_differentiable):
                    raise AssertionError("_foreach ops don't support autograd")
                if group.get("capturable"):
                    self._check_capturable(group)
                for p in group["params"]:
                    if p.grad is not None:
                        if self._sparse_grad_error and p.grad.is_sparse:
                            raise RuntimeError(self._sparse_grad_error)
                        self._update(p, p.grad, group)
        return loss

    def _cuda_graph_capture_health_check(self):
        """PyTorch's refusal to capture a step whose state stays on the host (capturable
        False): replayed, it would keep the captured step's count and bias corrections."""
        graphs = sys.modules.get("nbtorch.cuda.graphs")
        if graphs is not None and graphs.is_current_stream_capturing() and not all(
                g.get("capturable") for g in self.param_groups):
            raise RuntimeError("Attempting CUDA graph capture of step() for an instance of "
                               f"{type(self).__name__} but param_groups' capturable is False.")

    # PyTorch's RuntimeError for a sparse gradient (None: `_update` handles them)
    _sparse_grad_error = None
    # whether PyTorch's foreach implementation runs with differentiable=True (SGD's)
    _foreach_differentiable = False

    # PyTorch's capturable check, per optimizer: the tensors its message names and
    # whether 'xla' is listed, for the single-tensor and the foreach implementation
    _capturable_tensors = ("params and state_steps", "params and state_steps")
    _capturable_xla = (True, False)

    def _check_capturable(self, group):
        """capturable=True (CUDA-graph capture) needs every parameter on a GPU: PyTorch
        refuses CPU parameters at the first step with this AssertionError."""
        foreach = bool(group.get("foreach"))
        devices = ["cuda", "xpu", "hpu", "privateuseone"]
        devices += ["xla"] if self._capturable_xla[foreach] else []
        for p in group["params"]:
            if p.grad is not None and p.device.type not in devices:
                raise AssertionError(f"If capturable=True, {self._capturable_tensors[foreach]}"
                                     f" must be on supported devices: {devices}.")

    def _update(self, param, grad, group):
        """Update one parameter in place with `group`'s options (subclasses; the
        parameter's state is ``self.state[param]``)."""
        raise NotImplementedError

    # ---- saving and loading -----------------------------------------------
    def state_dict(self):
        """{'state': {param index: state}, 'param_groups': [options + param indices]}.

        Parameters are numbered in order across groups, as PyTorch does; state
        tensors are returned by reference (save or deep-copy them to keep a
        snapshot).
        """
        for hook in list(self._state_dict_pre_hooks.values()):
            hook(self)
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index.setdefault(id(p), len(index))
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {(index[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        out = {"state": state, "param_groups": groups}
        for hook in list(self._state_dict_post_hooks.values()):
            result = hook(self, out)
            out = out if result is None else result
        return out

    def load_state_dict(self, state_dict):
        """Load a `state_dict()`; state tensors are copied to each parameter's dtype
        and device (a loaded optimizer never shares memory with the source)."""
        for hook in list(self._load_state_dict_pre_hooks.values()):
            result = hook(self, state_dict)
            state_dict = state_dict if result is None else result
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't "
                             "match the size of optimizer's group")
        id_map = dict(zip(chain.from_iterable(s["params"] for s in saved_groups),
                          chain.from_iterable(g["params"] for g in groups)))
        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if isinstance(k, str) and k.isdigit():    # formats whose dict keys are strings
                k = int(k)
            if k in id_map:
                param = id_map[k]
                state[param] = _cast_state(param, v)
            else:
                state[k] = copy.deepcopy(v)
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for hook in list(self._load_state_dict_post_hooks.values()):
            hook(self)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._init_hooks()
        for group in self.param_groups:        # options added since the dict was saved
            for name, default in self.defaults.items():
                if default is not required:
                    group.setdefault(name, default)
        for s in self.state.values():          # old files store the step as a number
            if "step" in s and not isinstance(s["step"], Tensor):
                s["step"] = new_step(float(s["step"]))

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):       # a blank line between groups
            text += f"\nParameter Group {i}\n"
            text += "".join(f"    {k}: {group[k]}\n" for k in sorted(group) if k != "params")
        return text + ")"


def _with_step_hooks(step):
    """`step` running the optimizer's step hooks around it (once, even when a
    subclass's step calls ``super().step()``)."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if self.__dict__.get("_in_step"):
            return step(self, *args, **kwargs)
        if _tracing():
            # before any state changes: the trace would run it once, for real, unrecorded
            raise RuntimeError(f"{type(self).__name__}.step() cannot be traced: it updates "
                               "parameters and optimizer state in place, outside any graph. "
                               "Call it outside the traced or compiled function (its update "
                               "is already one fused kernel per parameter)")
        args = (self,) + args           # the hooks see the optimizer first, as PyTorch's
        for hook in [*GLOBAL_STEP_PRE_HOOKS.values(), *self._step_pre_hooks.values()]:
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("optimizer step pre-hook must return None or a tuple "
                                       f"of (new_args, new_kwargs), but got {result}.")
                args, kwargs = result
        self._opt_called = True
        self._in_step = True
        try:
            out = step(*args, **kwargs)
        finally:
            self._in_step = False
        for hook in [*self._step_post_hooks.values(), *GLOBAL_STEP_POST_HOOKS.values()]:
            hook(self, args, kwargs)
        return out
    wrapper._with_hooks = True
    return wrapper


def _tracing():
    from ..jit._concrete import is_tracing
    return is_tracing()


Optimizer.step = _with_step_hooks(Optimizer.step)
# PyTorch's names: the decorator that runs a step with its hooks, and the hook types
Optimizer.profile_hook_step = staticmethod(_with_step_hooks)
Optimizer.OptimizerPreHook = Callable[[Optimizer, tuple, dict], Optional[Tuple[tuple, dict]]]
Optimizer.OptimizerPostHook = Callable[[Optimizer, tuple, dict], None]


def _cast_state(param, value, key=None):
    """Deep copy of one parameter's saved state, tensors moved to its dtype/device.

    'step' keeps its dtype, as in PyTorch (a float64 count stays float64), on the CPU
    where nbtorch's updates read it.
    """
    if isinstance(value, Tensor):
        v = value.detach()
        if key == "step":
            out = v.to(device="cpu")
        elif param.is_floating_point() and v.is_floating_point():
            out = v.to(dtype=param.dtype, device=param.device)
        else:
            out = v.to(device=param.device)
        return out.clone() if out._storage is value._storage else out
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v, key) for v in value)
    return copy.deepcopy(value)


# ---------------------------------------------------------------------------
# Helpers for the optimizers and their per-tensor update functions
# ---------------------------------------------------------------------------
def check_hyper(ok, message):
    """Raise ValueError(`message`) unless `ok` (PyTorch's hyper-parameter checks)."""
    if not ok:
        raise ValueError(message)


def check_lr(lr, foreach=None, capturable=None):
    """PyTorch's checks of a tensor learning rate (one element; Adam's and AdamW's
    foreach implementation refuse it unless capturable)."""
    if isinstance(lr, Tensor):
        if foreach and capturable is False:
            raise ValueError("lr as a Tensor is not supported for capturable=False and "
                             "foreach=True")
        if lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")


def check_implementation_flags(foreach, fused, differentiable):
    """Accept PyTorch's implementation switches: every update here is already one
    fused kernel per tensor, so `foreach`/`fused` change nothing; `differentiable`
    runs the update as tensor ops instead (optim/_differentiable.py)."""
    if fused and differentiable:
        raise RuntimeError("`fused` does not support `differentiable`")
    if foreach and fused:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def new_step(value=0.0):
    """A step counter as PyTorch keeps it: a 0-d CPU tensor of `scalar_dtype()`."""
    return new_scalar(value)


def new_scalar(value):
    """A 0-d CPU tensor of `scalar_dtype()` holding `value` (PyTorch's scalar state;
    a tensor value, e.g. a tensor lr, is copied)."""
    if isinstance(value, Tensor):
        value = value.item()
    return tensor(value, dtype=scalar_dtype())


def scalar_dtype():
    """The dtype of scalar optimizer state: float64 under a float64 default dtype,
    else float32 (PyTorch's `_get_scalar_dtype`)."""
    return _dtype.float64 if _dtype.get_default_dtype() is _dtype.float64 else _dtype.float32


def bump_step(step):
    """Add one to a step counter tensor in place; returns the new count."""
    a = step._array
    value = a.item() + 1.0
    a.fill(value)
    return value


def zeros_state(param, fill=0.0):
    """A contiguous state buffer shaped like `param`, filled with `fill`."""
    return full(tuple(param.shape), fill, dtype=param.dtype, device=param.device)
