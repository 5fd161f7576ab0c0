"""Complex tensors: real/imag views, conj, angle, sgn, complex/polar, view_as_real/complex.

Gradients follow PyTorch's convention (the conjugate Wirtinger derivative, so a real
loss of complex parameters trains): for an output s(z) with incoming gradient g,
the input gets ``g * conj(ds/dz) + conj(g) * ds/dconj(z)``. Holomorphic ops (mul,
exp, matmul, ...) reduce to ``conj(formula(conj(g)))`` over their real formulas,
which `_elementwise.py` and `Matmul` apply; the non-holomorphic ones are here.

`conj()` copies (nbtorch has no lazy conjugate bit: `is_conj()` is always False and
`resolve_conj()` returns its input), and `real`/`imag`/`view_as_real`/
`view_as_complex` are views over the same memory, as in PyTorch.
"""
import math

from .. import _dtype
from .._complex_views import as_complex, as_real, imag_part, real_part
from .._dtype import type_name
from .._tensor import Tensor, empty
from ..autograd.function import Function
from ._common import broadcast_shapes, result_device
from ._elementwise import run_elementwise

__all__ = ["real", "imag", "view_as_real", "view_as_complex", "view_as_real_copy",
           "view_as_complex_copy", "conj", "conj_physical", "conj_physical_", "resolve_conj",
           "resolve_neg", "is_conj", "is_neg", "angle", "sgn", "complex", "polar",
           "adjoint", "complex_prod"]


def _cx(x):
    return x.dtype.is_complex


# ---- views ---------------------------------------------------------------------------

class _Real(Function):
    @staticmethod
    def forward(ctx, x):
        return real_part(x)

    @staticmethod
    def backward(ctx, g):
        return complex(g, g * 0)


class _Imag(Function):
    @staticmethod
    def forward(ctx, x):
        return imag_part(x)

    @staticmethod
    def backward(ctx, g):
        return complex(g * 0, g)


class _ViewAsReal(Function):
    @staticmethod
    def forward(ctx, x):
        return as_real(x)

    @staticmethod
    def backward(ctx, g):
        return view_as_complex(g.contiguous())


class _ViewAsComplex(Function):
    @staticmethod
    def forward(ctx, x):
        return as_complex(x)

    @staticmethod
    def backward(ctx, g):
        return view_as_real(g)


def real(input):
    """The real parts of `input` as a view (a real tensor is returned as it is)."""
    return _Real.apply(input) if _cx(input) else input


def imag(input):
    """The imaginary parts of complex `input` as a view."""
    if not _cx(input):
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    return _Imag.apply(input)


def view_as_real(input):
    """Complex `input` (*shape) as a real view (*shape, 2) of (real, imag) pairs."""
    if not _cx(input):
        raise RuntimeError("view_as_real is only supported for complex tensors")
    return _ViewAsReal.apply(input)


def view_as_complex(input):
    """Real `input` (*shape, 2) with a last stride of 1 as a complex view (*shape)."""
    d = input.dtype
    if not d.is_floating_point or d.is_half:
        raise RuntimeError("view_as_complex is only supported for half, float and double "
                           f"tensors, but got a tensor of scalar type: {type_name(d)}")
    if not input._shape or input._shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if input._strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in input._strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last "
                           "dimension")
    if input._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return _ViewAsComplex.apply(input)


def view_as_real_copy(input, *, out=None):
    """A copy of `view_as_real(input)`."""
    return _copy_out(view_as_real(input).clone(), out)


def view_as_complex_copy(input, *, out=None):
    """A copy of `view_as_complex(input)`."""
    return _copy_out(view_as_complex(input).clone(), out)


def _copy_out(result, out):
    if out is None:
        return result
    out.resize_(result._shape)
    return out.copy_(result)


def _real_get(self):
    return real(self)


def _real_set(self, value):
    real(self).copy_(value)


def _imag_get(self):
    return imag(self)


def _imag_set(self, value):
    imag(self).copy_(value)


# ---- conj ----------------------------------------------------------------------------

class _Conj(Function):
    @staticmethod
    def forward(ctx, x):
        return run_elementwise("cconj", (x,), x.dtype)

    @staticmethod
    def backward(ctx, g):
        return _Conj.apply(g)


def conj_physical(input, *, out=None):
    """The complex conjugate, always a new tensor (a copy for real tensors)."""
    if out is not None:
        return _copy_out(conj_physical(input), out)
    return _Conj.apply(input) if _cx(input) else input.clone()


def conj(input):
    """The complex conjugate (a new tensor: nbtorch keeps no conjugate bit); a real tensor
    is returned as it is."""
    return _Conj.apply(input) if _cx(input) else input


def conj_physical_(input):
    """Conjugate `input` in place."""
    if _cx(input):
        imag_part(input).neg_() if not input._requires_grad else \
            input.copy_(_Conj.apply(input.detach()))
        input._bump()
    return input


def resolve_conj(input):
    """`input` itself: nbtorch conjugates eagerly, so there is nothing to resolve."""
    return input


def resolve_neg(input):
    """`input` itself: nbtorch has no lazy negative bit."""
    return input


def is_conj(input):
    """False: nbtorch's conjugates are materialised (see `conj`)."""
    return False


def is_neg(input):
    """False: nbtorch has no lazy negative bit."""
    return False


def adjoint(input):
    """The conjugate transpose of the last two dims (a view for real tensors)."""
    if input.dim() < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.dim()}-D tensor.")
    return conj(input.transpose(-2, -1))


# ---- angle, sgn, abs of complex -------------------------------------------------------

class _Angle(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return run_elementwise("cangle", (x,), x.dtype, x.dtype.to_real())

    @staticmethod
    def backward(ctx, g):
        z, = ctx.saved_tensors
        den = z.real * z.real + z.imag * z.imag     # d angle: g * i z / |z|^2, 0 at 0
        safe = where_zero(den, 1.0)
        return complex(-z.imag, z.real) * (g * (den != 0) / safe)


def where_zero(t, value):
    from .pointwise_select import where
    return where(t == 0, value, t)


def angle(input, *, out=None):
    """The argument of each element in (-pi, pi]; for real input pi where negative, 0
    elsewhere (NaN kept), with a zero gradient, as PyTorch."""
    if out is not None:
        return _copy_out(angle(input), out)
    if _cx(input):
        return _Angle.apply(input)
    from .pointwise_select import where
    x = input if input.dtype.is_floating_point else input.to(_dtype.get_default_dtype())
    res = where(x != x, x, (x < 0).to(x.dtype) * math.pi)
    return res.detach() + x * 0 if x._requires_grad else res


class _Sgn(Function):
    @staticmethod
    def forward(ctx, x):
        out = run_elementwise("csgn", (x,), x.dtype)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, g):
        z, s = ctx.saved_tensors          # (g - conj(g) s^2) / (2|z|), 0 at 0
        r = z.abs()
        return (g - conj(g) * s * s) * ((r != 0) / (2 * where_zero(r, 1.0)))


def sgn(input, *, out=None):
    """z / |z| for complex input (0 at 0); the sign for real input."""
    if out is not None:
        return _copy_out(sgn(input), out)
    if _cx(input):
        return _Sgn.apply(input)
    from .pointwise_more import sign
    return sign(input)


class ComplexAbs(Function):
    """|z| of complex z (a real result); gradient g * sgn(z)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return run_elementwise("abs_", (x,), x.dtype, x.dtype.to_real())

    @staticmethod
    def backward(ctx, g):
        z, = ctx.saved_tensors
        return g * sgn(z)


# ---- complex(), polar() ---------------------------------------------------------------

class _Complex(Function):
    @staticmethod
    def forward(ctx, re, im):
        ctx.shapes = (re._shape, im._shape)
        shape = broadcast_shapes(re._shape, im._shape)
        dtype = re.dtype.to_complex()
        out = empty(shape, dtype, result_device("complex", re, im))
        from ._output_layout import output_strides
        strides = output_strides(shape, (re, im))
        if strides is not None:         # the parts' layout, as an elementwise result keeps
            out = Tensor.__new__(Tensor)._init(out._storage, 0, shape, strides, dtype)
        from .copy import raw_copy_
        raw_copy_(real_part(out), re.expand(shape))
        raw_copy_(imag_part(out), im.expand(shape))
        return out

    @staticmethod
    def backward(ctx, g):
        from ._common import sum_to
        return sum_to(real(g), ctx.shapes[0]), sum_to(imag(g), ctx.shapes[1])


def _check_pair(re, im, names):
    for t in (re, im):
        if not isinstance(t, Tensor):
            raise TypeError(f"complex(): argument '{names[t is im]}' (position "
                            f"{1 + (t is im)}) must be Tensor, not {type(t).__name__}")
    if not (re.dtype.is_floating_point and im.dtype.is_floating_point):
        raise RuntimeError("Expected both inputs to be Half, Float or Double tensors but got "
                           f"{type_name(re.dtype)} and {type_name(im.dtype)}")
    if re.dtype is not im.dtype:
        raise RuntimeError(f"Expected object of scalar type {type_name(re.dtype)} but got "
                           f"scalar type {type_name(im.dtype)} for second argument")
    if re.dtype.is_half:
        raise RuntimeError("complex(): complex32 (ComplexHalf) is not supported by nbtorch")


def complex(real, imag, *, out=None):
    """The complex tensor real + i imag (both float or both double; broadcast).

    Example:
        >>> nbtorch.complex(nbtorch.tensor([1.]), nbtorch.tensor([2.]))
        tensor([1.+2.j])
    """
    _check_pair(real, imag, ("real", "imag"))
    return _copy_out(_Complex.apply(real, imag), out)


def polar(abs, angle, *, out=None):
    """abs * (cos(angle) + i sin(angle)), as complex(abs cos, abs sin)."""
    _check_pair(abs, angle, ("abs", "angle"))
    return _copy_out(complex(abs * angle.cos(), abs * angle.sin()), out)


# ---- prod over complex ----------------------------------------------------------------

def complex_prod(x, dims, keepdim):
    """Product over `dims` by pairwise multiplication (log2(n) elementwise muls, so the
    gradient comes from mul's, exact with zeros; any device)."""
    nd = x.dim()
    keep = [d for d in range(nd) if d not in dims]
    n = 1
    for d in dims:
        n *= x._shape[d]
    t = x.permute(*keep, *dims).reshape(*(x._shape[d] for d in keep), n)
    if n == 0:
        from .creation import ones
        t = ones(t._shape[:-1] + (1,), dtype=x.dtype, device=x.device)
    while t._shape[-1] > 1:
        n = t._shape[-1]
        h = n // 2
        head = t.narrow(-1, 0, h) * t.narrow(-1, h, h)
        t = head if n % 2 == 0 else _cat_last(head, t.narrow(-1, n - 1, 1))
    t = t.squeeze(-1)
    if keepdim:
        t = t.reshape(*(1 if d in dims else s for d, s in enumerate(x._shape)))
    return t


def _cat_last(a, b):
    from .joining import cat
    return cat([a, b], -1)


def install():
    """Tensor's complex methods and properties (called once at import)."""
    Tensor.real = property(_real_get, _real_set)
    Tensor.imag = property(_imag_get, _imag_set)
    for fn in (conj, conj_physical, conj_physical_, resolve_conj, resolve_neg, is_conj,
               is_neg, angle, sgn, adjoint):
        setattr(Tensor, fn.__name__, fn)
    Tensor.is_complex = lambda self: self.dtype.is_complex
    real_sgn_ = Tensor.sgn_
    Tensor.sgn_ = lambda self: self.copy_(_Sgn.apply(self)) if self.dtype.is_complex \
        else real_sgn_(self)
    _conjugated("mH")
    _conjugated("H")
    Tensor.cfloat = lambda self, memory_format=None: self.to(_dtype.complex64)
    Tensor.cdouble = lambda self, memory_format=None: self.to(_dtype.complex128)


def _conjugated(name):
    """Tensor.<name> (a transpose property) conjugated for complex tensors."""
    plain = getattr(Tensor, name).fget
    setattr(Tensor, name, property(lambda self: conj(plain(self))))


install()
