"""How a jagged nested tensor answers ops: ``__torch_function__`` looks the op's name up
here and runs it on the values (see the package docstring for why this route).

Families: elementwise ops (any mix of nested tensors of one structure, numbers and dense
tensors broadcastable over the non-ragged dims: `elementwise`), reductions
(``_reduce.py``), shape ops (``_shape.py``), products, norms and attention (``_ops.py``).
An op in no family raises NotImplementedError naming it and the layout; a few methods
about the tensor itself (``requires_grad_``, ``backward``, hooks) run as Tensor's own.
"""
import numpy as np

from .._tensor import Tensor
from .._torch_function import DisableTorchFunctionSubclass
from ._tensor import NestedTensor, from_values, nested_error, values_of

__all__ = ["torch_function", "op_name", "register", "elementwise", "same_structure",
           "shape_str", "align_dense"]

_NAMES = {}             # func -> short op name
HANDLERS = {}           # short op name -> handler(func, name, args, kwargs)

_PASSTHROUGH = frozenset(["requires_grad_", "backward", "register_hook", "retain_grad",
                          "register_post_accumulate_grad_hook", "get_device", "is_pinned",
                          "is_shared", "is_inference", "__format__"])

_UNARY = """abs absolute neg negative exp exp2 expm1 log log2 log10 log1p sin cos tan asin
acos atan arcsin arccos arctan sinh cosh tanh asinh acosh atanh arcsinh arccosh arctanh sigmoid
relu relu6 gelu silu mish elu selu celu leaky_relu softplus softsign hardtanh hardsigmoid
hardswish hardshrink softshrink tanhshrink logsigmoid threshold sqrt rsqrt square reciprocal
sign sgn signbit floor ceil round trunc fix frac erf erfc erfinv clamp clip clamp_min
clamp_max nan_to_num isnan isinf isfinite isposinf isneginf isreal logical_not bitwise_not
dropout alpha_dropout feature_alpha_dropout dropout1d logit sinc positive deg2rad rad2deg
angle conj conj_physical real imag float double half bfloat16 int long short bool byte char
cfloat cdouble clone zeros_like ones_like empty_like full_like rand_like randn_like
randint_like zero fill normal uniform bernoulli exponential geometric cauchy log_normal
random nan_to_num i0 lgamma digamma mvlgamma polygamma rrelu prelu""".split()
_BINARY = """add sub subtract mul multiply div divide true_divide floor_divide remainder fmod
pow float_power atan2 arctan2 maximum minimum fmax fmin eq ne lt le gt ge greater less
greater_equal less_equal not_equal logical_and logical_or logical_xor bitwise_and bitwise_or
bitwise_xor rsub hypot copysign xlogy where masked_fill lerp addcmul addcdiv copy
nextafter ldexp heaviside isclose""".split()
_DUNDERS = """__add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__
__truediv__ __rtruediv__ __itruediv__ __div__ __rdiv__ __idiv__ __floordiv__ __rfloordiv__
__ifloordiv__ __mod__ __rmod__ __imod__ __pow__ __rpow__ __ipow__ __eq__ __ne__ __lt__ __le__
__gt__ __ge__ __and__ __rand__ __iand__ __or__ __ror__ __ior__ __xor__ __rxor__ __ixor__
__neg__ __pos__ __abs__ __invert__""".split()


def register(*names):
    def deco(fn):
        for n in names:
            HANDLERS[n] = fn
        return fn
    return deco


def op_name(func):
    """'add', 'linear', '__radd__'...: the op `func` (a public function's dispatcher or a
    Tensor method) stands for."""
    name = _NAMES.get(func)
    if name is None:
        original = getattr(func, "__torch_function_original__", None)
        if original is not None:
            name = original.__name__
        else:
            names = [n for n, v in vars(Tensor).items() if v is func or (
                isinstance(v, property) and v.__get__ == func)]
            known = [n for n in names if n in HANDLERS or n in _PASSTHROUGH]
            plain = [n for n in names if not n.startswith("_")]
            name = (known or plain or names or [getattr(func, "__name__", "op")])[0]
        _NAMES[func] = name
    return name


def torch_function(func, types, args, kwargs):
    """NestedTensor.__torch_function__: the op's handler, Tensor's own method for the
    passthrough ones, else NotImplementedError naming the op and the layout."""
    name = op_name(func)
    handler = HANDLERS.get(name)
    if handler is not None:
        return handler(func, name, args, kwargs)
    if name in _PASSTHROUGH:
        with DisableTorchFunctionSubclass():
            return func(*args, **kwargs)
    raise nested_error(aten_name(name))


# ---- structure checks and dense operands -----------------------------------------------

def shape_str(t):
    return "(" + ", ".join(repr(s) for s in t._shape) + ")"


def aten_name(name):
    """'add' for '__add__', '__radd__' and '__iadd__'; 'div' for '__truediv__'."""
    if not name.startswith("__"):
        return name
    n = name.strip("_")
    if n[0] in "ri" and n[1:] in _DUNDER_ROOTS:
        n = n[1:]
    return {"truediv": "div", "floordiv": "floor_divide", "mod": "remainder",
            "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
            "invert": "bitwise_not"}.get(n, n)


_DUNDER_ROOTS = frozenset(["add", "sub", "mul", "truediv", "div", "floordiv", "mod", "pow",
                           "and", "or", "xor", "matmul"])


def same_structure(ref, other, name):
    name = aten_name(name)
    if other._j is not ref._j or other._ragged_idx != ref._ragged_idx or \
            other.dim() != ref.dim():
        raise RuntimeError(f"cannot call binary pointwise function {name}.Tensor with inputs "
                           f"of shapes {shape_str(ref)} and {shape_str(other)}")


def row_batch(nt):
    """The component each row of `nt`'s values (along the ragged dim) belongs to, as an
    int64 tensor (rows in holes: the component before them)."""
    import nbtorch
    o = nt._offsets.cpu().numpy()
    n = nt._values._shape[nt._ragged_idx - 1]
    idx = np.searchsorted(o[1:], np.arange(n), side="right")
    return nbtorch.tensor(np.minimum(idx, len(o) - 2).astype(np.int64), device=nt.device)


def align_dense(a, ref, name):
    """Dense `a` as an operand of `ref`'s values: broadcastable over the non-ragged dims
    (a leading dim of B gives each component its own slice)."""
    nd, r = ref.dim(), ref._ragged_idx
    shape = tuple(a._shape)
    name = aten_name(name)

    def fail():
        return RuntimeError(f"cannot call binary pointwise function {name}.Tensor with inputs "
                            f"of shapes {ref.shape} and {a.shape}")
    if len(shape) > nd:
        raise fail()
    if len(shape) == nd:
        if shape[r] != 1:
            raise fail()
        if shape[0] == 1:
            return a.squeeze(0)
        if shape[0] != ref._shape[0]:
            raise fail()
        per_row = a.squeeze(r).index_select(0, row_batch(ref))
        return per_row.movedim(0, r - 1)
    k = r - (nd - len(shape))
    if k >= 0 and shape[k] != 1:
        raise fail()
    return a


# ---- elementwise ---------------------------------------------------------------------

def _nested_in(args, kwargs):
    found = []
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, NestedTensor):
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(b for b in a if isinstance(b, NestedTensor))
    return found


def _convert(a, ref, name):
    if isinstance(a, NestedTensor):
        return values_of(a)
    if isinstance(a, Tensor) and a.dim() > 0:
        return align_dense(a, ref, name)
    return a


def _inplace(name):
    return (name.endswith("_") and not name.endswith("__")) or \
        (name.startswith("__i") and name not in ("__invert__",))


def elementwise(func, name, args, kwargs):
    """An elementwise op: nested operands become their values, dense ones are aligned."""
    nts = _nested_in(args, kwargs)
    ref = nts[0]
    for other in nts[1:]:
        same_structure(ref, other, name)
    if _inplace(name):
        return _elementwise_inplace(func, name, args, kwargs, ref)
    new_args = [_convert(a, ref, name) for a in args]
    new_kwargs = {k: _convert(v, ref, name) for k, v in kwargs.items()}
    out = func(*new_args, **new_kwargs)
    if out is NotImplemented:
        return out
    return _wrap_like(out, ref)


def _wrap_like(out, ref):
    if isinstance(out, Tensor) and out.dim() == ref._values.dim():
        return from_values(out, ref)
    if isinstance(out, tuple):
        return type(out)(_wrap_like(o, ref) for o in out)
    return out


def _elementwise_inplace(func, name, args, kwargs, ref):
    from ..autograd import grad_mode
    target = args[0]
    if not isinstance(target, NestedTensor):
        raise RuntimeError(f"{name}(): a dense tensor cannot be updated in place from a "
                           "nested tensor")
    rest = [_convert(a, ref, name) for a in args[1:]]
    new_kwargs = {k: _convert(v, ref, name) for k, v in kwargs.items()}
    recording = grad_mode.STATE.enabled and (target._requires_grad or any(
        isinstance(a, Tensor) and a._requires_grad for a in rest + list(new_kwargs.values())))
    if not recording:
        func(target._values, *rest, **new_kwargs)
        target._bump()
        return target
    if target.is_leaf and target._requires_grad:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")
    values = values_of(target).clone()
    func(values, *rest, **new_kwargs)
    out = from_values(values, target)
    target._values, target.grad_fn, target._output_nr = out._values, out.grad_fn, \
        out._output_nr
    target._requires_grad = True
    target._bump()
    return target


for _n in _UNARY + _BINARY:
    HANDLERS[_n] = HANDLERS[_n + "_"] = elementwise
for _n in _DUNDERS:
    HANDLERS[_n] = elementwise


@register("to", "cpu", "cuda", "type_as")
def to(func, name, args, kwargs):
    """Casts and moves: the values converted, offsets and lengths moved along."""
    nt = args[0]
    if name == "type_as":
        args, name = (nt, args[1].dtype), "to"
    v = values_of(nt)
    with DisableTorchFunctionSubclass():
        out = func(v, *args[1:], **kwargs)
    if out is v:
        return nt
    if out.device == nt.device:
        return from_values(out, nt)
    lengths = None if nt._lengths is None else nt._lengths.to(out.device)
    return from_values(out, offsets=nt._offsets.to(out.device), lengths=lengths,
                       ragged_idx=nt._ragged_idx)


@register("contiguous")
def contiguous(func, name, args, kwargs):
    nt = args[0]
    if nt.is_contiguous():
        return nt
    if nt._lengths is None:
        return from_values(values_of(nt).contiguous(), nt)
    import nbtorch
    from ._build import _offsets_of
    values = nbtorch.cat(list(nt.unbind()), nt._ragged_idx - 1)
    return from_values(values, offsets=_offsets_of(nt._lengths_host(), nt.device),
                       ragged_idx=nt._ragged_idx)


@register("unbind")
def unbind(func, name, args, kwargs):
    return args[0].unbind(*args[1:], **kwargs)


@register("detach")
def detach(func, name, args, kwargs):
    return args[0].detach()


@register("is_same_size")
def is_same_size(func, name, args, kwargs):
    return args[0]._shape == args[1]._shape


def _load_families():
    from . import _ops, _reduce, _shape  # noqa: F401  (they register their handlers)


_load_families()
