"""Argument rules of torch.fft, with PyTorch's messages: the norm= strings, dtype
promotion, dims and signal sizes (n=, s=, dim=), and out= dtypes.

Written after aten's SpectralOps (canonicalize_fft_shape_and_dim_args,
promote_type_fft, norm_from_string), checked against PyTorch 2.13's behaviour.
"""
from .. import _dtype
from .._dtype import type_name
from .._tensor import Tensor

__all__ = ["norm_mode", "promote", "wrap_dim", "signal_dims", "c2r_dims", "check_tensor",
           "check_types", "check_out", "NONE", "BY_ROOT_N", "BY_N"]

NONE, BY_ROOT_N, BY_N = 0, 1, 2        # scalings: none, 1/sqrt(n), 1/n


def norm_mode(norm, forward):
    """The scaling `norm` asks of a forward (or inverse) transform."""
    if norm is None or norm == "backward":
        return NONE if forward else BY_N
    if norm == "forward":
        return BY_N if forward else NONE
    if norm == "ortho":
        return BY_ROOT_N
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def check_tensor(name, x):
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


def _is_int(v):
    return not isinstance(v, bool) and (isinstance(v, int) or hasattr(v, "__index__"))


def check_types(name, norm, n=None, s=None, dim=None, one=False):
    """TypeErrors of PyTorch's argument parser for norm=, n=/s= and dim=."""
    prefix = f"fft_{name}(): argument"
    if norm is not None and not isinstance(norm, str):
        raise TypeError(f"{prefix} 'norm' must be str, not {type(norm).__name__}")
    if n is not None and not _is_int(n):
        raise TypeError(f"{prefix} 'n' must be int, not {type(n).__name__}")
    if one:
        if not _is_int(dim):
            raise TypeError(f"{prefix} 'dim' must be int, not {type(dim).__name__}")
        return
    for arg, v in (("s", s), ("dim", dim)):
        if v is not None and not _is_int(v) and not (
                isinstance(v, (tuple, list)) and all(_is_int(e) for e in v)):
            raise TypeError(f"{prefix} '{arg}' must be tuple of ints, not {type(v).__name__}")


def promote(x, require_complex=False):
    """`x` in the dtype the transform computes in: complex stays, integers and bool go to
    the default float, float32/float64 stay (or become complex); others raise."""
    d = x.dtype
    if d.is_complex:
        return x
    if not d.is_floating_point:
        d = _dtype.get_default_dtype()
    if d.name not in ("float32", "float64"):
        raise RuntimeError(f"Unsupported dtype {type_name(d)}")
    if require_complex:
        from .fft import to_complex
        return to_complex(x.to(d) if d is not x.dtype else x)
    return x.to(d) if d is not x.dtype else x


def wrap_dim(dim, ndim):
    """`dim` in [0, ndim); 0-d tensors have no dims (PyTorch's wrap_scalar=False)."""
    if isinstance(dim, bool) or not isinstance(dim, int):
        if hasattr(dim, "__index__") and not isinstance(dim, bool):
            dim = int(dim)
        else:
            raise TypeError(f"argument 'dim' must be int, not {type(dim).__name__}")
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {dim})")
    return dim + ndim if dim < 0 else dim


def _as_tuple(v):
    if v is None:
        return None
    if isinstance(v, int) or hasattr(v, "__index__"):
        return (int(v),)
    return tuple(int(e) for e in v)


def check_sizes(sizes):
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")


def signal_dims(x, s, dim):
    """(dims, sizes): the transformed dims and their signal lengths from s= and dim=."""
    shape = tuple(x.shape)
    ndim = len(shape)
    s, dim = _as_tuple(s), _as_tuple(dim)
    dims = None
    if dim is not None:
        dims = tuple(wrap_dim(d, ndim) for d in dim)
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
    if s is not None:
        if dim is not None and len(dim) != len(s):
            raise RuntimeError("When given, dim and shape arguments must have the same "
                               "length")
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{ndim} dimensions.")
        if dims is None:
            dims = tuple(range(ndim - len(s), ndim))
        sizes = tuple(shape[d] if n == -1 else n for d, n in zip(dims, s))
    elif dims is None:
        dims, sizes = tuple(range(ndim)), shape
    else:
        sizes = tuple(shape[d] for d in dims)
    check_sizes(sizes)
    return dims, sizes


def c2r_dims(name, x, s, dim):
    """(dims, input sizes, last output size) of a Hermitian-to-real transform."""
    dims, sizes = signal_dims(x, s, dim)
    if not dims:
        raise RuntimeError(f"{name} must transform at least one axis")
    s = _as_tuple(s)
    last = 2 * (x.shape[dims[-1]] - 1) if s is None or s[-1] == -1 else sizes[-1]
    check_sizes((last,))
    return dims, sizes[:-1] + (last // 2 + 1,), last


def check_out(name, out, complex_out):
    if out is None:
        return
    if not isinstance(out, Tensor):
        raise TypeError(f"fft_{name}(): argument 'out' must be Tensor, not "
                        f"{type(out).__name__}")
    if complex_out and not out.dtype.is_complex:
        raise RuntimeError(f"{name} expects a complex output tensor, but got "
                           f"{type_name(out.dtype)}")
    if not complex_out and not out.dtype.is_floating_point:
        raise RuntimeError(f"{name} expects a floating point output tensor, but got "
                           f"{type_name(out.dtype)}")
