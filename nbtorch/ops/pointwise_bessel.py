"""torch.special's Bessel and Airy functions and orthogonal polynomials (no gradients, as in
PyTorch: their results never require grad).

bessel_j0/j1/y0/y1, modified_bessel_i0/i1/k0/k1, scaled_modified_bessel_k0/k1,
spherical_bessel_j0, airy_ai (bodies in `kernels/scalar_bessel.py`) and the Chebyshev
(T, U, V, W and shifted), Hermite (H, He), Laguerre and Legendre polynomials of degree n
(`kernels/scalar_polynomials.py`). Integer inputs give the default float dtype.
`nbtorch.special` exports them.
"""
from .. import _dtype
from .._dtype import type_name
from .._tensor import Tensor
from ._elementwise import NUMBER, float_dtype, run_elementwise

__all__ = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0",
           "airy_ai", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
           "chebyshev_polynomial_v", "chebyshev_polynomial_w",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
           "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
           "legendre_polynomial_p"]


def _unary(name, kernel, doc):
    def fn(input, *, out=None):
        if not isinstance(input, Tensor):
            raise TypeError(f"special_{name}(): argument 'input' (position 1) must be Tensor, "
                            f"not {type(input).__name__}")
        return run_elementwise(kernel, (input,), float_dtype(input.dtype), out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


bessel_j0 = _unary("bessel_j0", "bessel_j0", "J0, the Bessel function of the first kind of "
                   "order 0.")
bessel_j1 = _unary("bessel_j1", "bessel_j1", "J1, the Bessel function of the first kind of "
                   "order 1.")
bessel_y0 = _unary("bessel_y0", "bessel_y0", "Y0, the Bessel function of the second kind of "
                   "order 0 (-inf at 0, NaN below).")
bessel_y1 = _unary("bessel_y1", "bessel_y1", "Y1, the Bessel function of the second kind of "
                   "order 1 (-inf at 0, NaN below).")
modified_bessel_i0 = _unary("modified_bessel_i0", "i0", "I0, the modified Bessel function of "
                            "the first kind of order 0.")
modified_bessel_i1 = _unary("modified_bessel_i1", "i1", "I1, the modified Bessel function of "
                            "the first kind of order 1.")
modified_bessel_k0 = _unary("modified_bessel_k0", "modified_bessel_k0", "K0, the modified "
                            "Bessel function of the second kind of order 0 (inf at 0).")
modified_bessel_k1 = _unary("modified_bessel_k1", "modified_bessel_k1", "K1, the modified "
                            "Bessel function of the second kind of order 1 (inf at 0).")
scaled_modified_bessel_k0 = _unary("scaled_modified_bessel_k0", "scaled_modified_bessel_k0",
                                   "exp(x) K0(x).")
scaled_modified_bessel_k1 = _unary("scaled_modified_bessel_k1", "scaled_modified_bessel_k1",
                                   "exp(x) K1(x).")
spherical_bessel_j0 = _unary("spherical_bessel_j0", "spherical_bessel_j0",
                             "sin(x) / x, the spherical Bessel function of order 0.")
airy_ai = _unary("airy_ai", "airy_ai", "Ai(x), the Airy function of the first kind.")


def _polynomial(name, doc):
    def fn(input, n, *, out=None):
        for arg, label in ((input, "input"), (n, "n")):
            if not isinstance(arg, (Tensor,) + NUMBER):
                raise TypeError(f"special_{name}(): argument '{label}' must be Tensor or "
                                f"Number, not {type(arg).__name__}")
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"special_{name}(): expected a Tensor argument")
        d = _dtype.result_type(input, n)
        if d is _dtype.bool:
            raise NotImplementedError(f'"{name}" not implemented for \'{type_name(d)}\'')
        return run_elementwise(name, (input, n), float_dtype(d), out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc + (" Degree n (a tensor or a number) is truncated to an integer; n < 0 "
                        "gives 0.")
    return fn


chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t",
                                     "The Chebyshev polynomial of the first kind T_n(x).")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u",
                                     "The Chebyshev polynomial of the second kind U_n(x).")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v",
                                     "The Chebyshev polynomial of the third kind V_n(x).")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w",
                                     "The Chebyshev polynomial of the fourth kind W_n(x).")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t",
                                             "T_n(2x - 1).")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u",
                                             "U_n(2x - 1).")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v",
                                             "V_n(2x - 1).")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w",
                                             "W_n(2x - 1).")
hermite_polynomial_h = _polynomial("hermite_polynomial_h",
                                   "The physicists' Hermite polynomial H_n(x).")
hermite_polynomial_he = _polynomial("hermite_polynomial_he",
                                    "The probabilists' Hermite polynomial He_n(x).")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l", "The Laguerre polynomial L_n(x).")
legendre_polynomial_p = _polynomial("legendre_polynomial_p", "The Legendre polynomial P_n(x).")
