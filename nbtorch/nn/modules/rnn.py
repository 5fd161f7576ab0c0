"""Recurrent layers: RNN, LSTM, GRU (multi-layer, bidirectional) and their cells.

Parameter names, shapes, gate order (LSTM: i, f, g, o; GRU: r, z, n) and
initialisation U(-1/sqrt(H), 1/sqrt(H)) are PyTorch's, so state dicts move
between the two. Each layer projects the whole input sequence with one
matmul, then steps through time with one small matmul per step.
"""
import math
import numbers
import warnings

from .. import functional as F, init
from ...autograd import Function
from ..parameter import Parameter
from .batchnorm import _new
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# ---------------------------------------------------------------- one time step

class _Unbind(Function):
    """x (T, ...) -> the T views x[t]; backward stacks their gradients in one op.

    (T separate ``x[t]`` selects would each scatter into a zero (T, ...)
    gradient: O(T^2) work over a sequence.)
    """

    @staticmethod
    def forward(ctx, x):
        return tuple(x[t] for t in range(x.shape[0]))

    @staticmethod
    def backward(ctx, *grads):
        return _stack(grads, 0)


class _SplitLast(Function):
    """``n`` equal chunks of the last dim as views; backward concatenates once."""

    @staticmethod
    def forward(ctx, x, n):
        size = x.shape[-1] // n
        return tuple(x[..., i * size:(i + 1) * size] for i in range(n))

    @staticmethod
    def backward(ctx, *grads):
        return _cat(grads, -1), None


def _activate(mode, pre):
    """The Elman RNN nonlinearity."""
    return pre.tanh() if mode == "RNN_TANH" else pre.relu()


def _lstm_cell(gates, c, w_hr):
    """(h', c') from pre-activation gates i, f, g, o (N, 4H) and the cell state c: one
    fused op (`ops/lstm.py`: one kernel forward, one backward on the CPU)."""
    from ...ops.lstm import lstm_cell
    h, c = lstm_cell(gates, c)
    if w_hr is not None:
        h = F.linear(h, w_hr)
    return h, c


def _gru_cell(xw, gh, h):
    """h' = (1 - z) * n + z * h; r, z from xw + gh, n = tanh(x_n + r * h_n)."""
    x_r, x_z, x_n = _SplitLast.apply(xw, 3)
    h_r, h_z, h_n = _SplitLast.apply(gh, 3)
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return n + z * (h - n)


def _step(mode, xw, h, c, w_hh, b_hh, w_hr):
    """One time step from the projected input ``xw`` = x W_ih^T + b_ih: (h', c')."""
    if mode == "LSTM":
        return _lstm_cell(xw + F.linear(h, w_hh, b_hh), c, w_hr)
    if mode == "GRU":
        return _gru_cell(xw, F.linear(h, w_hh, b_hh), h), c
    return _activate(mode, xw + F.linear(h, w_hh, b_hh)), c


def _run_direction(mode, x, h, c, weights, reverse):
    """One layer, one direction over x (T, N, I): (outputs (T, N, H), h_T, c_T).

    The input projection of all T steps is one matmul; for RNN and LSTM the
    hidden bias is folded into it, so a step costs one addmm plus the gates. An
    LSTM layer without projection is one fused op (`ops/lstm.py`).
    """
    import nbtorch
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    if mode == "LSTM" and w_hr is None:
        # one 2-D projection (its weight gradient one matmul, not T batched ones summed)
        # with both biases added once
        from ...ops.lstm import lstm_layer
        bias = b_ih + b_hh if b_ih is not None and b_hh is not None else b_ih
        T, N = x.shape[0], x.shape[1]
        xw = F.linear(x.reshape(T * N, x.shape[2]), w_ih, bias).view(T, N, -1)
        return lstm_layer(xw, h, c, w_hh, reverse)
    xw = F.linear(x, w_ih, b_ih)
    w_hh_t = w_hh.t()
    fold = mode != "GRU"
    if fold and b_hh is not None:
        xw = xw + b_hh
    xs = _Unbind.apply(xw)
    outs = []
    for x_t in (reversed(xs) if reverse else xs):
        if not fold:
            h = _gru_cell(x_t, F.linear(h, w_hh, b_hh), h)
        elif mode == "LSTM":
            h, c = _lstm_cell(nbtorch.addmm(x_t, h, w_hh_t), c, w_hr)
        else:
            h = _activate(mode, nbtorch.addmm(x_t, h, w_hh_t))
        outs.append(h)
    if reverse:
        outs.reverse()
    return _stack(outs, 0), h, c


def _stack(tensors, dim):
    import nbtorch
    return nbtorch.stack(tensors, dim)


def _cat(tensors, dim):
    import nbtorch
    return nbtorch.cat(tensors, dim)


# ---------------------------------------------------------------- RNN / LSTM / GRU

class RNNBase(Module):
    """Shared parameters, checks and the layer/direction loop of RNN, LSTM and GRU."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, proj_size=0,
                 device=None, dtype=None):
        super().__init__()
        _check_hparams(mode, hidden_size, num_layers, dropout, proj_size)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else real_hidden * num_directions
                suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
                shapes = [("weight_ih", (gate_size, layer_input)),
                          ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for name, shape in shapes:
                    setattr(self, name + suffix, Parameter(_new(shape, device, dtype)))
                    self._flat_weights_names.append(name + suffix)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self):
        """No-op (PyTorch compacts cuDNN weights here)."""

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        n = len(self._flat_weights_names) // (self.num_layers * (2 if self.bidirectional else 1))
        w = self._flat_weights
        return [w[i:i + n] for i in range(0, len(w), n)]

    def _layer_weights(self, layer, direction):
        suffix = f"_l{layer}" + ("_reverse" if direction == 1 else "")
        get = lambda name: getattr(self, name + suffix, None)  # noqa: E731
        return (get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh"),
                get("weight_hr"))

    def _state_shape(self, batch, size):
        return (self.num_layers * (2 if self.bidirectional else 1), batch, size)

    def _check_input(self, input):
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got "
                             f"{input.dim()}D tensor instead")
        if input._static_shape[-1] != self.input_size:
            raise RuntimeError("input.size(-1) must be equal to input_size. Expected "
                               f"{self.input_size}, got {input.shape[-1]}")

    def _check_state(self, state, batched, expected, msg="Expected hidden size {}, got {}"):
        want = 3 if batched else 2
        if state.dim() != want:
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"For {kind} input, hx should also be {want}-D but got "
                               f"{state.dim()}-D tensor")
        got = tuple(state.shape) if batched else (state.shape[0], 1, state.shape[1])
        if got != expected:
            raise RuntimeError(msg.format(expected, list(state.shape)))

    def _initial_state(self, state, batched, N, size, msg="Expected hidden size {}, got {}",
                       like=None):
        expected = self._state_shape(N, size)
        if state is None:
            from ... import zeros
            return zeros(expected, dtype=like.dtype, device=like.device)
        self._check_state(state, batched, expected, msg)
        return state if batched else state.unsqueeze(1)

    def forward(self, input, hx=None):
        if isinstance(input, tuple) and type(input).__name__ == "PackedSequence":
            from .rnn_packed import run_packed
            return run_packed(self, input, hx)
        self._check_input(input)
        batched = input.dim() == 3
        x = input if batched else input.unsqueeze(1)
        if self.batch_first and batched:
            x = x.transpose(0, 1)
        N = x.shape[1]
        H_out = self.proj_size if self.proj_size > 0 else self.hidden_size
        lstm = self.mode == "LSTM"
        if lstm:
            h0, c0 = (None, None) if hx is None else hx
            h0 = self._initial_state(h0, batched, N, H_out, like=x)
            c0 = self._initial_state(c0, batched, N, self.hidden_size,
                                     "Expected hidden[1] size {}, got {}", like=x)
        else:
            h0 = self._initial_state(hx, batched, N, H_out, like=x)
            c0 = None
        directions = 2 if self.bidirectional else 1
        h_n, c_n = [], []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                k = layer * directions + d
                out, h, c = _run_direction(self.mode, x, h0[k], c0[k] if lstm else None,
                                           self._layer_weights(layer, d), d == 1)
                outs.append(out)
                h_n.append(h)
                c_n.append(c)
            x = outs[0] if directions == 1 else _cat(outs, 2)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, training=True)
        output = x
        if self.batch_first and batched:
            output = output.transpose(0, 1)
        h_n = _stack(h_n, 0)
        if not batched:
            output, h_n = output.squeeze(1), h_n.squeeze(1)
        if lstm:
            c_n = _stack(c_n, 0)
            return output, (h_n, c_n if batched else c_n.squeeze(1))
        return output, h_n

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.proj_size != 0:
            s += ", proj_size={proj_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)


def _check_hparams(mode, hidden_size, num_layers, dropout, proj_size):
    if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) \
            or not 0 <= dropout <= 1:
        raise ValueError("dropout should be a number in range [0, 1] representing the "
                         "probability of an element being zeroed")
    if dropout > 0 and num_layers == 1:
        warnings.warn("dropout option adds dropout after all but last recurrent layer, so "
                      "non-zero dropout expects num_layers greater than 1, but got "
                      f"dropout={dropout} and num_layers={num_layers}")
    if not isinstance(hidden_size, int) or isinstance(hidden_size, bool):
        raise TypeError(f"hidden_size should be of type int, got: {type(hidden_size).__name__}")
    if hidden_size <= 0:
        raise ValueError("hidden_size must be greater than zero")
    if num_layers <= 0:
        raise ValueError("num_layers must be greater than zero")
    if proj_size < 0:
        raise ValueError("proj_size should be a positive integer or zero to disable "
                         "projections")
    if proj_size >= hidden_size:
        raise ValueError("proj_size has to be smaller than hidden_size")
    if proj_size and mode != "LSTM":
        raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")


class RNN(RNNBase):
    """Elman RNN: h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu).

    Example:
        >>> rnn = nn.RNN(10, 20, 2)
        >>> out, h_n = rnn(torch.randn(5, 3, 10))
        >>> out.shape, h_n.shape
        (torch.Size([5, 3, 20]), torch.Size([2, 3, 20]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, nonlinearity="tanh", bias=True,
                 batch_first=False, dropout=0.0, bidirectional=False, device=None,
                 dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size,
                         hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         device=device, dtype=dtype)
        self.nonlinearity = nonlinearity


class LSTM(RNNBase):
    """Long short-term memory; returns ``output, (h_n, c_n)``.

    Example:
        >>> lstm = nn.LSTM(10, 20, 2, batch_first=True)
        >>> out, (h, c) = lstm(torch.randn(3, 5, 10))
        >>> out.shape
        torch.Size([3, 5, 20])
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    """Gated recurrent unit (gates r, z, n as PyTorch).

    Example:
        >>> gru = nn.GRU(10, 20, bidirectional=True)
        >>> out, h_n = gru(torch.randn(5, 3, 10))
        >>> out.shape, h_n.shape
        (torch.Size([5, 3, 40]), torch.Size([2, 3, 20]))
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device=device, dtype=dtype)


# ---------------------------------------------------------------- cells

class RNNCellBase(Module):
    """Parameters weight_ih, weight_hh, bias_ih, bias_hh of one recurrent cell."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        G = num_chunks * hidden_size
        self.weight_ih = Parameter(_new((G, input_size), device, dtype))
        self.weight_hh = Parameter(_new((G, hidden_size), device, dtype))
        if bias:
            self.bias_ih = Parameter(_new((G,), device, dtype))
            self.bias_hh = Parameter(_new((G,), device, dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def _prepare(self, input, hx):
        """(x, h, batched): inputs made 2-D (batch first), h zero when not given."""
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got "
                             f"{input.dim()}D instead")
        if input._static_shape[-1] != self.input_size:
            raise RuntimeError(f"input has inconsistent input_size: got {input.shape[-1]} "
                               f"expected {self.input_size}")
        batched = input.dim() == 2
        x = input if batched else input.unsqueeze(0)
        if hx is None:
            return x, None, batched
        if hx.dim() != input.dim():
            raise RuntimeError(f"{type(self).__name__}: Expected hidden to be "
                               f"{input.dim()}D, got {hx.dim()}D instead")
        return x, (hx if batched else hx.unsqueeze(0)), batched

    def _zeros(self, x):
        from ... import zeros
        return zeros((x.shape[0], self.hidden_size), dtype=x.dtype, device=x.device)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.bias is not True:
            s += ", bias={bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += ", nonlinearity={nonlinearity}"
        return s.format(**self.__dict__)


class RNNCell(RNNCellBase):
    """One Elman RNN step: h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, h, batched = self._prepare(input, hx)
        h = self._zeros(x) if h is None else h
        mode = "RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU"
        h, _ = _step(mode, F.linear(x, self.weight_ih, self.bias_ih), h, None, self.weight_hh,
                     self.bias_hh, None)
        return h if batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c')."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, _, batched = self._prepare(input, None)
        if hx is None:
            h = c = self._zeros(x)
        else:
            h = self._prepare(input, hx[0])[1]
            c = self._prepare(input, hx[1])[1]
        h, c = _step("LSTM", F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh,
                     self.bias_hh, None)
        return (h, c) if batched else (h.squeeze(0), c.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step: h' = (1 - z) * n + z * h."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, h, batched = self._prepare(input, hx)
        h = self._zeros(x) if h is None else h
        h, _ = _step("GRU", F.linear(x, self.weight_ih, self.bias_ih), h, None, self.weight_hh,
                     self.bias_hh, None)
        return h if batched else h.squeeze(0)
