"""Learning-rate schedulers, as torch.optim.lr_scheduler.

A scheduler owns an optimizer's ``group["lr"]`` values: `step()` advances
`last_epoch` and writes the new rates (PyTorch's recursive, "chainable"
formulas, so several schedulers can act on one optimizer; the closed forms
serve `step(epoch)`). `get_last_lr()` returns what was written last;
`state_dict()` holds everything but the optimizer.
"""
import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from .optimizer import Optimizer

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR",
           "CosineAnnealingLR", "LinearLR", "ConstantLR", "OneCycleLR",
           "ReduceLROnPlateau", "SequentialLR", "MultiplicativeLR", "PolynomialLR",
           "CosineAnnealingWarmRestarts", "ChainedScheduler"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
    "where possible. Please use `scheduler.step()` to step the scheduler. During the "
    "deprecation, if epoch is different from None, the closed form is used instead of the "
    "new chainable form, where available. Please open an issue if you are unable to "
    "replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.")


def _check_optimizer(optimizer):
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _per_group(name, optimizer, value):
    """`value` repeated per param group, or checked to have one entry per group."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"expected {len(optimizer.param_groups)} values for {name}, "
                             f"got {len(value)}")
        return list(value)
    return [value] * len(optimizer.param_groups)


class LRScheduler:
    """Base class: subclasses implement `get_lr()` (the chainable formula, from the
    groups' current rates) and optionally `_get_closed_form_lr()`."""

    def __init__(self, optimizer, last_epoch=-1, verbose="deprecated"):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming an optimizer")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._get_lr_called_within_step = False
        self._initial_step()

    def _initial_step(self):
        self._step_count = 0
        self.step()

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
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn(
                "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch "
                "1.1.0 and later, you should call them in the opposite order: "
                "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will "
                "result in PyTorch skipping the first value of the learning rate schedule. "
                "See more details at "
                "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                UserWarning, stacklevel=2)
        self._step_count += 1
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self):
        """Every attribute except the optimizer."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)

    def _lrs(self):
        return [group["lr"] for group in self.optimizer.param_groups]


_LRScheduler = LRScheduler


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch), one function or one per param group.

    Example:
        >>> sched = LambdaLR(opt, lr_lambda=lambda epoch: 0.95 ** epoch)
    """

    def __init__(self, optimizer, lr_lambda, last_epoch=-1, verbose="deprecated"):
        _check_optimizer(optimizer)
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError(f"Expected {len(optimizer.param_groups)} lr_lambdas, but "
                                 f"got {len(lr_lambda)}")
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_if_outside_step()
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]

    def state_dict(self):
        """As the base, with callable objects' attributes in place of plain functions."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class StepLR(LRScheduler):
    """Multiply the rate by `gamma` every `step_size` epochs.

    Example:
        >>> sched = StepLR(opt, step_size=30, gamma=0.1)   # 0.05 → 0.005 at epoch 30
    """

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1, verbose="deprecated"):
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_if_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiply the rate by `gamma` at each milestone epoch.

    Example:
        >>> sched = MultiStepLR(opt, milestones=[30, 80], gamma=0.1)
    """

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1, verbose="deprecated"):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_if_outside_step()
        if self.last_epoch not in self.milestones:
            return self._lrs()
        return [lr * self.gamma ** self.milestones[self.last_epoch] for lr in self._lrs()]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiply the rate by `gamma` every epoch.

    Example:
        >>> sched = ExponentialLR(opt, gamma=0.9)
    """

    def __init__(self, optimizer, gamma, last_epoch=-1, verbose="deprecated"):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_if_outside_step()
        if self.last_epoch == 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing from the initial rate to `eta_min` over `T_max` epochs
    (PyTorch's recursive form: it keeps following the cosine past T_max).

    Example:
        >>> sched = CosineAnnealingLR(opt, T_max=100, eta_min=1e-5)
    """

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1, verbose="deprecated"):
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_if_outside_step()
        e, T, lo = self.last_epoch, self.T_max, self.eta_min
        if e == 0:
            return self._lrs()
        if self._step_count == 1 and e > 0:
            return [lo + (base - lo) * (1 + math.cos(e * math.pi / T)) / 2
                    for base in self.base_lrs]
        if (e - 1 - T) % (2 * T) == 0:
            return [lr + (base - lo) * (1 - math.cos(math.pi / T)) / 2
                    for base, lr in zip(self.base_lrs, self._lrs())]
        return [(1 + math.cos(math.pi * e / T)) / (1 + math.cos(math.pi * (e - 1) / T))
                * (lr - lo) + lo for lr in self._lrs()]

    def _get_closed_form_lr(self):
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scale the rate linearly from `start_factor` to `end_factor` over `total_iters`.

    Example:
        >>> sched = LinearLR(opt, start_factor=0.1, total_iters=5)   # warm-up
    """

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1, verbose="deprecated"):
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 "
                             "and less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_if_outside_step()
        e, s, f = self.last_epoch, self.start_factor, self.end_factor
        if e == 0:
            return [lr * s for lr in self._lrs()]
        if e > self.total_iters:
            return self._lrs()
        ratio = 1.0 + (f - s) / (self.total_iters * s + (e - 1) * (f - s))
        return [lr * ratio for lr in self._lrs()]

    def _get_closed_form_lr(self):
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * frac)
                for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Multiply the rate by `factor` until epoch `total_iters`, then restore it.

    Example:
        >>> sched = ConstantLR(opt, factor=0.5, total_iters=4)
    """

    def __init__(self, optimizer, factor=1.0 / 3, total_iters=5, last_epoch=-1,
                 verbose="deprecated"):
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_if_outside_step()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._lrs()]
        if self.last_epoch != self.total_iters:
            return self._lrs()
        return [lr / self.factor for lr in self._lrs()]

    def _get_closed_form_lr(self):
        f = self.factor if self.last_epoch < self.total_iters else 1.0
        return [base * f for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """Run `schedulers` one after the other, switching at the `milestones` epochs.

    Example:
        >>> warm = LinearLR(opt, start_factor=0.1, total_iters=5)
        >>> decay = ExponentialLR(opt, gamma=0.9)
        >>> sched = SequentialLR(opt, schedulers=[warm, decay], milestones=[5])
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch=-1, verbose="deprecated"):
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        self._check_schedulers(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to "
                             "be one more than the number of milestone points, but got number "
                             f"of schedulers {len(schedulers)} and the number of milestones "
                             f"to be equal to {len(milestones)}")
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:          # undo the schedulers' own first steps
            group["lr"] = group["initial_lr"]
        for sched in self._schedulers:
            sched.last_epoch -= 1
        first = self._schedulers[bisect_right(self._milestones, 0)]   # milestones may hold 0
        first._initial_step()
        self._last_lr = first.get_last_lr()

    @staticmethod
    def _check_schedulers(name, optimizer, schedulers):
        """PyTorch's checks that `schedulers` can be sequenced or chained."""
        for idx, sched in enumerate(schedulers):
            if not hasattr(sched, "optimizer"):
                raise TypeError(f"{name} at index {idx} should have `optimizer` as its "
                                "attribute.")
            if isinstance(sched, ReduceLROnPlateau):
                raise ValueError(f"{name} does not support `ReduceLROnPlateau` scheduler as it "
                                 "requires additional kwargs to be specified when calling "
                                 f"`step`, but got one at index {idx} in the given schedulers "
                                 "sequence.")
            if sched.optimizer is not optimizer:
                raise ValueError(f"{name} expects all schedulers to belong to the same "
                                 f"optimizer, but got scheduler {type(sched).__name__} at "
                                 f"index {idx} has {sched.optimizer}, which is different "
                                 f"from {type(optimizer).__name__}.")

    def step(self):
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            with warnings.catch_warnings():           # step(0) restarts it: not user misuse
                warnings.simplefilter("ignore", UserWarning)
                sched.step(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()

    def state_dict(self):
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict):
        state_dict = dict(state_dict)
        saved = state_dict.pop("_schedulers")
        self.__dict__.update(state_dict)
        for sched, s in zip(self._schedulers, saved):
            sched.load_state_dict(s)


from ._one_cycle import OneCycleLR  # noqa: E402  (needs LRScheduler above)
from ._plateau import ReduceLROnPlateau  # noqa: E402
from ._more_schedulers import (ChainedScheduler, CosineAnnealingWarmRestarts,  # noqa: E402
                               MultiplicativeLR, PolynomialLR)
