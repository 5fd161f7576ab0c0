"""`assert_close`: PyTorch's comparison of tensors, NumPy arrays, numbers and containers.

Inputs are paired up recursively (sequences by position, mappings by key), each pair
is checked for support and tolerances first (so a bad argument is raised before any
comparison), then compared; the first failure becomes the exception, its message
ending with the path of the failing item ("The failure occurred for item ['a'][1]").
Values are compared in NumPy on host copies, in the inputs' own dtype (float16 and
bfloat16 arithmetic rounds per op, as PyTorch's CPU kernels do), so the numbers in a
message are the ones PyTorch prints.
"""
import cmath
import collections.abc

import numpy as np

from .. import _dtype
from .._device import CPU
from .._tensor import Tensor, Size

__all__ = ["assert_close", "default_tolerances"]

# {dtype name: (rtol, atol)}; every other dtype (integers, bool) compares exactly.
_DTYPE_PRECISIONS = {
    "float16": (0.001, 1e-5),
    "bfloat16": (0.016, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex32": (0.001, 1e-5),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}
_NUMBER_DTYPES = {int: "int64", float: "float64", complex: "complex128"}


class ErrorMeta(Exception):
    """A failure found while pairing or comparing: the exception type, message and path."""

    def __init__(self, type, msg, *, id=()):
        super().__init__(msg)
        self.type, self.msg, self.id = type, msg, id

    def to_error(self, msg=None):
        if not isinstance(msg, str):
            generated = self.msg
            if self.id:
                generated += ("\n\nThe failure occurred for item "
                              + "".join(str([item]) for item in self.id))
            msg = msg(generated) if callable(msg) else generated
        return self.type(msg)


class _Unsupported(Exception):
    """This pair type cannot handle the inputs: try the next one."""


def default_tolerances(*dtype_names, precisions=None):
    """The loosest (rtol, atol) over `dtype_names` (names such as 'float32')."""
    table = precisions or _DTYPE_PRECISIONS
    rtols, atols = zip(*[table.get(name, (0.0, 0.0)) for name in dtype_names])
    return max(rtols), max(atols)


def _tolerances(dtype_names, rtol, atol, id):
    if (rtol is None) ^ (atol is None):
        raise ErrorMeta(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                        f"omitted, but got no {'rtol' if rtol is None else 'atol'}.", id=id)
    if rtol is not None:
        return rtol, atol
    return default_tolerances(*dtype_names)


# ---- messages ------------------------------------------------------------------------
def _mismatch_msg(identifier, extra, abs_diff, abs_idx, atol, rel_diff, rel_idx, rtol):
    equality = rtol == 0 and atol == 0

    def diff_line(kind, diff, idx, tol):
        line = (f"{kind.title()} difference: {diff}" if idx is None
                else f"Greatest {kind} difference: {diff} at index {idx}")
        return line + ("" if equality else f" (up to {tol} allowed)") + "\n"

    msg = f"{identifier} are not {'equal' if equality else 'close'}!\n\n"
    if extra:
        msg += extra.strip() + "\n"
    msg += diff_line("absolute", abs_diff, abs_idx, atol)
    msg += diff_line("relative", rel_diff, rel_idx, rtol)
    return msg.strip()


def _scalar_mismatch_msg(actual, expected, rtol, atol):
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_msg("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None,
                         atol, rel_diff, None, rtol)


# ---- pairs ---------------------------------------------------------------------------
class _NonePair:
    def __init__(self, actual, expected, id, **options):
        if not (actual is None or expected is None):
            raise _Unsupported
        self.actual, self.expected, self.id = actual, expected, id

    def compare(self):
        if not (self.actual is None and self.expected is None):
            raise ErrorMeta(AssertionError,
                            f"None mismatch: {self.actual} is not {self.expected}", id=self.id)


class _BooleanPair:
    def __init__(self, actual, expected, id, **options):
        if not all(isinstance(x, (bool, np.bool_)) for x in (actual, expected)):
            raise _Unsupported
        self.actual, self.expected, self.id = bool(actual), bool(expected), id

    def compare(self):
        if self.actual is not self.expected:
            raise ErrorMeta(AssertionError, f"Booleans mismatch: {self.actual} is not "
                            f"{self.expected}", id=self.id)


class _NumberPair:
    def __init__(self, actual, expected, id, rtol=None, atol=None, equal_nan=False,
                 check_dtype=False, **options):
        if not all(isinstance(x, (int, float, complex, np.number)) for x in (actual, expected)):
            raise _Unsupported
        actual, expected = (x.item() if isinstance(x, np.number) else x
                            for x in (actual, expected))
        self.actual, self.expected, self.id = actual, expected, id
        names = [_NUMBER_DTYPES[type(x)] if type(x) in _NUMBER_DTYPES else "int64"
                 for x in (actual, expected)]
        self.rtol, self.atol = _tolerances(names, rtol, atol, id)
        self.equal_nan, self.check_dtype = equal_nan, check_dtype

    def compare(self):
        a, e = self.actual, self.expected
        if self.check_dtype and type(a) is not type(e):
            raise ErrorMeta(AssertionError, f"The (d)types do not match: {type(a)} != "
                            f"{type(e)}.", id=self.id)
        if a == e or (self.equal_nan and cmath.isnan(a) and cmath.isnan(e)):
            return
        abs_diff = abs(a - e)
        if cmath.isfinite(abs_diff) and abs_diff <= self.atol + self.rtol * abs(e):
            return
        raise ErrorMeta(AssertionError, _scalar_mismatch_msg(a, e, self.rtol, self.atol),
                        id=self.id)


class _TensorLike:
    """What a comparison needs from a Tensor or ndarray: host values and attributes."""

    def __init__(self, x):
        if isinstance(x, Tensor):
            self.values = x.detach()._host()
            self.dtype, self.device, self.layout = x.dtype, x.device, x.layout
            self.shape, self.stride = x.shape, x.stride()
        else:
            if x.dtype.kind not in "biufc":
                raise _Unsupported
            self.values = x
            self.dtype = _NumpyDtype(x.dtype)
            self.device, self.layout = CPU, "torch.strided"
            self.shape = Size(x.shape)
            self.stride = tuple(s // x.itemsize for s in x.strides)
        self.name = self.dtype.name


class _NumpyDtype:
    """The dtype of an ndarray, printed as PyTorch prints the tensor it would become."""

    def __init__(self, np_dtype):
        self.np, self.name = np_dtype, np_dtype.name
        self.is_floating_point = np_dtype.kind == "f"

    def __repr__(self):
        return "torch." + self.name


class _TensorLikePair:
    def __init__(self, actual, expected, id, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, **options):
        related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
        if not related or not isinstance(actual, (Tensor, np.ndarray)):
            raise _Unsupported
        if not allow_subclasses and type(actual) is not type(expected):
            raise _Unsupported
        self.actual, self.expected = _TensorLike(actual), _TensorLike(expected)
        self.id = id
        self.rtol, self.atol = _tolerances((self.actual.name, self.expected.name), rtol, atol, id)
        self.equal_nan, self.check_device, self.check_dtype = equal_nan, check_device, check_dtype
        self.check_layout, self.check_stride = check_layout, check_stride

    def _fail_attribute(self, name, a, e):
        raise ErrorMeta(AssertionError, f"The values for attribute '{name}' do not match: "
                        f"{a} != {e}.", id=self.id)

    def compare(self):
        a, e = self.actual, self.expected
        if a.shape != e.shape:
            self._fail_attribute("shape", a.shape, e.shape)
        if a.layout != e.layout:
            if self.check_layout:
                self._fail_attribute("layout", a.layout, e.layout)
        elif self.check_stride and a.stride != e.stride:
            self._fail_attribute("stride()", a.stride, e.stride)
        if self.check_device and a.device != e.device:
            self._fail_attribute("device", a.device, e.device)
        if self.check_dtype and a.name != e.name:
            self._fail_attribute("dtype", repr(a.dtype), repr(e.dtype))
        av, ev = _common_values(a, e)
        for tol, label in ((self.rtol, "rtol"), (self.atol, "atol")):
            if tol < 0:
                raise RuntimeError(f"{label} must be greater than or equal to zero, but got "
                                   f"{tol}")
        matches = _isclose(av, ev, self.rtol, self.atol, self.equal_nan)
        if matches.all():
            return
        if av.ndim == 0:
            msg = _scalar_mismatch_msg(av.item(), ev.item(), self.rtol, self.atol)
        else:
            msg = _tensor_mismatch_msg(av, ev, matches, self.rtol, self.atol)
        raise ErrorMeta(AssertionError, msg, id=self.id)


def _common_values(a, e):
    """Both inputs' values in one dtype (PyTorch's promotion when `check_dtype=False`)."""
    av, ev = np.asarray(a.values), np.asarray(e.values)
    if a.name == e.name:
        return av, ev
    if isinstance(a.dtype, _dtype.dtype) and isinstance(e.dtype, _dtype.dtype):
        common = _dtype.promote_types(a.dtype, e.dtype)
        return _dtype.round_array(av, common), _dtype.round_array(ev, common)
    common = np.promote_types(av.dtype, ev.dtype)
    return av.astype(common), ev.astype(common)


def _isclose(a, e, rtol, atol, equal_nan):
    """``torch.isclose``: |a - e| <= atol + rtol * |e|, equal infinities, NaN by request."""
    with np.errstate(all="ignore"):
        close = a == e
        floating = a.dtype.kind in "fc" or a.dtype.name == "bfloat16"
        if equal_nan and floating:
            close |= np.isnan(a) & np.isnan(e)
        if rtol == 0 and atol == 0:
            return close
        if a.dtype.kind in "biu":       # integers and bool: errors in the default dtype
            default = _dtype.get_default_dtype().np
            a, e = a.astype(default), e.astype(default)
        allowed = atol + np.abs(rtol * e)
        actual_error = np.abs(a - e)
        return close | (np.isfinite(actual_error) & (actual_error <= allowed))


def _tensor_mismatch_msg(a, e, matches, rtol, atol):
    """Mismatch count and share, greatest absolute and relative differences and where."""
    shape, total = matches.shape, matches.size
    mismatches = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatches} / {total} ({mismatches / total:.1%})"
    a, e, matches = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    if a.dtype.kind in "biu":           # integers and bool: differences in int64
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(all="ignore"):
        abs_diff = np.abs(a - e)
        abs_diff[matches] = 0
        if a.dtype.kind == "i":         # int64 / int64 is float32 (the default dtype)
            rel_diff = abs_diff.astype(np.float32) / np.abs(e).astype(np.float32)
        else:
            rel_diff = abs_diff / np.abs(e)
        rel_diff[matches] = 0
    abs_idx, rel_idx = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))
    return _mismatch_msg("Tensor-likes", extra, _item(abs_diff[abs_idx]),
                         tuple(int(i) for i in np.unravel_index(abs_idx, shape)), atol,
                         _item(rel_diff[rel_idx]),
                         tuple(int(i) for i in np.unravel_index(rel_idx, shape)), rtol)


def _item(x):
    """A NumPy scalar as the Python number ``Tensor.item()`` gives."""
    return float(x) if x.dtype.name == "bfloat16" else x.item()


# ---- pairing and the public function -------------------------------------------------
_PAIR_TYPES = (_NonePair, _BooleanPair, _NumberPair, _TensorLikePair)


def _originate(actual, expected, id, options):
    """The comparison pairs for (possibly nested) inputs; ErrorMeta on a structural mismatch."""
    seq, mapping = collections.abc.Sequence, collections.abc.Mapping
    if (isinstance(actual, seq) and not isinstance(actual, str)
            and isinstance(expected, seq) and not isinstance(expected, str)):
        if len(actual) != len(expected):
            raise ErrorMeta(AssertionError, "The length of the sequences mismatch: "
                            f"{len(actual)} != {len(expected)}", id=id)
        return [pair for i in range(len(actual))
                for pair in _originate(actual[i], expected[i], (*id, i), options)]
    if isinstance(actual, mapping) and isinstance(expected, mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            raise ErrorMeta(AssertionError, (
                "The keys of the mappings do not match:\n"
                f"Missing keys in the actual mapping: {sorted(expected_keys - actual_keys)}\n"
                f"Additional keys in the actual mapping: {sorted(actual_keys - expected_keys)}"),
                id=id)
        keys = actual_keys
        try:
            keys = sorted(keys)
        except Exception:
            pass
        return [pair for key in keys
                for pair in _originate(actual[key], expected[key], (*id, key), options)]
    for pair_type in _PAIR_TYPES:
        try:
            return [pair_type(actual, expected, id, **options)]
        except _Unsupported:
            continue
    raise ErrorMeta(TypeError, "No comparison pair was able to handle inputs of type "
                    f"{type(actual)} and {type(expected)}.", id=id)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Assert that `actual` and `expected` are close, like ``torch.testing.assert_close``.

    Tensors (and NumPy arrays) must match in shape, device and dtype (each check can be
    turned off) and in value: ``|actual - expected| <= atol + rtol * |expected|``
    elementwise, NaN equal only with ``equal_nan``. Without `rtol`/`atol` the loosest
    defaults of the two dtypes apply (float16: 1e-3/1e-5, bfloat16: 1.6e-2/1e-5,
    float32: 1.3e-6/1e-5, float64: 1e-7/1e-7, integers and bool: exact); give both or
    neither (ValueError). Python numbers compare with their own type's tolerances,
    sequences and mappings item by item. `msg` replaces the message, or maps it if
    callable. Raises AssertionError on a mismatch, TypeError on inputs it cannot pair.

    Example:
        >>> assert_close(nbtorch.tensor([1.0, 2.0]), nbtorch.tensor([1.0, 2.0 + 1e-6]))
        >>> assert_close({"w": [1, 2]}, {"w": [1, 3]})   # AssertionError: ... item ['w'][1]
    """
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol,
                   equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype,
                   check_layout=check_layout, check_stride=check_stride)
    try:
        pairs = _originate(actual, expected, (), options)
    except ErrorMeta as meta:
        raise meta.to_error() from None
    for pair in pairs:
        try:
            pair.compare()
        except ErrorMeta as meta:
            error = meta
            break
    else:
        return
    raise error.to_error(msg) from None


_ALLCLOSE_PRECISIONS = {"float16": (1e-3, 1e-3), "float32": (1e-4, 1e-5), "float64": (1e-5, 1e-8)}


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated since PyTorch 1.12 (FutureWarning): use `assert_close`.

    Kept as PyTorch keeps it: non-tensors become tensors (`expected` in `actual`'s
    dtype), NaN equal by default, dtypes not checked, its own looser tolerances.
    """
    import warnings
    from .. import tensor
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead. You can find detailed upgrade instructions in "
                  "https://github.com/pytorch/pytorch/issues/61844.", FutureWarning,
                  stacklevel=2)
    if not isinstance(actual, Tensor):
        actual = tensor(actual)
    if not isinstance(expected, Tensor):
        expected = tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = default_tolerances(actual.dtype.name, expected.dtype.name,
                                        precisions=_ALLCLOSE_PRECISIONS)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)
