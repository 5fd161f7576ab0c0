"""`nn.utils.parametrizations`: weight_norm, spectral_norm and orthogonal as parametrizations
(`nn.utils.parametrize`), PyTorch's current way to constrain a weight.

- weight_norm: w = g * v / ||v|| (norm over every dim but `dim`; dim=None: the whole
  tensor), originals g (original0) and v (original1);
- spectral_norm: w / sigma, sigma from power iteration on the weight as a matrix (buffers
  _u and _v, one more iteration per training-mode access);
- orthogonal: an orthogonal (semi-orthogonal) matrix from an unconstrained one through
  the matrix exponential, the Cayley map or Householder reflectors; with
  use_trivialization (default) a `base` buffer holds the orthogonal matrix the
  parameter is relative to.
"""
import enum

from ... import _dtype
from .. import functional as F
from ..modules.module import Module
from . import parametrize

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def norm_except_dim(v, pow=2, dim=0):
    """||v|| over every dim but `dim`, keeping dims (dim == -1: the whole tensor's norm)."""
    if dim == -1:
        return v.norm(pow)
    dim = dim % v.dim()
    others = tuple(d for d in range(v.dim()) if d != dim)
    return v.norm(pow, dim=others, keepdim=True) if others else v.abs()


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as g * v / ||v|| (see the module doc). Old
    checkpoints' ``<name>_g``/``<name>_v`` keys load into the new originals.

    Example:
        >>> m = weight_norm(nn.Linear(20, 40), name="weight")
        >>> m.parametrizations.weight.original0.shape
        torch.Size([40, 1])
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def compat(state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(compat)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.dim()
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            from ... import no_grad
            self.n_power_iterations = n_power_iterations
            with no_grad():
                mat = self._reshape_weight_to_matrix(weight.detach())
                h, w = mat.shape
                u = mat.new_empty(h).normal_(0, 1)
                v = mat.new_empty(w).normal_(0, 1)
                self.register_buffer("_u", F.normalize(u, dim=0, eps=eps))
                self.register_buffer("_v", F.normalize(v, dim=0, eps=eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, iterations):
        from ... import no_grad
        with no_grad():
            mat = mat.detach()
            for _ in range(iterations):
                self._u.copy_(F.normalize(mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mat.t().mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.dim() == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = u.dot(mat.mv(v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its largest singular value (power iteration estimate);
    dim defaults to 1 for transposed convolutions, 0 otherwise.

    Example:
        >>> snm = spectral_norm(nn.Linear(20, 40))
        >>> torch.linalg.matrix_norm(snm.weight, 2)       # close to 1
    """
    from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
    from ..._tensor import Tensor
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) \
            else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


class _OrthMaps(enum.Enum):
    matrix_exp = enum.auto()
    cayley = enum.auto()
    householder = enum.auto()


def _make_orthogonal(A):
    """The Q of A = QR with diag(R) >= 0 (A tall)."""
    from ... import geqrf, linalg
    X, tau = geqrf(A)
    Q = linalg.householder_product(X, tau)
    return Q * X.diagonal(dim1=-2, dim2=-1).sign().unsqueeze(-2)


def _is_orthogonal(Q):
    from ... import allclose, eye
    n, k = Q.shape[-2], Q.shape[-1]
    eps = 10.0 * n * float(_dtype.finfo(Q.dtype).eps)
    return allclose(Q.mT @ Q, eye(k, dtype=Q.dtype, device=Q.device), atol=eps)


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        self.shape = tuple(weight.shape)
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        from ... import cat, eye, linalg, matrix_exp
        n, k = X.shape[-2], X.shape[-1]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mT
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = matrix_exp(A)
            else:
                Id = eye(n, dtype=A.dtype, device=A.device)
                Q = linalg.solve(Id - 0.5 * A, Id + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = linalg.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).detach().int().to(Q.dtype).unsqueeze(-2)
        if "base" in self._buffers and self.base is not None:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        from ... import cat, no_grad, randn, zeros_like
        with no_grad():
            if tuple(Q.shape) != self.shape:
                raise ValueError(f"Expected a matrix or batch of matrices of shape "
                                 f"{self.shape}. Got a tensor of shape {tuple(Q.shape)}.")
            Q_init = Q
            n, k = Q.shape[-2], Q.shape[-1]
            transpose = n < k
            if transpose:
                Q = Q.mT
                n, k = k, n
            if "base" not in self._buffers:
                if self.orthogonal_map != _OrthMaps.householder:
                    raise NotImplementedError("It is not possible to assign to the matrix "
                                              "exponential or the Cayley parametrizations "
                                              "when use_trivialization=False.")
                from ... import eye, geqrf
                A, tau = geqrf(Q)
                d = A.diagonal(dim1=-2, dim2=-1).sign()
                d = d.masked_fill(tau == 0.0, 0) - (tau == 0.0).to(d.dtype) * d
                mask = eye(n, k, dtype=A.dtype, device=A.device)  # diagonal: signs of R's
                A = A * (1 - mask) + d.unsqueeze(-2) * mask
                return A.mT if transpose else A
            if n == k:
                Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
            else:
                N = randn(*(tuple(Q.shape[:-2]) + (n, n - k)), dtype=Q.dtype, device=Q.device)
                Q = _make_orthogonal(cat([Q, N], dim=-1))
            self.base = Q
            neg_id = zeros_like(Q_init)
            neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
            return neg_id


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Constrain ``module.<name>`` (a matrix or batch of matrices) to be orthogonal (its
    columns or rows orthonormal when it is not square).

    Example:
        >>> m = orthogonal(nn.Linear(20, 40))
        >>> torch.dist(m.weight.T @ m.weight, torch.eye(20)) < 1e-5
        tensor(True)
    """
    from ..._tensor import Tensor
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.dim() < 2:
        raise ValueError(f"Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.dim()} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
