"""Constraints with structure: triangular, Cholesky, symmetric and positive-(semi)definite
matrices, and constraints concatenated or stacked along a dim (re-exported by
`constraints`)."""
import numpy as np

import nbtorch

from .constraints import Constraint

__all__ = ["_LowerTriangular", "_LowerCholesky", "_CorrCholesky", "_Square", "_Symmetric",
           "_PositiveSemidefinite", "_PositiveDefinite", "_Cat", "_Stack"]


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value):
        value_tril = value.tril()
        return (value_tril == value).reshape(tuple(value.shape[:-2]) + (-1,)).min(-1)[0]


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value):
        value_tril = value.tril()
        lower = (value_tril == value).reshape(tuple(value.shape[:-2]) + (-1,)).min(-1)[0]
        positive_diagonal = (value.diagonal(dim1=-2, dim2=-1) > 0).min(-1)[0]
        return lower & positive_diagonal


class _CorrCholesky(Constraint):
    """Lower Cholesky factors of correlation matrices: rows of unit norm."""

    event_dim = 2

    def check(self, value):
        tol = nbtorch.finfo(value.dtype).eps * value.size(-1) * 10
        row_norm = nbtorch.linalg.norm(value.detach(), dim=-1)
        unit_row_norm = (row_norm - 1.0).abs().le(tol).all(dim=-1)
        return _LowerCholesky().check(value) & unit_row_norm


class _Square(Constraint):
    event_dim = 2

    def check(self, value):
        return nbtorch.full(tuple(value.shape[:-2]), value.shape[-1] == value.shape[-2],
                            dtype=nbtorch.bool, device=value.device)


class _Symmetric(_Square):
    def check(self, value):
        square_check = super().check(value)
        if not square_check.all():
            return square_check
        return nbtorch.isclose(value, value.mT, atol=1e-6).all(-2).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value):
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        eig = np.linalg.eigvalsh(value.detach()._host())
        return nbtorch.tensor((eig >= 0).all(-1), device=value.device)


class _PositiveDefinite(_Symmetric):
    def check(self, value):
        sym_check = super().check(value)
        if not sym_check.all():
            return sym_check
        return nbtorch.linalg.cholesky_ex(value.detach()).info.eq(0)


class _Cat(Constraint):
    """Each of `cseq` applied to its slice of `dim` (slice sizes `lengths`, default 1)."""

    def __init__(self, cseq, dim=0, lengths=None):
        assert all(isinstance(c, Constraint) for c in cseq)
        self.cseq = list(cseq)
        if lengths is None:
            lengths = [1] * len(self.cseq)
        self.lengths = list(lengths)
        assert len(self.lengths) == len(self.cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        return max(c.event_dim for c in self.cseq)

    def check(self, value):
        _check_dim(self.dim, value)
        checks, start = [], 0
        for constr, length in zip(self.cseq, self.lengths):
            checks.append(constr.check(value.narrow(self.dim, start, length)))
            start = start + length
        return nbtorch.cat(checks, self.dim)


class _Stack(Constraint):
    """Each of `cseq` applied to its index along `dim`."""

    def __init__(self, cseq, dim=0):
        assert all(isinstance(c, Constraint) for c in cseq)
        self.cseq = list(cseq)
        self.dim = dim
        super().__init__()

    @property
    def is_discrete(self):
        return any(c.is_discrete for c in self.cseq)

    @property
    def event_dim(self):
        dim = max(c.event_dim for c in self.cseq)
        if self.dim + dim < 0:
            dim += 1
        return dim

    def check(self, value):
        _check_dim(self.dim, value)
        vs = [value.select(self.dim, i) for i in range(value.size(self.dim))]
        return nbtorch.stack([c.check(v) for v, c in zip(vs, self.cseq)], self.dim)


def _check_dim(dim, value):
    """PyTorch's AssertionError (raised, so it holds under ``python -O`` too)."""
    if not -value.dim() <= dim < value.dim():
        raise AssertionError(f"dim {dim} out of range for value with {value.dim()} dimensions")
