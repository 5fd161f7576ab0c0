"""Stochastic weight averaging and EMA of weights, as torch.optim.swa_utils.

`AveragedModel` keeps a copy of a model whose parameters are a running
average of the model's (equal weights by default: SWA; an exponential moving
average with `get_ema_multi_avg_fn`), `SWALR` anneals the rate to a constant
SWA rate, and `update_bn` recomputes BatchNorm statistics for the averaged
weights with one pass over the data.
"""
import copy
import itertools
import math
import warnings

from ..autograd import no_grad
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from ..ops.creation import tensor
from .. import _dtype
from .lr_scheduler.base import LRScheduler, _format_param

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn",
           "get_swa_multi_avg_fn", "get_ema_avg_fn", "get_swa_avg_fn"]


def _check_decay(decay):
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")


def get_ema_multi_avg_fn(decay=0.999):
    """An in-place update of a list of averaged tensors: ``ema = decay ema + (1 - decay) p``."""
    _check_decay(decay)

    def ema_update(ema_param_list, current_param_list, _):
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                if p_ema.is_floating_point():
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))
    return ema_update


def get_swa_multi_avg_fn():
    """An in-place update of a list of averaged tensors: the equal-weight running mean
    ``avg += (p - avg) / (n + 1)`` after n averaged models."""
    def swa_update(averaged_param_list, current_param_list, num_averaged):
        with no_grad():
            weight = float(1 / (num_averaged + 1))      # in the default dtype, as PyTorch
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                if p_avg.is_floating_point():
                    p_avg.lerp_(p_model, weight)
                else:
                    p_avg.copy_(p_avg + (p_model - p_avg) / (num_averaged + 1))
    return swa_update


def get_ema_avg_fn(decay=0.999):
    """``avg_fn(ema, p, n)`` returning ``decay ema + (1 - decay) p``."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param
    return ema_update


def get_swa_avg_fn():
    """``avg_fn(avg, p, n)`` returning the running mean ``avg + (p - avg) / (n + 1)``."""
    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)
    return swa_update


class AveragedModel(Module):
    """A copy of `model` holding the average of the parameters it is given.

    Call `update_parameters(model)` after optimizer steps; the first call copies
    the weights, later ones average them with `avg_fn` (one tensor at a time)
    or `multi_avg_fn` (lists of tensors), by default an equal-weight mean.
    Buffers (e.g. BatchNorm statistics) are copied from `model`, or averaged
    too with ``use_buffers=True``. ``n_averaged`` counts the models averaged.

    Example:
        >>> ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))
        >>> for x, y in loader: train_step(x, y); ema.update_parameters(model)
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        n = tensor(0, dtype=_dtype.int64)
        self.register_buffer("n_averaged", n if device is None else n.to(device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def update_parameters(self, model):
        """Average `model`'s current parameters (and buffers with use_buffers) in."""
        if self.use_buffers:
            mine = itertools.chain(self.module.parameters(), self.module.buffers())
            theirs = itertools.chain(model.parameters(), model.buffers())
        else:
            mine, theirs = self.parameters(), model.parameters()
        pairs = []
        first = bool(self.n_averaged == 0)
        with no_grad():
            for p_avg, p_model in zip(mine, theirs):
                p_model = p_model.detach().to(p_avg.device)
                pairs.append((p_avg.detach(), p_model))
                if first:
                    p_avg.detach().copy_(p_model)
            if self.n_averaged > 0:
                self._average(pairs)
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1

    def _average(self, pairs):
        if self.avg_fn is not None and self.multi_avg_fn is None:
            for p_avg, p_model in pairs:
                n = self.n_averaged.to(p_avg.device)
                p_avg.copy_(self.avg_fn(p_avg, p_model, n))
            return
        groups = {}                        # PyTorch averages per (device, dtype) group
        for p_avg, p_model in pairs:
            groups.setdefault((str(p_avg.device), p_avg.dtype), []).append((p_avg, p_model))
        for group in groups.values():
            averaged, current = [a for a, _ in group], [m for _, m in group]
            n = self.n_averaged.to(averaged[0].device)
            if self.multi_avg_fn is not None:
                self.multi_avg_fn(averaged, current, n)
            elif averaged[0].device.type == "cuda":          # PyTorch's foreach devices
                get_swa_multi_avg_fn()(averaged, current, n)
            else:
                avg_fn = get_swa_avg_fn()
                for p_avg, p_model in group:
                    p_avg.copy_(avg_fn(p_avg, p_model, n))


def update_bn(loader, model, device=None):
    """Recompute the running statistics of `model`'s BatchNorm layers from one pass
    over `loader` (an iterable of inputs, or of (input, ...) tuples whose first
    entry is fed to the model), with cumulative averages; the model's
    train/eval mode is restored afterwards.

    Example:
        >>> update_bn(train_loader, swa_model)
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            if device is not None:
                batch = batch.to(device)
            model(batch)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's rate from its current value to `swa_lr` over
    `anneal_epochs` epochs ('cos' or 'linear'), then hold it there.

    Example:
        >>> swa_scheduler = SWALR(opt, swa_lr=0.05, anneal_epochs=5)
        >>> for epoch in range(n): train(); swa_model.update_parameters(model); swa_scheduler.step()
    """

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos",
                 last_epoch=-1):
        swa_lrs = _format_param("swa_lr", optimizer, swa_lr)
        for lr, group in zip(swa_lrs, optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy):
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else \
            self._linear_anneal

    def get_lr(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please "
                          "use `get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        # recover the rate this annealing started from, then move it one step on
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        t = max(0, min(1, step / max(1, self.anneal_epochs)))
        alpha = self.anneal_func(t)
        return [group["swa_lr"] * alpha + lr * (1 - alpha)
                for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def state_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict):
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
