"""Gamma(concentration, rate) and Chi2(df) = Gamma(df / 2, 1 / 2)."""
from numbers import Number

import nbtorch
from nbtorch import Size

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Gamma", "Chi2"]


class Gamma(ExponentialFamily):
    """Density rate**c x**(c-1) exp(-rate x) / Gamma(c). `rsample` is differentiable in
    both parameters (Marsaglia-Tsang draws, implicit reparameterisation gradients).

    Example:
        >>> Gamma(nbtorch.tensor([1.0]), nbtorch.tensor([1.0])).sample()  # e.g. [3.4]
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        if isinstance(concentration, Number) and isinstance(rate, Number):
            batch_shape = Size()
        else:
            batch_shape = self.concentration.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Gamma, batch_shape, _instance, ("concentration", "rate"))

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        value = nbtorch._standard_gamma(self.concentration.expand(shape)) / \
            self.rate.expand(shape)
        value.detach().clamp_(min=nbtorch.finfo(value.dtype).tiny)   # not recorded
        return value

    def log_prob(self, value):
        value = nbtorch.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (nbtorch.xlogy(self.concentration, self.rate)
                + nbtorch.xlogy(self.concentration - 1, value)
                - self.rate * value - nbtorch.lgamma(self.concentration))

    def entropy(self):
        c = self.concentration
        return c - nbtorch.log(self.rate) + nbtorch.lgamma(c) + (1.0 - c) * nbtorch.digamma(c)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return nbtorch.igamma(self.concentration, self.rate * value)

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return nbtorch.lgamma(x + 1) + (x + 1) * nbtorch.log(-y.reciprocal())


class Chi2(Gamma):
    """The chi-squared distribution with `df` degrees of freedom: Gamma(df / 2, 1 / 2).

    Example:
        >>> Chi2(nbtorch.tensor([1.0])).sample()          # e.g. tensor([0.1046])
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2
