"""`repr(tensor)` in PyTorch's format: tensor([[1., 2.], ...], dtype=..., grad_fn=<...>)."""
import numpy as np

from . import _dtype

PRINT_OPTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
              "sci_mode": None}


_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=float("inf"), edgeitems=3, linewidth=80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """PyTorch's print options; a `profile` ('default', 'short', 'full') sets all four,
    the explicit ones given with it win."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"Unknown profile {profile!r} (default, short or full)")
        PRINT_OPTS.update(_PROFILES[profile])
    for k, v in (("precision", precision), ("threshold", threshold),
                 ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if v is not None:
            PRINT_OPTS[k] = v
    PRINT_OPTS["sci_mode"] = sci_mode


def _shown(values, e8m0=False):
    """The values PyTorch's _Formatter decides on: nonzero and finite. float8_e8m0fnu has
    no zero (0 converts to 2**-127) and calls every value finite, NaN too."""
    return values != 2.0 ** -127 if e8m0 else np.isfinite(values) & (values != 0)


def _float_formatter(values, e8m0=False):
    """PyTorch's _Formatter rules, decided on the nonzero finite values: integers print
    as '3.', and scientific notation is used when max/min > 1000 or max > 1e8 (or, for
    non-integers, min < 1e-4)."""
    p = PRINT_OPTS["precision"]
    nonzero = values[_shown(values, e8m0)]
    sci = PRINT_OPTS["sci_mode"]
    ints = True
    if nonzero.size:
        ints = bool(np.all(nonzero == np.ceil(nonzero)))
        mag = np.abs(nonzero)
        amax, amin = mag.max(), mag.min()
        if sci is None:
            sci = amax / amin > 1000 or amax > 1e8 or (not ints and amin < 1e-4)
    if ints and not sci:
        return lambda v: _special(v) or f"{v:.0f}."
    if sci:
        return lambda v: _special(v) or f"{v:.{p}e}"
    return lambda v: _special(v) or f"{v:.{p}f}"


def _special(v):
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return None


def _float_strings(values, e8m0=False):
    """Formatted float64 `values` and PyTorch's width (the widest nonzero finite one)."""
    flat = values.ravel()
    fmt = _float_formatter(flat, e8m0)
    strs = np.vectorize(fmt, otypes=[object])(values) if values.size else values.astype(object)
    shown = strs.ravel()[_shown(flat, e8m0)]
    return strs, max((len(s) for s in shown), default=1)


def _complex_strings(a):
    """PyTorch's complex format: real and imaginary parts each with its own formatter, the
    real part padded to its width, the imaginary part signed and unpadded: 1.+2.j."""
    re, rwidth = _float_strings(a.real.astype(np.float64))
    im, iwidth = _float_strings(a.imag.astype(np.float64))

    def join(r, i):
        return r.rjust(rwidth) + (i if i[0] in "+-" else "+" + i) + "j"
    strs = np.vectorize(join, otypes=[object])(re, im) if a.size else a.astype(object)
    return strs, -(rwidth + iwidth + 1)      # negative: a line-splitting size, no padding


def _format_array(a, dtype):
    if dtype.is_complex:
        return _complex_strings(a)
    if dtype is _dtype.bool:
        fmt = lambda v: "True" if v else "False"  # noqa: E731
    elif dtype.is_floating_point:
        # PyTorch pads to the widest nonzero finite value: zeros, nan, inf don't widen
        return _float_strings(a.astype(np.float64), dtype is _dtype.float8_e8m0fnu)
    else:
        fmt = lambda v: str(int(v))  # noqa: E731
    strs = np.vectorize(lambda v: fmt(v), otypes=[object])(a) if a.size else a.astype(object)
    width = max((len(s) for s in strs.ravel()), default=0)
    return strs, width


def _render(strs, width, indent, trimmed, edge):
    if strs.ndim == 0:
        return strs.item().rjust(width)
    if strs.ndim == 1:
        items = [s.rjust(width) for s in strs]          # (width < 0: complex, unpadded)
        if trimmed[0]:
            items = items[:edge] + [" ..."] + items[-edge:]
        per_line = max(1, (PRINT_OPTS["linewidth"] - indent) // (abs(width) + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = list(range(strs.shape[0]))
    if trimmed[0]:
        rows = rows[:edge] + [None] + rows[-edge:]
    parts = [_render(strs[r], width, indent + 1, trimmed[1:], edge) if r is not None else "..."
             for r in rows]
    sep = "," + "\n" * (strs.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def render_values(a, dtype, indent):
    """The bracketed values of host array `a` (summarised past the print threshold), as
    printed after `indent` columns."""
    if not a.size:
        return "[]"
    edge = PRINT_OPTS["edgeitems"]
    trimmed = (False,) * a.ndim
    if a.size > PRINT_OPTS["threshold"]:
        trimmed = tuple(n > 2 * edge for n in a.shape)
        a = _summarize_values(a, edge)
    strs, width = _format_array(a, dtype)
    return _render(strs, width, indent, trimmed, edge)


def tensor_repr(t):
    from ._torch_function import participates
    prefix = type(t).__name__ + "(" if participates(type(t)) else "tensor("  # a user
    indent = len(prefix)                                            # subclass: its name
    if t.device.type == "meta":         # no values: the shape instead, as PyTorch prints
        return _meta_repr(t, prefix, indent)
    body = render_values(t.detach()._host(), t.dtype, indent)
    suffix = []
    if t.device.type != "cpu":
        suffix.append(f"device='{t.device}'")
    if t.numel() == 0 and t.dim() != 1:
        suffix.append(f"size={tuple(t.shape)}")
    default = t.dtype in (_dtype.get_default_dtype(), _dtype.int64, _dtype.bool,
                          _dtype.default_complex())
    if t.numel() == 0:                  # no values to tell an int64 or bool tensor by
        default = t.dtype is _dtype.get_default_dtype()
    if not default:
        suffix.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffix, indent)


def _meta_repr(t, prefix, indent):
    suffix = ["device='meta'", f"size={tuple(t.shape)}"]
    if t.dtype is not _dtype.get_default_dtype():
        suffix.append(f"dtype={t.dtype}")
    if t.grad_fn is not None:
        suffix.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffix.append("requires_grad=True")
    return _add_suffixes(prefix + "...", suffix, indent)


def _add_suffixes(text, suffixes, indent):
    """', dtype=...' etc. after the values, on a new line where the last one would pass
    the line width (PyTorch's rule)."""
    parts = [text]
    last = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last + len(s) + 2 > PRINT_OPTS["linewidth"]:
            parts.append(",\n" + " " * indent + s)
            last = indent + len(s)
        else:
            parts.append(", " + s)
            last += len(s) + 2
    return "".join(parts) + ")"


def _summarize_values(a, edge):
    """Keep only edge rows per dim (so formatting width matches what is shown)."""
    for d in range(a.ndim):
        if a.shape[d] > 2 * edge:
            idx = list(range(edge)) + list(range(a.shape[d] - edge, a.shape[d]))
            a = np.take(a, idx, axis=d)
    return a
