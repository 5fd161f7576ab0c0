"""`nbtorch.linalg`: PyTorch's torch.linalg namespace.

LAPACK through NumPy is the CPU engine (as BLAS is matmul's): solve, inv, det, Cholesky,
QR, eigh, SVD, least squares (`kernels/cpu/linalg.py`); LU factorisations and triangular
solves are Numba loops. On CUDA the LU family (solve, inv, det, slogdet, lu_factor,
lu_solve) runs a Numba kernel with one thread per matrix; the others raise the registry's
"no cuda kernel" error. Gradients are PyTorch's formulas (see each op's module:
`ops/linalg_solve.py`, `linalg_lu.py`, `linalg_decomp.py`, `linalg_functions.py`).
"""
from .ops.linalg import matmul
from .ops.reduction_stats import vector_norm
from .ops.linalg_triangular import cholesky, cholesky_ex, solve_triangular, LinAlgError
from .ops.products import linalg_cross as cross
from .ops.linalg_solve import solve, solve_ex, inv, inv_ex, det, slogdet
from .ops.linalg_lu import lu_factor, lu_factor_ex, lu, lu_solve
from .ops.linalg_decomp import qr, eigh, eigvalsh, svd, svdvals
from .ops.linalg_eig import eig, eigvals
from .ops.linalg_ldl import ldl_factor, ldl_factor_ex, ldl_solve
from .ops.linalg_pinv import lstsq, pinv
from .ops.linalg_functions import (matrix_norm, norm, cond, matrix_rank, matrix_power,
                                   matrix_exp, multi_dot, householder_product, vander,
                                   tensorinv, tensorsolve, vecdot, diagonal)

__all__ = ["matmul", "vector_norm", "norm", "matrix_norm", "cholesky", "cholesky_ex",
           "solve_triangular", "LinAlgError", "cross", "solve", "solve_ex", "inv", "inv_ex",
           "det", "slogdet", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "qr", "eigh",
           "eigvalsh", "svd", "svdvals", "lstsq", "pinv", "eig", "eigvals", "cond",
           "matrix_rank", "matrix_power", "matrix_exp", "multi_dot", "householder_product",
           "vander", "tensorinv", "tensorsolve", "vecdot", "diagonal", "ldl_factor",
           "ldl_factor_ex", "ldl_solve"]
