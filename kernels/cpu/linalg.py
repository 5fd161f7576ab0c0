"""Dense linear algebra on the CPU: LAPACK through NumPy, and Numba's LU loops.

LAPACK is the engine, as BLAS is matmul's: NumPy ships it, and no Numba loop comes near
its blocked factorisations. The calls go to NumPy's LAPACK gufuncs
(``numpy.linalg._umath_linalg``) with the operands' own type signature: the public
``np.linalg`` functions compute float32 in float64 (a 256x256 float32 solve: 15 ms
against 0.8 ms for sgesv); should that private module move, the public functions
serve. LAPACK's getrf is not among NumPy's, so the LU factorisation (lu_factor,
lu_solve, and the failure path of solve/inv, which needs getrf's `info`) runs the
Numba loops of `kernels/lu.py`.

Contracts (raw C-contiguous arrays, a leading batch dim, outputs allocated by the op
layer, float32, float64, complex64 or complex128; eigenvalues and singular values real)::

    lu_factor(a (B,m,n), lu, pivots (B,k) int32, info (B,) int32)   P A = L U, packed
    lu_solve(lu (B,n,n), pivots, b (B,n,k), out, trans)             out = A^-1 b (A^-T b)
    solve(a, b, out, info), inv(a, out, info)                       gesv / getri
    cholesky(a, out, info)                                          potrf (lower)
    det(a, out (B,)), slogdet(a, sign, logabs)
    eigh(a, w (B,n), v (B,n,n) | None, upper)                       syevd
    svd(a, u | None, s, vh | None, full_matrices)                   gesdd
    qr(a, q | None, r, mode)                     geqrf + orgqr/ungqr (in double: NumPy's only loops)
    geqrf(a, h, tau), lstsq(a, b, x, residuals, rank, sv, rcond)

A matrix LAPACK cannot factor gives ``info[b] > 0`` (solve, inv, cholesky) or raises
``numpy.linalg.LinAlgError`` (eigh, svd, lstsq: no convergence); the op layer words
the error as PyTorch does.
"""
import numpy as np
from numba import njit

from nbtorch.kernels.lu import lu_factor_one, lu_solve_one

try:
    from numpy.linalg import _umath_linalg as _gufuncs
except ImportError:  # pragma: no cover - a NumPy that moved its private module
    _gufuncs = None

__all__ = ["lu_factor", "lu_solve", "solve", "inv", "cholesky", "det", "slogdet", "eigh",
           "svd", "qr", "geqrf", "lstsq"]


class _Failed(Exception):
    """A LAPACK gufunc flagged a failure (singular, not positive-definite)."""


def _flag(*args):
    raise _Failed


def _lapack(name, sig, *args):
    """NumPy's LAPACK gufunc `name` with type signature `sig` ('f' or 'd' letters);
    _Failed when it reports a failure (NaN inputs included)."""
    with np.errstate(call=_flag, invalid="call", over="ignore", divide="ignore",
                     under="ignore"):
        return getattr(_gufuncs, name)(*args, signature=sig)


_CHARS = {np.dtype(np.float32): "f", np.dtype(np.float64): "d",
          np.dtype(np.complex64): "F", np.dtype(np.complex128): "D"}


def _char(a):
    """The gufunc type letter of a's dtype (upper case for complex)."""
    return _CHARS[a.dtype]


def _real(c):
    """The letter of the real dtype under `c` (eigenvalues, singular values)."""
    return c.lower()


# ---- LU (Numba) ------------------------------------------------------------------------

@njit(cache=True, error_model="numpy")
def lu_factor_loop(a, pivots, info):
    """for b: info[b] = getrf(a[b]) in place (kernels/lu.py)."""
    for b in range(a.shape[0]):
        info[b] = lu_factor_one(a[b], pivots[b])


@njit(cache=True, error_model="numpy")
def lu_solve_loop(lu, pivots, x, trans):
    """for b: x[b] <- A_b^-1 x[b] (or A_b^-T x[b]) from the packed factors."""
    for b in range(lu.shape[0]):
        lu_solve_one(lu[b], pivots[b], x[b], trans)


def lu_factor(a, lu, pivots, info):
    lu[...] = a
    if lu.size:
        lu_factor_loop(lu, pivots, info)
    else:
        info[...] = 0


def lu_solve(lu, pivots, b, out, trans=False):
    out[...] = b
    if out.size:
        lu_solve_loop(lu, pivots, out, bool(trans))


def _by_lu(a, rhs, out, info):
    """out = a^-1 rhs through the Numba LU, info from getrf (singular: inf/NaN values)."""
    lu = np.empty_like(a)
    pivots = np.empty(a.shape[:2], np.int32)
    lu_factor(a, lu, pivots, info)
    with np.errstate(all="ignore"):
        try:
            lu_solve(lu, pivots, rhs, out)
        except ZeroDivisionError:       # Numba's complex division raises where real gives inf
            ok = info == 0
            if ok.any():
                lu_solve(lu[ok], pivots[ok], rhs[ok], out[ok])
            out[~ok] = complex(np.nan, np.nan)


# ---- solve, inverse, Cholesky, determinants -----------------------------------------

def solve(a, b, out, info):
    """out = a^-1 b (gesv); a singular matrix gives info > 0 and getrs's inf/NaN."""
    if a.size == 0 or b.size == 0:
        info[...] = 0
        return
    try:
        if _gufuncs is None:
            raise _Failed
        c = _char(a)
        out[...] = _lapack("solve", c + c + "->" + c, a, b)
        info[...] = 0
    except _Failed:
        _by_lu(a, b, out, info)


def inv(a, out, info):
    """out = a^-1 (getrf + getri); info > 0 for a singular matrix."""
    if a.size == 0:
        info[...] = 0
        return
    try:
        if _gufuncs is None:
            raise _Failed
        c = _char(a)
        out[...] = _lapack("inv", c + "->" + c, a)
        info[...] = 0
    except _Failed:
        eye = np.broadcast_to(np.eye(a.shape[1], dtype=a.dtype), a.shape)
        _by_lu(a, eye, out, info)


def cholesky(a, out, info):
    """out = the lower Cholesky factor (potrf); info[b] = order of the first leading minor
    that is not positive-definite (found by the Numba loop when LAPACK fails)."""
    if a.size == 0:
        info[...] = 0
        return
    try:
        if _gufuncs is None:
            raise _Failed
        c = _char(a)
        out[...] = _lapack("cholesky_lo", c + "->" + c, a)
        if np.isnan(np.diagonal(out, axis1=1, axis2=2)).any():
            raise _Failed       # OpenBLAS's potrf passes NaN pivots that LAPACK's refuses
        info[...] = 0
    except _Failed:
        from nbtorch.kernels.cpu.triangular import cholesky as numba_cholesky
        out[...] = 0
        numba_cholesky(np.ascontiguousarray(a), out, info)


def det(a, out):
    """out[b] = det(a[b]) (getrf; real or complex a)."""
    if a.shape[0] == 0:
        return
    c = _char(a)
    with np.errstate(all="ignore"):
        out[...] = (_gufuncs.det(a, signature=c + "->" + c) if _gufuncs is not None
                    else np.linalg.det(a))


def slogdet(a, sign, logabs):
    """sign[b], logabs[b] = sign and log|det| of a[b] (sign 0, logabs -inf if singular;
    complex a: sign complex, logabs real)."""
    if a.shape[0] == 0:
        return
    c = _char(a)
    with np.errstate(all="ignore"):
        res = (_gufuncs.slogdet(a, signature=c + "->" + c + _real(c)) if _gufuncs is not None
               else np.linalg.slogdet(a))
    sign[...], logabs[...] = res


# ---- eigen and singular value decompositions, QR, least squares ---------------------

def eigh(a, w, v, upper):
    """Eigenvalues (ascending) and, unless `v` is None, eigenvectors of Hermitian (symmetric) a."""
    if a.shape[0] == 0:
        return
    if _gufuncs is None:
        w[...], vectors = np.linalg.eigh(a, UPLO="U" if upper else "L")
        if v is not None:
            v[...] = vectors
        return
    c = _char(a)
    try:
        if v is None:
            w[...] = _lapack("eigvalsh_up" if upper else "eigvalsh_lo", c + "->" + _real(c), a)
        else:
            w[...], v[...] = _lapack("eigh_up" if upper else "eigh_lo",
                                     c + "->" + _real(c) + c, a)
    except _Failed:
        raise np.linalg.LinAlgError("eigh did not converge") from None


def svd(a, u, s, vh, full_matrices):
    """Singular values (descending) and, unless `u` is None, the singular vectors."""
    if a.shape[0] == 0 or 0 in a.shape:
        if u is not None and u.size:            # an empty matrix: identity bases
            u[...] = np.eye(u.shape[1], u.shape[2], dtype=u.dtype)
            vh[...] = np.eye(vh.shape[1], vh.shape[2], dtype=vh.dtype)
        return
    c = _char(a)
    try:
        if u is None:
            s[...] = _lapack("svd", c + "->" + _real(c), a) if _gufuncs is not None else \
                np.linalg.svd(a, compute_uv=False)
            return
        if _gufuncs is None:
            res = np.linalg.svd(a, full_matrices=full_matrices)
        else:
            res = _lapack("svd_f" if full_matrices else "svd_s", c + "->" + c + _real(c) + c, a)
    except _Failed:
        raise np.linalg.LinAlgError("SVD did not converge") from None
    u[...], s[...], vh[...] = res


def qr(a, q, r, mode):
    """A = Q R; mode 'reduced', 'complete' or 'r' (q is None)."""
    m, n = a.shape[1], a.shape[2]
    if a.shape[0] == 0 or m == 0 or n == 0:
        if q is not None and q.size:
            q[...] = np.eye(q.shape[1], q.shape[2], dtype=q.dtype)
        r[...] = 0
        return
    if _gufuncs is None:
        res = np.linalg.qr(a, mode=mode)
        if mode == "r":
            r[...] = res
        else:
            q[...], r[...] = res
        return
    d = "D" if a.dtype.kind == "c" else "d"            # NumPy's QR loops: double only
    h = np.array(a, d)
    tau = _lapack("qr_r_raw", d + "->" + d, h)         # geqrf, in place
    if mode == "r":
        r[...] = np.triu(h[:, :min(m, n), :])
        return
    name = "qr_complete" if mode == "complete" and m > n else "qr_reduced"
    q[...] = _lapack(name, d + d + "->" + d, h, tau)   # orgqr / ungqr
    r[...] = np.triu(h[:, :q.shape[2], :])


def geqrf(a, h, tau):
    """LAPACK's geqrf: R above the diagonal of h, Householder vectors below, and tau."""
    if a.size == 0:
        tau[...] = 0
        h[...] = a
        return
    h[...] = a
    if _gufuncs is None:
        for b in range(a.shape[0]):
            raw, t = np.linalg.qr(a[b], mode="raw")
            h[b] = raw.T
            tau[b] = t
        return
    d = "D" if a.dtype.kind == "c" else "d"
    h64 = np.array(a, d)
    tau[...] = _lapack("qr_r_raw", d + "->" + d, h64)
    h[...] = h64


def lstsq(a, b, x, residuals, rank, sv, rcond):
    """Least squares by gelsd: x (B,n,k), residuals (B,k) (the squared residual norms,
    filled only for a tall full-rank a, else 0), rank (B,), singular values sv (B,min)."""
    residuals[...] = 0
    m, n = a.shape[1], a.shape[2]
    if a.shape[0] == 0:
        return
    if _gufuncs is None or 0 in a.shape or 0 in b.shape:
        for i in range(a.shape[0]):
            sol, res, rk, s = np.linalg.lstsq(a[i], b[i], rcond=rcond)
            x[i] = sol
            if res.size:
                residuals[i] = res
            rank[i] = rk
            sv[i] = s
        return
    c = _char(a)
    with np.errstate(all="ignore"):
        r = _real(c)
        sol, res, rk, s = _gufuncs.lstsq(a, b, np.array(rcond, r),
                                         signature=c + c + r + "->" + c + r + "i" + r)
    x[...], rank[...], sv[...] = sol, rk, s
    if m > n:
        full = rk == n
        residuals[full] = res[full]
