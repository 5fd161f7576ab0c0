"""Poisson(rate): counts of events at a constant rate."""
from numbers import Number

import nbtorch
from nbtorch import Size

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Poisson"]


class Poisson(ExponentialFamily):
    """P(k) = rate**k exp(-rate) / k!, sampled by a Numba kernel (multiplication method
    below rate 10, Hormann's PTRS above).

    Example:
        >>> Poisson(nbtorch.tensor([4.0])).sample()           # e.g. tensor([3.])
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, _instance, ("rate",))

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        with nbtorch.no_grad():
            return nbtorch.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (nbtorch.log(self.rate),)

    def _log_normalizer(self, x):
        return nbtorch.exp(x)
