"""Dynamically quantized LSTM and GRU: the gate GEMMs are the int8 `linear_dynamic`, the
gate nonlinearities and state updates stay float32. Inference only.

As in PyTorch, a layer projects its whole input sequence in one GEMM (one set of
activation qparams for all time steps), then each step quantizes its hidden state on
its own: per-step input quantization differed from PyTorch by up to 5e-3."""
import numpy as np

import nbtorch
from nbtorch import nn
from nbtorch._qtensor import qint8

from .linear import linear_dynamic, pack_weight, packed_from_state

__all__ = ["LSTM", "GRU", "LSTMCell", "GRUCell", "RNNCell"]


def _sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x))).astype(np.float32)


def _lin(x, packed):
    return linear_dynamic(nbtorch.from_numpy(x), packed)._host()


def _lstm_step(x, h, c, p_ih, p_hh, x_proj=None):
    gates = (_lin(x, p_ih) if x_proj is None else x_proj) + _lin(h, p_hh)
    i, f, g, o = np.split(gates, 4, axis=1)
    c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
    h = _sigmoid(o) * np.tanh(c)
    return h.astype(np.float32), c.astype(np.float32)


def _gru_step(x, h, p_ih, p_hh, x_proj=None):
    gi, gh = (_lin(x, p_ih) if x_proj is None else x_proj), _lin(h, p_hh)
    ir, iz, in_ = np.split(gi, 3, axis=1)
    hr, hz, hn = np.split(gh, 3, axis=1)
    r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
    n = np.tanh(in_ + r * hn)
    return ((1 - z) * n + z * h).astype(np.float32)


class _QuantizedRNNBase(nn.Module):
    """Holds one (ih, hh) pair of packed int8 weights per layer and direction."""

    _MODE = None

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
                 dropout=0.0, bidirectional=False, dtype=qint8):
        super().__init__()
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, dropout
        self.bidirectional, self.dtype = bidirectional, dtype
        self._packs = []

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        from nbtorch.ao.quantization.qconfig import default_dynamic_qconfig
        if getattr(mod, "proj_size", 0):
            raise NotImplementedError("dynamic quantized LSTM: proj_size is not "
                                      "implemented in nbtorch")
        qconfig = getattr(mod, "qconfig", None) or default_dynamic_qconfig
        q = cls(mod.input_size, mod.hidden_size, mod.num_layers, mod.bias, mod.batch_first,
                mod.dropout, mod.bidirectional)
        dirs = 2 if mod.bidirectional else 1
        for layer in range(mod.num_layers):
            for d in range(dirs):
                sfx = f"_l{layer}" + ("_reverse" if d else "")
                pair = []
                for kind in ("ih", "hh"):
                    w = getattr(mod, f"weight_{kind}{sfx}")
                    b = getattr(mod, f"bias_{kind}{sfx}") if mod.bias else None
                    pair.append(pack_weight(w, b, qconfig))
                q._packs.append(tuple(pair))
        return q

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """PyTorch's keys (``_all_weight_values.<i>.param``, one per layer and direction);
        the values are (w_ih, b_ih, w_hh, b_hh) tuples of a qint8 weight and a float bias,
        not PyTorch's opaque packed objects (it had no weights at all: a reloaded
        model kept its own)."""
        super()._save_to_state_dict(destination, prefix, keep_vars)
        for i, pair in enumerate(self._packs):
            destination[f"{prefix}_all_weight_values.{i}.param"] = tuple(
                v for p in pair for v in _weight_bias(p))

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        packs = []
        for i in range(self.num_layers * (2 if self.bidirectional else 1)):
            value = state_dict.pop(f"{prefix}_all_weight_values.{i}.param", None)
            if value is None:
                missing_keys.append(f"{prefix}_all_weight_values.{i}.param")
            else:
                packs.append((packed_from_state(value[0], value[1]),
                              packed_from_state(value[2], value[3])))
        if len(packs) == self.num_layers * (2 if self.bidirectional else 1):
            self._packs = packs
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def _init_state(self, batch, hx):
        n = self.num_layers * (2 if self.bidirectional else 1)
        return np.zeros((n, batch, self.hidden_size), np.float32) if hx is None else \
            np.array(hx.detach()._host(), np.float32)

    def _run(self, x, states):
        """x (T, B, I) float32; states: list of per-(layer, dir) state tuples."""
        dirs = 2 if self.bidirectional else 1
        inp = x
        for layer in range(self.num_layers):
            outs = []
            for d in range(dirs):
                idx = layer * dirs + d
                p_ih, p_hh = self._packs[idx]
                state = states[idx]
                steps = range(inp.shape[0] - 1, -1, -1) if d else range(inp.shape[0])
                seq = [None] * inp.shape[0]
                proj = _lin(inp.reshape(-1, inp.shape[2]), p_ih).reshape(
                    inp.shape[0], inp.shape[1], -1)
                for t in steps:
                    state = self._step(inp[t], state, p_ih, p_hh, proj[t])
                    seq[t] = state[0]
                states[idx] = state
                outs.append(np.stack(seq))
            inp = np.concatenate(outs, axis=2) if dirs == 2 else outs[0]
        return inp, states

    def _prepare_input(self, input):
        x = np.asarray(input.detach()._host(), np.float32)
        unbatched = x.ndim == 2
        if unbatched:
            x = x[:, None]
        elif self.batch_first:
            x = x.transpose(1, 0, 2)
        return np.ascontiguousarray(x), unbatched

    def _finish(self, out, unbatched):
        if unbatched:
            out = out[:, 0]
        elif self.batch_first:
            out = out.transpose(1, 0, 2)
        return nbtorch.from_numpy(np.ascontiguousarray(out))

    def _get_name(self):
        return "DynamicQuantized" + type(self).__name__

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


class LSTM(_QuantizedRNNBase):
    """Dynamic quantized ``nn.LSTM``: returns output, (h_n, c_n)."""

    def _step(self, x, state, p_ih, p_hh, x_proj):
        return _lstm_step(x, state[0], state[1], p_ih, p_hh, x_proj)

    def forward(self, input, hx=None):
        x, unbatched = self._prepare_input(input)
        h0, c0 = (None, None) if hx is None else hx
        if unbatched and hx is not None:
            h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        h, c = self._init_state(x.shape[1], h0), self._init_state(x.shape[1], c0)
        out, states = self._run(x, [(h[i], c[i]) for i in range(h.shape[0])])
        hn = np.stack([s[0] for s in states])
        cn = np.stack([s[1] for s in states])
        if unbatched:
            hn, cn = hn[:, 0], cn[:, 0]
        return self._finish(out, unbatched), (nbtorch.from_numpy(hn), nbtorch.from_numpy(cn))


class GRU(_QuantizedRNNBase):
    """Dynamic quantized ``nn.GRU``: returns output, h_n."""

    def _step(self, x, state, p_ih, p_hh, x_proj):
        return (_gru_step(x, state[0], p_ih, p_hh, x_proj),)

    def forward(self, input, hx=None):
        x, unbatched = self._prepare_input(input)
        if unbatched and hx is not None:
            hx = hx.unsqueeze(1)
        h = self._init_state(x.shape[1], hx)
        out, states = self._run(x, [(h[i],) for i in range(h.shape[0])])
        hn = np.stack([s[0] for s in states])
        if unbatched:
            hn = hn[:, 0]
        return self._finish(out, unbatched), nbtorch.from_numpy(hn)


def _weight_bias(packed):
    """(quantized weight, float bias or None) of a PackedWeight."""
    return packed.qweight, (nbtorch.from_numpy(packed.bias) if packed.has_bias else None)


class _CellBase(nn.Module):
    bias, nonlinearity = True, "tanh"

    def _get_name(self):
        return "DynamicQuantized" + type(self).__name__

    def extra_repr(self):
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        return s + ("" if self.nonlinearity == "tanh" else f", nonlinearity={self.nonlinearity}")

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """PyTorch's keys ``_packed_weight_ih``/``_hh``; values (weight, bias) tuples."""
        super()._save_to_state_dict(destination, prefix, keep_vars)
        for kind, p in zip(("ih", "hh"), self._packs):
            destination[f"{prefix}_packed_weight_{kind}"] = _weight_bias(p)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        packs = list(getattr(self, "_packs", (None, None)))
        for i, kind in enumerate(("ih", "hh")):
            value = state_dict.pop(f"{prefix}_packed_weight_{kind}", None)
            if value is None:
                missing_keys.append(f"{prefix}_packed_weight_{kind}")
            else:
                packs[i] = packed_from_state(value[0], value[1])
        self._packs = tuple(packs)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        from nbtorch.ao.quantization.qconfig import default_dynamic_qconfig
        qconfig = getattr(mod, "qconfig", None) or default_dynamic_qconfig
        q = cls()
        q.input_size, q.hidden_size, q.bias = mod.input_size, mod.hidden_size, mod.bias
        q.nonlinearity = getattr(mod, "nonlinearity", "tanh")
        q._packs = tuple(pack_weight(getattr(mod, f"weight_{k}"), getattr(mod, f"bias_{k}",
                                                                          None), qconfig)
                         for k in ("ih", "hh"))
        return q


class LSTMCell(_CellBase):
    """Dynamic quantized ``nn.LSTMCell``."""

    def forward(self, input, hx=None):
        x = np.asarray(input.detach()._host(), np.float32)
        b = x.shape[0]
        h, c = ((np.zeros((b, self.hidden_size), np.float32),) * 2 if hx is None else
                tuple(np.asarray(t.detach()._host(), np.float32) for t in hx))
        h, c = _lstm_step(x, h, c, *self._packs)
        return nbtorch.from_numpy(h), nbtorch.from_numpy(c)


class GRUCell(_CellBase):
    """Dynamic quantized ``nn.GRUCell``."""

    def forward(self, input, hx=None):
        x = np.asarray(input.detach()._host(), np.float32)
        h = np.zeros((x.shape[0], self.hidden_size), np.float32) if hx is None else \
            np.asarray(hx.detach()._host(), np.float32)
        return nbtorch.from_numpy(_gru_step(x, h, *self._packs))


class RNNCell(_CellBase):
    """Dynamic quantized ``nn.RNNCell``: tanh (or relu) of the two int8 GEMMs' sum."""

    def forward(self, input, hx=None):
        x = np.asarray(input.detach()._host(), np.float32)
        h = np.zeros((x.shape[0], self.hidden_size), np.float32) if hx is None else \
            np.asarray(hx.detach()._host(), np.float32)
        g = _lin(x, self._packs[0]) + _lin(h, self._packs[1])
        out = np.tanh(g) if self.nonlinearity == "tanh" else np.maximum(g, np.float32(0))
        return nbtorch.from_numpy(out.astype(np.float32))
