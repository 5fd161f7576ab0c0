"""ReduceLROnPlateau: cut the rate when a monitored metric stops improving."""
import warnings
from math import inf

from .base import EPOCH_DEPRECATION_WARNING, LRScheduler, _check_optimizer, _set_group_value

__all__ = ["ReduceLROnPlateau"]


class ReduceLROnPlateau(LRScheduler):
    """Multiply the rates by `factor` after `patience` epochs without improvement.

    Args:
        optimizer: the optimizer.
        mode: 'min' (the metric should decrease) or 'max'.
        factor: rate multiplier, < 1 (default 0.1).
        patience: epochs without improvement tolerated (default 10).
        threshold: how much better counts as an improvement (default 1e-4).
        threshold_mode: 'rel' (best * (1 -/+ threshold)) or 'abs' (best -/+ threshold).
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: lower bound, one value or one per param group.
        eps: reductions smaller than this are skipped (default 1e-8).

    Example:
        >>> sched = ReduceLROnPlateau(opt, mode="min", patience=3)
        >>> for epoch in range(n): train(); sched.step(validation_loss)
    """

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got "
                                 f"{len(min_lr)}")
            self.default_min_lr = None
            self.min_lrs = list(min_lr)
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = self._lrs()
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.mode_worse = inf if mode == "min" else -inf

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self):
        return self.cooldown_counter > 0

    def _is_better(self, a, best):
        """Whether metric value `a` improves on `best` by more than the threshold."""
        t = self.threshold
        if self.mode == "min":
            return a < best * (1.0 - t) if self.threshold_mode == "rel" else a < best - t
        return a > best * (t + 1.0) if self.threshold_mode == "rel" else a > best + t

    def step(self, metrics, epoch=None):
        """Record this epoch's metric value (a number or 1-element tensor)."""
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = self._lrs()

    is_better = _is_better       # the name before PyTorch 2.6

    def _reduce_lr(self, epoch=None):
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The number of param groups in the `optimizer` ({len(groups)}) differs "
                    f"from when `ReduceLROnPlateau` was initialized ({len(self.min_lrs)}), "
                    "usually due to a new param group being added to the optimizer. Please "
                    "modify the `min_lrs` field to match the length of the `optimizer` param "
                    "groups.")
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                _set_group_value(group, "lr", new)

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
