"""The general (non-symmetric) eigendecomposition on the CPU: LAPACK's geev through NumPy.

Contract (raw C-contiguous arrays, a leading batch dim, outputs allocated by the op
layer)::

    eig(a (B,n,n) float or complex, w (B,n) complex, v (B,n,n) complex | None)

Each eigenvector has unit 2-norm and its largest component real, LAPACK's (and so
PyTorch's) normalisation. NumPy computes float32 input in float64 and the results are
rounded once into `w`/`v`. No convergence (or a non-finite input) raises
``numpy.linalg.LinAlgError``; the op layer words the error as PyTorch does.
"""
import numpy as np

__all__ = ["eig"]


def eig(a, w, v):
    """Eigenvalues into `w` and, unless `v` is None, eigenvectors (columns) into `v`."""
    if a.shape[0] == 0 or a.shape[1] == 0:
        return
    if v is None:
        w[...] = np.linalg.eigvals(a)
        return
    vals, vecs = np.linalg.eig(a)
    w[...] = vals
    v[...] = vecs
