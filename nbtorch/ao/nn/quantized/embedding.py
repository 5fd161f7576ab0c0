"""Quantized Embedding and EmbeddingBag (``torch.ao.nn.quantized``): a quint8 table with one
float scale and float zero point per row (``per_channel_affine_float_qparams``, from
`float_qparams_weight_only_qconfig`); looking rows up gives float32 values computed as
fbgemm's embedding kernel does, ``fma(scale, q, -zero_point * scale)``."""
import numpy as np

import nbtorch
from nbtorch import nn
from nbtorch._qtensor import quint8, per_channel_affine_float_qparams

__all__ = ["Embedding", "EmbeddingBag"]

_F32 = np.float32


class Embedding(nn.Module):
    """Quantized Embedding(num_embeddings, embedding_dim); weight-only, float output."""

    _version = 1

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None,
                 norm_type=2.0, scale_grad_by_freq=False, sparse=False, _weight=None,
                 dtype=quint8):
        super().__init__()
        if dtype is not quint8:
            raise NotImplementedError(f"The only supported dtype for nnq.Embedding is "
                                      f"torch.quint8 in nbtorch, got {dtype}")
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.dtype = dtype
        if _weight is None:
            _weight = nbtorch.quantize_per_channel(
                nbtorch.zeros(num_embeddings, embedding_dim),
                nbtorch.ones(num_embeddings), nbtorch.zeros(num_embeddings), 0, quint8)
        self.set_weight(_weight)

    def set_weight(self, w):
        """Take a (num_embeddings, dim) quint8 tensor with float per-row qparams."""
        if w.qscheme() is not per_channel_affine_float_qparams or w._qparams[2] != 0:
            raise RuntimeError("quantized Embedding: the weight must be quantized per row "
                               "with float qparams (float_qparams_weight_only_qconfig)")
        self._weight = w
        scales, zps, _ = w._qparams
        self._rows = np.ascontiguousarray(w._ints()).astype(_F32)
        self._scale = scales.astype(_F32)
        self._bias = (_F32(-1) * zps.astype(_F32) * self._scale).astype(_F32)

    def weight(self):
        return self._weight

    def forward(self, indices):
        idx = np.asarray(indices._host(), np.int64)
        if idx.size and (idx.min() < -self.num_embeddings or idx.max() >= self.num_embeddings):
            raise IndexError("index out of range in self")
        s, b = self._scale[idx][..., None], self._bias[idx][..., None]
        out = (s.astype(np.float64) * self._rows[idx] + b).astype(_F32)   # one rounding
        return nbtorch.from_numpy(np.ascontiguousarray(out))

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "_packed_params.dtype"] = self.dtype
        destination[prefix + "_packed_params._packed_weight"] = self._weight

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                              missing_keys, unexpected_keys, error_msgs):
        state_dict.pop(prefix + "_packed_params.dtype", None)
        w = state_dict.pop(prefix + "_packed_params._packed_weight", None)
        if w is None:
            missing_keys.append(prefix + "_packed_params._packed_weight")
        else:
            self.set_weight(w)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def _get_name(self):
        return "QuantizedEmbedding"

    def extra_repr(self):
        return (f"num_embeddings={self.num_embeddings}, embedding_dim={self.embedding_dim}, "
                f"dtype={self.dtype}, qscheme={self._weight.qscheme()}")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        """Quantize a float Embedding's rows with its qconfig's float-qparams observer."""
        from .modules import _quantize_weight
        observer = mod.qconfig.weight()
        if observer.qscheme is not per_channel_affine_float_qparams:
            raise AssertionError("Embedding quantization is only supported with "
                                 "float_qparams_weight_only_qconfig.")
        if observer.dtype is not quint8:
            raise AssertionError(f"The only supported dtype for nnq.Embedding is torch.quint8,"
                                 f" got {observer.dtype}")
        q = cls(mod.num_embeddings, mod.embedding_dim)
        q.set_weight(_quantize_weight(mod.weight, observer))
        return q


class EmbeddingBag(Embedding):
    """Quantized EmbeddingBag: the sum of each bag's rows (PyTorch's quantized module
    always sums, whatever `mode` says), per-sample weights scaling each row; each row is
    accumulated as fbgemm does, ``acc = fma(w * scale, q, acc + w * bias)``."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, mode="sum", sparse=False, _weight=None,
                 include_last_offset=False, dtype=quint8):
        super().__init__(num_embeddings, embedding_dim, _weight=_weight, dtype=dtype)
        self.mode, self.include_last_offset = mode, include_last_offset

    def forward(self, indices, offsets=None, per_sample_weights=None,
                compressed_indices_mapping=None):
        idx = np.asarray(indices._host(), np.int64)
        if idx.ndim == 2:                           # each row a bag
            starts = np.arange(0, idx.size, idx.shape[1])
            idx = idx.reshape(-1)
        else:
            if offsets is None:
                raise ValueError("offsets has to be a 1D Tensor but got None")
            starts = np.asarray(offsets._host(), np.int64)
            if self.include_last_offset:
                starts = starts[:-1]
        if idx.size and (idx.min() < 0 or idx.max() >= self.num_embeddings):
            raise IndexError("index out of range in self")
        w = (None if per_sample_weights is None else
             np.asarray(per_sample_weights._host(), _F32).reshape(-1))
        ends = np.append(starts[1:], idx.size)
        if self.include_last_offset and offsets is not None and idx.ndim == 1:
            ends = np.asarray(offsets._host(), np.int64)[1:]
        out = np.zeros((len(starts), self.embedding_dim), _F32)
        for b, (lo, hi) in enumerate(zip(starts, ends)):
            acc = np.zeros(self.embedding_dim, _F32)
            for i in range(lo, hi):
                r = idx[i]
                s, bias = self._scale[r], self._bias[r]
                if w is not None:
                    s, bias = _F32(s * w[i]), _F32(bias * w[i])
                acc = (np.float64(s) * self._rows[r] + (acc + bias)).astype(_F32)
            out[b] = acc
        return nbtorch.from_numpy(out)

    def _get_name(self):
        return "QuantizedEmbeddingBag"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant=False):
        from .modules import _quantize_weight
        observer = mod.qconfig.weight()
        if observer.qscheme is not per_channel_affine_float_qparams:
            raise AssertionError("EmbeddingBag quantization is only supported with "
                                 "float_qparams_weight_only_qconfig.")
        q = cls(mod.num_embeddings, mod.embedding_dim, mode=mod.mode,
                include_last_offset=mod.include_last_offset)
        q.set_weight(_quantize_weight(mod.weight, observer))
        return q
