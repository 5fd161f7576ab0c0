"""More schedulers: MultiplicativeLR, PolynomialLR, CosineAnnealingWarmRestarts,
ChainedScheduler (as torch.optim.lr_scheduler)."""
import math

from .lr_scheduler import LambdaLR, LRScheduler, SequentialLR

__all__ = ["MultiplicativeLR", "PolynomialLR", "CosineAnnealingWarmRestarts",
           "ChainedScheduler"]


class MultiplicativeLR(LambdaLR):
    """Multiply the rate by ``lr_lambda(epoch)`` every epoch (from epoch 1).

    Example:
        >>> sched = MultiplicativeLR(opt, lr_lambda=lambda epoch: 0.95)
    """

    def get_lr(self):
        self._warn_if_outside_step()
        if self.last_epoch > 0:
            return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, self._lrs())]
        return self._lrs()


class PolynomialLR(LRScheduler):
    """Decay the rate as ``(1 - epoch / total_iters) ** power`` until `total_iters`.

    Example:
        >>> sched = PolynomialLR(opt, total_iters=4, power=1.0)   # 1, .75, .5, .25, 0
    """

    def __init__(self, optimizer, total_iters=5, power=1.0, last_epoch=-1,
                 verbose="deprecated"):
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_if_outside_step()
        e, n = self.last_epoch, self.total_iters
        if e == 0 or e > n:
            return self._lrs()
        factor = ((1.0 - e / n) / (1.0 - (e - 1) / n)) ** self.power
        return [lr * factor for lr in self._lrs()]

    def _get_closed_form_lr(self):
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (1.0 - frac) ** self.power for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every T_i epochs (T_0, then T_i *= T_mult).

    `step(epoch)` accepts fractional epochs (e.g. ``epoch + i / iters``) to
    anneal per batch.

    Example:
        >>> sched = CosineAnnealingWarmRestarts(opt, T_0=10, T_mult=2)
    """

    def __init__(self, optimizer, T_0, T_mult=1, eta_min=0.0, last_epoch=-1,
                 verbose="deprecated"):
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0 = self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_if_outside_step()
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch=None):
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur += 1
            if self.T_cur >= self.T_i:
                self.T_cur -= self.T_i
                self.T_i *= self.T_mult
        elif epoch < 0:
            raise ValueError(f"Expected non-negative epoch, but got {epoch}")
        elif epoch >= self.T_0:
            if self.T_mult == 1:
                self.T_cur = epoch % self.T_0
            else:
                n = int(math.log(epoch / self.T_0 * (self.T_mult - 1) + 1, self.T_mult))
                self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                self.T_i = self.T_0 * self.T_mult ** n
        else:
            self.T_i = self.T_0
            self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = self._lrs()


class ChainedScheduler(LRScheduler):
    """Step several schedulers together each epoch (their factors multiply).

    Example:
        >>> sched = ChainedScheduler([ConstantLR(opt, 0.1, 2), ExponentialLR(opt, 0.9)])
    """

    def __init__(self, schedulers, optimizer=None):
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler to be chained, but got "
                             "no scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        SequentialLR._check_schedulers(name, optimizer, schedulers)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = self._lrs()

    def step(self):
        for sched in self._schedulers:
            sched.step()
        self._last_lr = self._lrs()

    state_dict = SequentialLR.state_dict
    load_state_dict = SequentialLR.load_state_dict
