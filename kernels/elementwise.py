"""The elementwise ops: one table registers them on every device.

Each name is an op whose kernel runs the scalar body of the same name in
`kernels/scalar.py`: on the CPU a Numba ufunc (`cpu/ufuncs.py`, registered
when `nbtorch.ops` is imported), on CUDA a generated grid-stride kernel
(`cuda/gridstride.py`, registered on first CUDA use); `nbtorch.cuda.typecheck`
compiles every one to PTX. Adding an elementwise op: its body in `scalar.py`,
its name here, its op definition (dtype rule, backward) in `nbtorch/ops`.
"""

__all__ = ["OPS"]

OPS = (
    # arithmetic (nbtorch/ops/arithmetic.py, pointwise_more.py)
    "add", "sub", "mul", "div", "neg", "abs_", "square", "reciprocal",
    "div_trunc", "div_floor", "div_trunc_int", "div_floor_int",
    "remainder", "remainder_int", "fmod", "fmod_int", "pow_", "pow_int",
    # rounding, sign
    "sign", "floor", "ceil", "trunc", "frac", "round_", "round_decimals",
    # exponentials, logs, powers, trigonometry (pointwise_math.py)
    "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "rsqrt", "xlogy",
    "logaddexp", "hypot", "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh",
    "cosh", "tanh", "erf", "erfc", "erfinv", "sigmoid", "logit",
    # more math (pointwise_float.py, bodies in scalar_math.py)
    "asinh", "acosh", "atanh", "copysign", "signbit", "nextafter", "frexp_mantissa",
    "frexp_exponent", "heaviside", "logaddexp2", "sinc", "gcd", "lcm",
    "bitwise_left_shift", "bitwise_right_shift",
    # gamma-function family, torch.special (pointwise_special.py, pointwise_bessel.py;
    # bodies in scalar_special.py, scalar_bessel.py, scalar_polynomials.py)
    "lgamma", "digamma", "polygamma", "igamma", "igammac", "erfcx", "ndtr", "ndtri",
    "log_ndtr", "entr", "xlog1py", "zeta", "i0", "i0e", "i1", "i1e", "modified_bessel_k0",
    "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "spherical_bessel_j0", "airy_ai",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p",
    # activations and their fused gradients (pointwise_activation.py)
    "relu", "hardtanh", "leaky_relu", "gelu", "gelu_tanh", "silu", "mish", "softplus",
    "elu", "hardsigmoid", "hardswish",
    "relu_grad", "sigmoid_grad", "tanh_grad", "gelu_grad", "gelu_tanh_grad", "silu_grad",
    "leaky_relu_grad", "hardtanh_grad", "hardsigmoid_grad", "hardswish_grad",
    # comparisons, selection (arithmetic.py, pointwise_select.py)
    "eq", "ne", "lt", "le", "gt", "ge", "maximum", "minimum", "fmax", "fmin",
    "clamp", "clamp_min", "clamp_max", "where", "lerp", "addcmul", "addcdiv",
    # logical, bitwise, classification (logical.py)
    "logical_and", "logical_or", "logical_xor", "logical_not",
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num", "isclose",
    # complex operands' bodies (scalar_complex.py): the ops above run them for complex
    # dtypes (scalar_complex.COMPLEX); cangle, csgn, cconj are ops of their own
    "cdiv", "creciprocal", "cexp", "cexp2", "cexpm1", "clog", "clog2", "clog10", "clog1p",
    "csqrt", "crsqrt", "csin", "ccos", "ctan", "csinh", "ccosh", "ctanh", "casin", "cacos",
    "catan", "casinh", "cacosh", "catanh", "csigmoid", "cpow", "cabs", "cangle", "csgn",
    "cconj", "cisinf", "cisfinite", "caddcdiv",
)
