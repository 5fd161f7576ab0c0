"""The scheduler base class `LRScheduler` and the helpers its subclasses share.

A scheduler owns an optimizer's ``group["lr"]`` values: `step()` advances
`last_epoch` and writes the new rates (PyTorch's recursive, "chainable"
formulas, so several schedulers can act on one optimizer; the closed forms
serve `step(epoch)`). `get_last_lr()` returns what was written last;
`state_dict()` holds everything but the optimizer.
"""
import functools
import warnings
import weakref

from ..._tensor import Tensor
from ..optimizer import Optimizer

__all__ = ["LRScheduler", "EPOCH_DEPRECATION_WARNING"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
    "where possible. Please use `scheduler.step()` to step the scheduler. During the "
    "deprecation, if epoch is different from None, the closed form is used instead of the "
    "new chainable form, where available. Please open an issue if you are unable to "
    "replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _copy(value):
    """A tensor rate cloned (never aliased), a number as it is."""
    return value.clone() if isinstance(value, Tensor) else value


def _format_param(name, optimizer, value):
    """`value` repeated per param group, or checked to have one entry per group
    (tensors cloned)."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                             f"{name} has {len(value)} values, param_groups has {n}.")
    else:
        value = [value] * n
    return [_copy(v) for v in value]


def _group_values(optimizer, key):
    """``group[key]`` of every param group, tensors cloned."""
    return [_copy(group[key]) for group in optimizer.param_groups]


def _set_group_value(group, key, value):
    """Write `value` into ``group[key]``: a tensor rate is filled in place (it stays
    the same tensor, as PyTorch's), anything else replaced."""
    old = group[key]
    if isinstance(old, Tensor):
        old.fill_(value.reshape(()) if isinstance(value, Tensor) and value.dim() else value)
    else:
        group[key] = value


def _step_is_tracked(step):
    """Whether calling `step` marks the optimizer as stepped (``_opt_called``): the
    Optimizer's own step does; a replacement does once a scheduler has wrapped it."""
    return getattr(step, "_with_hooks", False) or getattr(step, "_wrapped_by_lr_sched", False)


def _track_step_calls(optimizer):
    """Wrap a replaced ``optimizer.step`` (a bound method set on the instance) so it
    sets ``_opt_called``, as PyTorch's schedulers wrap every optimizer's step."""
    step = optimizer.step
    func = getattr(step, "__func__", None)
    if _step_is_tracked(step) or func is None:
        return
    opt_ref = weakref.ref(optimizer)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        opt = opt_ref()
        opt._opt_called = True
        return func.__get__(opt, opt.__class__)(*args, **kwargs)
    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


class LRScheduler:
    """Base class: subclasses implement `get_lr()` (the chainable formula, from the
    groups' current rates) and optionally `_get_closed_form_lr()`.

    The constructor makes one initial step with `_is_initial` set: most schedules
    then keep the groups' rates as they are (so ``last_epoch=`` resumes where a
    checkpoint stopped, as in PyTorch 2.13)."""

    _is_initial = False

    def __init__(self, optimizer, last_epoch=-1):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", _copy(group["lr"]))
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming scheduler with last_epoch >= 0.\nThis typically happens "
                        "when:\n1. You're trying to resume training from a checkpoint but "
                        "haven't properly loaded the optimizer state\n2. You're using "
                        "last_epoch >= 0 for a fresh training run (not recommended)")
        self.base_lrs = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._get_lr_called_within_step = False
        _track_step_calls(optimizer)
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self):
        raise NotImplementedError

    def _warn_if_outside_step(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please "
                          "use `get_last_lr()`.", UserWarning, stacklevel=3)

    def get_last_lr(self):
        """The learning rate of each param group written by the last `step()`."""
        return self._last_lr

    def step(self, epoch=None):
        """Advance one epoch (or jump to `epoch`, deprecated) and set the rates."""
        if self._step_count == 1 and not _step_is_tracked(self.optimizer.step):
            warnings.warn(
                "Seems like `optimizer.step()` has been overridden after learning rate "
                "scheduler initialization. Please, make sure to call `optimizer.step()` before "
                "`lr_scheduler.step()`. See more details at "
                "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                UserWarning, stacklevel=2)
        elif self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch "
                "1.1.0 and later, you should call them in the opposite order: "
                "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
                "result in PyTorch skipping the first value of the learning rate schedule. "
                "See more details at "
                "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None):
        """Advance `last_epoch` (or set it to `epoch`, closed form where there is
        one) and write the new rates; no warnings, `_step_count` untouched."""
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set_group_value(group, "lr", lr)
        self._last_lr = self._lrs()

    def state_dict(self):
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def _lrs(self):
        """The groups' current rates (tensor rates cloned)."""
        return _group_values(self.optimizer, "lr")

_LRScheduler = LRScheduler
