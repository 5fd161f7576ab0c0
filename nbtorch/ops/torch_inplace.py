"""The in-place function forms PyTorch exposes at torch level (``torch.abs_(x)`` is
``x.abs_()``), and the Tensor in-place aliases it has (``greater_`` is ``gt_``)."""
from .._tensor import Tensor

# torch.<name>(input, *args, **kwargs) == input.<name>(*args, **kwargs)
_NAMES = ("abs_", "acos_", "addmv_", "arccos_", "arcsin_", "arctan_", "asin_", "atan_",
          "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_", "erf_",
          "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_", "frac_", "log10_", "log1p_",
          "log2_", "log_", "logit_", "nan_to_num_", "neg_", "negative_", "reciprocal_",
          "round_", "rsqrt_", "sigmoid_", "sin_", "sinh_", "sqrt_", "square_", "tan_",
          "tanh_", "trunc_", "xlogy_")

__all__ = list(_NAMES)


def _function(name):
    method = getattr(Tensor, name)

    def fn(input, *args, **kwargs):
        return method(input, *args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``input.{name}(...)``: the in-place form, at torch level."
    return fn


for _n in _NAMES:
    globals()[_n] = _function(_n)

# Tensor's in-place comparison aliases (PyTorch's names for gt_, ge_, lt_, le_, ne_)
Tensor.greater_, Tensor.greater_equal_ = Tensor.gt_, Tensor.ge_
Tensor.less_, Tensor.less_equal_, Tensor.not_equal_ = Tensor.lt_, Tensor.le_, Tensor.ne_
del _n
