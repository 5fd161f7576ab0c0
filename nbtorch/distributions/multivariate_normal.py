"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril)."""
import math

import nbtorch
from nbtorch import Size

from . import constraints
from .distribution import Distribution
from .utils import _standard_normal, lazy_property

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat, bvec):
    """Matrix-vector products broadcast over batch dims."""
    return nbtorch.matmul(bmat, bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL, bx):
    """|L^-1 x|^2 for lower-triangular L (..., n, n) and x (..., n). When x's batch ends
    with L's, the extra leading (sample) dims become right-hand-side columns of one
    triangular solve instead of copies of L."""
    n = bx.shape[-1]
    bshape = tuple(bL.shape[:-2])
    xb = tuple(bx.shape[:-1])
    k = len(xb) - len(bshape)
    if k < 0 or xb[k:] != bshape:
        sol = nbtorch.linalg.solve_triangular(bL, bx.unsqueeze(-1), upper=False)
        return sol.squeeze(-1).pow(2).sum(-1)
    flat = bx.reshape((-1,) + bshape + (n,)).movedim(0, -1)           # bshape + (n, S)
    sol = nbtorch.linalg.solve_triangular(bL, flat, upper=False)
    return sol.pow(2).sum(-2).movedim(-1, 0).reshape(xb)


def _eye_like(m):
    return nbtorch.eye(m.shape[-1], dtype=m.dtype, device=m.device)


def _precision_to_scale_tril(P):
    """The lower Cholesky factor of P^-1, through the Cholesky factor of P with its rows
    and columns reversed (no explicit inverse)."""
    Lf = nbtorch.linalg.cholesky(nbtorch.flip(P, (-2, -1)))
    L_inv = nbtorch.transpose(nbtorch.flip(Lf, (-2, -1)), -2, -1)
    return nbtorch.linalg.solve_triangular(L_inv, _eye_like(P), upper=False)


def _cholesky_inverse(L):
    """(L L^T)^-1 from its lower Cholesky factor."""
    Linv = nbtorch.linalg.solve_triangular(L, _eye_like(L), upper=False)
    return Linv.mT @ Linv


class MultivariateNormal(Distribution):
    """A Gaussian over vectors (event_shape (n,)), parameterised by exactly one of a
    covariance matrix, a precision matrix or a lower-triangular `scale_tril`
    (covariance = scale_tril @ scale_tril.T). Reparameterised.

    Example:
        >>> m = MultivariateNormal(nbtorch.zeros(2), nbtorch.eye(2))
        >>> m.sample()                                  # e.g. tensor([-0.2102, -0.5429])
    """

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if ((covariance_matrix is not None) + (scale_tril is not None)
                + (precision_matrix is not None)) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        for name, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                        ("precision_matrix", precision_matrix)):
            if m is not None:
                if m.dim() < 2:
                    raise ValueError(f"{name} matrix must be at least two-dimensional, "
                                     "with optional leading batch dimensions")
                batch_shape = nbtorch.broadcast_shapes(m.shape[:-2], loc.shape[:-1])
                setattr(self, name, m.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = nbtorch.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = tuple(batch_shape + self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape + self._event_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return nbtorch.matmul(L, L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return _cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape + self._event_shape))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = _standard_normal(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + M) - self._half_log_det()

    def entropy(self):
        H = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return H if len(self._batch_shape) == 0 else H.expand(tuple(self._batch_shape))
