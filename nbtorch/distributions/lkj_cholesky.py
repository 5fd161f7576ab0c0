"""LKJCholesky(dim, concentration): Cholesky factors of LKJ-distributed correlation
matrices (Lewandowski, Kurowicka and Joe, 2009)."""
import math

import nbtorch
from nbtorch import Size

from . import constraints
from .dirichlet import Beta
from .distribution import Distribution
from .utils import _mvlgamma, broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """Lower Cholesky factors L of correlation matrices with density proportional to
    det(L L^T)**(concentration - 1); sampled by the onion method (Beta radii, uniform
    directions), vectorised over rows.

    Example:
        >>> LKJCholesky(3, 0.5).sample()          # a 3 x 3 lower-triangular factor
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = Size((dim, dim))
        # the squared radius of row i is Beta(i/2, eta + (dim - 2)/2 - ... ) (onion method)
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = nbtorch.arange(self.dim - 1, dtype=self.concentration.dtype,
                                device=self.concentration.device)
        offset = nbtorch.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(tuple(batch_shape))
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        with nbtorch.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            shape = tuple(self._extended_shape(sample_shape))
            u_normal = nbtorch.randn(shape, dtype=y.dtype, device=y.device).tril(-1)
            u_hypersphere = u_normal / u_normal.norm(dim=-1, keepdim=True)
            first = nbtorch.zeros(self.dim, 1, dtype=y.dtype, device=y.device)
            first[0] = 1.0
            u_hypersphere = nbtorch.where(first.bool(), 0.0, u_hypersphere)   # row 0: 0/0
            w = nbtorch.sqrt(y) * u_hypersphere
            eps = nbtorch.finfo(w.dtype).tiny
            diag = nbtorch.clamp(1 - nbtorch.sum(w ** 2, dim=-1), min=eps).sqrt()
            return w + diag.unsqueeze(-1) * nbtorch.eye(self.dim, dtype=w.dtype, device=w.device)

    def log_prob(self, value):
        # density of the correlation matrix ~ det**(eta - 1) = prod L_ii**(2 (eta - 1)); the
        # Jacobian from the Cholesky factor adds prod L_ii**(D - i)
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = nbtorch.arange(2, self.dim + 1, dtype=self.concentration.dtype,
                               device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = nbtorch.sum(order * diag_elems.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = nbtorch.lgamma(alpha) * dm1
        numerator = _mvlgamma(alpha - 0.5, dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
