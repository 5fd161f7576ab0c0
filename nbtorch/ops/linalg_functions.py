"""Matrix functions built on the decompositions: matrix_norm (every order), norm, cond,
matrix_rank, matrix_power, matrix_exp, multi_dot, householder_product (torch.orgqr),
ormqr, vander, tensorinv, tensorsolve, vecdot, diagonal, cholesky_solve/inverse.

Compositions of differentiable ops (matmul, solve, inv, svdvals, reductions), so their
gradients are those of the pieces, as PyTorch's are for most of them; they run wherever
their pieces have kernels.
"""
import math

from .. import _dtype
from .._tensor import Tensor
from .linalg_common import check_matrix, check_square
from .linalg_decomp import eigvalsh, svdvals
from .linalg_solve import inv, inv_ex, solve, with_out
from .linalg_triangular import solve_triangular

__all__ = ["matrix_norm", "norm", "cond", "matrix_rank", "matrix_power", "matrix_exp",
           "multi_dot", "householder_product", "ormqr", "vander", "tensorinv",
           "tensorsolve", "vecdot", "diagonal", "cholesky_solve", "cholesky_inverse"]

_INF = math.inf


def _dims(A, dim):
    n = A.dim()
    for x in dim:
        if not -n <= x < n:             # (x % n wrapped it round: dim=(1, 2) of a matrix)
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-n}, {n - 1}], but got {x})")
    d = tuple(x % n for x in dim)
    if len(d) != 2 or d[0] == d[1]:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, "
                           f"{dim[1]})")
    return d


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """The matrix norm over the two dims `dim`: 'fro', 'nuc', inf, -inf, 1, -1, 2, -2
    (2, -2 and 'nuc' from the singular values).

    Example:
        >>> nbtorch.linalg.matrix_norm(nbtorch.tensor([[1., 2.], [3., 4.]]), 1)
        tensor(6.)
    """
    from .reduction_stats import vector_norm
    check_matrix("linalg.matrix_norm", A)
    if dtype is not None:
        A = A.to(dtype)
    d0, d1 = _dims(A, dim)
    if ord == "fro":
        return with_out(vector_norm(A, 2, (d0, d1), keepdim), out)
    if ord not in ("nuc", _INF, -_INF, 1, -1, 2, -2):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if (A.shape[d0] == 0 or A.shape[d1] == 0) and ord in ("nuc", 2, 1, _INF):
        # no element: every norm of the kind is 0, as PyTorch's (amax of nothing raised)
        return with_out(vector_norm(A.abs(), 1, (d0, d1), keepdim), out)
    if ord in ("nuc", 2, -2):
        x = A.movedim((d0, d1), (-2, -1))
        s = svdvals(x)
        r = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:
            for d in sorted((d0, d1)):
                r = r.unsqueeze(d)
        return with_out(r, out)
    absA = A.abs()
    if ord in (1, -1):                 # max/min column sum: sum over rows (d0)
        s = absA.sum(d0, keepdim=True)
        r = s.amax(d1, keepdim=True) if ord == 1 else s.amin(d1, keepdim=True)
    else:                              # inf: max row sum
        s = absA.sum(d1, keepdim=True)
        r = s.amax(d0, keepdim=True) if ord == _INF else s.amin(d0, keepdim=True)
    if not keepdim:
        r = r.squeeze(max(d0, d1)).squeeze(min(d0, d1))
    return with_out(r, out)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None, out=None):
    """A vector norm (dim an int or None with A flattened) or a matrix norm (dim a pair,
    or ord a string, or ord given for a 2-D A), as torch.linalg.norm.

    Example:
        >>> nbtorch.linalg.norm(nbtorch.tensor([[1., 2.], [3., 4.]]), 2)
        tensor(5.4650)
    """
    from .reduction_stats import vector_norm
    if isinstance(dim, int):
        dim = (dim,)
    if dim is not None:
        if len(dim) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype,
                               out=out)
        if isinstance(ord, str):
            raise RuntimeError(f"linalg.vector_norm: expected ord to be a number, got {ord}")
        return with_out(vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype),
                        out)
    if ord is not None:
        if A.dim() not in (1, 2):
            raise RuntimeError("linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {A.dim()}D.")
        if A.dim() == 2:
            return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype, out=out)
    return with_out(vector_norm(A, 2 if ord is None else ord, None, keepdim, dtype=dtype),
                    out)


def cond(A, p=None, *, out=None):
    """The condition number: s_max / s_min for p None, 2 (s_min / s_max for -2); else
    matrix_norm(A, p) * matrix_norm(inv(A), p) (inf for a singular A)."""
    check_matrix("linalg.cond", A)
    if p in (None, 2, -2) and 0 in A.shape[-2:]:
        from .creation import zeros
        return with_out(zeros(tuple(A.shape[:-2]), dtype=A.dtype.to_real(),
                              device=A.device), out)     # PyTorch's 0 for no element
    if p in (None, 2, -2):
        s = svdvals(A)
        r = s.amax(-1) / s.amin(-1) if p != -2 else s.amin(-1) / s.amax(-1)
        return with_out(r, out)
    check_square("linalg.cond", A)
    Ai, info = inv_ex(A)
    r = matrix_norm(A, p) * matrix_norm(Ai, p)
    from .pointwise_select import where
    return with_out(where(info > 0, _INF, r), out)


def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """The number of singular values above max(atol, rtol * s_max) (int64; default rtol
    eps * max(m, n) when atol is not given; `tol` is the older atol)."""
    check_matrix("linalg.matrix_rank", A)
    if tol is not None:
        atol, rtol = tol, 0.0
    s = eigvalsh(A).abs() if hermitian else svdvals(A.detach())
    if rtol is None:
        rtol = 0.0 if atol is not None and not (isinstance(atol, (int, float)) and atol == 0) \
            else float(_eps(A.dtype)) * max(A.shape[-2], A.shape[-1])
    smax = s.amax(-1, keepdim=True) if s.shape[-1] else s.sum(-1, keepdim=True)
    thresh = smax * rtol
    if atol is not None:
        thresh = thresh.clamp_min(atol) if not isinstance(atol, Tensor) else thresh.maximum(
            atol.unsqueeze(-1).to(thresh.dtype))
    return with_out((s > thresh).sum(-1), out)


def _eps(dtype):
    import numpy as np
    return np.finfo(dtype.np).eps


def matrix_power(A, n, *, out=None):
    """A**n for an integer n by repeated squaring (n < 0: the inverse's power; n = 0:
    the identity), batched."""
    check_square("linalg.matrix_power", A) if isinstance(A, Tensor) and A.dim() >= 2 else \
        _matrix_power_error(A)
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"linalg_matrix_power(): argument 'n' must be int, not "
                        f"{type(n).__name__}")
    if n == 0:
        from .creation import eye
        return with_out(eye(A.shape[-1], dtype=A.dtype, device=A.device).expand(A.shape)
                        .clone(), out)
    if n < 0:
        A = inv(A)
        n = -n
    result = None
    base = A
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return with_out(result, out)


def _matrix_power_error(A):
    raise RuntimeError("linalg.matrix_power: The input tensor A must have at least 2 "
                       "dimensions.")


# Pade approximant coefficients of exp (Higham 2005, degree 13, and the lower degrees)
_PADE = {3: (120., 60., 12., 1.), 5: (30240., 15120., 3360., 420., 30., 1.),
         7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
         9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160.,
             110880., 3960., 90., 1.),
         13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
              129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
              40840800., 960960., 16380., 182., 1.)}
# largest 1-norm for which each degree is accurate to float64 (float32: Higham's single)
_THETA = {"float64": ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1),
                      (7, 9.504178996162932e-1), (9, 2.097847961257068e0),
                      (13, 5.371920351148152e0)),
          "float32": ((3, 4.258730016922831e-1), (5, 1.880152677804762e0),
                      (7, 3.925724783138660e0))}


def matrix_exp(A):
    """exp(A) by scaling and squaring with a Pade approximant (Higham 2005): degree
    chosen from the 1-norm, A / 2**s, then s squarings; matmuls and one solve, so it is
    differentiable to any order.

    Example:
        >>> nbtorch.linalg.matrix_exp(nbtorch.zeros(2, 2))
        tensor([[1., 0.],
                [0., 1.]])
    """
    if not (isinstance(A, Tensor) and A.dtype.is_complex):     # complex: matmuls and
        check_square("linalg.matrix_exp", A)                    # the complex solve
    elif A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError("linalg.matrix_exp: A must be batches of square matrices, but "
                           f"they are {A.shape[-2]} by {A.shape[-1]} matrices")
    from .creation import eye
    n = A.shape[-1]
    if A.numel() == 0:
        return A.clone()
    I = eye(n, dtype=A.dtype, device=A.device)
    norm1 = float(A.detach().abs().sum(-2).amax()) if A.numel() else 0.0
    thetas = _THETA["float64" if A.dtype in (_dtype.float64, _dtype.complex128)
                    else "float32"]
    degree, s = thetas[-1][0], 0
    for m, theta in thetas:
        if norm1 <= theta:
            degree = m
            break
    else:
        s = max(0, math.ceil(math.log2(norm1 / thetas[-1][1]))) if norm1 > 0 else 0
    X = A / (2.0 ** s) if s else A
    c = _PADE[degree]
    X2 = X @ X
    powers = [I, X2]
    while 2 * len(powers) - 1 <= degree:
        powers.append(powers[-1] @ X2)
    U = sum(c[2 * j + 1] * powers[j] for j in range(len(powers)) if 2 * j + 1 <= degree)
    V = sum(c[2 * j] * powers[j] for j in range(len(powers)) if 2 * j <= degree)
    U = X @ U
    E = solve(V - U, V + U)
    for _ in range(s):
        E = E @ E
    return E


def multi_dot(tensors, *, out=None):
    """The product of a chain of matrices in the cheapest order (dynamic programming on
    their shapes); the first may be a row vector and the last a column vector (1-D)."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    ts = list(tensors)
    first_vec, last_vec = ts[0].dim() == 1, ts[-1].dim() == 1
    if first_vec:
        ts[0] = ts[0].unsqueeze(0)
    if last_vec:
        ts[-1] = ts[-1].unsqueeze(-1)
    for i, t in enumerate(ts):
        if t.dim() != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.dim()}D")
    dims = [ts[0].shape[0]] + [t.shape[1] for t in ts]
    for i in range(len(ts) - 1):
        if ts[i].shape[1] != ts[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(ts[i].shape)} and {list(ts[i + 1].shape)} cannot be "
                               "multiplied")
    k = len(ts)
    cost = [[0] * k for _ in range(k)]
    split = [[0] * k for _ in range(k)]
    for length in range(1, k):
        for i in range(k - length):
            j = i + length
            cost[i][j] = math.inf
            for s in range(i, j):
                c = cost[i][s] + cost[s + 1][j] + dims[i] * dims[s + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, s

    def product(i, j):
        if i == j:
            return ts[i]
        s = split[i][j]
        return product(i, s) @ product(s + 1, j)
    r = product(0, k - 1)
    if first_vec:
        r = r.squeeze(0)
    if last_vec:
        r = r.squeeze(-1)
    return with_out(r, out)


def _reflect(X, v, t, left, transpose):
    """X <- H X (left) or X H, H = I - t v v^H (H^H, with conj(t), for `transpose`)."""
    if v.dtype.is_complex:
        t = t.conj() if transpose else t
        if left:
            return X - (t * v).unsqueeze(-1) * (v.conj().unsqueeze(-2) @ X)
        return X - (X @ v.unsqueeze(-1)) * (t * v.conj()).unsqueeze(-2)
    if left:
        return X - (t * v).unsqueeze(-1) * (v.unsqueeze(-2) @ X)
    return X - (X @ v.unsqueeze(-1)) * (t * v).unsqueeze(-2)


def _vector(A, i):
    """The i-th Householder vector of geqrf's output: [0]*i, 1, A[i+1:, i]."""
    from .joining import cat
    col = A[..., :, i]
    m = A.shape[-2]
    zeros = col.new_zeros(tuple(col.shape[:-1]) + (i,))
    ones = col.new_ones(tuple(col.shape[:-1]) + (1,))
    return cat([zeros, ones, col[..., i + 1:m]], -1)


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H, v_i read from the
    columns of A (*, m, n) below the diagonal (torch.orgqr; LAPACK's orgqr)."""
    op = "torch.linalg.householder_product"
    check_matrix(op, A, "input")
    m, n = A.shape[-2], A.shape[-1]
    k = tau.shape[-1]
    if m < n:
        raise RuntimeError(f"{op}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if k > n:
        raise RuntimeError(f"{op}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    from .creation import eye
    Q = eye(m, n, dtype=A.dtype, device=A.device).expand(tuple(A.shape)).clone()
    for i in range(k - 1, -1, -1):
        Q = _reflect(Q, _vector(A, i), tau[..., i:i + 1], True, False)
    return with_out(Q, out)


def ormqr(input, tau, other, left=True, transpose=False, *, out=None):
    """Q other (or other Q; Q^T with `transpose`) for Q = H_1 ... H_k from geqrf."""
    k = tau.shape[-1]
    order = range(k) if left == transpose else range(k - 1, -1, -1)
    X = other
    for i in order:
        X = _reflect(X, _vector(input, i), tau[..., i:i + 1] if left else tau[..., i:i + 1],
                     left, transpose)
    return with_out(X, out)


def vander(x, *, N=None):
    """The Vandermonde matrix of x (*, n): columns x**0, x**1, ..., x**(N-1) (N = n)."""
    n = x.shape[-1] if N is None else N
    if x.dim() < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    if n < 1:
        raise RuntimeError("N must be greater than 1.")
    from .joining import cat
    ones = x.new_ones(tuple(x.shape) + (1,))
    if n == 1:
        return ones
    rest = x.unsqueeze(-1).expand(tuple(x.shape) + (n - 1,))
    return cat([ones, rest], -1).cumprod(-1)


def tensorinv(A, ind=2, *, out=None):
    """The inverse of A read as a matrix of shape (prod(A.shape[:ind]), prod(rest)),
    reshaped to A.shape[ind:] + A.shape[:ind]."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = A.shape[:ind], A.shape[ind:]
    pr, pc = _prod(rows), _prod(cols)
    if pr != pc:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) "
                           f"== prod(self.shape[:ind]), but got {pc} != {pr}")
    return with_out(inv(A.reshape(pr, pc)).reshape(tuple(cols) + tuple(rows)), out)


def tensorsolve(A, B, dims=None, *, out=None):
    """X with tensordot(A, X, X.ndim) = B (dims of A moved to the end first)."""
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        A = A.movedim(dims, list(range(A.dim() - len(dims), A.dim())))
    rest = A.shape[B.dim():]
    p = _prod(B.shape)
    if _prod(rest) != p:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other."
                           f"ndim:]) == prod(self.shape[:other.ndim]), but got "
                           f"{_prod(rest)} != {p}")
    return with_out(solve(A.reshape(p, p), B.reshape(p)).reshape(tuple(rest)), out)


def _prod(shape):
    r = 1
    for s in shape:
        r *= s
    return r


def vecdot(x, y, *, dim=-1, out=None):
    """sum(conj(x) * y) along `dim` (broadcasting)."""
    return with_out((x.conj() * y).sum(dim), out)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """A.diagonal(offset, dim1, dim2): the (batched) diagonals as the last dim."""
    return A.diagonal(offset, dim1, dim2)


def cholesky_solve(B, L, upper=False, *, out=None):
    """X with A X = B for A = L L^H (or U^H U with `upper`), from the Cholesky factor."""
    if upper:
        Y = solve_triangular(L.mH, B, upper=False)
        return with_out(solve_triangular(L, Y, upper=True), out)
    Y = solve_triangular(L, B, upper=False)
    return with_out(solve_triangular(L.mH, Y, upper=True), out)


def cholesky_inverse(L, upper=False, *, out=None):
    """(L L^H)^-1 (or (U^H U)^-1) from the Cholesky factor."""
    from .creation import eye
    I = eye(L.shape[-1], dtype=L.dtype, device=L.device).expand(tuple(L.shape))
    return with_out(cholesky_solve(I, L, upper), out)


Tensor.matrix_power = matrix_power
Tensor.matrix_exp = matrix_exp
Tensor.cholesky_solve = cholesky_solve
Tensor.cholesky_inverse = cholesky_inverse
Tensor.orgqr = householder_product
Tensor.ormqr = ormqr
