"""ATen's recurrent functions at torch level: ``torch.lstm``/``gru``/``rnn_tanh``/
``rnn_relu`` over flat weight lists, and the one-step cells (``torch.lstm_cell`` ...).

The layers run `nn.modules.rnn`'s direction loop (imported on first call: ops sit
below nn), so nn.LSTM and torch.lstm compute the same thing. Weights come as ATen
lays them out: per layer and direction w_ih, w_hh, then b_ih, b_hh when
`has_biases`. Packed sequences (the batch_sizes overloads) are not supported.
"""
from .._tensor import Tensor

__all__ = ["lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell",
           "rnn_relu_cell"]


def _linear(x, w, b):
    y = x @ w.t()
    return y if b is None else y + b


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: (h', c') from input (N, I) and hx = (h, c)."""
    h, c = hx
    gates = _linear(input, w_ih, b_ih) + _linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step: (1 - z) n + z h with n = tanh(x_n + r h_n)."""
    x_r, x_z, x_n = _linear(input, w_ih, b_ih).chunk(3, -1)
    h_r, h_z, h_n = _linear(hx, w_hh, b_hh).chunk(3, -1)
    r = (x_r + h_r).sigmoid()
    z = (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return n + z * (hx - n)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step: tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)."""
    return (_linear(input, w_ih, b_ih) + _linear(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step with ReLU."""
    return (_linear(input, w_ih, b_ih) + _linear(hx, w_hh, b_hh)).relu()


def _run(mode, input, h0, c0, params, has_biases, num_layers, dropout, train,
         bidirectional, batch_first):
    from ..nn.modules.rnn import _run_direction
    from .joining import cat, stack
    if not isinstance(input, Tensor) or not isinstance(h0, Tensor) or \
            isinstance(params, Tensor):
        raise NotImplementedError(f"torch.{mode.lower()}: packed sequences (the "
                                  "batch_sizes overload) are not supported by nbtorch")
    params = list(params)
    per = 4 if has_biases else 2
    directions = 2 if bidirectional else 1
    if len(params) != per * num_layers * directions:
        raise RuntimeError(f"{mode.lower()}: expected {per * num_layers * directions} "
                           f"parameter tensors, got {len(params)} (projections are not "
                           "supported)")
    x = input.transpose(0, 1) if batch_first else input
    h_n, c_n = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            w = params[k * per:(k + 1) * per]
            weights = (w[0], w[1], w[2] if has_biases else None,
                       w[3] if has_biases else None, None)
            out, h, c = _run_direction(mode, x, h0[k], None if c0 is None else c0[k],
                                       weights, d == 1)
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        x = outs[0] if directions == 1 else cat(outs, 2)
        if dropout > 0 and train and layer < num_layers - 1:
            from .dropout import dropout as _dropout
            x = _dropout(x, dropout, True)
    out = x.transpose(0, 1) if batch_first else x
    return out, stack(h_n, 0), (stack(c_n, 0) if c0 is not None else None)


def lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
         batch_first):
    """(output, h_n, c_n) of a multi-layer LSTM over input (T, N, I) (or (N, T, I) with
    `batch_first`) from hx = (h_0, c_0)."""
    if isinstance(hx, Tensor):
        raise NotImplementedError("torch.lstm: packed sequences (the batch_sizes overload) "
                                  "are not supported by nbtorch")
    h0, c0 = hx
    return _run("LSTM", input, h0, c0, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first)


def gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
        batch_first):
    """(output, h_n) of a multi-layer GRU."""
    return _run("GRU", input, hx, None, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first)[:2]


def rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
             batch_first):
    """(output, h_n) of a multi-layer Elman RNN with tanh."""
    return _run("RNN_TANH", input, hx, None, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first)[:2]


def rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
             batch_first):
    """(output, h_n) of a multi-layer Elman RNN with ReLU."""
    return _run("RNN_RELU", input, hx, None, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first)[:2]
