"""Pareto(scale, alpha) and GeneralizedPareto(loc, scale, concentration)."""
import math
from numbers import Number, Real

import nbtorch
from nbtorch import Size

from . import constraints
from .distribution import Distribution
from .exponential import Exponential
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform
from .utils import broadcast_all

__all__ = ["Pareto", "GeneralizedPareto"]


class Pareto(TransformedDistribution):
    """Density alpha scale**alpha / x**(alpha + 1) on x >= scale: scale * exp(E),
    E ~ Exponential(alpha). Reparameterised.

    Example:
        >>> Pareto(nbtorch.tensor([1.0]), nbtorch.tensor([1.0])).sample()  # e.g. [1.5623]
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.alpha = self.alpha.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)          # inf for alpha <= 1
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)          # inf for alpha <= 2
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class GeneralizedPareto(Distribution):
    """The generalized Pareto of peaks over a threshold: survival function
    (1 + concentration z)**(-1/concentration), z = (x - loc) / scale (exp(-z) at
    concentration 0). Reparameterised through its inverse CDF.

    Example:
        >>> GeneralizedPareto(nbtorch.tensor([0.1]), nbtorch.tensor([2.0]),
        ...                   nbtorch.tensor([0.4])).sample()
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        if all(isinstance(v, Number) for v in (loc, scale, concentration)):
            batch_shape = Size()
        else:
            batch_shape = self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(GeneralizedPareto, batch_shape, _instance,
                                   ("loc", "scale", "concentration"))

    def rsample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        return self.icdf(nbtorch.rand(shape, dtype=self.loc.dtype, device=self.loc.device))

    def _safe(self):
        """(concentration == 0 (to float closeness), concentration with 0 replaced by 1)."""
        eq_zero = nbtorch.isclose(self.concentration, nbtorch.zeros_like(self.concentration))
        return eq_zero, nbtorch.where(eq_zero, 1.0, self.concentration)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe()
        y = 1 / safe_conc + nbtorch.ones_like(z)
        where_nonzero = nbtorch.where(y == 0, y, y * nbtorch.log1p(safe_conc * z))
        log_scale = math.log(self.scale) if isinstance(self.scale, Real) else self.scale.log()
        return -log_scale - nbtorch.where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe()
        return nbtorch.where(eq_zero, -z, -nbtorch.log1p(safe_conc * z) / safe_conc)

    def log_cdf(self, value):
        return nbtorch.log1p(-nbtorch.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return nbtorch.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe_conc = self._safe()
        logu = nbtorch.log1p(-value)
        where_nonzero = self.loc + self.scale / safe_conc * nbtorch.expm1(-safe_conc * logu)
        return nbtorch.where(eq_zero, self.loc - self.scale * logu, where_nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        safe = nbtorch.where(valid, self.concentration, 0.5)
        return nbtorch.where(valid, self.loc + self.scale / (1 - safe), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe = nbtorch.where(valid, self.concentration, 0.25)
        result = self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe))
        return nbtorch.where(valid, result, math.nan)

    def entropy(self):
        ans = nbtorch.log(self.scale) + self.concentration + 1
        return ans.expand(tuple(self._batch_shape))

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = nbtorch.where(self.concentration < 0, lower - self.scale / self.concentration,
                              math.inf)
        return constraints.interval(lower, upper)
