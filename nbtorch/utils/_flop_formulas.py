"""PyTorch's flop formulas, per ATen op (`torch.utils.flop_counter.register_flop_formula`).

A formula takes the shapes of the op's tensor arguments (and its other arguments as they
are), plus ``out_shape``, and returns the flops; the counts are PyTorch's (a multiply-add
is 2 flops, bias additions and elementwise work are not counted). Ops are keyed by
``torch.ops.aten.<name>`` where nbtorch has that op, else by an `AtenOp` that prints the
same way (``aten.convolution_backward``).
"""
from math import prod

__all__ = ["register_flop_formula", "flop_registry", "aten_key", "AtenOp", "shape_wrapper",
           "mm_flop", "addmm_flop", "bmm_flop", "baddbmm_flop", "conv_flop_count",
           "conv_flop", "conv_backward_flop", "sdpa_flop_count", "sdpa_flop",
           "sdpa_backward_flop_count", "sdpa_backward_flop"]


class AtenOp:
    """Stands for an ATen op nbtorch has no function for: prints as ``aten.<name>``,
    equal to another of the same name."""

    def __init__(self, name):
        self.namespace, self.__name__ = "aten", name
        self._qualified_op_name = f"aten::{name}"

    def __repr__(self):
        return f"aten.{self.__name__}"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, AtenOp) and other.__name__ == self.__name__

    def __hash__(self):
        return hash(("aten", self.__name__))


_KEYS = {}


def aten_key(name):
    """``torch.ops.aten.<name>`` (one object per name), or an `AtenOp` for it."""
    key = _KEYS.get(name)
    if key is None:
        from .. import ops
        try:
            key = getattr(ops.aten, name)
        except AttributeError:
            key = AtenOp(name)
        _KEYS[name] = key
    return key


def _is_op(target):
    from .._library_ns import OpOverloadPacket
    return isinstance(target, (OpOverloadPacket, AtenOp))


def _shape(x):
    from .._tensor import Tensor
    return tuple(x.shape) if isinstance(x, Tensor) else x


def shape_wrapper(f):
    """`f` called with tensors replaced by their shapes (and ``out_val`` as ``out_shape``)."""
    import functools

    @functools.wraps(f)
    def nf(*args, out_val=None, **kwargs):
        args = tuple(_shape(a) for a in args)
        kwargs = {k: _shape(v) for k, v in kwargs.items()}
        out = (tuple(_shape(o) for o in out_val) if isinstance(out_val, (tuple, list))
               and out_val and not isinstance(out_val[0], int) else _shape(out_val))
        return f(*args, out_shape=out, **kwargs)
    return nf


flop_registry = {}


def register_flop_formula(targets, get_raw=False):
    """Decorator: count `targets` (an op ``torch.ops.aten.mm``, or a list of them) with the
    decorated formula. The formula gets shapes (or the raw arguments with `get_raw`)."""
    def register_fun(formula):
        wrapped = formula if get_raw else shape_wrapper(formula)
        for target in (targets if isinstance(targets, (list, tuple)) else [targets]):
            if not _is_op(target):
                raise ValueError(
                    f"register_flop_formula(targets): expected each target to be "
                    f"OpOverloadPacket (i.e. torch.ops.mylib.foo), JitFunction, or "
                    f"HigherOrderOperator, got {target} which is of type {type(target)}")
            if target in flop_registry:
                raise RuntimeError(f"duplicate registrations for {target}")
            flop_registry[target] = wrapped
        return wrapped
    return register_fun


def _reg(names, get_raw=False):
    return register_flop_formula([aten_key(n) for n in names], get_raw)


@_reg(["mm"])
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs):
    """2*m*n*k for (m, k) @ (k, n)."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise AssertionError(f"matmul: inner dimensions must match (k == k2), got {k} and {k2}")
    return m * n * 2 * k


@_reg(["addmm"])
def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs):
    return mm_flop(a_shape, b_shape)


@_reg(["bmm"])
def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs):
    """2*b*m*n*k for (b, m, k) @ (b, k, n)."""
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2:
        raise AssertionError(f"bmm: batch dimensions must match (b == b2), got {b} and {b2}")
    if k != k2:
        raise AssertionError(f"bmm: inner dimensions must match (k == k2), got {k} and {k2}")
    return b * m * n * 2 * k


@_reg(["baddbmm"])
def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs):
    return bmm_flop(a_shape, b_shape)


def conv_flop_count(x_shape, w_shape, out_shape, transposed=False):
    """2 * batch * (output positions, or input positions when transposed) * kernel size *
    weight's two channel dims (bias not counted)."""
    batch_size = x_shape[0]
    conv_shape = (x_shape if transposed else out_shape)[2:]
    c_out, c_in, *filter_size = w_shape
    return prod(conv_shape) * prod(filter_size) * batch_size * c_out * c_in * 2


@_reg(["convolution", "_convolution", "cudnn_convolution", "_slow_conv2d_forward",
       "convolution_overrideable"])
def conv_flop(x_shape, w_shape, _bias, _stride, _padding, _dilation, transposed, *args,
              out_shape=None, **kwargs):
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


@_reg(["convolution_backward"])
def conv_backward_flop(grad_out_shape, x_shape, w_shape, _bias, _stride, _padding,
                       _dilation, transposed, _output_padding, _groups, output_mask,
                       out_shape, **kwargs):
    """grad_input as a transposed conv of grad_out with the weight, grad_weight as a conv
    of the input with grad_out (batch and channel dims swapped), as PyTorch counts."""
    def t(shape):
        return [shape[1], shape[0]] + list(shape[2:])
    flops = 0
    if output_mask[0]:
        flops += conv_flop_count(grad_out_shape, w_shape, out_shape[0], not transposed)
    if output_mask[1]:
        if transposed:
            flops += conv_flop_count(t(grad_out_shape), t(x_shape), t(out_shape[1]), False)
        else:
            flops += conv_flop_count(t(x_shape), t(grad_out_shape), t(out_shape[1]), False)
    return flops


def sdpa_flop_count(query_shape, key_shape, value_shape):
    """Q K^T and (scores) V as two bmm's over batch*heads (causal masks not discounted;
    key/value may have fewer heads, GQA)."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    if not (b == _b2 == _b3 and h_kv == _h3 and d_q == _d2 and s_k == _s3):
        raise AssertionError(f"sdpa_flop_count: query/key/value shapes are incompatible: "
                             f"q={query_shape}, k={key_shape}, v={value_shape}")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_flop_count: query heads ({h_q}) must be a multiple of "
                             f"key/value heads ({h_kv})")
    return (bmm_flop((b * h_q, s_q, d_q), (b * h_q, d_q, s_k))
            + bmm_flop((b * h_q, s_q, s_k), (b * h_q, s_k, d_v)))


@_reg(["_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
       "_scaled_dot_product_cudnn_attention"])
def sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs):
    return sdpa_flop_count(query_shape, key_shape, value_shape)


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape):
    """The scores recomputed, then the gradients of V, of the scores, of Q and of K: five
    bmm's."""
    b, h_q, s_q, d_q = query_shape
    _b2, h_kv, s_k, _d2 = key_shape
    _b3, _h3, _s3, d_v = value_shape
    _b4, _h4, _s4, _d4 = grad_out_shape
    if not (b == _b2 == _b3 == _b4 and h_kv == _h3 and h_q == _h4):
        raise AssertionError("sdpa_backward_flop_count: batch/heads mismatch among tensors")
    if h_q < h_kv or h_q % h_kv != 0:
        raise AssertionError(f"sdpa_backward_flop_count: query heads ({h_q}) must be a "
                             f"multiple of key/value heads ({h_kv})")
    if not (d_q == _d2 and d_v == _d4 and s_k == _s3 and s_q == _s4):
        raise AssertionError("sdpa_backward_flop_count: grad_out/value/key/query shapes are "
                             "incompatible")
    bh = b * h_q
    return (bmm_flop((bh, s_q, d_q), (bh, d_q, s_k)) + bmm_flop((bh, s_q, d_v), (bh, d_v, s_k))
            + bmm_flop((bh, s_k, s_q), (bh, s_q, d_v)) + bmm_flop((bh, s_q, s_k), (bh, s_k, d_q))
            + bmm_flop((bh, d_q, s_q), (bh, s_q, s_k)))


@_reg(["_scaled_dot_product_efficient_attention_backward",
       "_scaled_dot_product_flash_attention_backward",
       "_scaled_dot_product_cudnn_attention_backward"])
def sdpa_backward_flop(grad_out_shape, query_shape, key_shape, value_shape, *args,
                       out_shape=None, **kwargs):
    return sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)
