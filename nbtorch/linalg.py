"""`nbtorch.linalg`: the linear-algebra namespace (as much of ``torch.linalg`` as exists)."""
from .ops.linalg import matmul
from .ops.reduction_stats import vector_norm
from .ops.linalg_triangular import cholesky, cholesky_ex, solve_triangular, LinAlgError
from .ops.products import linalg_cross as cross

__all__ = ["matmul", "vector_norm", "norm", "matrix_norm", "cholesky", "cholesky_ex",
           "solve_triangular", "LinAlgError", "cross"]


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """Vector 2-norm by default; Frobenius norm for 'fro' over the last two dims."""
    if ord == "fro":
        return matrix_norm(A, "fro", dim if dim is not None else (-2, -1), keepdim)
    return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The Frobenius norm of matrices (other orders need an SVD, not provided)."""
    if ord != "fro":
        raise NotImplementedError(f"matrix_norm(ord={ord!r}) is not implemented; use 'fro'")
    return vector_norm(A, 2, dim, keepdim, dtype=dtype)
