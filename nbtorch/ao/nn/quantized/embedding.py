"""Quantized Embedding (``torch.ao.nn.quantized.Embedding``): a quint8 table with one
float scale and float zero point per row (``per_channel_affine_float_qparams``, from
`float_qparams_weight_only_qconfig`); looking rows up gives float32 values computed as
fbgemm's embedding kernel does, ``fma(scale, q, -zero_point * scale)``."""
import numpy as np

import nbtorch
from nbtorch import nn
from nbtorch._qtensor import quint8, per_channel_affine_float_qparams

__all__ = ["Embedding"]

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
