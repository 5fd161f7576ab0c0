"""Fused LSTM ops: one time step (`lstm_cell`) and one layer's time loop (`lstm_layer`).

``lstm_cell(gates, c)`` takes the pre-activation gates (N, 4H) in PyTorch's order
i, f, g, o and the cell state c (N, H), and returns ``(h', c')``::

    i, f, g, o = sigmoid(gates_i), sigmoid(gates_f), tanh(gates_g), sigmoid(gates_o)
    c' = f * c + i * g;   h' = o * tanh(c')

``lstm_layer(xw, h0, c0, w_hh, reverse)`` runs that step over time on the projected
inputs xw (T, N, 4H), gates_t = xw[t] + h W_hh^T, and returns (out, h_T, c_T).

On the CPU in float32/float64 a step is one Numba kernel forward and one backward
(`kernels/cpu/rnn.py`), and a layer is one autograd node whose backward walks time
once and forms W_hh's gradient as one matmul: a few kernel calls per step instead
of about twenty ops and their tape nodes. Elsewhere (other devices and dtypes), the
same formulas run as ordinary ops (`_cell_ops`): the definition the kernels match.
Higher-order gradients (create_graph=True) go through those ops too.
"""
from .._registry import get_kernel
from .._tensor import Tensor, empty
from .._lazy import kernel_module
from ..autograd import grad_mode
from ..autograd.function import Function
from ._fused_grad import fused_grad, vjp

__all__ = ["lstm_cell", "lstm_layer"]

_STATE = grad_mode.STATE
_FUSED_DTYPES = ("float32", "float64")


def _fusable(*ts):
    first = ts[0]
    return (all(isinstance(t, Tensor) and t.device == first.device and t.dtype == first.dtype
                for t in ts)
            and first.device.type == "cpu" and first.dtype.name in _FUSED_DTYPES)


def _cell_ops(gates, c):
    """(h', c') with ordinary ops: the definition of the fused step."""
    H = gates.shape[-1] // 4
    i, f = gates[..., :H].sigmoid(), gates[..., H:2 * H].sigmoid()
    g, o = gates[..., 2 * H:3 * H].tanh(), gates[..., 3 * H:].sigmoid()
    c = f * c + i * g
    return o * c.tanh(), c


def _layer_ops(xw, h, c, w_hh, reverse):
    """(out, h_T, c_T) of one layer with ordinary ops."""
    from .joining import stack
    from .linalg import addmm
    w_t = w_hh.t()
    outs = []
    for t in (range(xw.shape[0] - 1, -1, -1) if reverse else range(xw.shape[0])):
        h, c = _cell_ops(addmm(xw[t], h, w_t), c)
        outs.append(h)
    if reverse:
        outs.reverse()
    return stack(outs, 0), h, c


def _rnn():
    return kernel_module("cpu.rnn")


def _zeros(t):
    from .creation import zeros
    return zeros(t.shape, dtype=t.dtype, device=t.device)


def _cell_backward_ops(gates, c, gh, gc):
    """(d gates, d c) of `_cell_ops` with ordinary ops (differentiable again)."""
    from .joining import cat
    H = c.shape[-1]
    i, f = gates[..., :H].sigmoid(), gates[..., H:2 * H].sigmoid()
    g, o = gates[..., 2 * H:3 * H].tanh(), gates[..., 3 * H:].sigmoid()
    t = (f * c + i * g).tanh()
    gh = _zeros(c) if gh is None else gh
    dcn = gh * o * (1.0 - t * t)
    if gc is not None:
        dcn = dcn + gc
    d = [dcn * g * i * (1.0 - i), dcn * c * f * (1.0 - f), dcn * i * (1.0 - g * g),
         gh * t * o * (1.0 - o)]
    return cat(d, -1), dcn * f


class LSTMCellFused(Function):
    """(h', c') of one step from gates (N, 4H) and c (N, H), CPU float32/float64."""

    @staticmethod
    def forward(ctx, gates, c):
        gates, c = gates.contiguous(), c.contiguous()
        N, H = c.shape
        h, c_new, tc = (empty((N, H), c.dtype, c.device) for _ in range(3))
        act = empty((N, 4 * H), c.dtype, c.device)
        _rnn().lstm_cell_forward(gates._array, _zeros(gates)._array, c._array, act._array,
                                 c_new._array, h._array, tc._array)
        ctx.save_for_backward(gates, c)
        ctx.act, ctx.tc = act, tc       # what the fused backward reads (as tensors: a graph
        return h, c_new                 # capture's backward reads them too)

    @staticmethod
    def backward(ctx, gh, gc):
        gates, c = ctx.saved_tensors
        if _STATE.enabled:              # create_graph=True (or a graph capture)
            return fused_grad(_cell_grads, _cell_backward_ops, (gates, c, gh, gc),
                              (ctx.act, ctx.tc))
        return _cell_grads(gates, c, gh, gc, ctx.act, ctx.tc)


def _cell_grads(gates, c, gh, gc, act, tc):
    """(d gates, d c) of LSTMCellFused by its kernel."""
    gh = (_zeros(c) if gh is None else gh).contiguous()
    gc = (_zeros(c) if gc is None else gc).contiguous()
    dgates = empty(gates.shape, c.dtype, c.device)
    dc = empty(c.shape, c.dtype, c.device)
    _rnn().lstm_cell_backward(act._array, c._array, tc._array, gh._array, _zeros(c)._array,
                              gc._array, dgates._array, dc._array)
    return dgates, dc


class LSTMLayer(Function):
    """(out, h_T, c_T) of one layer and direction from xw (T, N, 4H), CPU float32/64.

    The step's intermediates (gates, tanh(c'), h and c before each step) stay on ctx
    as tensors, so a graph capture records them as outputs of this node."""

    @staticmethod
    def forward(ctx, xw, h0, c0, w_hh, reverse):
        xw, h0, c0, w_hh = (t.contiguous() for t in (xw, h0, c0, w_hh))
        T, N, G = xw.shape
        H = G // 4
        dt, dev = xw.dtype, xw.device
        out, tc, h_prev, c_prev = (empty((T, N, H), dt, dev) for _ in range(4))
        h_T, c_T = empty((N, H), dt, dev), empty((N, H), dt, dev)
        act = empty((T, N, G), dt, dev)
        _rnn().lstm_layer_forward(get_kernel("matmul", "cpu"), xw._array, h0._array,
                                  c0._array, w_hh._array, out._array, h_T._array, c_T._array,
                                  act._array, tc._array, h_prev._array, c_prev._array, reverse)
        ctx.save_for_backward(xw, h0, c0, w_hh)
        ctx.act, ctx.tc, ctx.h_prev, ctx.c_prev = act, tc, h_prev, c_prev
        ctx.reverse = reverse
        return out, h_T, c_T

    @staticmethod
    def backward(ctx, g_out, g_hT, g_cT):
        xw, h0, c0, w_hh = ctx.saved_tensors
        g_out = _zeros(ctx.tc) if g_out is None else g_out
        g_hT = _zeros(h0) if g_hT is None else g_hT
        g_cT = _zeros(c0) if g_cT is None else g_cT
        return LSTMLayerGrad.apply(ctx.act, ctx.tc, ctx.h_prev, ctx.c_prev, xw, h0, c0, w_hh,
                                   g_out, g_hT, g_cT, ctx.reverse) + (None,)


class LSTMLayerGrad(Function):
    """`LSTMLayer`'s backward as one op (a graph capture records one node): (d xw, d h0,
    d c0, d w_hh) from the forward's intermediates and the output gradients. The
    layer's inputs xw, h0, c0 come along for its own backward (double backward), which
    recomputes the layer with ordinary ops."""

    @staticmethod
    def forward(ctx, act, tc, h_prev, c_prev, xw, h0, c0, w_hh, g_out, g_hT, g_cT, reverse):
        T, N, G = act.shape
        H = G // 4
        dt, dev = act.dtype, act.device
        dxw = empty((T, N, G), dt, dev)
        dh0, dc0 = empty((N, H), dt, dev), empty((N, H), dt, dev)
        dw_hh = empty((G, H), dt, dev)
        g_out, g_hT, g_cT = (g.contiguous() for g in (g_out, g_hT, g_cT))
        _rnn().lstm_layer_backward(get_kernel("matmul", "cpu"), act._array, tc._array,
                                   h_prev._array, c_prev._array, w_hh._array, g_out._array,
                                   g_hT._array, g_cT._array, dxw._array, dh0._array,
                                   dc0._array, dw_hh._array, reverse)
        ctx.save_for_backward(xw, h0, c0, w_hh, g_out, g_hT, g_cT)
        ctx.reverse = reverse
        return dxw, dh0, dc0, dw_hh

    @staticmethod
    def backward(ctx, *grads):
        xw, h0, c0, w_hh, g_out, g_hT, g_cT = ctx.saved_tensors
        reverse = ctx.reverse

        def first_order(xw, h0, c0, w_hh, g_out, g_hT, g_cT):
            return vjp(lambda *a: _layer_ops(*a, reverse), (xw, h0, c0, w_hh),
                       (g_out, g_hT, g_cT))
        # partial derivatives (ops/_fused_grad.py's vjp): the output gradients usually
        # depend on xw (a loss like out ** 2), a path not to be counted twice
        got = vjp(first_order, (xw, h0, c0, w_hh, g_out, g_hT, g_cT), grads)
        return (None,) * 4 + got + (None,)


def lstm_cell(gates, c):
    """(h', c') = (o * tanh(c'), f * c + i * g) of one LSTM step.

    Args:
        gates: (N, 4H) pre-activations of the input, forget, cell and output gates.
        c: (N, H) cell state.

    Example:
        >>> h, c = lstm_cell(x @ w_ih.T + h @ w_hh.T + b, c)
    """
    if (_fusable(gates, c) and gates.dim() == 2 and c.dim() == 2
            and gates.shape[0] == c.shape[0] and gates.shape[1] == 4 * c.shape[1]):
        return LSTMCellFused.apply(gates, c)
    return _cell_ops(gates, c)


def lstm_layer(xw, h0, c0, w_hh, reverse=False):
    """(out (T, N, H), h_T, c_T) of one LSTM layer and direction without projection.

    Args:
        xw: (T, N, 4H) projected inputs x W_ih^T with both biases added.
        h0, c0: (N, H) initial states. w_hh: (4H, H) hidden-to-hidden weights.
        reverse: walk time backward (the second direction of a bidirectional layer).

    Example:
        >>> out, h, c = lstm_layer(F.linear(x, w_ih, b_ih) + b_hh, h0, c0, w_hh)
    """
    if (_fusable(xw, h0, c0, w_hh) and xw.dim() == 3 and h0.dim() == 2 and c0.dim() == 2
            and xw.shape[0] > 0 and xw.shape[2] == 4 * h0.shape[1] == 4 * c0.shape[1]
            and tuple(w_hh.shape) == (xw.shape[2], h0.shape[1])):
        return LSTMLayer.apply(xw, h0, c0, w_hh, reverse)
    return _layer_ops(xw, h0, c0, w_hh, reverse)
