"""`repr` of a quantized tensor, PyTorch's format: the values it stands for, then size,
dtype, quantization scheme and parameters."""
from . import _dtype
from ._tensor_str import _add_suffixes, render_values

__all__ = ["qtensor_repr"]


def qtensor_repr(q):
    """PyTorch's repr: the dequantized values, then size, dtype, scheme and qparams."""
    indent = len("tensor(")
    body = render_values(q.dequantize()._host(), _dtype.float32, indent)
    suffix = [f"size={tuple(q.shape)}", f"dtype={q.dtype}",
              f"quantization_scheme={q.qscheme()}"]
    if len(q._qparams) == 2:
        suffix += [f"scale={q._qparams[0]}", f"zero_point={q._qparams[1]}"]
    else:
        suffix += [f"scale={q.q_per_channel_scales()!r}",
                   f"zero_point={q.q_per_channel_zero_points()!r}",
                   f"axis={q._qparams[2]}"]
    return _add_suffixes("tensor(" + body, suffix, indent)
