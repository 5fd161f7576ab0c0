"""Dirichlet(concentration) on the simplex, and Beta(concentration1, concentration0),
its two-category case."""
from numbers import Real, Number

import nbtorch
from nbtorch import Size
import nbtorch.nn.functional as F

from . import constraints
from .exp_family import ExponentialFamily
from .utils import broadcast_all

__all__ = ["Dirichlet", "Beta"]


class Dirichlet(ExponentialFamily):
    """Density prod x_i**(a_i - 1) / B(a) on the simplex (last dim). `rsample` normalises
    independent Gamma(a_i) draws, so gradients reach the concentration: the exact pathwise
    derivative through those draws. (PyTorch's backward is `_dirichlet_grad`, an
    approximation built on each x_i's Beta marginal: the same expected gradient, other
    per-sample values; samples differ anyway, the Gamma sampler being nbtorch's own.)

    Example:
        >>> Dirichlet(nbtorch.tensor([0.5, 0.5])).sample()    # e.g. tensor([0.11, 0.89])
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Dirichlet, batch_shape, _instance, ("concentration",),
                                   param_event_dims=1)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        value = nbtorch._sample_dirichlet(self.concentration.expand(shape))
        value.detach().clamp_(min=nbtorch.finfo(value.dtype).tiny)    # not recorded
        return value

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (nbtorch.xlogy(c - 1.0, value).sum(-1) + nbtorch.lgamma(c.sum(-1))
                - nbtorch.lgamma(c).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        mode = cm1 / cm1.sum(-1, True)
        # all concentrations below 1: a corner (PyTorch's one-hot of the argmax of the NaN
        # ratios above, i.e. the first corner)
        corner = F.one_hot(mode.argmax(dim=-1), cm1.shape[-1]).to(mode.dtype)
        mask = (self.concentration < 1).all(dim=-1, keepdim=True)
        return nbtorch.where(mask, corner, mode)

    @property
    def variance(self):
        c = self.concentration
        con0 = c.sum(-1, True)
        return c * (con0 - c) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        a0 = c.sum(-1)
        return (nbtorch.lgamma(c).sum(-1) - nbtorch.lgamma(a0)
                - (k - a0) * nbtorch.digamma(a0) - ((c - 1.0) * nbtorch.digamma(c)).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - nbtorch.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """Density x**(c1 - 1) (1 - x)**(c0 - 1) / B(c1, c0) on [0, 1], reparameterised
    through the Dirichlet.

    Example:
        >>> Beta(nbtorch.tensor([0.5]), nbtorch.tensor([0.5])).sample()  # e.g. [0.1]
    """

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        if isinstance(concentration1, Real) and isinstance(concentration0, Real):
            c1c0 = nbtorch.tensor([float(concentration1), float(concentration0)])
        else:
            concentration1, concentration0 = broadcast_all(concentration1, concentration0)
            c1c0 = nbtorch.stack([concentration1, concentration0], -1)
        self._dirichlet = Dirichlet(c1c0, validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = Size(batch_shape)
        new._dirichlet = self._dirichlet.expand(batch_shape)
        ExponentialFamily.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        heads_tails = nbtorch.stack([value, 1.0 - value], -1)
        return self._dirichlet.log_prob(heads_tails)

    def entropy(self):
        return self._dirichlet.entropy()

    @property
    def concentration1(self):
        result = self._dirichlet.concentration[..., 0]
        return nbtorch.tensor([result]) if isinstance(result, Number) else result

    @property
    def concentration0(self):
        result = self._dirichlet.concentration[..., 1]
        return nbtorch.tensor([result]) if isinstance(result, Number) else result

    @property
    def _natural_params(self):
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x, y):
        return nbtorch.lgamma(x) + nbtorch.lgamma(y) - nbtorch.lgamma(x + y)
