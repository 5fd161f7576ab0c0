"""dtypes and PyTorch's type-promotion rules.

A `dtype` wraps a NumPy dtype (the storage format) and knows its category
(bool < integer < floating) for promotion. Promotion follows PyTorch: tensors
with dimensions outrank 0-d tensors, which outrank Python scalars; a
lower-ranked operand only matters when its category is higher.

Half dtypes (float16 and bfloat16) are storage formats only: Numba has neither,
so every kernel runs in `dtype.compute` (float32 for both) and the op layer
rounds the result back once, as PyTorch's CPU kernels do per op. `is_half` is
the one predicate the op layer tests; kernels never see a half array except to
move its bits (as uint16).

bfloat16 storage comes from the `ml_dtypes` package (Google's stand-alone NumPy
bfloat16 dtype, the one JAX uses): NumPy has no bfloat16, and a well-kept
library whose `astype` rounds to nearest even, handles inf/nan/overflow and
whose NumPy ufuncs work beats hand-written bit twiddling. It is imported on first
use of bfloat16 (its import takes ~0.6 s, more than the rest of `import nbtorch`).

uint16/uint32/uint64 and the float8 family (storage from ml_dtypes, like bfloat16) are
*limited* dtypes, as in PyTorch 2.x: creation, conversion, views, copies, indexing and
the few ops PyTorch computes for them (see `_limited.py`); no kernel is compiled for
them, and promoting them with another dtype raises PyTorch's RuntimeError.
"""
import builtins
import importlib

import numpy as np

__all__ = [
    "dtype", "float16", "half", "bfloat16", "float32", "float", "float64", "double",
    "int8", "int16", "short", "int32", "int", "int64", "long", "uint8", "uint16",
    "uint32", "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
    "float8_e5m2fnuz", "float8_e8m0fnu",
    "bool", "complex64", "cfloat", "complex128", "cdouble", "get_default_dtype",
    "set_default_dtype", "promote_types", "result_type", "can_cast", "iinfo", "finfo",
]

_BOOL, _INT, _FLOAT, _COMPLEX = 0, 1, 2, 3


class dtype:
    """A tensor element type, e.g. ``nbtorch.float32``."""

    __slots__ = ("name", "np", "category", "itemsize", "is_floating_point",
                 "is_signed", "is_complex", "is_half", "compute", "np_via", "limited")

    def __init__(self, name, np_dtype, category, is_half=False):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category
        self.itemsize = self.np.itemsize
        self.is_floating_point = category == _FLOAT
        self.is_signed = category >= _FLOAT or np.issubdtype(self.np, np.signedinteger)
        self.is_complex = category == _COMPLEX
        self.is_half = is_half          # a 16-bit float kernels never see (float16, bfloat16)
        self.compute = self             # the dtype kernels run in (float32 for the halves)
        self.np_via = None              # NumPy dtype values convert through on the way in
        self.limited = False            # PyTorch's barebones dtypes: uint16-64, float8

    def __repr__(self):
        return "torch." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self):
        """The real dtype of a complex one (complex64 -> float32); others unchanged."""
        return _REAL.get(self, self)

    def to_complex(self):
        """The complex dtype holding this one (float64 -> complex128); complex unchanged."""
        return _COMPLEX_OF.get(self, self)


class _LazyMl(dtype):
    """A float dtype whose NumPy dtype (from `ml_dtypes`) is imported on first use:
    bfloat16 and the float8 family."""

    __slots__ = ("_np",)

    def __init__(self, name, itemsize=1, is_signed=True, is_half=False):
        self.name, self.category, self.itemsize = name, _FLOAT, itemsize
        self.is_floating_point, self.is_signed, self.is_half = True, is_signed, is_half
        self.is_complex = False
        self.compute = self
        self.np_via = None
        self.limited = not is_half
        self._np = None

    @property
    def np(self):
        np_dtype = self._np
        return np_dtype if np_dtype is not None else self._load()

    def _load(self):
        np_dtype = np.dtype(getattr(importlib.import_module("ml_dtypes"), self.name))
        self._np = np_dtype
        _FROM_NP[np_dtype] = self
        return np_dtype


_LazyBfloat16 = _LazyMl


float16 = half = dtype("float16", np.float16, _FLOAT, is_half=True)
bfloat16 = _LazyMl("bfloat16", 2, is_half=True)
float32 = float = dtype("float32", np.float32, _FLOAT)
float16.compute = bfloat16.compute = float32
float16.np_via = bfloat16.np_via = float32.np     # c10::Half and BFloat16 are made from floats
float64 = double = dtype("float64", np.float64, _FLOAT)
int8 = dtype("int8", np.int8, _INT)
int16 = short = dtype("int16", np.int16, _INT)
int32 = int = dtype("int32", np.int32, _INT)
int64 = long = dtype("int64", np.int64, _INT)
uint8 = dtype("uint8", np.uint8, _INT)
bool = dtype("bool", np.bool_, _BOOL)
uint16 = dtype("uint16", np.uint16, _INT)
uint32 = dtype("uint32", np.uint32, _INT)
uint64 = dtype("uint64", np.uint64, _INT)
uint16.limited = uint32.limited = uint64.limited = True
float8_e4m3fn = _LazyMl("float8_e4m3fn")
float8_e5m2 = _LazyMl("float8_e5m2")
float8_e4m3fnuz = _LazyMl("float8_e4m3fnuz")
float8_e5m2fnuz = _LazyMl("float8_e5m2fnuz")
float8_e8m0fnu = _LazyMl("float8_e8m0fnu", is_signed=False)
complex64 = cfloat = dtype("complex64", np.complex64, _COMPLEX)
complex128 = cdouble = dtype("complex128", np.complex128, _COMPLEX)
_REAL = {complex64: float32, complex128: float64}
# the complex dtype of each float one (PyTorch's complex32 for float16 is not provided)
_COMPLEX_OF = {float16: complex64, bfloat16: complex64, float32: complex64,
               float64: complex128}

ALL = (float16, bfloat16, float32, float64, int8, int16, int32, int64, uint8, bool,
       complex64, complex128)
UINTS = (uint16, uint32, uint64)
FLOAT8 = (float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz, float8_e8m0fnu)
LIMITED = UINTS + FLOAT8
_NAMES = {d.name: d for d in ALL + LIMITED}
_FROM_NP = {d.np: d for d in ALL + UINTS if d is not bfloat16}   # ml_dtypes: on first use


def _by_name(name):
    return _NAMES[name]


_TYPE_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float",
               "float64": "Double", "int8": "Char", "int16": "Short", "int32": "Int",
               "int64": "Long", "uint8": "Byte", "bool": "Bool",
               "complex64": "ComplexFloat", "complex128": "ComplexDouble",
               "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64",
               "float8_e4m3fn": "Float8_e4m3fn", "float8_e5m2": "Float8_e5m2",
               "float8_e4m3fnuz": "Float8_e4m3fnuz", "float8_e5m2fnuz": "Float8_e5m2fnuz",
               "float8_e8m0fnu": "Float8_e8m0fnu"}


def type_name(dtype):
    """PyTorch's scalar type name ('Float', 'Long', ...) used in its error messages."""
    return _TYPE_NAMES[dtype.name]


def compute_dtype(d):
    """The dtype kernels run in for `d`: float32 for the half dtypes, `d` otherwise."""
    return d.compute


def round_array(values, d):
    """NumPy `values` converted to `d`'s storage type with PyTorch's rounding (halves are
    made from float32 only: a float64 or integer rounds twice, as in PyTorch)."""
    from .kernels.halves import round_to
    return round_to(values, d.np)


def round_scalar(x, d):
    """A Python or NumPy number as `d`'s NumPy scalar type (halves through float32)."""
    if d.np_via is not None:
        x = d.np_via.type(x)
    return d.np.type(x)


def from_numpy_dtype(np_dtype):
    """The nbtorch dtype for a NumPy dtype; TypeError for unsupported ones.

    Unlike PyTorch, ``ml_dtypes`` bfloat16 and float8 arrays are accepted.
    """
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except KeyError:
        d = _NAMES.get(np.dtype(np_dtype).name)
        if d is not None and d.__class__ is _LazyMl and np.dtype(np_dtype) == d.np:
            return d
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).name}. The only "
            "supported types are: float64, float32, float16, complex64, complex128, int64, "
            "int32, int16, int8, uint64, uint32, uint16, uint8, and bool.") from None


def to_dtype(d):  # noqa: C901 - a flat table of accepted spellings
    """Accept an nbtorch dtype, a NumPy dtype, a Python type or a name."""
    if d.__class__ is dtype or d.__class__ is _LazyMl:
        return d
    if d is builtin_float:
        return float64                  # PyTorch maps Python's float type to float64
    if d is builtin_int:
        return int64
    if d is builtin_bool:
        return bool
    if d is builtin_complex:
        return complex128               # and complex to complex128
    if isinstance(d, str) and d in _NAMES:
        return _NAMES[d]
    return from_numpy_dtype(d)


builtin_float, builtin_int, builtin_bool = builtins.float, builtins.int, builtins.bool
builtin_complex = builtins.complex

_default = [float32]


def get_default_dtype():
    """The dtype of new floating tensors (float32 unless changed)."""
    return _default[0]


def default_complex():
    """The dtype of new complex tensors: complex128 when the default float is float64,
    else complex64 (PyTorch's rule)."""
    return complex128 if _default[0] is float64 else complex64


def set_default_dtype(d):
    """Set the default floating dtype (float16, bfloat16, float32 or float64)."""
    d = to_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default[0] = d


# promote_types over the 12 dtypes, computed once from NumPy's table with PyTorch's
# exceptions (uint8 with int8 -> int16 in both; a half with ints stays half; float16
# with bfloat16 -> float32, the smallest float holding both; a complex with a float holds
# both: complex64 with float64 -> complex128).
def _promote_pair(a, b):
    if a is b:
        return a
    if a.category == _COMPLEX or b.category == _COMPLEX:
        c, o = (a, b) if a.category == _COMPLEX else (b, a)
        if o.category == _COMPLEX or o.category == _FLOAT:
            return complex128 if max(c.to_real().itemsize, o.to_real().itemsize) == 8 \
                else complex64
        return c
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.category == _FLOAT:
        if a.itemsize == b.itemsize:
            return float32
        return a if a.itemsize > b.itemsize else b
    return _FROM_NP[np.promote_types(a.np, b.np)]


class _PromoteTable(dict):
    """promote_types by pair; a pair with a limited dtype that PyTorch refuses to promote
    raises its RuntimeError (uint16-64 promote only with themselves and the floats)."""

    def __missing__(self, pair):
        a, b = pair
        kind = ("Float8 Types" if a in FLOAT8 or b in FLOAT8
                else "uint16, uint32, uint64 types")
        raise RuntimeError(f"Promotion for {kind} is not supported, attempted to promote "
                           f"{type_name(a)} and {type_name(b)}")


_PROMOTE = _PromoteTable({(a, b): _promote_pair(a, b) for a in ALL for b in ALL})
for _u in UINTS:
    _PROMOTE[(_u, _u)] = _u
    for _f in (float16, bfloat16, float32, float64):
        _PROMOTE[(_u, _f)] = _PROMOTE[(_f, _u)] = _f
for _f in FLOAT8:
    _PROMOTE[(_f, _f)] = _f


def promote_types(a, b):
    """The smallest dtype both `a` and `b` convert to (PyTorch's table)."""
    return _PROMOTE[(to_dtype(a), to_dtype(b))]


def _scalar_category(x):
    if isinstance(x, builtin_bool) or isinstance(x, np.bool_):
        return _BOOL
    if isinstance(x, (builtin_int, np.integer)):
        return _INT
    if isinstance(x, (builtin_complex, np.complexfloating)):
        return _COMPLEX
    return _FLOAT


_DEFAULT_FOR_CATEGORY = {_BOOL: bool, _INT: int64}


def result_type(*operands):
    """The dtype of an op's result over tensors and Python scalars (PyTorch's rules).

    Example:
        >>> result_type(nbtorch.ones(2, dtype=nbtorch.int32), 2.5)
        torch.float32
    """
    dim_t = zero_t = scalar = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if d is not None and (d.__class__ is dtype or d.__class__ is _LazyMl):
            if x.ndim:
                dim_t = d if dim_t is None else _PROMOTE[(dim_t, d)]
            else:
                zero_t = d if zero_t is None else _PROMOTE[(zero_t, d)]
        else:
            c = _scalar_category(x)
            if scalar is None or c > scalar:
                scalar = c
    if scalar == _COMPLEX or _COMPLEX in (getattr(dim_t, "category", 0),
                                          getattr(zero_t, "category", 0)):
        wrapped = None if scalar is None else (
            _DEFAULT_FOR_CATEGORY.get(scalar) or (default_complex() if scalar == _COMPLEX
                                                  else get_default_dtype()))
        return _combine(dim_t, _combine(zero_t, wrapped))
    out = dim_t
    if zero_t is not None:
        out = zero_t if out is None else (out if out.category >= zero_t.category
                                          else zero_t)
    if scalar is not None:
        if out is None or out.category < scalar:
            out = _DEFAULT_FOR_CATEGORY.get(scalar) or get_default_dtype()
    return out


def _combine(higher, lower):
    """c10's combine_categories: the dtype of a higher-priority operand (dimensioned
    tensors over 0-d ones over Python numbers) unless the lower one's category is higher;
    a complex lower operand makes a float higher one complex of the same precision."""
    if higher is None:
        return lower
    if lower is None or higher.category == _COMPLEX:
        return higher
    if lower.category == _COMPLEX:
        return higher.to_complex() if higher.category == _FLOAT else lower
    if higher.category == _FLOAT:
        return higher
    if higher is bool or lower.category == _FLOAT:
        return _PROMOTE[(higher, lower)]
    return higher


def can_cast(from_, to):
    """False where PyTorch refuses an in-place cast to a lower category."""
    return to_dtype(from_).category <= to_dtype(to).category


class iinfo:
    """Integer limits, like ``torch.iinfo``."""

    def __init__(self, d):
        i = np.iinfo(to_dtype(d).np)
        self.bits, self.min, self.max, self.dtype = i.bits, builtin_int(i.min), builtin_int(i.max), to_dtype(d).name

    def __repr__(self):
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


class finfo:
    """Floating limits, like ``torch.finfo`` (``resolution`` is 10**-digits, as PyTorch's).

    Example:
        >>> finfo(bfloat16).eps
        0.0078125
    """

    def __init__(self, d=None):
        d = to_dtype(d) if d is not None else get_default_dtype()
        d = d.to_real()
        if not d.is_floating_point:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        f = (importlib.import_module("ml_dtypes").finfo(d.np) if d.__class__ is _LazyMl
             else np.finfo(d.np))
        self.bits, self.eps = f.bits, builtin_float(f.eps)
        if d is float8_e5m2fnuz:
            self.eps = 0.125            # c10's numeric_limits value (ml_dtypes says 0.25)
        self.max, self.min = builtin_float(f.max), builtin_float(f.min)
        self.tiny = self.smallest_normal = builtin_float(f.tiny)
        self.resolution, self.dtype = 10.0 ** -builtin_int(f.precision), d.name
        if d.limited:
            self.resolution = 1.0       # c10's digits10 is 0 for every float8

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")
