"""Transformer encoder and decoder layers and stacks (PyTorch's structure and names)."""
import copy

from .. import functional as F, init
from .activation_mha import MultiheadAttention, _tracing
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["Transformer", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder"]


def generate_square_subsequent_mask(sz, device=None, dtype=None):
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above (a causal mask), in
    ``dtype`` (default: the default float dtype, as PyTorch).

    Example:
        >>> nn.Transformer.generate_square_subsequent_mask(3)[0].tolist()
        [0.0, -inf, -inf]
    """
    import numpy as np
    from ...ops.creation import tensor
    from ..._dtype import get_default_dtype
    mask = np.triu(np.full((sz, sz), float("-inf")), 1)
    return tensor(mask, dtype=get_default_dtype() if dtype is None else dtype, device=device)


def _activation(activation):
    if activation == "relu" or activation is F.relu:
        return F.relu
    if activation == "gelu" or activation is F.gelu:
        return F.gelu
    if callable(activation):
        return activation
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _own(layer, cls, *names):
    """True when `layer` runs `cls`'s own block methods (a subclass may override them)."""
    kind = type(layer)
    return all(getattr(kind, n) is getattr(cls, n) for n in names)


def _hooked(module):
    d = module.__dict__
    return bool(d["_forward_pre_hooks"] or d["_forward_hooks"] or d["_backward_hooks"]
                or d["_backward_pre_hooks"])


def _activation_dropout(layer, h):
    """layer.dropout(layer.activation(h)): one fused node for ReLU and a plain Dropout in
    training on the CPU (same mask, same values), the two calls otherwise."""
    drop = layer.dropout
    if (layer.activation is F.relu and type(drop) is Dropout and drop.training
            and not drop.inplace and not _hooked(drop) and not _tracing()):
        from ...ops.dropout_fused import relu_dropout, relu_dropout_ok
        if relu_dropout_ok(h, drop.p):
            return relu_dropout(h, drop.p)
    return drop(layer.activation(h))


def _dropout_add_norm(drop, norm, x, s):
    """norm(x + drop(s)), a post-norm residual: one fused node for a plain Dropout in
    training and a plain LayerNorm on the CPU (same mask, same values), the three calls
    otherwise."""
    if (type(drop) is Dropout and drop.training and not drop.inplace and not _hooked(drop)
            and type(norm) is LayerNorm and not _hooked(norm) and not _tracing()):
        from ...ops.dropout_fused import dropout_add_layer_norm, dropout_add_layer_norm_ok
        shape = tuple(norm.normalized_shape)
        if (x.dim() >= len(shape) and tuple(x._shape[x.dim() - len(shape):]) == shape
                and dropout_add_layer_norm_ok(x, s, drop.p, norm.weight, norm.bias)):
            return dropout_add_layer_norm(x, s, drop.p, shape, norm.weight, norm.bias,
                                          norm.eps)
    return norm(x + drop(s))


def _clones(module, n):
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with residual, dropout and LayerNorm.

    ``norm_first=True`` normalises before each block (pre-LN) instead of after.

    Example:
        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> layer(torch.randn(2, 10, 16)).shape
        torch.Size([2, 10, 16])
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        elif _own(self, TransformerEncoderLayer, "_sa_block", "_ff_block"):
            x = _dropout_add_norm(self.dropout1, self.norm1, x,
                                  self._sa(x, src_mask, src_key_padding_mask, is_causal))
            x = _dropout_add_norm(self.dropout2, self.norm2, x, self._ff(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        return self.dropout1(self._sa(x, attn_mask, key_padding_mask, is_causal))

    def _sa(self, x, attn_mask, key_padding_mask, is_causal):
        return self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                              need_weights=False, is_causal=is_causal)[0]

    def _ff_block(self, x):
        return self.dropout2(self._ff(x))

    def _ff(self, x):
        return self.linear2(_activation_dropout(self, self.linear1(x)))


class TransformerEncoder(Module):
    """A stack of ``num_layers`` deep copies of ``encoder_layer``, then an optional norm.

    Example:
        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4)
        >>> enc = nn.TransformerEncoder(layer, num_layers=2)
        >>> enc(torch.randn(10, 2, 16)).shape
        torch.Size([10, 2, 16])
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                        is_causal=bool(is_causal))
        return self.norm(out) if self.norm is not None else out


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory``, then feed-forward (post- or pre-LN).

    Example:
        >>> layer = nn.TransformerDecoderLayer(d_model=16, nhead=4)
        >>> layer(torch.randn(7, 2, 16), torch.randn(10, 2, 16)).shape
        torch.Size([7, 2, 16])
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=False,
                memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        elif _own(self, TransformerDecoderLayer, "_sa_block", "_mha_block", "_ff_block"):
            x = _dropout_add_norm(self.dropout1, self.norm1, x,
                                  self._sa(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = _dropout_add_norm(self.dropout2, self.norm2, x,
                                  self._mha(x, memory, memory_mask, memory_key_padding_mask,
                                            memory_is_causal))
            x = _dropout_add_norm(self.dropout3, self.norm3, x, self._ff(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        return self.dropout1(self._sa(x, attn_mask, key_padding_mask, is_causal))

    def _sa(self, x, attn_mask, key_padding_mask, is_causal):
        return self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                              is_causal=is_causal, need_weights=False)[0]

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        return self.dropout2(self._mha(x, mem, attn_mask, key_padding_mask, is_causal))

    def _mha(self, x, mem, attn_mask, key_padding_mask, is_causal):
        return self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                   key_padding_mask=key_padding_mask, is_causal=is_causal,
                                   need_weights=False)[0]

    def _ff_block(self, x):
        return self.dropout3(self._ff(x))

    def _ff(self, x):
        return self.linear2(_activation_dropout(self, self.linear1(x)))


class TransformerDecoder(Module):
    """A stack of ``num_layers`` deep copies of ``decoder_layer``, then an optional norm."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, tgt_is_causal=None,
                memory_is_causal=False):
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return self.norm(out) if self.norm is not None else out


class Transformer(Module):
    """Encoder-decoder transformer (Vaswani et al.), PyTorch's nn.Transformer layout.

    Example:
        >>> model = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=2,
        ...                        num_decoder_layers=2, dim_feedforward=32)
        >>> model(torch.randn(10, 2, 16), torch.randn(7, 2, 16)).shape
        torch.Size([7, 2, 16])
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation="relu", custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        kw = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                  layer_norm_eps=layer_norm_eps, batch_first=batch_first,
                  norm_first=norm_first, bias=bias, device=device, dtype=dtype)
        norm = dict(eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(d_model, nhead, **kw),
                                              num_encoder_layers, LayerNorm(d_model, **norm))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(d_model, nhead, **kw),
                                              num_decoder_layers, LayerNorm(d_model, **norm))
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src._static_shape[batch_dim] != tgt._static_shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src._static_shape[-1] != self.d_model or tgt._static_shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) causal float mask: 0 on and below the diagonal, -inf above."""
        return generate_square_subsequent_mask(sz, device, dtype)
