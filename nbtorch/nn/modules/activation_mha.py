"""nn.MultiheadAttention with PyTorch's parameter names (in_proj_weight, out_proj, ...)."""
from .. import functional as F, init
from ..functional.attention import batch_first_self_attention
from ..parameter import Parameter
from .batchnorm import _new
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention"]


def _tracing():
    """True inside nbtorch.jit.trace: the layers' fused shortcuts step aside there (their
    forward traces as the separate calls, which jit.save can store)."""
    from ...jit._concrete import is_tracing
    return is_tracing()


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under PyTorch's name for the attention output projection."""


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of size ``embed_dim // num_heads``.

    Inputs are (L, N, E) (or (N, L, E) with ``batch_first=True``, or unbatched
    (L, E)); returns ``(attn_output, attn_weights)`` where the weights are
    averaged over heads unless ``average_attn_weights=False``, and None when
    ``need_weights=False``. Boolean masks are True where attention is *not*
    allowed; float masks are added to the scores.

    Example:
        >>> mha = nn.MultiheadAttention(16, 4, batch_first=True)
        >>> x = torch.randn(2, 5, 16)
        >>> out, w = mha(x, x, x)
        >>> out.shape, w.shape
        (torch.Size([2, 5, 16]), torch.Size([2, 5, 5]))
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        E = embed_dim
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(_new((E, E), device, dtype))
            self.k_proj_weight = Parameter(_new((E, self.kdim), device, dtype))
            self.v_proj_weight = Parameter(_new((E, self.vdim), device, dtype))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(_new((3 * E, E), device, dtype))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_new((3 * E,), device, dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(E, E, bias=bias, device=device,
                                                        dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(_new((1, 1, E), device, dtype))
            self.bias_v = Parameter(_new((1, 1, E), device, dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        batched = query.dim() == 3
        if self.batch_first and batched and not need_weights and query is key and \
                key is value and self._qkv_same_embed_dim and self.bias_k is None and \
                not self.add_zero_attn and not _tracing():
            out = batch_first_self_attention(
                query, self.num_heads, self.in_proj_weight, self.in_proj_bias,
                self.out_proj.weight, self.out_proj.bias, self.dropout, self.training,
                key_padding_mask, attn_mask, is_causal)
            if out is not None:
                return out, None
        if self.batch_first and batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (t.transpose(1, 0) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
            v_proj_weight=self.v_proj_weight, average_attn_weights=average_attn_weights,
            is_causal=is_causal)
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights
