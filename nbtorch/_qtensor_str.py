"""`repr` of a quantized tensor, PyTorch's format: the values it stands for, then size,
dtype, quantization scheme and parameters."""
from . import _dtype
from ._tensor_str import _add_suffixes, _format_array, _render, PRINT_OPTS, _summarize_values

__all__ = ["qtensor_repr"]


def qtensor_repr(q):
    """PyTorch's repr: the dequantized values, then size, dtype, scheme and qparams."""
    a = q.dequantize()._host()
    edge = PRINT_OPTS["edgeitems"]
    trimmed = (False,) * a.ndim
    if a.size > PRINT_OPTS["threshold"]:
        trimmed = tuple(n > 2 * edge for n in a.shape)
        a = _summarize_values(a, edge)
    strs, width = _format_array(a, _dtype.float32)
    indent = len("tensor(")
    body = _render(strs, width, indent, trimmed, edge) if q.numel() else "[]"
    suffix = [f"size={tuple(q.shape)}", f"dtype={q.dtype}",
              f"quantization_scheme={q.qscheme()}"]
    if len(q._qparams) == 2:
        suffix += [f"scale={q._qparams[0]}", f"zero_point={q._qparams[1]}"]
    else:
        suffix += [f"scale={q.q_per_channel_scales()!r}",
                   f"zero_point={q.q_per_channel_zero_points()!r}",
                   f"axis={q._qparams[2]}"]
    return _add_suffixes("tensor(" + body, suffix, indent)
