"""Wishart(df, covariance_matrix | precision_matrix | scale_tril): random positive-definite
matrices, the sample covariance of `df` Gaussian draws."""
import math
from numbers import Number
import warnings

import nbtorch
from nbtorch import Size

from . import constraints
from .exp_family import ExponentialFamily
from .gamma import Chi2
from .multivariate_normal import _cholesky_inverse, _precision_to_scale_tril
from .utils import _mvdigamma, _mvlgamma, lazy_property

__all__ = ["Wishart"]

_LOG_2 = math.log(2)


def _logdet_pd(m):
    """log det of positive-definite matrices, through their Cholesky factors."""
    return 2 * nbtorch.linalg.cholesky(m).diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _diag_embed(v):
    return v.unsqueeze(-1) * nbtorch.eye(v.shape[-1], dtype=v.dtype, device=v.device)


class Wishart(ExponentialFamily):
    """The Wishart distribution W(df, Sigma) over p x p positive-definite matrices,
    reparameterised by the Bartlett decomposition (its Chi2 diagonal through the Gamma
    sampler's implicit gradients).

    Example:
        >>> Wishart(nbtorch.tensor([4.0]), covariance_matrix=nbtorch.eye(2)).sample()
    """

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if ((covariance_matrix is not None) + (scale_tril is not None)
                + (precision_matrix is not None)) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        param = next(p for p in (covariance_matrix, precision_matrix, scale_tril)
                     if p is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if isinstance(df, Number):
            batch_shape = Size(param.shape[:-2])
            self.df = nbtorch.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = nbtorch.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(tuple(batch_shape))
        event_shape = param.shape[-2:]
        if bool(self.df.le(event_shape[-1] - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = "
                             f"{event_shape[-1] - 1}.")
        for name, m in (("scale_tril", scale_tril), ("covariance_matrix", covariance_matrix),
                        ("precision_matrix", precision_matrix)):
            if m is not None:
                setattr(self, name, m.expand(tuple(batch_shape) + (-1, -1)))
        if bool(self.df.lt(event_shape[-1]).any()):
            warnings.warn("Low df values detected. Singular samples are highly likely to "
                          "occur for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = nbtorch.linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)
        self._dist_chi2 = self._chi2(batch_shape)

    def _chi2(self, batch_shape):
        """Chi2(df - i), i = 0..p-1: the squared Bartlett diagonal."""
        L = self._unbroadcasted_scale_tril
        return Chi2(self.df.unsqueeze(-1) - nbtorch.arange(
            self._event_shape[-1], dtype=L.dtype, device=L.device).expand(
                tuple(batch_shape) + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = tuple(batch_shape + self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(tuple(batch_shape))
        for name in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(cov_shape))
        ExponentialFamily.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._dist_chi2 = new._chi2(batch_shape)
        new._validate_args = self._validate_args
        return new

    def _matrix_shape(self):
        return tuple(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        return _cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    def _df_matrix(self, value):
        return value.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = nbtorch.where(factor <= 0, math.nan, factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=Size()):
        p = self._event_shape[-1]
        diag = self._dist_chi2.rsample(sample_shape).sqrt()
        diag = diag.clamp(min=nbtorch.finfo(diag.dtype).eps)
        lower = nbtorch.randn(tuple(diag.shape) + (p,), dtype=diag.dtype,
                              device=diag.device).tril(-1)
        chol = self._unbroadcasted_scale_tril @ (_diag_embed(diag) + lower)
        return chol @ chol.mT

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        """Bartlett samples; singular ones (possible for df < p) are redrawn up to
        `max_try_correction` (10) times, with a warning."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        bad = ~self.support.check(sample.detach())
        if bool(bad.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
            for _ in range(max_try_correction):
                fresh = self._bartlett_sampling(sample_shape)
                sample = nbtorch.where(bad.unsqueeze(-1).unsqueeze(-1), fresh, sample)
                bad = ~self.support.check(sample.detach())
                if not bool(bad.any()):
                    break
        return sample

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        # trace(Sigma^-1 X) = |L^-1 chol(X)|_F^2 would need chol(X); L^-T L^-1 X instead
        solved = nbtorch.linalg.solve_triangular(
            L.mT, nbtorch.linalg.solve_triangular(L, value, upper=False), upper=True)
        return (-nu * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                - _mvlgamma(nu / 2, p) + (nu - p - 1) / 2 * _logdet_pd(value)
                - solved.diagonal(dim1=-2, dim2=-1).sum(dim=-1) / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        L = self._unbroadcasted_scale_tril
        return ((p + 1) * (p * _LOG_2 / 2 + L.diagonal(dim1=-2, dim2=-1).log().sum(-1))
                + _mvlgamma(nu / 2, p) - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
                + nu * p / 2)

    @property
    def _natural_params(self):
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (self.df - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-_logdet_pd(-2 * x) + _LOG_2 * p)
                + _mvlgamma(y + (p + 1) / 2, p))
