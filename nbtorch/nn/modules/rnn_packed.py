"""RNN, LSTM and GRU over a PackedSequence (`nn.utils.rnn`): the same cells as
`rnn.py`, stepped over the packed time steps, each with only its running sequences.

Sequences are sorted longest first, so at step t the running ones are the first
batch_sizes[t] rows. Forward direction: a finished sequence keeps the state of its
last step. Reverse direction: a sequence joins at its own last step, from its
initial state. The states come back in the caller's order (unsorted_indices).
"""
import numpy as np

from .. import functional as F

__all__ = ["run_packed"]


def _direction(mode, data, bs, offsets, h0, c0, weights, reverse):
    """One layer and direction over packed data: (output data, h_n, c_n)."""
    from ... import cat
    from .rnn import _step
    w_ih, w_hh, b_ih, b_hh, w_hr = weights
    xw = F.linear(data, w_ih, b_ih)
    T = len(bs)
    outs = [None] * T
    lstm = mode == "LSTM"
    if not reverse:
        h, c = h0, c0
        for t in range(T):
            n = int(bs[t])
            x_t = xw[offsets[t]:offsets[t] + n]
            h_new, c_new = _step(mode, x_t, h[:n], c[:n] if lstm else None, w_hh, b_hh, w_hr)
            outs[t] = h_new
            h = h_new if n == h.shape[0] else cat([h_new, h[n:]], 0)
            if lstm:
                c = c_new if n == c.shape[0] else cat([c_new, c[n:]], 0)
    else:
        n0 = int(bs[T - 1])
        h, c = h0[:n0], (c0[:n0] if lstm else None)
        for t in range(T - 1, -1, -1):
            n = int(bs[t])
            if n > h.shape[0]:
                h = cat([h, h0[h.shape[0]:n]], 0)
                if lstm:
                    c = cat([c, c0[c.shape[0]:n]], 0)
            h, c = _step(mode, xw[offsets[t]:offsets[t] + n], h, c, w_hh, b_hh, w_hr)
            outs[t] = h
    return cat(outs, 0), h, c


def run_packed(module, packed, hx):
    """module(packed, hx) for an RNNBase module: (PackedSequence output, h_n or (h_n, c_n))."""
    from ... import stack, zeros
    from ..utils.rnn import PackedSequence
    data, batch_sizes = packed.data, packed.batch_sizes
    sorted_indices, unsorted_indices = packed.sorted_indices, packed.unsorted_indices
    if data.dim() != 2:
        raise ValueError(f"{type(module).__name__}: Expected input to be 2D, got {data.dim()}D "
                         "tensor instead")
    if data.shape[-1] != module.input_size:
        raise RuntimeError("input.size(-1) must be equal to input_size. Expected "
                           f"{module.input_size}, got {data.shape[-1]}")
    bs = batch_sizes.numpy().astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(bs)[:-1]]).astype(np.int64)
    B = int(bs[0])
    lstm = module.mode == "LSTM"
    H_out = module.proj_size if module.proj_size > 0 else module.hidden_size
    directions = 2 if module.bidirectional else 1
    h0, c0 = (hx if lstm else (hx, None)) if hx is not None else (None, None)

    def initial(state, size, msg):
        expected = module._state_shape(B, size)
        if state is None:
            return zeros(expected, dtype=data.dtype, device=data.device)
        module._check_state(state, True, expected, msg)
        return state if sorted_indices is None else state.index_select(1, sorted_indices)
    h0 = initial(h0, H_out, "Expected hidden size {}, got {}")
    if lstm:
        c0 = initial(c0, module.hidden_size, "Expected hidden[1] size {}, got {}")
    x, h_n, c_n = data, [], []
    for layer in range(module.num_layers):
        outs = []
        for d in range(directions):
            k = layer * directions + d
            out, h, c = _direction(module.mode, x, bs, offsets, h0[k],
                                   c0[k] if lstm else None, module._layer_weights(layer, d),
                                   d == 1)
            outs.append(out)
            h_n.append(h)
            c_n.append(c)
        from ... import cat
        x = outs[0] if directions == 1 else cat(outs, 1)
        if module.dropout > 0 and module.training and layer < module.num_layers - 1:
            x = F.dropout(x, module.dropout, training=True)
    h_n = stack(h_n, 0)
    if unsorted_indices is not None:
        h_n = h_n.index_select(1, unsorted_indices)
    output = PackedSequence(x, batch_sizes, sorted_indices, unsorted_indices)
    if not lstm:
        return output, h_n
    c_n = stack(c_n, 0)
    if unsorted_indices is not None:
        c_n = c_n.index_select(1, unsorted_indices)
    return output, (h_n, c_n)
