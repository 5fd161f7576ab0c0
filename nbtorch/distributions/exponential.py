"""Exponential(rate): waiting times of a Poisson process."""
from numbers import Number

import nbtorch
from nbtorch import Size

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Exponential"]


class Exponential(ExponentialFamily):
    """Density rate * exp(-rate * x) on x >= 0, reparameterised (E / rate, E ~ Exp(1)).

    Example:
        >>> Exponential(nbtorch.tensor([1.0])).sample()       # e.g. tensor([0.1046])
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return nbtorch.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        batch_shape = Size() if isinstance(rate, Number) else self.rate.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Exponential, batch_shape, _instance, ("rate",))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        # PyTorch's draw (exponential_), so samples after manual_seed are PyTorch's
        e = nbtorch.empty(tuple(shape), dtype=self.rate.dtype, device=self.rate.device)
        return e.exponential_() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - nbtorch.exp(-self.rate * value)

    def icdf(self, value):
        return -nbtorch.log1p(-value) / self.rate

    def entropy(self):
        return 1.0 - nbtorch.log(self.rate)

    @property
    def _natural_params(self):
        return (-self.rate,)

    def _log_normalizer(self, x):
        return -nbtorch.log(-x)
