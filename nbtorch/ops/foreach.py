"""``torch._foreach_*``: one op applied across a list of tensors (EMA updates, hand-written
optimizers and gradient utilities call them directly).

Each is a loop over the tensor ops, so autograd, dtypes and devices behave as the single-tensor
op does. Out-of-place forms return a tuple, in-place forms return the (modified) input list, as
PyTorch 2.x does. A second operand may be a scalar, a list of scalars, a list of tensors, or
(for binary ops) one tensor shared by every element.
"""
import numbers

from .._tensor import Tensor

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
          "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
_BINARY = ("add", "sub", "mul", "div", "pow", "clamp_min", "clamp_max", "maximum", "minimum")


def _check_list(self):
    self = list(self)
    if not self:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return self


def _per_element(self, other, what="tensors"):
    """`other` spread over `self`: a list (length-checked), a 1-D tensor of scalars (for
    addcmul/addcdiv values) or a value shared by every element."""
    if isinstance(other, (list, tuple)):
        if len(other) != len(self):
            if other and not isinstance(other[0], Tensor):
                raise RuntimeError("Tensor list must have same number of elements as scalar list.")
            raise RuntimeError(f"Tensor lists must have the same number of tensors, "
                               f"got {len(self)} and {len(other)}")
        return list(other)
    if what == "scalars" and isinstance(other, Tensor) and other.dim() == 1:
        if other.numel() != len(self):
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return [v.item() for v in other]
    return [other] * len(self)


def _binary(name):
    inplace = name + "_"

    def out_of_place(self, other, **kwargs):
        if name == "pow" and isinstance(self, numbers.Number):     # scalar ** [tensors]
            return tuple(self ** e for e in _check_list(other))
        self = _check_list(self)
        return tuple(getattr(t, name)(o, **kwargs) for t, o in zip(self, _per_element(self, other)))

    def in_place(self, other, **kwargs):
        self = self if isinstance(self, list) else list(self)
        for t, o in zip(_check_list(self), _per_element(self, other)):
            getattr(t, inplace)(o, **kwargs)
        return self

    out_of_place.__name__, in_place.__name__ = f"_foreach_{name}", f"_foreach_{inplace}"
    out_of_place.__doc__ = f"``torch._foreach_{name}``: `Tensor.{name}` over a list."
    in_place.__doc__ = f"``torch._foreach_{inplace}``: `Tensor.{inplace}` over a list."
    return out_of_place, in_place


def _unary(name):
    def out_of_place(self):
        return tuple(getattr(t, name)() for t in _check_list(self))

    def in_place(self):
        self = self if isinstance(self, list) else list(self)
        for t in _check_list(self):
            getattr(t, name + "_")()
        return self

    out_of_place.__name__, in_place.__name__ = f"_foreach_{name}", f"_foreach_{name}_"
    out_of_place.__doc__ = f"``torch._foreach_{name}``: `Tensor.{name}` over a list."
    in_place.__doc__ = f"``torch._foreach_{name}_``: `Tensor.{name}_` over a list."
    return out_of_place, in_place


def _pointwise3(name):
    def out_of_place(self, tensor1, tensor2, value=1):
        self = _check_list(self)
        return tuple(getattr(t, name)(a, b, value=v) for t, a, b, v in
                     zip(self, _per_element(self, tensor1), _per_element(self, tensor2),
                         _per_element(self, value, "scalars")))

    def in_place(self, tensor1, tensor2, value=1):
        self = self if isinstance(self, list) else list(self)
        for t, a, b, v in zip(_check_list(self), _per_element(self, tensor1),
                              _per_element(self, tensor2), _per_element(self, value, "scalars")):
            getattr(t, name + "_")(a, b, value=v)
        return self

    out_of_place.__name__, in_place.__name__ = f"_foreach_{name}", f"_foreach_{name}_"
    out_of_place.__doc__ = f"``torch._foreach_{name}``: `Tensor.{name}` over a list."
    in_place.__doc__ = f"``torch._foreach_{name}_``: `Tensor.{name}_` over a list."
    return out_of_place, in_place


def _foreach_lerp(self, tensors1, weight):
    """``torch._foreach_lerp``: `Tensor.lerp` over a list (weight: scalar, list or tensors)."""
    self = _check_list(self)
    return tuple(t.lerp(e, w) for t, e, w in
                 zip(self, _per_element(self, tensors1), _per_element(self, weight)))


def _foreach_lerp_(self, tensors1, weight):
    """``torch._foreach_lerp_``: `Tensor.lerp_` over a list."""
    self = self if isinstance(self, list) else list(self)
    for t, e, w in zip(_check_list(self), _per_element(self, tensors1), _per_element(self, weight)):
        t.lerp_(e, w)
    return self


def _foreach_norm(self, ord=2, dtype=None):
    """``torch._foreach_norm``: the vector norm of each tensor (0-d tensors)."""
    from .. import linalg
    return tuple(linalg.vector_norm(t, ord, dtype=dtype) for t in _check_list(self))


def _foreach_powsum(self, ord=2, dtype=None):
    """``torch._foreach_powsum``: sum(|x| ** ord) of each tensor."""
    return tuple((t.abs() ** ord).sum(dtype=dtype) for t in _check_list(self))


def _foreach_max(self):
    """``torch._foreach_max``: the largest element of each tensor."""
    return tuple(t.max() for t in _check_list(self))


def _foreach_clone(self):
    """``torch._foreach_clone``."""
    return tuple(t.clone() for t in _check_list(self))


def _foreach_copy_(self, src, non_blocking=False):
    """``torch._foreach_copy_``: copy each source into its destination."""
    self = self if isinstance(self, list) else list(self)
    for t, s in zip(_check_list(self), _per_element(self, src)):
        t.copy_(s, non_blocking=non_blocking)
    return self


def _foreach_zero_(self):
    """``torch._foreach_zero_``."""
    self = self if isinstance(self, list) else list(self)
    for t in _check_list(self):
        t.zero_()
    return self


def _foreach_mm(self, other):
    """``torch._foreach_mm``: pairwise matrix products."""
    self = _check_list(self)
    return tuple(a.mm(b) for a, b in zip(self, _per_element(self, other)))


__all__ = ["_foreach_lerp", "_foreach_lerp_", "_foreach_norm", "_foreach_powsum", "_foreach_max",
           "_foreach_clone", "_foreach_copy_", "_foreach_zero_", "_foreach_mm"]
for _name, _make in ([(n, _unary) for n in _UNARY] + [(n, _binary) for n in _BINARY]
                     + [(n, _pointwise3) for n in ("addcmul", "addcdiv")]):
    for _fn in _make(_name):
        globals()[_fn.__name__] = _fn
        __all__.append(_fn.__name__)
del _name, _make, _fn
