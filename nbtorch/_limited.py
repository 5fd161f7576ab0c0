"""Values of the limited dtypes (uint16/32/64, the float8 family) through NumPy.

PyTorch gives these dtypes "barebones" support: creation, conversion, copies, views,
indexing and a few ops. nbtorch compiles no Numba kernel for them (compile time is
user-facing and the float8 storage types from ml_dtypes are opaque to Numba): their
copies, fills and conversions run here with NumPy, and ops PyTorch does not compute for
them raise its NotImplementedError (`refuse`).

Conversions follow c10, bit for bit: a float8 is made from a float32 (a float64 rounds
twice, as in PyTorch); float8_e4m3fn saturates overflow and infinities to +-448 (ml_dtypes
gives NaN); float8_e5m2's NaN is 0x7f; float8_e8m0fnu stores the magnitude only and makes
0 its smallest value (2**-127).
On CUDA the values make a round trip through the host: these are small, rare copies.
"""
import numpy as np

from . import _dtype
from ._dtype import type_name

__all__ = ["refuse", "no_kernel", "np_view", "cast", "copy_values", "fill_values",
           "elementwise", "bits", "signed_order", "unsigned_order"]


def refuse(kernel, dtype):
    """PyTorch's error for an op with no kernel for `dtype`: '"add_stub" not implemented
    for 'UInt32''."""
    raise NotImplementedError(f'"{kernel}" not implemented for \'{type_name(dtype)}\'')


def np_view(data, offset, shape, strides, itemsize):
    """A NumPy view of `shape`/`strides` (in elements) into the flat host array `data`."""
    if not all(shape):
        return np.empty(shape, data.dtype)
    return np.ndarray(shape, data.dtype, buffer=data, offset=offset * itemsize,
                      strides=[s * itemsize for s in strides])


def _to_float8(values, d):
    v = np.asarray(values)
    if v.dtype.kind == "c":
        v = v.real
    with np.errstate(invalid="ignore", over="ignore"):
        f = v.astype(np.float32)
    if d is _dtype.float8_e4m3fn:
        f = np.clip(f, -448.0, 448.0)               # saturates (NaN stays NaN)
    elif d is _dtype.float8_e8m0fnu:
        bits = np.asarray(np.abs(f)).astype(d.np).view(np.uint8)
        return np.where(f == 0, np.uint8(0), bits).view(d.np)   # 0 -> 2**-127, as c10
    out = f.astype(d.np)
    if d is _dtype.float8_e5m2:                     # c10's NaN is 0x7f (ml_dtypes': 0x7e)
        bits = np.asarray(out).view(np.uint8)
        out = np.where(np.isnan(f), bits | np.uint8(0x7F), bits).view(d.np)
    return out


def cast(values, d):
    """NumPy `values` (any dtype, ml_dtypes included) as `d`'s storage, PyTorch's rules."""
    v = np.asarray(values)
    if v.dtype == d.np:
        return v
    if d in _dtype.FLOAT8:
        return _to_float8(v, d)
    src = _dtype._NAMES.get(v.dtype.name)
    with np.errstate(invalid="ignore", over="ignore"):
        if src is not None and src in _dtype.FLOAT8 + (_dtype.bfloat16,):
            v = v.astype(np.float32)                # ml_dtypes scalars widen first
        if d.is_half:
            return _dtype.round_array(v.astype(np.float32), d)
        if v.dtype.kind == "c" and not d.is_complex:
            v = v.real
        return v.astype(d.np)


def _host(t):
    """(host array of t's storage, write-back function) for CPU or CUDA tensors."""
    data = t._storage.data
    if t.device.type == "cpu":
        return data, None
    host = data.copy_to_host()
    return host, lambda: data.copy_to_device(host)


def copy_values(dst, src):
    """dst[...] = src (broadcast, cast to dst's dtype) with NumPy; one of them limited."""
    from ._kernel_args import broadcast_strides
    sdata, _ = _host(src)
    s = np_view(sdata, src._offset, dst._shape, broadcast_strides(src, dst._shape),
                src.dtype.itemsize)
    values = cast(s, dst.dtype)
    ddata, write_back = _host(dst)
    d = np_view(ddata, dst._offset, dst._shape, dst._strides, dst.dtype.itemsize)
    if d.size:
        d[...] = values
    if write_back is not None:
        write_back()


def _check_fill(value, d):
    """c10's checked conversion of a fill value to a float8: beyond the finite range (or
    infinite, for the types without inf) is an error, as PyTorch's fill_."""
    import math
    import ml_dtypes
    v = complex(value).real
    if math.isnan(v) or (math.isinf(v) and d is _dtype.float8_e5m2):
        return
    if math.isinf(v) or abs(v) > float(ml_dtypes.finfo(d.np).max):
        raise RuntimeError(f"value cannot be converted to type c10::{type_name(d)} "
                           "without overflow")


def fill_values(dst, value):
    """dst[...] = value (a Python number) with NumPy, dst of a limited dtype."""
    if dst.dtype in _dtype.FLOAT8:
        _check_fill(value, dst.dtype)
    ddata, write_back = _host(dst)
    d = np_view(ddata, dst._offset, dst._shape, dst._strides, dst.dtype.itemsize)
    if d.size:
        src = np.asarray(value)
        if dst.dtype in _dtype.UINTS and src.dtype.kind in "iu":
            src = src.astype(np.uint64) if value >= 0 else src.astype(np.int64)
        d[...] = cast(src, dst.dtype)
    if write_back is not None:
        write_back()


# The elementwise ops PyTorch computes for these dtypes (nbtorch kernel name -> NumPy);
# every other one raises PyTorch's error naming its CPU kernel (`_STUBS`, else op_cpu, or
# op_vml_cpu for the float ops PyTorch runs through VML).
_UINT_OPS = {"eq": np.equal, "ne": np.not_equal, "mul": np.multiply,
             "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or,
             "bitwise_xor": np.bitwise_xor}
_FLOAT8_OPS = {"eq": np.equal, "ne": np.not_equal, "mul": np.multiply, "abs_": np.abs,
               "isnan": np.isnan, "isfinite": np.isfinite, "isinf": np.isinf}
_STUBS = {"add": "add_stub", "sub": "add_stub", "div_floor_int": "div_floor_cpu",
          "remainder_int": "remainder_cpu", "bitwise_left_shift": "lshift_cpu",
          "bitwise_right_shift": "rshift_cpu", "clamp": "clamp_scalar_cpu",
          "clamp_min": "clamp_min_scalar_cpu", "clamp_max": "clamp_max_scalar_cpu",
          "pow_int": "pow", "div": "div_cpu", "abs_": "abs_cpu", "isfinite": "isfinite",
          "isinf": "isinf", "isclose": "mul_cpu_reduced_float", "round_": "round_vml_cpu",
          "square": "pow", "relu": "clamp_min_scalar_cpu", "addcmul": "addcmul_cpu_out",
          "addcdiv": "addcdiv_cpu_out", "exp2": "exp2", "sigmoid": "sigmoid_cpu_reduced_float"}
_UINT_STUBS = {"fmax": "maximum_cpu", "fmin": "minimum_cpu"}
_VML = {"sqrt", "exp", "log", "log2", "log10", "log1p", "expm1", "sin", "cos", "tan",
        "asin", "acos", "atan", "sinh", "cosh", "tanh", "floor", "ceil", "round", "trunc",
        "erf", "erfc", "erfinv", "lgamma", "digamma", "rsqrt"}
# float8 ops PyTorch computes for some of the family only
_FLOAT8_ONLY = {"abs_": (_dtype.float8_e4m3fn, _dtype.float8_e5m2, _dtype.float8_e4m3fnuz,
                         _dtype.float8_e5m2fnuz),
                "isfinite": (_dtype.float8_e5m2, _dtype.float8_e8m0fnu),
                "isinf": (_dtype.float8_e5m2,)}


def _all_true(a):
    return np.ones(a.shape, np.bool_)


def _operand_values(x, d):
    """A tensor's or a Python number's values as a host NumPy array of dtype `d`."""
    if hasattr(x, "_storage"):
        data, _ = _host(x)
        v = np_view(data, x._offset, x._shape, x._strides, x.dtype.itemsize)
        return v if x.dtype is d else cast(v, d)
    return cast(np.asarray(x), d)


def elementwise(op, inputs, d, out_dtype, out=None):
    """run_elementwise for a limited compute dtype `d`: NumPy where PyTorch computes the
    op (uint arithmetic wraps natively; float8 computes in float32 and rounds once),
    PyTorch's NotImplementedError where it has no kernel."""
    from ._tensor import empty
    float8 = d in _dtype.FLOAT8
    fn = (_FLOAT8_OPS if float8 else _UINT_OPS).get(op)
    if float8 and op in ("mul", "div") and not all(getattr(x, "ndim", 0) for x in inputs):
        fn, op = None, op + "_cpu_reduced_float"    # float8 * number: no kernel either
    if fn is None or (float8 and d not in _FLOAT8_ONLY.get(op, (d,))):
        if not float8 and op in _UINT_STUBS:
            refuse(_UINT_STUBS[op], d)
        if op in _STUBS or op.endswith("_reduced_float"):
            refuse(_STUBS.get(op, op), d)
        refuse(op + ("_vml_cpu" if float8 and op in _VML else "_cpu"), d)
    if op == "isfinite" and d is _dtype.float8_e8m0fnu:
        fn = _all_true                  # c10 says every e8m0 value is finite, NaN too
    args = [_operand_values(x, d) for x in inputs]
    if float8:
        args = [a.astype(np.float32) for a in args]
    res = np.asarray(fn(*args))
    if out_dtype.limited or out_dtype is _dtype.bool:
        res = cast(res, out_dtype)
    device = next(x.device for x in inputs if hasattr(x, "_storage"))
    result = empty(res.shape, out_dtype, device)
    data, write_back = _host(result)
    if res.size:
        np_view(data, 0, res.shape, result._strides, out_dtype.itemsize)[...] = res
    if write_back is not None:
        write_back()
    if out is not None:
        from ._kernel_args import copy_values as copy_any
        copy_any(out, result)
        return out
    return result


def no_kernel(kernel, d, only=None):
    """Refuse, as PyTorch, an op with no kernel for limited dtype `d` (for the dtypes in
    `only` when given). Called as ``if x.dtype.limited: no_kernel(...)`` so other dtypes
    pay one attribute test. nbtorch could often compute these (NumPy has the uint
    arithmetic); refusing keeps PyTorch's semantics and compiles nothing."""
    if d.limited and (only is None or d in only):
        refuse(kernel, d)


def bits(data, d):
    """`data` (a host or device array of dtype `d`) seen as the signed integers of its
    width, for kernels that only move values (take, put): they then run their existing
    int16/int32/int64/int8 specialisations and nothing new compiles."""
    return data.view(_BITS[d.itemsize]) if d.limited else data


_BITS = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}


def signed_order(a):
    """uint array `a` as the same-width signed ints in the same order (top bit flipped),
    so the existing int sort kernels sort it (stable, as NumPy's and PyTorch's)."""
    top = a.dtype.type(1 << (8 * a.dtype.itemsize - 1))
    return np.bitwise_xor(a, top).view(_BITS[a.dtype.itemsize])


def unsigned_order(a, np_dtype):
    """The inverse of `signed_order`: signed ints back to the uint values of `np_dtype`."""
    u = a.view(np_dtype)
    return np.bitwise_xor(u, np_dtype.type(1 << (8 * np_dtype.itemsize - 1)))


def wide(d):
    """The dtype holding every value of limited dtype `d` exactly (float32 for a float8,
    int64 for a uint: uint64 wraps there and back bit for bit), for ops that only move
    values (pad, embedding): they run there with their existing kernels."""
    return _dtype.float32 if d in _dtype.FLOAT8 else _dtype.int64
