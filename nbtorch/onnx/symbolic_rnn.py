"""Symbolics of nn.RNN, nn.LSTM and nn.GRU: one ONNX RNN/LSTM/GRU node per layer.

ONNX orders gates differently (LSTM i,o,f,c for PyTorch's i,f,g,o; GRU z,r,h
for r,z,n), so the packed weights are reordered into new initializers; GRU
uses ``linear_before_reset=1`` (PyTorch's formula). A sequence of any length
and any batch runs through the same nodes (dynamic axes work).
"""
import numpy as np

from ._graph import UnsupportedOperatorError
from ._helpers import operand, unsqueeze, squeeze
from ._registry import register_module

_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}


def _packed(mod, layer, dirs):
    """(W, R, B) numpy arrays in ONNX's layout for one layer (both directions)."""
    H = mod.hidden_size
    order = _ORDER[mod.mode]
    Ws, Rs, Bs = [], [], []
    for d in range(dirs):
        w_ih, w_hh, b_ih, b_hh, _ = mod._layer_weights(layer, d)

        def gates(t):
            a = t.detach().cpu().numpy()
            return np.concatenate([a[g * H:(g + 1) * H] for g in order], axis=0)
        Ws.append(gates(w_ih))
        Rs.append(gates(w_hh))
        if b_ih is not None:
            Bs.append(np.concatenate([gates(b_ih), gates(b_hh)]))
        else:
            Bs.append(np.zeros(2 * len(order) * H, dtype=Ws[-1].dtype))
    return np.stack(Ws), np.stack(Rs), np.stack(Bs)


def _state_slice(e, state, layer, dirs):
    return e.g.op("Slice", state, e.g.ints([layer * dirs]), e.g.ints([(layer + 1) * dirs]),
                  e.g.ints([0]))


def rnn_symbolic(e, mod, out, input, hx=None):
    if mod.proj_size:
        raise UnsupportedOperatorError("ONNX export: LSTM with proj_size (ONNX LSTM has no "
                                       "projection)")
    dt = input.dtype
    mode = mod.mode
    lstm = mode == "LSTM"
    dirs = 2 if mod.bidirectional else 1
    H = mod.hidden_size
    batched = input.ndim == 3
    x = operand(e, input, dt)
    if not batched:
        x = unsqueeze(e, x, [1])
    elif mod.batch_first:
        x = e.g.op("Transpose", x, perm=[1, 0, 2])
    h0 = c0 = None
    if hx is not None:
        h0, c0 = (hx[0], hx[1]) if lstm else (hx, None)
        h0 = operand(e, h0, dt)
        c0 = None if c0 is None else operand(e, c0, dt)
        if not batched:
            h0 = unsqueeze(e, h0, [1])
            c0 = None if c0 is None else unsqueeze(e, c0, [1])
    op = {"LSTM": "LSTM", "GRU": "GRU"}.get(mode, "RNN")
    h_list, c_list = [], []
    prefix = e.module_name + "." if e.module_name else ""
    for layer in range(mod.num_layers):
        W, R, B = _packed(mod, layer, dirs)
        names = [e.g.initializer(a, e.g.fresh(f"{prefix}onnx_{k}_l{layer}"))
                 for k, a in (("W", W), ("R", R), ("B", B))]
        attrs = {"hidden_size": H, "direction": "bidirectional" if dirs == 2 else "forward"}
        if mode == "GRU":
            attrs["linear_before_reset"] = 1
        if op == "RNN":
            attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * dirs
        ins = [x] + names + [""]
        ins.append(_state_slice(e, h0, layer, dirs) if h0 is not None else "")
        if lstm:
            ins.append(_state_slice(e, c0, layer, dirs) if c0 is not None else "")
        n_out = 3 if lstm else 2
        outs = e.g.op(op, *ins, outputs=n_out, **attrs)
        y = outs[0]                                   # (T, dirs, N, H)
        y = e.g.op("Transpose", y, perm=[0, 2, 1, 3])
        x = e.g.op("Reshape", y, e.g.ints([0, 0, dirs * H]))
        h_list.append(outs[1])
        if lstm:
            c_list.append(outs[2])
    h_n = h_list[0] if len(h_list) == 1 else e.g.op("Concat", *h_list, axis=0)
    output = x
    if not batched:
        output, h_n = squeeze(e, output, [1]), squeeze(e, h_n, [1])
    elif mod.batch_first:
        output = e.g.op("Transpose", output, perm=[1, 0, 2])
    if lstm:
        c_n = c_list[0] if len(c_list) == 1 else e.g.op("Concat", *c_list, axis=0)
        if not batched:
            c_n = squeeze(e, c_n, [1])
        return output, (h_n, c_n)
    return output, h_n


def _register():
    from ..nn import GRU, LSTM, RNN
    register_module(RNN, LSTM, GRU)(rnn_symbolic)


_register()
